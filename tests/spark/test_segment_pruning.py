"""`crawlkit maintain` with maintain.keep_segments: old segments nothing reads are deleted."""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from crawlkit import schemas, storage
from crawlkit.export.pages import candidates, parse_rows
from crawlkit.scoring.job import crawled_texts
from crawlkit.stages.maintain import maintenance_due, run_maintain
from crawlkit.stages.segment_pruning import prune_segments
from crawlkit.storage import SegmentStateError

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
    # each is cut to the rows pages need (s1 loses a's old parse, s2 d's failed one) and loses
    # its content and fetch list; export and similarity scoring read what they read before
    assert counters["slimmed"] == [s1, s2, s3] and counters["bytes_freed"] > 0
    assert _outputs(spark, crawl_dir) == before
    kept = {(r.segment, r.url) for r in storage.read_segment_part(spark, crawl_dir, s1, "parse", "parse").collect()}
    assert kept == {(s1, "http://a.test/b"), (s1, "http://a.test/gone")}
    assert not (Path(crawl_dir) / "segments" / s2 / "content").exists()
    assert (Path(crawl_dir) / "segments" / s4 / "content").exists()
    assert prune_segments(spark, crawl_dir, keep=2)["slimmed"] == []   # nothing more to cut

    # without b's and gone's rows in s1, and with c refetched into s4, s1 and s2 go
    parses[s1] = [_parse("http://a.test/a", "A1", s1)]
    parses[s4].append(_parse("http://a.test/c", "C1", s4))
    crawl_dir = str(tmp_path / "crawl2")
    _crawl(spark, crawl_dir, parses, [r for r in db if r["url"] not in ("http://a.test/b", "http://a.test/gone")],
           finished=set(SEGMENTS))
    before = _outputs(spark, crawl_dir)

    counters = prune_segments(spark, crawl_dir, keep=2)

    assert counters["removed"] == [s1, s2] and counters["kept_needed"] == 1 and counters["bytes_freed"] > 0
    assert counters["slimmed"] == [s3]   # its content
    assert storage.list_segments(spark, crawl_dir) == [s3, s4, s5]
    assert not (Path(crawl_dir) / "_pruning").exists()
    # export and similarity scoring read exactly what they read before
    assert _outputs(spark, crawl_dir) == before
    assert before[0]["http://a.test/a"] == (f"http://a.test/a @ {s3}", None)


def test_unsettled_segments_are_kept(spark, tmp_path):
    crawl_dir = str(tmp_path / "crawl")
    s1, s2, s3, s4, s5 = SEGMENTS
    db = [_db_row("http://a.test/x", None, status="unfetched", locked_by=s2)]
    # no page needs any parse; s1 finished; s2 locks a URL; s3 was applied late, by hand
    # (`updatedb --segment`, after s4): the crawldb's newest updatedb commit names it, so a
    # resumed round scores it; s4 applied by a bare `updatedb`; s5 kept as the newest
    _crawl(spark, crawl_dir, {}, db, finished={s1})
    with storage.commit_tag(spark, f"updatedb:{s3}"):
        storage.ensure_table(spark, storage.crawldb_path(crawl_dir), "crawldb").update(set={"score": "2.0"})

    counters = prune_segments(spark, crawl_dir, keep=1)

    assert counters["removed"] == [s1, s4]
    assert storage.list_segments(spark, crawl_dir) == [s2, s3, s5]


def test_a_duplicate_keeps_the_parse_of_its_content(spark, tmp_path):
    crawl_dir = str(tmp_path / "crawl")
    s1, s2, s3, *_ = SEGMENTS
    # the duplicate's content is s1's (D1); its newest parse, s3's, is another text a fetch
    # left unapplied (its segment abandoned): dedup may make it fetched again as it is
    _crawl(spark, crawl_dir, {s1: [_parse("http://a.test/d", "D1", s1)], s3: [_parse("http://a.test/d", "D2", s3)]},
           [_db_row("http://a.test/d", "D1", status="duplicate")], finished=set(SEGMENTS))

    assert prune_segments(spark, crawl_dir, keep=2)["removed"] == [s2]


def test_an_orphan_segment_can_be_abandoned_and_is_then_pruned(spark, make_test_conf):
    from crawlkit.resume import abandon_segment
    conf = make_test_conf()
    crawl_dir = conf["crawl.dir"]
    _crawl(spark, crawl_dir, {}, [_db_row("http://a.test/x", None, status="unfetched")], finished=set(SEGMENTS[1:]))
    # generate died between writing s1's fetch list and its lock commit: no stats, no lock, no tag
    (Path(crawl_dir) / "segments" / SEGMENTS[0] / "_stats" / "updatedb.json").unlink()
    assert prune_segments(spark, crawl_dir, keep=1)["removed"] == SEGMENTS[1:4]

    assert abandon_segment(spark, conf, SEGMENTS[0], NOW)["released"] == 0

    assert prune_segments(spark, crawl_dir, keep=1)["removed"] == [SEGMENTS[0]]


def test_a_run_killed_after_the_move_is_finished_by_the_next(spark, tmp_path):
    crawl_dir = str(tmp_path / "crawl")
    _crawl(spark, crawl_dir, {}, [_db_row("http://a.test/x", None, status="unfetched")], finished=set(SEGMENTS))
    leftover = Path(crawl_dir) / "_pruning" / "20251231000000" / "content"
    leftover.mkdir(parents=True)
    (leftover / "part-0.parquet").write_bytes(b"x")

    # and one killed between the delete and the rename of a rewritten parse part
    rewritten = Path(crawl_dir) / "segments" / SEGMENTS[4]
    (rewritten / "parse").rename(rewritten / ".parse.writing")

    counters = prune_segments(spark, crawl_dir, keep=4)

    assert counters["removed"] == [SEGMENTS[0]] and not (Path(crawl_dir) / "_pruning").exists()
    assert storage.segment_part_exists(spark, crawl_dir, SEGMENTS[4], "parse")


def test_maintain_prunes_and_counts_rounds_from_its_last_run(spark, make_test_conf):
    conf = make_test_conf(maintain__keep_segments=2, maintain__every_rounds=3)
    crawl_dir = conf["crawl.dir"]
    _crawl(spark, crawl_dir, {}, [_db_row("http://a.test/x", None, status="unfetched")], finished=set(SEGMENTS))

    later = datetime(2026, 12, 1)   # run by hand, on the wall clock
    result = run_maintain(spark, conf, later)

    assert result["segments"]["removed"] == SEGMENTS[:3] and result["newest_segment"] == SEGMENTS[-1]
    stats = json.loads(storage.read_text(spark, storage.join(crawl_dir, "_stats", "maintain-20261201000000.json")))
    assert stats["segments"]["removed"] == SEGMENTS[:3]
    # two segments left: counted by their number (2 % 3) it would never be due again; counted
    # from the last run's newest segment it is due after 3 more rounds, and then, run at an
    # earlier pinned time (crawl --now T), counted from that run
    for run in range(2):
        for k in range(1, 4):
            name = f"202601{5 + 3 * run + k:02d}000000"
            (Path(crawl_dir) / "segments" / name).mkdir()
            assert maintenance_due(spark, conf) == (k == 3), name
        run_maintain(spark, conf, NOW)


def test_a_crawl_without_a_recorded_run_is_maintained_every_nth_round(spark, make_test_conf):
    conf = make_test_conf(maintain__every_rounds=2)
    crawl_dir = conf["crawl.dir"]
    # counters of a run from before the record: as a crawl never maintained, every 2nd segment
    storage.write_json_file(spark, storage.join(crawl_dir, "_stats"), "maintain-20260101000000.json",
                            {"retain_hours": 168})
    for name in SEGMENTS[:3]:
        (Path(crawl_dir) / "segments" / name).mkdir(parents=True)
        assert maintenance_due(spark, conf) == (name == SEGMENTS[1]), name


def test_an_export_that_pruning_overtook_is_refused(spark, make_test_conf, monkeypatch):
    from crawlkit.export import job

    conf = make_test_conf(maintain__keep_segments=1)
    crawl_dir = conf["crawl.dir"]
    s1, s2, *_ = SEGMENTS
    page = "http://a.test/a"
    _crawl(spark, crawl_dir, {s1: [_parse(page, "A1", s1)], s2: [_parse(page, "A2", s2)]}, [_db_row(page, "A1")],
           finished=set(SEGMENTS))
    write = job._write

    def overtaken(*args, **kwargs):
        # the export pinned the crawldb where the page's content is s1's; before it reads the
        # segments, a round applies s2's content (A2) and maintain prunes s1
        with storage.commit_tag(spark, f"updatedb:{SEGMENTS[-1]}"):
            storage.ensure_table(spark, storage.crawldb_path(crawl_dir), "crawldb").update(set={"signature": "'A2'"})
        assert run_maintain(spark, conf, NOW)["segments"]["removed"] == [s1, SEGMENTS[2], SEGMENTS[3]]
        return write(*args, **kwargs)

    monkeypatch.setattr(job, "_write", overtaken)
    with pytest.raises(SegmentStateError, match="run the export again"):
        job.run_export(spark, conf)
    monkeypatch.setattr(job, "_write", write)
    assert job.run_export(spark, conf)["records"] == 1   # run again: the page, as s2 has it


def test_nothing_is_pruned_by_default(spark, make_test_conf):
    conf = make_test_conf()
    _crawl(spark, conf["crawl.dir"], {}, [_db_row("http://a.test/x", None, status="unfetched")],
           finished=set(SEGMENTS))
    assert "segments" not in run_maintain(spark, conf, NOW)
    assert storage.list_segments(spark, conf["crawl.dir"]) == SEGMENTS


def test_a_page_in_retry_keeps_the_parse_a_304_makes_current_again(spark, tmp_path):
    crawl_dir = str(tmp_path / "crawl")
    s1, s2, *_ = SEGMENTS
    # u's content is s1's (U1); s2's parse of new text (U2) was never applied (abandoned); u is
    # in retry now, and a 304 would make it not_modified with U1
    _crawl(spark, crawl_dir, {s1: [_parse("http://a.test/u", "U1", s1)], s2: [_parse("http://a.test/u", "U2", s2)]},
           [_db_row("http://a.test/u", "U1", status="retry")], finished=set(SEGMENTS))

    counters = prune_segments(spark, crawl_dir, keep=1)

    assert counters["removed"] == SEGMENTS[2:4] and counters["slimmed"] == [s1, s2]
    assert [r.signature for r in storage.read_segment_part(spark, crawl_dir, s1, "parse", "parse").collect()] == ["U1"]


def test_a_maintain_killed_inside_a_parse_rewrite_is_finished_and_refuses_exports_till_then(
        spark, make_test_conf, monkeypatch):
    from crawlkit.export import job
    from crawlkit.stages import segment_pruning

    conf = make_test_conf(maintain__keep_segments=1, maintain__every_rounds=2)
    crawl_dir = conf["crawl.dir"]
    s1 = SEGMENTS[0]
    page = "http://a.test/u"
    _crawl(spark, crawl_dir, {s1: [_parse(page, "U1", s1), _parse("http://a.test/old", "O1", s1, status="failed")]},
           [_db_row(page, "U1")], finished=set(SEGMENTS))
    run_maintain(spark, conf, NOW)   # the segments before are counted from here
    for name in ("20260106000000", "20260107000000"):
        storage.write_segment_part(schemas.empty(spark, "content"), crawl_dir, name, "content", "content")
    assert maintenance_due(spark, conf)
    # rewrite s1's parse again (its failed row, back), and kill the run between the old
    # part's delete and the new one's rename
    storage.write_segment_part(schemas.frame(spark, "parse", [_parse(page, "U1", s1),
                                                               _parse("http://a.test/old", "O1", s1, "failed")]),
                               crawl_dir, s1, "parse", "parse")
    move = storage.move_into_place

    def killed(spark_, source, target):
        if source.endswith(".parse.writing"):
            storage.hadoop_fs(spark_, target)[0].delete(storage.hadoop_fs(spark_, target)[1], True)
            raise KeyboardInterrupt("killed")
        return move(spark_, source, target)

    monkeypatch.setattr(storage, "move_into_place", killed)
    with pytest.raises(KeyboardInterrupt):
        run_maintain(spark, conf, NOW)
    monkeypatch.setattr(storage, "move_into_place", move)

    assert not storage.segment_part_exists(spark, crawl_dir, s1, "parse")
    with pytest.raises(SegmentStateError, match="run the export again"):
        job.run_export(spark, conf)
    assert maintenance_due(spark, conf)   # the killed run is not counted as done

    segment_pruning.finish_interrupted(spark, crawl_dir)   # what the next round or maintain does first

    assert [r.url for r in storage.read_segment_part(spark, crawl_dir, s1, "parse", "parse").collect()] == [page]
    assert job.run_export(spark, conf)["records"] == 1
