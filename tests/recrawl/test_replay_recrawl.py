"""One small real recrawl through the replay web, the replay clock advanced between rounds.

Half the pages never change, half change every hour on average. Round 1 fetches all 12
pages; two hours later round 2 refetches them with conditional GETs: unchanged pages answer
304 and become not_modified without a re-parse, and the adaptive intervals move up for them
and down for the pages that changed (ground truth: the replay web's page_info).
"""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from crawlkit import storage
from crawlkit.conf import make_conf
from crawlkit.crawl import run_round
from crawlkit.replay.testing import replay_factory  # noqa: F401  (fixture)
from crawlkit.stages.inject import run_inject

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]
NOW = datetime(2026, 4, 1, 0, 0, 0)
START, LOW, HIGH = 3600, 600, 8 * 3600


def test_recrawl_uses_304_and_moves_intervals(spark, tmp_path, replay_factory):  # noqa: F811
    spec = "gen:12,seed=2,hosts=2"
    server = replay_factory([spec], changes="0.5:never,0.5:1h")
    from crawlkit.replay.generated import GeneratedWeb
    web = GeneratedWeb(spec)
    urls = [web.url(i) for i in range(web.num_pages)]
    (tmp_path / "seeds.txt").write_text("\n".join(urls) + "\n")
    conf = make_conf(crawl__dir=str(tmp_path / "crawl"), crawl__topN=100, generate__max_per_host=100,
                     generate__partitions=2, fetcher__proxy=server.proxy_url, fetcher__server_delay=0.05,
                     fetcher__threads=4, spark__shuffle_partitions=2, scoring__engine="driver",
                     schedule__kind="adaptive", schedule__default_interval=START,
                     schedule__min_interval=LOW, schedule__max_interval=HIGH)
    run_inject(spark, str(tmp_path / "seeds.txt"), conf, NOW)
    first = run_round(spark, conf, NOW, log=lambda _m: None)
    mark = len(server.access_log())

    server.set_clock(2 * 3600)
    later = NOW + timedelta(hours=2)
    second = run_round(spark, conf, later, log=lambda _m: None)
    assert first.segment and second.segment

    changed = {u for u in urls if server.page_info(u)["version"] > 0}
    unchanged = set(urls) - changed
    assert changed and unchanged, "the change classes should give both kinds"
    answers = {r["url"]: r["status"] for r in server.access_log()[mark:] if not r["url"].endswith("robots.txt")}
    assert set(answers) == set(urls)
    assert {u for u, s in answers.items() if s == 304} == unchanged
    assert {u for u, s in answers.items() if s == 200} == changed

    parsed = {r.url for r in storage.read_segment_part(spark, conf["crawl.dir"], second.segment, "parse",
                                                       "parse").collect()}
    assert parsed == changed                                       # no re-parse of a 304
    db = {r.url: r for r in storage.read_table(spark, storage.crawldb_path(conf["crawl.dir"]), "crawldb").collect()}
    for u in unchanged:
        assert db[u].status == "not_modified" and db[u].fetch_interval == int(START * 1.4), u
        assert (db[u].check_count, db[u].change_count) == (1, 0)
        assert db[u].signature is not None                          # the old copy's signature kept
    for u in changed:
        assert db[u].status == "fetched" and db[u].fetch_interval == int(START * 0.8), u
        assert (db[u].check_count, db[u].change_count) == (1, 1)
        assert db[u].etag == server.page_info(u)["etag"]
