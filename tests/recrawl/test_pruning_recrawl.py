"""Segment pruning on a real recrawl through the replay web: what export and similarity
scoring read is the same after ``maintain`` deleted the segments no page needs and cut the
others down to the parse rows pages need.

Half the pages never change (refetched with 304s, their parse stays in round 1's segment),
half change every minute on average (each round's fetch gives a new parse, so round 2's
segment is left with nothing current after round 3).
"""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from crawlkit import storage
from crawlkit.conf import make_conf
from crawlkit.crawl import run_round
from crawlkit.export.pages import candidates, parse_rows
from crawlkit.replay.testing import replay_factory  # noqa: F401  (fixture)
from crawlkit.scoring.job import crawled_texts
from crawlkit.stages.inject import run_inject
from crawlkit.stages.maintain import run_maintain

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]
NOW = datetime(2026, 4, 1, 0, 0, 0)


def _read(spark, conf):
    db = storage.read_table(spark, storage.crawldb_path(conf["crawl.dir"]), "crawldb")
    pages = {r.source_url: (r.title, r.digest, r.skip)
             for r in candidates(db, parse_rows(spark, conf["crawl.dir"]), conf).collect()}
    return pages, {r.url: (r.title, r.text) for r in crawled_texts(spark, conf["crawl.dir"], None).collect()}


def test_pruned_crawl_exports_and_scores_the_same(spark, tmp_path, replay_factory):  # noqa: F811
    spec = "gen:10,seed=3,hosts=2"
    server = replay_factory([spec], changes="0.5:never,0.5:1m")
    from crawlkit.replay.generated import GeneratedWeb
    web = GeneratedWeb(spec)
    (tmp_path / "seeds.txt").write_text("\n".join(web.url(i) for i in range(web.num_pages)) + "\n")
    conf = make_conf(crawl__dir=str(tmp_path / "crawl"), crawl__topN=100, generate__max_per_host=100,
                     generate__partitions=2, fetcher__proxy=server.proxy_url, fetcher__server_delay=0.05,
                     fetcher__threads=4, spark__shuffle_partitions=2, scoring__engine="driver",
                     schedule__default_interval=3600, maintain__keep_segments=1)
    run_inject(spark, str(tmp_path / "seeds.txt"), conf, NOW)
    segments = []
    for hours in (0, 2, 4):
        server.set_clock(hours * 3600)
        segments.append(run_round(spark, conf, NOW + timedelta(hours=hours), log=lambda _m: None).segment)
    before = _read(spark, conf)
    fetched = {r.url: r.status for r in storage.read_table(spark, storage.crawldb_path(conf["crawl.dir"]),
                                                           "crawldb").collect()}
    assert "not_modified" in fetched.values() and len(before[0]) == len(before[1]) == 10

    counters = run_maintain(spark, conf, NOW + timedelta(hours=5))["segments"]

    # round 1 holds the unchanged pages' parse (cut down to it, its content gone), round 3 is
    # the newest: round 2 goes
    assert counters["removed"] == [segments[1]] and counters["kept_needed"] == 1
    assert counters["slimmed"] == [segments[0]]
    assert not storage.segment_part_exists(spark, conf["crawl.dir"], segments[0], "content")
    assert storage.list_segments(spark, conf["crawl.dir"]) == [segments[0], segments[2]]
    assert _read(spark, conf) == before
    # the next round runs on the pruned crawl directory, and maintains it after itself
    # (maintain.every_rounds counts the segments made since the last run: one)
    server.set_clock(6 * 3600)
    report = run_round(spark, conf.with_overrides({"maintain.every_rounds": 1}), NOW + timedelta(hours=6),
                       log=lambda _m: None)
    assert "maintain" in report.seconds
    assert storage.list_segments(spark, conf["crawl.dir"]) == [segments[0], report.segment]
