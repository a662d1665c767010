"""`crawlkit maintain`: OPTIMIZE and VACUUM of the crawl's Delta tables, rows unchanged."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

from crawlkit import schemas, storage
from crawlkit.stages.maintain import maintenance_due, run_maintain

NOW = datetime(2026, 3, 1)


def _fragmented_crawldb(spark, conf, appends: int = 4):
    """A crawldb written by ``appends`` small appends, then an update of some rows (deletion
    vectors, replaced files): what rounds leave behind."""
    path = storage.crawldb_path(conf["crawl.dir"])
    table = storage.ensure_table(spark, path, "crawldb")
    for batch in range(appends):
        rows = [{"url": f"http://h{batch}.test/p{i}", "host": f"h{batch}.test", "domain": f"h{batch}.test",
                 "status": "unfetched", "fetch_time": NOW, "fetch_interval": 86400, "score": float(i), "depth": 1,
                 "retries": 0, "metadata": {}, "opic_cash": 0.0, "opic_history": 0.0, "change_count": 0,
                 "check_count": 0, "schema_version": 1} for i in range(20)]
        schemas.frame(spark, "crawldb", rows).coalesce(1).write.format("delta").mode("append").save(path)
    table.update("url like '%/p1%'", {"score": "score + 1"})
    return path


def _files(spark, path) -> int:
    return spark.sql(f"DESCRIBE DETAIL delta.`{storage.qualified(spark, path)}`").first()["numFiles"]


def test_maintain_compacts_and_vacuums_every_table_with_its_rows_unchanged(spark, make_test_conf):
    conf = make_test_conf(maintain__retain_hours=0)
    path = _fragmented_crawldb(spark, conf)
    before = spark.read.format("delta").load(path).collect()
    files_before = _files(spark, path)
    assert files_before >= 4

    counters = run_maintain(spark, conf, NOW)

    after = spark.read.format("delta").load(path).collect()
    assert {r.url: r for r in after} == {r.url: r for r in before} and len(after) == len(before) == 80
    crawldb = counters["crawldb"]
    assert _files(spark, path) == crawldb["files_written"] < files_before <= crawldb["files_compacted"] + 1
    # retain 0 hours: on disk only the compacted files are left (of the appends, the update's and their deletion vectors)
    on_disk = [p for p in Path(path).rglob("*") if p.is_file() and "_delta_log" not in p.parts and not p.name.startswith(".")]
    assert len(on_disk) == crawldb["files_written"]
    assert crawldb["bytes_before"] > 0 and crawldb["bytes_after"] > 0
    assert "linkdb" not in counters   # no such table yet: nothing made up
    assert storage.commit_tags(spark, path)[-1] == f"maintain:{NOW.isoformat()}"
    # retain 0 hours: the versions before the compaction are gone
    assert storage.unreadable_version(spark, path, "crawldb", 1) == "vacuumed"
    stats = storage.read_text(spark, storage.join(conf["crawl.dir"], "_stats", "maintain-20260301000000.json"))
    assert '"files_written"' in stats


def test_the_default_retention_keeps_the_versions_of_the_last_week(spark, make_test_conf):
    conf = make_test_conf()
    path = _fragmented_crawldb(spark, conf, appends=3)
    counters = run_maintain(spark, conf, NOW)
    assert counters["retain_hours"] == 168 and counters["crawldb"]["files_compacted"] >= 3
    # the files were written just now: every old version is still readable
    assert storage.unreadable_version(spark, path, "crawldb", 1) is None
    assert spark.read.format("delta").option("versionAsOf", 1).load(path).count() == 20


def test_maintenance_is_due_after_every_nth_round(spark, make_test_conf, tmp_path):
    conf = make_test_conf(maintain__every_rounds=2)
    segments = tmp_path / "crawl" / "segments"
    for name in ("20260101000000", "20260102000000", "20260103000000"):
        (segments / name).mkdir(parents=True)
        due = maintenance_due(spark, conf)
        assert due == (name == "20260102000000"), name
    assert not maintenance_due(spark, make_test_conf(maintain__every_rounds=0))


def test_the_command_holds_the_round_lock():
    from crawlkit.cli import WRITERS, build_parser

    assert build_parser().parse_args(["maintain", "--crawl-dir", "c"]).command == "maintain"
    assert "maintain" in WRITERS
