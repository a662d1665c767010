"""The top N after the per-host and per-domain caps, computed over a prefix of the best
candidates, is the top N computed over all of them."""
import random

import pytest
from pyspark.sql import functions as F

from crawlkit.stages import capped_top as capped_top_module
from crawlkit.stages.capped_top import GROWTH, MARGIN, capped_top, cut_points, cut_ranks, up_to
from crawlkit.conf import make_conf
from crawlkit.stages.generate import cap_per_group, order_key, tie_break

CONF = make_conf(generate__policy="score")


def _order():
    """generate's fetch-list order for the ``score`` policy (score, then its tie break)."""
    return order_key(CONF)


def _ties():
    return tie_break(CONF)


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
    cuts = cut_points(candidates, [F.col("score")], _ties()[0], top_n, population or candidates.count())[0]
    result = capped_top(candidates, F.col("score"), _ties(), top_n, capped, cuts)
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
    """A cut falls inside a tie as well (by the tie break's key), so a prefix still answers
    when a few scores, or one, are all there is (backlink counts early in a crawl)."""
    capped = _capper(4)
    for levels in (7, 1):                                   # every cut falls in a tie
        tied = _candidates(spark, seed=3, levels=levels)
        for top_n in (10, 30):
            urls, from_prefix = _fast(tied, top_n, capped)
            assert urls == _everything(tied, top_n, capped) and from_prefix
    few = _candidates(spark, seed=4, hosts=5, rows=200)
    urls, from_prefix = _fast(few, 100, capped)              # 20 hosts (5 in each of 4 domains) x 4
    assert urls == _everything(few, 100, capped) and len(urls) == 80 and not from_prefix


def test_no_caps_is_a_plain_top_n(spark):
    candidates = _candidates(spark, seed=5)
    plain = [r.url for r in candidates.orderBy(*_order()).limit(25).collect()]
    assert [r.url for r in capped_top(candidates, F.col("score"), _ties(), 25, None, []).collect()] == plain


def test_a_sample_places_the_cuts_and_an_upper_bound_on_the_candidates_sizes_it(spark, monkeypatch):
    """With ~1/4 of the candidates sampled (the bound says 4x as many), the first cut still
    leaves about MARGIN x N of them, and the second more; a prefix then answers."""
    candidates = _candidates(spark, seed=6, rows=4000)
    monkeypatch.setattr(capped_top_module, "SAMPLE_ROWS", 4000)
    first, second = cut_points(candidates, [F.col("score")], _ties()[0], 100, 16000)[0]
    kept = [candidates.filter(up_to(c, F.col("score"), _ties()[0])).count() for c in (first, second)]
    assert MARGIN * 100 * 0.5 <= kept[0] <= MARGIN * 100 * 2 and kept[0] < kept[1] < 4000
    urls, from_prefix = _fast(candidates, 100, _capper(3), population=16000)
    assert urls == _everything(candidates, 100, _capper(3)) and from_prefix


def test_a_cut_is_a_prefix_of_the_fetch_list_order(spark):
    """Whatever the ties, the candidates up to a cut are the first ones in generate's order."""
    candidates = _candidates(spark, seed=8, levels=3)
    ordered = [r.url for r in candidates.orderBy(*_order()).collect()]
    for position in (0, 17, 999, len(ordered) - 1):
        row = candidates.filter(F.col("url") == ordered[position]) \
            .select("score", _ties()[0].alias("key")).first()
        kept = candidates.filter(up_to((row.score, row.key), F.col("score"), _ties()[0]))
        assert sorted(r.url for r in kept.collect()) == sorted(ordered[:position + 1])


def test_cut_ranks_in_a_sample():
    assert cut_ranks(1.0, 10) == [MARGIN * 10, MARGIN * 10 * GROWTH]   # every candidate sampled
    assert cut_ranks(0.1, 10) == [2, 16]                               # a tenth: a tenth of the ranks
    assert cut_ranks(0.001, 10) == [1]                                 # both round to the first sampled


def test_no_cut_below_the_population_worth_one(spark, monkeypatch):
    monkeypatch.setattr(capped_top_module, "MIN_POPULATION", 5000)
    candidates = _candidates(spark, seed=7)
    assert cut_points(candidates, [F.col("score"), F.col("score")], _ties()[0], 20, 4999) == [[], []]
    assert len(cut_points(candidates, [F.col("score")], _ties()[0], 20, 5000)[0]) == 2
