"""`crawlkit maintain` with maintain.keep_segments: old segments nothing reads are deleted."""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from crawlkit import schemas, storage
from crawlkit.export.pages import candidates, parse_rows
from crawlkit.scoring.job import crawled_texts
from crawlkit.stages.maintain import maintenance_due, run_maintain
from crawlkit.stages.segment_pruning import prune_segments

NOW = datetime(2026, 3, 1)
SEGMENTS = ["20260101000000", "20260102000000", "20260103000000", "20260104000000", "20260105000000"]


def _parse(url: str, signature: str, segment: str, status: str = "success") -> dict:
    return {"url": url, "parse_status": status, "title": f"{url} @ {segment}", "text": f"text {signature}",
            "signature": signature, "noindex": False, "nofollow": False, "segment": segment}


def _db_row(url: str, signature: str | None, status: str = "fetched", locked_by: str | None = None) -> dict:
    return {"url": url, "host": "a.test", "domain": "a.test", "status": status, "fetch_time": NOW,
            "fetch_interval": 86400, "score": 1.0, "depth": 0, "retries": 0, "metadata": {}, "opic_cash": 0.0,
            "opic_history": 0.0, "change_count": 0, "check_count": 0, "schema_version": 1,
            "signature": signature, "generated_segment": locked_by,
            "generate_time": NOW if locked_by else None}


def _crawl(spark, crawl_dir: str, parses: dict[str, list[dict]], db: list[dict], finished: set[str]) -> None:
    """Segments with the given parse rows (and a content part each), ``round.json`` for the
    finished ones and ``updatedb.json`` for every one; a crawldb of ``db``."""
    for segment in SEGMENTS:
        rows = parses.get(segment, [])
        storage.write_segment_part(schemas.frame(spark, "parse", rows), crawl_dir, segment, "parse", "parse")
        storage.write_segment_part(schemas.empty(spark, "content"), crawl_dir, segment, "content", "content")
        storage.write_stats(spark, crawl_dir, segment, "updatedb", {"version": 1})
        if segment in finished:
            storage.write_stats(spark, crawl_dir, segment, "round", {"segment": segment})
    schemas.frame(spark, "crawldb", db).write.format("delta").save(storage.crawldb_path(crawl_dir))


def _outputs(spark, crawl_dir: str):
    """What export and similarity scoring read from the segments, by URL."""
    db = storage.read_table(spark, storage.crawldb_path(crawl_dir), "crawldb")
    pages = {r.source_url: (r.title, r.skip) for r in candidates(db, parse_rows(spark, crawl_dir), _conf()).collect()}
    texts = {r.url: r.text for r in crawled_texts(spark, crawl_dir, None).collect()}
    return pages, texts


def _conf():
    return {"export.score": ""}


def test_pruning_deletes_the_old_segments_no_page_needs_and_keeps_what_export_and_scoring_read(spark, tmp_path):
    crawl_dir = str(tmp_path / "crawl")
    s1, s2, s3, s4, s5 = SEGMENTS
    parses = {
        # a: fetched in s1, refetched with new content in s3: s1 is no page's any more
        s1: [_parse("http://a.test/a", "A1", s1), _parse("http://a.test/b", "B1", s1),
             _parse("http://a.test/gone", "G1", s1)],
        # b: refetched unchanged with a 304 ever since (no parse row): its s1 parse is current;
        # c: parsed in s2 only; d: its parse in s2 failed (nothing to keep)
        s2: [_parse("http://a.test/c", "C1", s2), _parse("http://a.test/d", None, s2, status="failed")],
        s3: [_parse("http://a.test/a", "A2", s3)],
        s4: [_parse("http://a.test/a", "A3", s4)],   # a's newest parse, not yet what the crawldb says
        s5: [],
    }
    db = [_db_row("http://a.test/a", "A2"), _db_row("http://a.test/b", "B1", status="not_modified"),
          _db_row("http://a.test/c", "C1"), _db_row("http://a.test/gone", "G1", status="gone"),
          _db_row("http://a.test/d", None, status="fetched")]
    _crawl(spark, crawl_dir, parses, db, finished=set(SEGMENTS))
    before = _outputs(spark, crawl_dir)

    counters = prune_segments(spark, crawl_dir, keep=2)

    # s1 holds b's current parse (and gone's, which nothing reads: gone is not indexable but
    # its s1 parse is also its newest, the similarity corpus's), s2 c's, s3 a's current one
    # (the crawldb's signature A2), s4 and s5 are the two newest
    assert counters["removed"] == [] and counters["kept_needed"] == 3
    assert storage.list_segments(spark, crawl_dir) == SEGMENTS

    # without b's and gone's rows in s1, and with c refetched into s4, s1 and s2 go
    parses[s1] = [_parse("http://a.test/a", "A1", s1)]
    parses[s4].append(_parse("http://a.test/c", "C1", s4))
    crawl_dir = str(tmp_path / "crawl2")
    _crawl(spark, crawl_dir, parses, [r for r in db if r["url"] not in ("http://a.test/b", "http://a.test/gone")],
           finished=set(SEGMENTS))
    before = _outputs(spark, crawl_dir)

    counters = prune_segments(spark, crawl_dir, keep=2)

    assert counters["removed"] == [s1, s2] and counters["kept_needed"] == 1 and counters["bytes_freed"] > 0
    assert storage.list_segments(spark, crawl_dir) == [s3, s4, s5]
    assert not (Path(crawl_dir) / "_pruning").exists()
    # export and similarity scoring read exactly what they read before
    assert _outputs(spark, crawl_dir) == before
    assert before[0]["http://a.test/a"] == (f"http://a.test/a @ {s3}", None)


def test_unsettled_segments_are_kept(spark, tmp_path):
    crawl_dir = str(tmp_path / "crawl")
    s1, s2, s3, s4, s5 = SEGMENTS
    db = [_db_row("http://a.test/x", None, status="unfetched", locked_by=s2)]
    # no page needs any parse; s1 finished; s2 locks a URL; s3 applied by a bare `updatedb`
    # with a newer applied segment after it; s4 the newest applied one (a resumed round may
    # still score it); s5 kept as the newest
    _crawl(spark, crawl_dir, {}, db, finished={s1})

    counters = prune_segments(spark, crawl_dir, keep=1)

    assert counters["removed"] == [s1, s3]
    assert storage.list_segments(spark, crawl_dir) == [s2, s4, s5]


def test_a_run_killed_after_the_move_is_finished_by_the_next(spark, tmp_path):
    crawl_dir = str(tmp_path / "crawl")
    _crawl(spark, crawl_dir, {}, [_db_row("http://a.test/x", None, status="unfetched")], finished=set(SEGMENTS))
    leftover = Path(crawl_dir) / "_pruning" / "20251231000000" / "content"
    leftover.mkdir(parents=True)
    (leftover / "part-0.parquet").write_bytes(b"x")

    counters = prune_segments(spark, crawl_dir, keep=4)

    assert counters["removed"] == [SEGMENTS[0]] and not (Path(crawl_dir) / "_pruning").exists()


def test_maintain_prunes_and_counts_rounds_from_its_last_run(spark, make_test_conf):
    conf = make_test_conf(maintain__keep_segments=2, maintain__every_rounds=3)
    crawl_dir = conf["crawl.dir"]
    _crawl(spark, crawl_dir, {}, [_db_row("http://a.test/x", None, status="unfetched")], finished=set(SEGMENTS))
    assert maintenance_due(spark, conf)   # 5 rounds, never maintained

    result = run_maintain(spark, conf, NOW)

    assert result["segments"]["removed"] == SEGMENTS[:3] and result["newest_segment"] == SEGMENTS[-1]
    stats = json.loads(storage.read_text(spark, storage.join(crawl_dir, "_stats", "maintain-20260301000000.json")))
    assert stats["segments"]["removed"] == SEGMENTS[:3]
    # two segments left: counted by the number of segments (2 % 3) or from the start it would
    # be wrong either way; counted from the last run's newest segment it is due after 3 more
    for k, name in enumerate(["20260106000000", "20260107000000", "20260108000000"], start=1):
        (Path(crawl_dir) / "segments" / name).mkdir()
        assert maintenance_due(spark, conf) == (k == 3), name


def test_counters_written_before_the_record_keep_the_old_count(spark, make_test_conf):
    conf = make_test_conf(maintain__every_rounds=2)
    crawl_dir = conf["crawl.dir"]
    storage.write_json_file(spark, storage.join(crawl_dir, "_stats"), "maintain-20260101000000.json",
                            {"retain_hours": 168})
    for name in SEGMENTS[:3]:
        (Path(crawl_dir) / "segments" / name).mkdir(parents=True)
        assert maintenance_due(spark, conf) == (name == SEGMENTS[1]), name


def test_nothing_is_pruned_by_default(spark, make_test_conf):
    conf = make_test_conf()
    _crawl(spark, conf["crawl.dir"], {}, [_db_row("http://a.test/x", None, status="unfetched")],
           finished=set(SEGMENTS))
    assert "segments" not in run_maintain(spark, conf, NOW)
    assert storage.list_segments(spark, conf["crawl.dir"]) == SEGMENTS
