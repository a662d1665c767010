"""crawlkit stats and the snapshot it reads: whole outputs on the small crawl (conftest.py)."""
import pytest

from smallcrawl import NOW, SEG1, SEG2

from crawlkit.inspect import counts_by_status, crawl_stats, snapshot
from crawlkit.inspect.stats import bin_edges


def test_snapshot_pairs_each_crawldb_version_with_the_linkdb_of_its_time(spark, small_crawl):
    got = {v: (s.linkdb_version, sorted(s.generated))
           for v in range(5) for s in [snapshot(spark, small_crawl, v)]}
    assert got == {0: (None, []),            # the crawldb was created before the linkdb
                   1: (0, []), 2: (0, [SEG1]),
                   3: (1, [SEG1]),           # round 1's links were committed just before its crawldb
                   4: (1, [SEG1, SEG2])}
    assert snapshot(spark, small_crawl).crawldb_version == 4


def test_a_copied_crawl_keeps_each_crawldb_version_with_its_links(spark, small_crawl, tmp_path):
    """Delta's commit times are the log files' modification times, which a copy rewrites:
    here the link table's files are a day newer than the crawldb's, as a copy made in that
    order (or a restore) leaves them."""
    import os
    import shutil
    import time

    copy = tmp_path / "copy"
    shutil.copytree(small_crawl, copy)
    later = time.time() + 86400
    for log in (copy / "linkdb" / "_delta_log").glob("*.json"):
        os.utime(log, (later, later))
    assert [snapshot(spark, str(copy), v).linkdb_version for v in (3, 4)] == [1, 1]


def test_snapshot_refuses_a_version_that_does_not_exist(spark, small_crawl, tmp_path):
    with pytest.raises(ValueError, match=r"crawldb version 9 does not exist \(versions 0..4\)"):
        snapshot(spark, small_crawl, 9)
    with pytest.raises(ValueError, match="no crawldb"):
        snapshot(spark, str(tmp_path))


def _bin(index, count, **extra):
    return {"bin": index, **bin_edges(index, 4), **extra, "count": count}


def test_stats_of_the_latest_version(spark, small_crawl, conf):
    assert crawl_stats(snapshot(spark, small_crawl), conf, NOW) == {
        "crawldb_version": 4, "linkdb_version": 1, "committed_at": snapshot(spark, small_crawl).committed_at,
        # 6 pages: the virtual page and its link are not counted
        "totals": {"urls": 6, "hosts": 3, "domains": 3, "fetched": 2, "links": 6, "due": 3},
        "by_status": {"fetched": 2, "gone": 1, "retry": 1, "unfetched": 2},
        "top_hosts": [{"host": "a.test", "urls": 3, "fetched": 2, "unfetched": 1, "failed": 0},
                      {"host": "b.test", "urls": 2, "fetched": 0, "unfetched": 0, "failed": 2},
                      {"host": "c.test", "urls": 1, "fetched": 0, "unfetched": 1, "failed": 0}],
        "score": {"min": 0.0, "p10": 0.0, "p25": 0.05, "p50": 0.1, "p75": 0.25, "p90": 0.4, "p99": 0.4,
                  "max": 0.4, "mean": pytest.approx(1.0 / 6), "sum": pytest.approx(1.0)},
        # four bins per decade: 0.05 in [10^-1.5, 10^-1.25), 0.1 in [10^-1, 10^-0.75), ...
        "bins_per_decade": 4,
        "score_histogram": [_bin(None, 1), _bin(-6, 1), _bin(-4, 1), _bin(-3, 2), _bin(-2, 1)],
        "score_histogram_by_status": [
            _bin(None, 1, status="retry"), _bin(-6, 1, status="unfetched"), _bin(-4, 1, status="gone"),
            _bin(-3, 1, status="fetched"), _bin(-3, 1, status="unfetched"), _bin(-2, 1, status="fetched")],
        "fetch_interval": [{"band": "[1h, 6h)", "min_seconds": 3600, "count": 1},
                           {"band": "[1d, 7d)", "min_seconds": 86400, "count": 1},
                           {"band": "[30d, 90d)", "min_seconds": 2592000, "count": 4}],
        # a.test/x and b.test/z are past their fetch time, a.test/y never fetched; c.test/ is locked
        "due": {"now": NOW, "by_status": {"fetched": 1, "retry": 1, "unfetched": 1}},
    }


def test_counts_by_status_keeps_its_demo_signature(spark, small_crawl):
    assert counts_by_status(spark, small_crawl) == {"fetched": 2, "gone": 1, "retry": 1, "unfetched": 2}
    assert counts_by_status(spark, small_crawl, version=1) == {"unfetched": 6}


def test_a_score_without_a_log_bin_falls_in_the_lowest_not_an_error(spark):
    from crawlkit.inspect.stats import bin_edges, score_bin
    scores = [0.0, -1.0, float("inf"), float("nan"), 0.01, 1.0]
    df = spark.createDataFrame([(s,) for s in scores], "score double")
    bins = [r[0] for r in df.select(score_bin(df.score, 4)).collect()]
    assert bins == [None, None, None, None, -8, 0]
    assert [bin_edges(b, 4)["low"] for b in bins[-2:]] == [0.01, 1.0]
