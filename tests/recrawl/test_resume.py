"""A round killed (SIGKILL) during fetch and resumed: no URL with a saved result is fetched
again, and the crawldb ends as after an unbroken round.

``crawlkit round`` runs in its own process group over the replay web with every page slowed
by a ``delay`` fault; once the access log shows part of the fetch list requested, the whole
group (driver and JVM) gets SIGKILL. The round's lock is left behind (refused without
--break-lock); the segment is finished by rerunning fetch (which fetches only URLs without a
spilled result in content_parts/), parse, updatedb and score. A second crawl directory runs
the same round unbroken; both crawldbs must agree on status and signature per URL.

A request in flight (or a result not yet spilled) at the kill has no durable result, so it is
fetched again by the rerun: "at most once" holds for every URL whose result was saved, and
the URLs requested twice are only those unsaved ones (at most a few per fetch task).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from crawlkit import lock, schemas, storage
from crawlkit.conf import make_conf
from crawlkit.crawl import run_round
from crawlkit.replay.testing import replay_factory  # noqa: F401  (fixture)
from crawlkit.scoring import run_scoring
from crawlkit.stages.fetch import PARTS, run_fetch
from crawlkit.stages.generate import segment_name
from crawlkit.stages.inject import run_inject
from crawlkit.stages.parse import run_parse
from crawlkit.stages.updatedb import run_updatedb

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]
NOW = datetime(2026, 3, 1, 0, 0, 0)
PAGES = 24
DELAY = 1.5


def settings(crawl_dir, proxy):
    return {"crawl.dir": crawl_dir, "crawl.topN": 100, "generate.max_per_host": 100, "generate.partitions": 2,
            "fetcher.proxy": proxy, "fetcher.server_delay": 0.05, "fetcher.threads": 4,
            "fetcher.read_timeout": 10.0, "fetcher.page_deadline": 20.0, "spark.shuffle_partitions": 2,
            "spark.master": "local[2]", "scoring.engine": "driver"}


def page_requests(log):
    return [r for r in log if not r["url"].endswith("/robots.txt")]


def spilled_urls(spark, crawl_dir, segment):
    """URLs with a saved result in content_parts/ (Spark skips the _tmp- files of unfinished spills)."""
    uri = storage.absolute(storage.segment_path(crawl_dir, segment, PARTS))
    if not storage.path_exists(spark, uri):
        return set()
    return {r.url for r in spark.read.schema(schemas.struct("content")).parquet(uri).select("url").collect()}


def crawldb_view(spark, crawl_dir):
    return {r.url: (r.status, r.signature)
            for r in storage.read_table(spark, storage.crawldb_path(crawl_dir), "crawldb").collect()}


def test_killed_round_resumes_without_refetching(spark, tmp_path, replay_factory):  # noqa: F811
    server = replay_factory(["gen:200,seed=5,hosts=3"],
                            faults=[{"glob": "http://*.gen.test/*.html", "kind": "delay", "seconds": DELAY}])
    from crawlkit.replay.generated import GeneratedWeb
    web = GeneratedWeb("gen:200,seed=5,hosts=3")
    seeds = tmp_path / "seeds.txt"
    urls = [web.url(i) for i in range(web.num_pages) if web.url(i).endswith(".html")
            and "/private/" not in web.url(i)][:PAGES]
    seeds.write_text("\n".join(urls) + "\n")
    broken, unbroken = str(tmp_path / "broken"), str(tmp_path / "unbroken")
    conf_b = make_conf(**{k.replace(".", "__"): v for k, v in settings(broken, server.proxy_url).items()})
    conf_u = make_conf(**{k.replace(".", "__"): v for k, v in settings(unbroken, server.proxy_url).items()})
    for conf in (conf_b, conf_u):
        run_inject(spark, str(seeds), conf, NOW)
    segment = segment_name(NOW)

    # --- the round that gets killed, in its own process group
    cmd = [sys.executable, "-m", "crawlkit.cli", "round", "--now", NOW.isoformat(), "--quiet"]
    for key, value in settings(broken, server.proxy_url).items():
        cmd += ["--conf", f"{key}={value}"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen(cmd, start_new_session=True, env=env, stdout=subprocess.DEVNULL,
                            stderr=open(tmp_path / "round.err", "w"))
    deadline = time.monotonic() + 420
    try:
        while True:
            seen = page_requests(server.access_log())
            if len(seen) >= 6:
                break
            assert proc.poll() is None, (tmp_path / "round.err").read_text()[-3000:]
            assert time.monotonic() < deadline, "the round never started fetching"
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    time.sleep(DELAY + 1)                    # let in-flight answers end so the log is complete
    before = page_requests(server.access_log())
    killed_at = len(before)
    assert killed_at < len(urls), "the round finished before the kill: slow the fetch down"
    saved = spilled_urls(spark, broken, segment)

    # the dead round's lock refuses a new writer until broken
    assert lock.holder(spark, broken) is not None
    with pytest.raises(lock.LockedError):
        with lock.round_lock(spark, broken, "fetch"):
            pass
    with lock.round_lock(spark, broken, "fetch", break_lock=True):
        counters = run_fetch(spark, conf_b, NOW, segment)
        run_parse(spark, conf_b, segment)
        run_updatedb(spark, conf_b, NOW, segment)
        run_scoring(spark, broken, conf_b, NOW, segment=segment)
    assert counters["resumed"] and counters["pages"] == len(urls)
    after = page_requests(server.access_log())[killed_at:]
    again = {r["url"] for r in after}
    assert not again & saved, "a URL whose result was saved before the kill was fetched again"
    assert again | {r["url"] for r in before} == set(urls)
    counts = {}
    for r in before + after:
        counts[r["url"]] = counts.get(r["url"], 0) + 1
    twice = {u for u, n in counts.items() if n > 1}
    assert all(n <= 2 for n in counts.values())
    assert twice <= set(urls) - saved
    # unsaved at the kill: in flight or buffered, at most threads x partitions + what one spill holds
    assert len(twice) <= 2 * 4

    # --- the same round, unbroken
    mark = len(server.access_log())
    report = run_round(spark, conf_u, NOW, log=lambda _m: None)
    assert report.segment == segment
    unbroken_requests = page_requests(server.access_log()[mark:])
    assert sorted(r["url"] for r in unbroken_requests) == sorted(urls)
    assert crawldb_view(spark, broken) == crawldb_view(spark, unbroken)
