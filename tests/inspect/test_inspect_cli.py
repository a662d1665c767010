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


def test_stats_json_is_the_whole_stats_dict(run, latest_stats):
    (line,), _ = run("stats", "--json")
    assert json.loads(line) == json.loads(json.dumps(latest_stats, default=str))


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
    (line,), _ = run("dump", "--url", "http://a.test/x", "--json", "--quiet")
    got = json.loads(line)
    link = {"nofollow": False, "meta": None, "first_seen": str(NOW), "last_seen": str(NOW)}
    assert (got["record"]["status"], got["record"]["fetch_interval"], got["inlinks"], got["outlinks"]) == (
        "fetched", 2 * 86400,
        {"total": 1, "links": [{"src": "http://a.test/", "anchor": "About X", **link,
                                "src_status": "fetched", "src_score": 0.4}]},
        {"total": 1, "links": [{"dst": "http://a.test/", "anchor": "home", **link,
                                "dst_status": "fetched", "dst_score": 0.4}]})


def test_a_bad_version_is_an_error_message(spark, small_crawl, capsys):
    with pytest.raises(SystemExit, match="crawlkit stats: crawldb version 7 does not exist"):
        main(["stats", "--crawl-dir", small_crawl, "--version", "7", "--quiet", *session_conf(spark)])
