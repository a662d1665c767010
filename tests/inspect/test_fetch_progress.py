"""Fetch progress: the line, the driver's bookkeeping, and the channel from Spark tasks."""
import logging
import socket
import time
from datetime import datetime

from crawlkit import schemas, storage
from crawlkit.conf import make_conf
from crawlkit.fetch import FetchStats
from crawlkit.progress import FetchProgress, Snapshot, fetch_progress, format_line
from crawlkit.replay.testing import replay_factory  # noqa: F401  (fixture)
from crawlkit.stages.fetch import run_fetch

SEGMENT = "20260301000000"


def test_the_progress_line():
    totals = {"rows": 412, "bytes": 3_100_000, "errors": 7, "slowest": [("s3.test", 820.4), ("s1.test", 410.0)]}
    assert format_line("fetch", totals, 1000, 32.96, (1, 4)) == (
        "fetch: 412/1000 pages (41%), 12.5 pages/s, 3.1 MB, 7 errors, tasks 1/4 done; "
        "slowest hosts: s3.test 820 ms, s1.test 410 ms")
    empty = {"rows": 0, "bytes": 0, "errors": 0, "slowest": []}
    assert format_line("fetch", empty, 0, 0.0, None) == "fetch: 0/0 pages (100%), 0.0 pages/s, 0 B, 0 errors"


def _message(partition, attempt, rows, slowest=()):
    return {"partition": partition, "attempt": attempt, "rows": rows, "bytes": 10 * rows, "errors": 1,
            "elapsed_s": rows / 10, "slowest": [list(s) for s in slowest]}


def test_the_driver_keeps_the_newest_counters_of_each_partition():
    snap = Snapshot()
    assert snap.add(_message(0, 0, 5, [("a.test", 100.0)]))
    assert snap.add(_message(1, 0, 3, [("b.test", 300.0), ("c.test", 50.0)]))
    assert snap.add(_message(0, 0, 8, [("a.test", 120.0)]))      # cumulative: replaces, not adds
    assert not snap.add(_message(0, 0, 8, [("a.test", 120.0)]))  # a duplicate changes nothing
    assert snap.add(_message(1, 1, 1, [("b.test", 200.0)]))      # a retried task starts over
    assert not snap.add(_message(1, 0, 9))                       # late news of the failed attempt
    assert snap.totals() == {"rows": 9, "bytes": 90, "errors": 2,
                             "slowest": [("b.test", 200.0), ("a.test", 120.0)]}


def _slow_fetch(sink):
    """A stand-in for the fetch task: rows come out slowly, FetchStats filled as they do."""
    def run(batches):
        import pyarrow as pa
        for batch in batches:
            for i in batch.column(0).to_pylist():
                stats = FetchStats()
                rows = ({"url": f"http://h{i}.test/{n}", "host": f"h{i}.test", "fetch_status": "success",
                         "error": "HTTP 500" if n == 0 else None, "content": b"x" * 100, "elapsed_ms": 10 * (i + 1)}
                        for n in range(6))

                def fetched(rows=rows, stats=stats):
                    for row in rows:
                        time.sleep(0.15)
                        stats.record(row)
                        yield row
                done = sum(1 for _ in sink.follow(fetched(), stats))
                yield pa.RecordBatch.from_pydict({"rows": [done]})
    return run


def test_spark_tasks_report_to_the_driver_while_they_run(spark, caplog):
    caplog.set_level(logging.INFO, logger="crawlkit.progress")
    todo = spark.range(0, 2, numPartitions=2)
    with FetchProgress(spark, "fetch", 12, every=0.3) as sink:
        assert todo.mapInArrow(_slow_fetch(sink), "rows long").agg({"rows": "sum"}).first()[0] == 12
    lines = [r.getMessage() for r in caplog.records if r.name == "crawlkit.progress"]
    assert len(lines) >= 2, lines                         # some while running, one at the end
    assert lines[-1].startswith("fetch: 12/12 pages (100%), ")
    assert ", 1.2 kB, 2 errors" in lines[-1]
    assert lines[-1].endswith("; slowest hosts: h1.test 20 ms, h0.test 10 ms (end)")
    assert any("/12 pages" in line and not line.startswith("fetch: 12/12") for line in lines[:-1]), lines


def test_no_channel_when_progress_is_not_logged(spark, caplog):
    caplog.set_level(logging.WARNING, logger="crawlkit.progress")
    with fetch_progress(spark, "fetch", spark.range(3)) as sink:
        assert sink is None


def test_no_channel_when_the_driver_has_no_address_to_listen_on(spark, caplog, monkeypatch):
    def unresolvable(host):
        raise socket.gaierror(f"cannot resolve {host}")
    monkeypatch.setattr("crawlkit.progress._family", unresolvable)
    caplog.set_level(logging.INFO, logger="crawlkit.progress")
    with fetch_progress(spark, "fetch", spark.range(3)) as sink:
        assert sink is None
    host = spark.sparkContext.getConf().get("spark.driver.host")
    assert [r.getMessage() for r in caplog.records] == [f"fetch: no progress line (cannot resolve {host})"]


def test_the_fetch_stage_logs_progress_while_it_fetches(spark, tmp_path, caplog, monkeypatch, replay_factory):
    """The real stage through the replay web: two hosts, 0.2 s apart per host."""
    monkeypatch.setattr("crawlkit.progress.LOG_EVERY", 0.3)
    caplog.set_level(logging.INFO, logger="crawlkit.progress")
    server = replay_factory(["gen:10,seed=1"])
    conf = make_conf(crawl__dir=str(tmp_path / "crawl"), fetcher__proxy=server.proxy_url,
                     fetcher__server_delay=0.2, fetcher__threads=2, fetcher__proxy_resolve_targets=False,
                     generate__partitions=2, spark__shuffle_partitions=2)
    rows = [dict(url=f"http://p{h}.test/__trap/page/leaf-{n}", host=f"p{h}.test", score=1.0, status="unfetched",
                 depth=0, etag=None, last_modified=None, signature=None, retries=0, segment=SEGMENT)
            for h in range(2) for n in range(6)]
    storage.write_segment_part(spark.createDataFrame(rows, schemas.struct("fetchlist")), conf["crawl.dir"],
                               SEGMENT, "fetchlist", "fetchlist")
    assert run_fetch(spark, conf, datetime(2026, 3, 1), SEGMENT)["by_status"] == {"success": 12}
    lines = [r.getMessage() for r in caplog.records if r.name == "crawlkit.progress"]
    assert lines[-1].startswith("fetch: 12/12 pages (100%), ") and lines[-1].endswith(" (end)"), lines
    assert "0 errors" in lines[-1] and "slowest hosts: p" in lines[-1]
    assert len(lines) >= 2, lines


def test_a_driver_name_the_executor_cannot_resolve_never_fails_the_task():
    from crawlkit.progress import ProgressSink

    sink = ProgressSink("driver.invalid", 9, "token")   # .invalid never resolves (RFC 2606)
    rows = [{"url": f"http://a.test/{i}"} for i in range(3)]
    assert list(sink.follow(iter(rows), FetchStats())) == rows
