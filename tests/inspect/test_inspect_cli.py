"""The inspection commands on the command line: text by default, the whole dict with --json."""
import json

import pytest

from smallcrawl import NOW

from crawlkit.cli import main
from crawlkit.inspect import snapshot


def session_conf(spark):
    """--conf flags that keep the shared test session's settings (the CLI reuses that session)."""
    return ["--conf", f"spark.checkpoint_dir={spark.sparkContext.getCheckpointDir()}",
            "--conf", "spark.shuffle_partitions=2"]


@pytest.fixture
def run(spark, small_crawl, capsys):
    """``run(*args) -> (stdout lines, stderr)`` of ``crawlkit <args> --crawl-dir <small crawl>``."""
    def call(*args):
        code = main([*args, "--crawl-dir", small_crawl, "--now", NOW.isoformat(), *session_conf(spark)])
        out, err = capsys.readouterr()
        assert code == 0, err
        return out.splitlines(), err
    return call


def test_stats_json_of_an_older_version(run, spark, small_crawl):
    """Version 1, right after inject: the tables as they were then, as one JSON document."""
    (line,), _ = run("stats", "--json", "--version", "1", "--hosts", "1")
    zero = {"bin": None, "low": None, "high": 0.0}
    assert json.loads(line) == {
        "crawldb_version": 1, "linkdb_version": 0, "committed_at": str(snapshot(spark, small_crawl, 1).committed_at),
        "totals": {"urls": 6, "hosts": 3, "domains": 0, "fetched": 0, "links": 0, "due": 6},
        "by_status": {"unfetched": 6},
        "top_hosts": [{"host": "a.test", "urls": 3, "fetched": 0, "unfetched": 3, "failed": 0}],
        "score": {"min": 0.0, "p10": 0.0, "p25": 0.0, "p50": 0.0, "p75": 0.0, "p90": 0.0, "p99": 0.0,
                  "max": 0.0, "mean": 0.0, "sum": 0.0},
        "bins_per_decade": 4,
        "score_histogram": [{**zero, "count": 6}],
        "score_histogram_by_status": [{**zero, "status": "unfetched", "count": 6}],
        "fetch_interval": [{"band": "[30d, 90d)", "min_seconds": 2592000, "count": 6}],
        "due": {"now": str(NOW), "by_status": {"unfetched": 6}},
    }


def test_top_prints_a_table_then_the_versions_it_read(run, spark, small_crawl):
    lines, _ = run("top", "--n", "3")
    committed = snapshot(spark, small_crawl).committed_at
    assert lines == [
        "rank       score  status        inlinks  url",
        "   1         0.4  fetched             3  http://a.test/  (backlinks=3, pagerank=0.4)",
        "   2        0.25  unfetched           0  http://c.test/",
        "   3         0.2  fetched             1  http://a.test/x  (backlinks=1, pagerank=0.2)",
        json.dumps({"committed_at": str(committed), "crawldb_version": 4, "linkdb_version": 1}),
    ]


def test_dump_normalizes_the_url_and_lists_links(run, spark, small_crawl):
    lines, _ = run("dump", "--url", "HTTP://A.TEST", "--limit", "1")
    snap = snapshot(spark, small_crawl)
    assert lines[:2] == ["http://a.test/", f"crawldb version 4 (committed {snap.committed_at}), linkdb version 1"]
    assert lines[-7:] == [
        "", "inlinks: 3 (best 1 shown)",
        '        0.25  unfetched     http://c.test/  "see A"',
        "", "outlinks: 3 (best 1 shown)",
        '         0.2  fetched       http://a.test/x  "About X"',
        json.dumps({"committed_at": str(snap.committed_at), "crawldb_version": 4, "linkdb_version": 1}),
    ]


def test_a_bad_version_is_an_error_message(spark, small_crawl, capsys):
    with pytest.raises(SystemExit, match="crawlkit stats: crawldb version 7 does not exist"):
        main(["stats", "--crawl-dir", small_crawl, "--version", "7", "--quiet", *session_conf(spark)])


def test_looking_at_a_mistyped_crawl_directory_leaves_nothing_behind(spark, tmp_path, capsys):
    typo = tmp_path / "typo"
    with pytest.raises(SystemExit, match="no crawldb"):
        main(["stats", "--crawl-dir", str(typo), "--quiet", "--conf", "spark.shuffle_partitions=2"])
    assert not typo.exists()   # no _checkpoints/<uuid> made for a read-only command


@pytest.mark.parametrize("argv", [["top", "--n", "-1"], ["stats", "--hosts", "x"], ["dump", "--url", "a", "--limit", "-5"]])
def test_a_negative_count_is_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--crawl-dir", "nowhere"])
    assert exit_.value.code == 2 and "expected a count" in capsys.readouterr().err
