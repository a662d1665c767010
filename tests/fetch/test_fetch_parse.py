"""fetcher.parse: fetch tasks that parse their pages as they arrive, through the replay web.

The round's parse stage is then skipped, so the two ways must give the same parse rows and
counters; a fetch whose parts hold each URL once publishes them by renaming the folders, and
anything else (a resumed fetch, parse parts that do not match) falls back to the old path.
"""
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from chispa import assert_df_equality
from fetch_helpers import NOW, fetch_row
from pyspark.sql.pandas.types import to_arrow_schema

from crawlkit import schemas, storage
from crawlkit.conf import make_conf
from crawlkit.replay import GeneratedWeb
from crawlkit.stages.fetch import PARSE_PARTS, PARTS, fetch_remaining, run_fetch
from crawlkit.stages.generate import partition_by_host
from crawlkit.stages.parse import run_parse

SEGMENT = "20240101000000"
WEB = GeneratedWeb("gen:200,seed=5")   # the replay fixture's web
PAGES = [WEB.url(i) for i in range(0, 200, 9)]
URLS = PAGES + ["http://fp1.test/__trap/status/404", "http://fp2.test/__trap/type/pdf"]


def _crawl_dir(spark, tmp_path: Path, name: str, urls=URLS) -> str:
    crawl_dir = str(tmp_path / name)
    rows = spark.createDataFrame([fetch_row(u, segment=SEGMENT) for u in urls], schemas.struct("fetchlist"))
    storage.write_segment_part(partition_by_host(rows, 2), crawl_dir, SEGMENT, "fetchlist", "fetchlist")
    return crawl_dir


def _conf(replay, crawl_dir: str, **overrides):
    return make_conf(crawl__dir=crawl_dir, fetcher__proxy=replay.proxy_url, fetcher__server_delay=0.0,
                     fetcher__threads=4, fetcher__read_timeout=2.0, fetcher__page_deadline=3.0,
                     fetcher__proxy_resolve_targets=False, fetcher__spill_rows=5,
                     generate__partitions=2, **overrides)


def _part(spark, crawl_dir: str, part: str):
    return storage.read_segment_part(spark, crawl_dir, SEGMENT, part, part)


def _segment_folders(crawl_dir: str) -> set[str]:
    return {p.name for p in (Path(crawl_dir) / "segments" / SEGMENT).iterdir()}


def _page_requests(replay, urls) -> int:
    return sum(1 for r in replay.access_log() if r["url"] in set(urls))


def _assert_same_pages(spark, one_dir: str, other_dir: str) -> None:
    """The same parse rows, and the same bodies (a fetch's time and duration differ by run)."""
    assert_df_equality(_part(spark, one_dir, "parse").orderBy("url"),
                       _part(spark, other_dir, "parse").orderBy("url"))
    same = ["url", "fetch_status", "http_status", "content_type", "content", "truncated", "error", "segment"]
    assert_df_equality(_part(spark, one_dir, "content").select(same).orderBy("url"),
                       _part(spark, other_dir, "content").select(same).orderBy("url"))


def test_fetch_tasks_parse_as_the_parse_stage_does(spark, replay, tmp_path):
    fused_dir, staged_dir = _crawl_dir(spark, tmp_path, "fused"), _crawl_dir(spark, tmp_path, "staged")
    fused = run_fetch(spark, _conf(replay, fused_dir), NOW, SEGMENT)
    staged_conf = _conf(replay, staged_dir, fetcher__parse=False)
    staged = run_fetch(spark, staged_conf, NOW, SEGMENT)
    assert staged["parsed"] is None
    staged_parse = run_parse(spark, staged_conf, SEGMENT, staged)

    assert fused["parsed"] == staged_parse
    assert fused["parsed"]["pages"] == len(PAGES) and fused["parsed"]["outlinks"] > 0
    assert run_parse(spark, _conf(replay, fused_dir), SEGMENT, fused) == fused["parsed"]
    assert {k: fused[k] for k in ("pages", "bytes", "by_status")} == \
        {k: staged[k] for k in ("pages", "bytes", "by_status")}
    assert fused["by_status"] == {"success": len(PAGES), "not_found": 1, "unsupported_type": 1}
    _assert_same_pages(spark, fused_dir, staged_dir)
    # the parts became the segment's parts: renamed, nothing left behind
    assert _segment_folders(fused_dir) == {"fetchlist", "content", "parse", "_stats"}
    assert storage.segment_part_exists(spark, fused_dir, SEGMENT, "parse")


def _part_files(crawl_dir: str, part: str) -> list[str]:
    return sorted(p.name for p in (Path(crawl_dir) / "segments" / SEGMENT / part).glob("*.parquet"))


def test_each_task_merges_its_spills_into_one_file(spark, replay, tmp_path):
    merged_dir, kept_dir = _crawl_dir(spark, tmp_path, "merged"), _crawl_dir(spark, tmp_path, "kept")
    merged = run_fetch(spark, _conf(replay, merged_dir), NOW, SEGMENT)
    kept = run_fetch(spark, _conf(replay, kept_dir, fetcher__merge_spills=False), NOW, SEGMENT)
    # 24 URLs in spills of 5: at least 5 spill files, but one file per task (2) once merged;
    # the merged files still name one run of their task, so the folders were renamed
    assert len(_part_files(kept_dir, "content")) >= 5
    for part in ("content", "parse"):
        assert 1 <= len(_part_files(merged_dir, part)) <= 2
    assert _part_files(merged_dir, "parse") == _part_files(merged_dir, "content")
    assert merged["parsed"] == kept["parsed"] and merged["parsed"]["pages"] == len(PAGES)
    assert {k: merged[k] for k in ("pages", "bytes", "by_status")} == \
        {k: kept[k] for k in ("pages", "bytes", "by_status")}
    _assert_same_pages(spark, merged_dir, kept_dir)
    assert _segment_folders(merged_dir) == {"fetchlist", "content", "parse", "_stats"}


def test_a_fetch_run_again_after_it_finished_fetches_nothing(spark, replay, tmp_path):
    crawl_dir = _crawl_dir(spark, tmp_path, "again")
    conf = _conf(replay, crawl_dir)
    first = run_fetch(spark, conf, NOW, SEGMENT)
    requests = _page_requests(replay, URLS)
    again = run_fetch(spark, conf, NOW, SEGMENT)
    assert _page_requests(replay, URLS) == requests
    assert again == {**first, "fetched_now": 0, "resumed": True}
    # died between the rename and its counters: content/ is counted again, and, with no
    # word that the tasks parsed, the parse stage parses it again
    (Path(crawl_dir) / "segments" / SEGMENT / "_stats" / "fetch.json").unlink()
    recounted = run_fetch(spark, conf, NOW, SEGMENT)
    assert _page_requests(replay, URLS) == requests
    assert {k: recounted[k] for k in ("pages", "bytes", "by_status")} == \
        {k: first[k] for k in ("pages", "bytes", "by_status")}
    assert recounted["parsed"] is None
    assert run_parse(spark, conf, SEGMENT, recounted) == first["parsed"]
    # killed while an older crawlkit wrote them in place: a torn file is counted again too
    (Path(crawl_dir) / "segments" / SEGMENT / "_stats" / "fetch.json").write_text('{"segment": "2024')
    torn = run_fetch(spark, conf, NOW, SEGMENT)
    assert {k: torn[k] for k in ("pages", "bytes", "by_status")} == {k: first[k] for k in ("pages", "bytes", "by_status")}
    stats = Path(crawl_dir) / "segments" / SEGMENT / "_stats"
    assert json.loads((stats / "fetch.json").read_text())["pages"] == first["pages"]    # rewritten whole
    assert not [p.name for p in stats.iterdir() if "writing" in p.name]


def test_parse_parts_of_another_run_are_dropped_and_left_to_the_parse_stage(spark, replay, tmp_path):
    crawl_dir = _crawl_dir(spark, tmp_path, "orphan")
    conf = _conf(replay, crawl_dir)
    # a run that died after its first parse spill and before the content spill beside it
    orphans = Path(storage.segment_path(crawl_dir, SEGMENT, PARSE_PARTS))
    orphans.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([], schema=to_arrow_schema(schemas.struct("parse"))),
                   orphans / "part-p00000-0123456789ab-00000.parquet")
    counters = run_fetch(spark, conf, NOW, SEGMENT)
    assert counters["parsed"] is None and counters["pages"] == len(URLS)
    assert _segment_folders(crawl_dir) == {"fetchlist", "content", "_stats"}
    parsed = run_parse(spark, conf, SEGMENT, counters)
    assert parsed["pages"] == len(PAGES) and _part(spark, crawl_dir, "parse").count() == len(PAGES)


def test_a_resumed_fetch_assembles_content_and_the_parse_stage_parses_it(spark, replay, tmp_path):
    crawl_dir = _crawl_dir(spark, tmp_path, "resumed")
    conf = _conf(replay, crawl_dir)
    # a killed run saved the results of the first half (content and parse parts)
    half = spark.createDataFrame([fetch_row(u, segment=SEGMENT) for u in URLS[:10]], schemas.struct("fetchlist"))
    parts = storage.absolute(spark, storage.segment_path(crawl_dir, SEGMENT, PARTS))
    parse_parts = storage.absolute(spark, storage.segment_path(crawl_dir, SEGMENT, PARSE_PARTS))
    assert fetch_remaining(spark, half, conf, NOW, parts, parse_parts)["rows"] == 10
    counters = run_fetch(spark, conf, NOW, SEGMENT)
    assert counters["resumed"] and counters["fetched_now"] == len(URLS) - 10
    assert counters["pages"] == len(URLS) and counters["parsed"] is None
    assert _segment_folders(crawl_dir) == {"fetchlist", "content", "_stats"}    # the parts assembled are gone
    content = _part(spark, crawl_dir, "content")
    assert content.count() == content.select("url").distinct().count() == len(URLS)
    assert run_parse(spark, conf, SEGMENT, counters)["pages"] == len(PAGES)


def test_a_fetch_killed_inside_a_merge_keeps_each_url_once(spark, replay, tmp_path):
    crawl_dir = _crawl_dir(spark, tmp_path, "killed-merge")
    conf = _conf(replay, crawl_dir)
    half = spark.createDataFrame([fetch_row(u, segment=SEGMENT) for u in URLS[:10]], schemas.struct("fetchlist"))
    parts = storage.absolute(spark, storage.segment_path(crawl_dir, SEGMENT, PARTS))
    assert fetch_remaining(spark, half, _conf(replay, crawl_dir, fetcher__merge_spills=False), NOW, parts)["rows"] == 10
    # the run was killed after each task wrote its merged file (the next spill number of its
    # run) and before it deleted its spills: every saved URL is there twice under one run
    folder = Path(crawl_dir) / "segments" / SEGMENT / PARTS
    runs: dict[str, list[Path]] = {}
    for spill in sorted(folder.glob("part-*.parquet")):
        runs.setdefault(spill.name.rsplit("-", 1)[0], []).append(spill)
    for run, spills in runs.items():
        merged = pa.concat_tables([pq.read_table(f) for f in spills])
        pq.write_table(merged, folder / f"{run}-{len(spills):05d}.parquet")
    saved = spark.read.parquet(parts)
    assert saved.count() == 20 and saved.select("url").distinct().count() == 10
    counters = run_fetch(spark, conf, NOW, SEGMENT)
    assert counters["resumed"] and counters["fetched_now"] == len(URLS) - 10
    assert counters["pages"] == len(URLS)
    content = _part(spark, crawl_dir, "content")
    assert content.count() == content.select("url").distinct().count() == len(URLS)


def test_where_renaming_a_folder_copies_its_files_spark_copies_the_parts(spark, replay, tmp_path, monkeypatch):
    from crawlkit.stages import fetch
    assert fetch.renames_cheaply("/tmp/crawl") and fetch.renames_cheaply("hdfs://nn/crawl")
    assert not fetch.renames_cheaply("s3://bucket/crawl") and not fetch.renames_cheaply("gs://b/crawl")
    monkeypatch.setattr(fetch, "renames_cheaply", lambda uri: False)
    crawl_dir = _crawl_dir(spark, tmp_path, "objectstore")
    counters = run_fetch(spark, _conf(replay, crawl_dir), NOW, SEGMENT)
    assert counters["parsed"]["pages"] == len(PAGES) and counters["pages"] == len(URLS)
    assert _segment_folders(crawl_dir) == {"fetchlist", "content", "parse", "_stats"}
    assert _part(spark, crawl_dir, "content").select("url").distinct().count() == len(URLS)
    assert _part(spark, crawl_dir, "parse").count() == len(PAGES)


@pytest.mark.parametrize("parse", [True, False])
def test_an_empty_fetch_list_gives_empty_parts(spark, replay, tmp_path, parse):
    crawl_dir = _crawl_dir(spark, tmp_path, f"empty-{parse}", urls=[])
    conf = _conf(replay, crawl_dir, fetcher__parse=parse)
    counters = run_fetch(spark, conf, NOW, SEGMENT)
    assert counters["pages"] == 0 and counters["by_status"] == {}
    assert _part(spark, crawl_dir, "content").count() == 0
    assert run_parse(spark, conf, SEGMENT, counters)["pages"] == 0


def test_fetched_now_counts_only_the_urls_requested(spark, replay, tmp_path):
    # robots.txt of robots.test disallows /secret/ to crawlkit (fetch_helpers.ROBOTS): those URLs are
    # answered without a request, so crawl-and-stop must not count them as crawled
    denied = [f"http://robots.test/secret/p{i}" for i in range(3)]
    crawl_dir = _crawl_dir(spark, tmp_path, "denied", urls=PAGES + denied)
    counters = run_fetch(spark, _conf(replay, crawl_dir), NOW, SEGMENT)
    assert counters["by_status"].get("robots_denied") == len(denied), counters
    assert (counters["pages"], counters["fetched_now"]) == (len(PAGES) + len(denied), len(PAGES))


def test_a_task_run_again_fetches_only_what_its_earlier_attempt_did_not_save(replay, tmp_path):
    """Spark runs a task again when its executor is lost: the new attempt reads the spill
    files of its partition and asks the servers only for the rest."""
    from crawlkit.stages.fetch import _fetch_and_spill

    conf = _conf(replay, str(tmp_path / "retried")).to_dict()
    schema = to_arrow_schema(schemas.struct("fetchlist"))
    batch = lambda urls: pa.RecordBatch.from_pylist([fetch_row(u, segment=SEGMENT) for u in urls],  # noqa: E731
                                                    schema=schema)
    parts = tmp_path / "content_parts"
    before = _page_requests(replay, URLS[:10]), _page_requests(replay, URLS[10:])   # (the module's web)
    counters = lambda batches: [json.loads(c) for b in batches for c in b.column("counters").to_pylist()]  # noqa: E731
    lost = counters(_fetch_and_spill(conf, NOW, str(parts), None)(iter([batch(URLS[:10])])))
    retry = counters(_fetch_and_spill(conf, NOW, str(parts), None)(iter([batch(URLS)])))
    # the retry says so: the driver then assembles the parts (one run's name may hold a URL
    # twice, a merged file beside the spills it was deleting) and counts them itself
    assert (lost[0]["retried"], retry[0]["retried"]) == (False, True)
    assert retry[0]["rows"] == len(URLS) - 10
    assert _page_requests(replay, URLS[:10]) - before[0] == 10           # not asked again
    assert _page_requests(replay, URLS[10:]) - before[1] == len(URLS) - 10
    saved = pq.read_table(parts, columns=["url"]).column("url").to_pylist()
    assert sorted(saved) == sorted(URLS)
