"""A round killed (SIGKILL) during fetch and rerun with ``crawlkit round``: the rerun continues
the killed segment, requests only the URLs without a saved result, and the crawldb ends as
after an unbroken round.

``crawlkit round`` runs in its own process group over the replay web with every page slowed
by a ``delay`` fault; once the access log shows part of the fetch list answered and the fetch
tasks have spilled results to content_parts/, the whole group (driver, JVM, Python workers)
gets SIGKILL. The rerun takes over the lock the dead round left (its process is gone from
this machine), finds the segment unfinished (its URLs still locked by it, crawlkit.resume) and finishes
it instead of generating a new one. A second crawl directory runs the same round unbroken.

A request in flight (or a result being saved) at the kill has no durable result, so the
rerun requests it again: "at most once" holds for every URL whose result was saved, and with
``fetcher.spill_rows = 1`` that is every page but those in flight: at most two per host (one
connection per host: the request under way, and the answer just received being saved). Requests
are told apart by their arrival time (the access log's ``ts``): those before the rerun started
are the killed round's, whenever the server finished logging them. Logical time is ``NOW``
throughout (``--now``); no assertion depends on how long anything took.
"""
from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

from crawlkit import cli, linkdb, lock, schemas, storage
from crawlkit.conf import make_conf
from crawlkit.crawl import run_round
from crawlkit.replay.testing import replay_factory  # noqa: F401  (fixture)
from crawlkit.stages.fetch import PARTS
from crawlkit.segment_names import base_name as segment_name
from crawlkit.stages.inject import run_inject

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]
NOW = datetime(2026, 3, 1, 0, 0, 0)
PAGES = 24
DELAY = 1.5
# compared between the resumed and the unbroken crawldb: everything but fetched_at (wall time
# of the response) and the float scores (compared with a tolerance)
SAME = ["status", "signature", "fetch_time", "fetch_interval", "retries", "generated_segment",
        "modified_time", "etag", "http_status", "change_count", "check_count", "depth", "last_processed"]


def settings(crawl_dir, proxy):
    return {"crawl.dir": crawl_dir, "crawl.topN": 100, "generate.max_per_host": 100, "generate.partitions": 2,
            "fetcher.proxy": proxy, "fetcher.server_delay": 0.05, "fetcher.threads": 4,
            "fetcher.read_timeout": 10.0, "fetcher.page_deadline": 20.0, "spark.shuffle_partitions": 2,
            "fetcher.spill_rows": 1,   # every result saved as it arrives: only in-flight work is lost
            "spark.master": "local[2]", "scoring.scorer": "opic", "scoring.engine": "driver"}


def cli_args(crawl_dir, proxy):
    args = ["--now", NOW.isoformat(), "--quiet"]
    for key, value in settings(crawl_dir, proxy).items():
        args += ["--conf", f"{key}={value}"]
    return args


def page_requests(log):
    return [r for r in log if not r["url"].endswith("/robots.txt")]


def spilled_files(crawl_dir, segment):
    return glob.glob(f"{crawl_dir}/segments/{segment}/{PARTS}/part-*.parquet")


def spilled_urls(spark, crawl_dir, segment):
    """URLs with a saved result in content_parts/ (Spark skips the _tmp- files of unfinished spills)."""
    uri = storage.absolute(spark, storage.segment_path(crawl_dir, segment, PARTS))
    return {r.url for r in spark.read.schema(schemas.struct("content")).parquet(uri).select("url").collect()}


def crawldb_rows(spark, crawl_dir):
    return {r.url: r for r in storage.read_table(spark, storage.crawldb_path(crawl_dir), "crawldb").collect()}


def links(spark, crawl_dir):
    return sorted((r.src, r.dst) for r in
                  linkdb.read_current(spark, crawl_dir).select("src", "dst").collect())


def test_killed_round_resumes_without_refetching(spark, tmp_path, replay_factory, capsys):  # noqa: F811
    server = replay_factory(["gen:200,seed=5,hosts=3"],
                            faults=[{"glob": "http://*.gen.test/*.html", "kind": "delay", "seconds": DELAY}])
    from crawlkit.replay.generated import GeneratedWeb
    web = GeneratedWeb("gen:200,seed=5,hosts=3")
    seeds = tmp_path / "seeds.txt"
    pages = [web.url(i) for i in range(web.num_pages) if web.url(i).endswith(".html")
             and "/private/" not in web.url(i)]
    # 8 pages on each of the 3 hosts: three fetched at a time (one connection per host)
    urls = [u for h in ("s0", "s1", "s2")
            for u in [p for p in pages if p.startswith(f"http://{h}.gen.test/")][:PAGES // 3]]
    assert len(urls) == PAGES and len({u.split("/")[2] for u in urls}) == 3
    seeds.write_text("\n".join(urls) + "\n")
    broken, unbroken = str(tmp_path / "broken"), str(tmp_path / "unbroken")
    conf_b = make_conf(**{k.replace(".", "__"): v for k, v in settings(broken, server.proxy_url).items()})
    conf_u = make_conf(**{k.replace(".", "__"): v for k, v in settings(unbroken, server.proxy_url).items()})
    for conf in (conf_b, conf_u):
        run_inject(spark, str(seeds), conf, NOW)
    segment = segment_name(NOW)

    # --- the round that gets killed during fetch, in its own process group
    cmd = [sys.executable, "-m", "crawlkit.cli", "round", *cli_args(broken, server.proxy_url)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")]))
    err = tmp_path / "round.err"
    proc = subprocess.Popen(cmd, start_new_session=True, env=env, stdout=subprocess.DEVNULL,
                            stderr=err.open("w"))
    deadline = time.monotonic() + 600
    try:
        while not (len(page_requests(server.access_log())) >= 6 and spilled_files(broken, segment)):
            assert proc.poll() is None, err.read_text()[-3000:]
            assert time.monotonic() < deadline, "the round never started fetching"
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    saved = spilled_urls(spark, broken, segment)
    assert saved, "killed before a result was spilled: nothing to check"
    assert not storage.segment_part_exists(spark, broken, segment, "content"), "killed after fetch"

    # the dead round's lock is still there, and its process gone
    assert lock.holder(spark, broken)["command"] == "round"
    assert lock._running(lock.holder(spark, broken)) is False

    # --- the rerun: `crawlkit round` takes the lock over and continues the segment
    rerun_started = time.time()
    assert cli.main(["round", *cli_args(broken, server.proxy_url)]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert lock.holder(spark, broken) is None
    assert out["segment"] == segment and out["resumed_from"] == "fetch"
    assert "generate" not in out["counters"]
    fetch = out["counters"]["fetch"]
    assert fetch["resumed"] and fetch["pages"] == PAGES
    assert fetch["fetched_now"] == PAGES - len(saved)
    assert out["counters"]["updatedb"].get("skipped") is None
    assert out["counters"]["score"]["skipped"] == 0

    # --- the same round, unbroken
    unbroken_started = time.time()
    report = run_round(spark, conf_u, NOW, log=lambda _m: None)
    assert report.segment == segment and report.resumed_from is None

    log = page_requests(server.access_log())      # read last: every answer above has ended
    killed = [r["url"] for r in log if r["ts"] < rerun_started]
    rerun = [r["url"] for r in log if rerun_started <= r["ts"] < unbroken_started]
    whole = [r["url"] for r in log if r["ts"] >= unbroken_started]
    assert sorted(whole) == sorted(urls)                           # the unbroken round: each once
    assert saved <= set(killed) and len(set(killed)) < PAGES       # the kill came during fetch
    assert max(Counter(rerun).values()) == 1                       # the rerun: each at most once
    assert set(rerun) == set(urls) - saved                         # exactly what was not saved
    assert not set(rerun) & saved, "a URL whose result was saved before the kill was fetched again"
    # requested by both runs: only URLs whose result was in flight or being saved at the kill
    twice = set(killed) & set(rerun)
    assert twice == set(killed) - saved
    assert len(twice) <= 2 * 3, sorted(twice)

    # --- the crawldbs and link tables agree
    got, want = crawldb_rows(spark, broken), crawldb_rows(spark, unbroken)
    assert set(got) == set(want)
    for url, row in want.items():
        assert [getattr(got[url], c) for c in SAME] == [getattr(row, c) for c in SAME], url
        assert got[url].score == pytest.approx(row.score, abs=1e-12), url
        assert got[url].opic_cash == pytest.approx(row.opic_cash, abs=1e-12), url
    assert sum(r.opic_cash for r in got.values()) == pytest.approx(1.0, abs=1e-9)
    assert links(spark, broken) == links(spark, unbroken)
    # each stage of the segment committed once to the crawldb
    tags = [t for commit in storage.commit_tags(spark, storage.crawldb_path(broken)) for t in storage.tags_of(commit)]
    for tag in (f"generate:{segment}", f"updatedb:{segment}", f"score-opic:{segment}"):
        assert tags.count(tag) == 1, tags
