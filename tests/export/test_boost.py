"""Boost transforms: the documented formulas, the exact percentile, and stable boosts across
rounds whose raw scores shift."""
import math
import random

import numpy as np
import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F
from scipy.stats import kendalltau, spearmanr

from exporthelpers import crawldb_row, parse_row

from crawlkit import storage
from crawlkit.conf import make_conf
from crawlkit.export.pages import candidates, parse_rows, records
from crawlkit.export.boost import MIN_BOOST, with_boost, with_percent_rank

SCORES = [0.0, 1.0, 2.0, 2.0, 8.0]
# median of the positive scores: percentile_approx returns an actual score, the lower median.
M = 2.0


@pytest.mark.parametrize("kind, expected", [
    ("raw", [MIN_BOOST, 1.0, 2.0, 2.0, 8.0]),
    ("power", [MIN_BOOST] + [math.sqrt(s / M) for s in SCORES[1:]]),
    ("log", [MIN_BOOST] + [math.log2(1 + s / M) for s in SCORES[1:]]),
    # percent_rank: ties share the lower rank -> 0, 1/4, 2/4, 2/4, 1
    ("percentile", [1 + 9 * r for r in (0.0, 0.25, 0.5, 0.5, 1.0)]),
    ("minmax", [1 + 9 * s / 8 for s in SCORES]),
])
def test_transform_formulas(spark, kind, expected):
    records = spark.createDataFrame([(f"http://{i}.test/", s) for i, s in enumerate(SCORES)], "url string, score double")
    boosted, dist = with_boost(records, make_conf(export__boost=kind), buckets=3)
    got = [r.boost for r in boosted.orderBy("url").collect()]
    assert got == pytest.approx(expected, rel=1e-12)
    assert (dist.count, dist.min, dist.max, dist.median) == (5, 0.0, 8.0, M)


def test_percent_rank_is_exact_across_buckets(spark):
    """Equal to Spark's single-partition percent_rank, ties included, whatever the bucket count."""
    rng = random.Random(7)
    scores = [float(rng.choice([0, 1, 1, 2, 3, 5, 8]) if i % 3 else rng.random()) for i in range(400)]
    df = spark.createDataFrame([(i, s) for i, s in enumerate(scores)], "id int, score double")
    reference = {r.id: r.pr for r in df.select("id", F.percent_rank().over(Window.orderBy("score")).alias("pr")).collect()}
    for buckets in (1, 7):
        got = {r.id: r.pr for r in with_percent_rank(df, "score", "pr", len(scores), buckets).collect()}
        assert got == reference, buckets


def rounds(n_first=200, n_new=10, seed=3):
    """Two PageRank-like score vectors over a growing crawl: round 2 knows more pages, so every
    value shrinks (the scores sum to 1), and each moves a little (+-5 %)."""
    rng = np.random.default_rng(seed)
    first = rng.pareto(1.5, n_first) + 1
    second = np.concatenate([first * rng.uniform(0.95, 1.05, n_first), rng.pareto(1.5, n_new) + 1])
    return first / first.sum(), second / second.sum()


def test_boosts_are_stable_across_rounds(crawl, spark):
    """Two crawldb versions (the second with more pages and shifted scores), read back by
    Delta time travel: every normalising transform keeps the common pages' order and scale."""
    first, second = rounds()
    urls = [f"http://p{i}.test/" for i in range(len(second))]
    crawl.parse([parse_row(u) for u in urls])
    versions = [crawl.crawldb([crawldb_row(u, float(s)) for u, s in zip(urls, scores)])
                for scores in (first, second)]
    db_path = storage.crawldb_path(crawl.dir)
    unboosted = [records(candidates(storage.read_table(spark, db_path, "crawldb", v), parse_rows(spark, crawl.dir),
                                    crawl.conf()), v).cache() for v in versions]
    shifts = {}
    for kind in ("power", "log", "percentile", "minmax", "raw"):
        before, after = ({r.url: r.boost for r in with_boost(df, crawl.conf(export__boost=kind))[0].collect()}
                         for df in unboosted)
        common = sorted(before)
        x, y = np.array([before[u] for u in common]), np.array([after[u] for u in common])
        assert spearmanr(x, y).statistic > 0.95, kind
        assert kendalltau(x, y).statistic > 0.9, kind
        shifts[kind] = abs(np.median(y) / np.median(x) - 1)
    # Raw PageRank shrinks as the crawl grows (why the others normalise); they stay within 2 %.
    assert shifts["raw"] > 0.03, shifts
    assert max(shifts[k] for k in ("power", "log", "percentile", "minmax")) < 0.02, shifts


@pytest.mark.parametrize("kind", ["power", "log"])
def test_boosts_stay_finite_floats(spark, kind):
    """A huge score ratio overflows (s / m) ** p and log2 to infinity, which FeatureField
    refuses: the boost is clamped to the largest float instead."""
    records = spark.createDataFrame([("http://a.test/", 1e-300), ("http://b.test/", 1e-300), ("http://c.test/", 1e300)],
                                    "url string, score double")
    boosted, _ = with_boost(records, make_conf(export__boost=kind, export__power=1.0))
    got = {r.url: r.boost for r in boosted.collect()}
    largest_float = float(np.finfo(np.float32).max)  # Java's Float.MAX_VALUE
    assert got["http://c.test/"] == largest_float
    assert all(MIN_BOOST <= b <= largest_float for b in got.values())
