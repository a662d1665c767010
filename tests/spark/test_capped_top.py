"""The top N after the per-host and per-domain caps, computed over a prefix of the best
candidates, is the top N computed over all of them."""
import random

import pytest
from pyspark.sql import functions as F

from crawlkit.stages import capped_top as capped_top_module
from crawlkit.stages.capped_top import MARGIN, capped_top, cut_points, prefix_cuts
from crawlkit.conf import make_conf
from crawlkit.stages.generate import cap_per_group, order_key


def _order():
    """generate's fetch-list order for the ``score`` policy (score, then its tie break)."""
    return order_key(make_conf(generate__policy="score"))


@pytest.fixture(autouse=True)
def small_tables_take_prefixes_too(monkeypatch):
    """These tables are far below MIN_POPULATION, under which generate does not cut."""
    monkeypatch.setattr(capped_top_module, "MIN_POPULATION", 0)


def _candidates(spark, seed: int, hosts: int = 60, rows: int = 3000, big_host_share: float = 0.0,
                levels: int | None = None):
    """Rows of hosts of 4 domains; ``big_host_share`` of the rows on one host with the best
    scores; ``levels`` distinct scores (ties) instead of continuous ones."""
    rng = random.Random(seed)
    data = []
    for i in range(rows):
        if rng.random() < big_host_share:
            host, score = "big.test", 10.0 + rng.random()
        else:
            host = f"h{rng.randrange(hosts)}.d{rng.randrange(4)}.test"
            score = rng.randrange(levels) / levels if levels else rng.random()
        domain = host.split(".", 1)[1] if host != "big.test" else "big.test"
        data.append((f"http://{host}/p{i}", host, domain, score))
    return spark.createDataFrame(data, "url string, host string, domain string, score double")


def _capper(per_host: int, per_domain: int = 0):
    def capped(df, order):
        return cap_per_group(cap_per_group(df, "host", per_host, order), "domain", per_domain, order)
    return capped


def _everything(candidates, top_n, capped):
    """The plain way: the caps' window over every candidate, then the top N."""
    return [r.url for r in capped(candidates, _order()).orderBy(*_order()).limit(top_n).collect()]


def _fast(candidates, top_n, capped, population=None):
    """capped_top's URLs, and whether a prefix answered: its result is then a materialized
    table, with no window of the caps left to run."""
    cuts = cut_points(candidates, [F.col("score")], top_n, population or candidates.count())[0]
    result = capped_top(candidates, F.col("score"), _order(), top_n, capped, cuts)
    plan = result._jdf.queryExecution().optimizedPlan().toString()
    return [r.url for r in result.collect()], "Window" not in plan


def test_a_prefix_answers_when_the_caps_leave_enough_of_it(spark):
    candidates = _candidates(spark, seed=1)
    for top_n, capped in [(20, _capper(3)), (50, _capper(2, 40)), (100, _capper(5))]:
        urls, from_prefix = _fast(candidates, top_n, capped)
        assert urls == _everything(candidates, top_n, capped)
        assert len(urls) == top_n and from_prefix


def test_a_host_that_holds_the_best_urls_sends_it_down_to_every_candidate(spark):
    """Most of the best candidates on one host: the cap leaves few rows of any prefix, so
    the window runs over every candidate, and the answer is the same."""
    candidates = _candidates(spark, seed=2, big_host_share=0.9)
    capped = _capper(5)
    urls, from_prefix = _fast(candidates, 40, capped)
    assert urls == _everything(candidates, 40, capped)
    assert not from_prefix
    assert sum(u.startswith("http://big.test/") for u in urls) == 5


def test_ties_at_the_cut_and_fewer_candidates_than_asked_for(spark):
    tied = _candidates(spark, seed=3, levels=7)            # 7 scores: every cut falls in a tie
    capped = _capper(4)
    for top_n in (10, 30):
        assert _fast(tied, top_n, capped)[0] == _everything(tied, top_n, capped)
    few = _candidates(spark, seed=4, hosts=5, rows=200)
    urls, from_prefix = _fast(few, 100, capped)              # 20 hosts (5 in each of 4 domains) x 4
    assert urls == _everything(few, 100, capped) and len(urls) == 80 and not from_prefix


def test_no_caps_is_a_plain_top_n(spark):
    candidates = _candidates(spark, seed=5)
    plain = [r.url for r in candidates.orderBy(*_order()).limit(25).collect()]
    assert [r.url for r in capped_top(candidates, F.col("score"), _order(), 25, None, []).collect()] == plain


def test_a_sample_places_the_cuts_and_an_upper_bound_on_the_candidates_sizes_it(spark, monkeypatch):
    """With ~1/4 of the candidates sampled (the bound says 4x as many), the first cut still
    leaves about MARGIN x N of them, and the second more; a prefix then answers."""
    candidates = _candidates(spark, seed=6, rows=4000)
    monkeypatch.setattr(capped_top_module, "SAMPLE_ROWS", 4000)
    first, second = cut_points(candidates, [F.col("score")], 100, 16000)[0]
    kept = [candidates.filter(F.col("score") >= c).count() for c in (first, second)]
    assert MARGIN * 100 * 0.5 <= kept[0] <= MARGIN * 100 * 2 and kept[0] < kept[1] < 4000
    urls, from_prefix = _fast(candidates, 100, _capper(3), population=16000)
    assert urls == _everything(candidates, 100, _capper(3)) and from_prefix


def test_prefix_cuts_from_sampled_values():
    ranked = [float(v) for v in range(1000, 0, -1)]            # 1000 .. 1, all sampled
    assert prefix_cuts(ranked, 1.0, 10) == [981.0, 841.0]      # 20 and 160 values at or above
    assert prefix_cuts(ranked, 0.1, 10) == [999.0, 985.0]      # a tenth sampled: 2 and 16
    assert prefix_cuts([5.0] * 50 + [1.0] * 950, 1.0, 10) == [5.0]  # a tie: no second cut above 1
    assert prefix_cuts([3.0] * 1000, 1.0, 10) == []            # any cut keeps every value
    assert prefix_cuts(ranked, 1.0, 600) == []                 # no cut leaves 1,200 of 1,000
    assert prefix_cuts([], 0.5, 10) == []


def test_no_cut_below_the_population_worth_one(spark, monkeypatch):
    monkeypatch.setattr(capped_top_module, "MIN_POPULATION", 5000)
    candidates = _candidates(spark, seed=7)
    assert cut_points(candidates, [F.col("score"), F.col("score")], 20, 4999) == [[], []]
    assert len(cut_points(candidates, [F.col("score")], 20, 5000)[0]) == 2
