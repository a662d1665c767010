"""Crash safety, for real: a crawl round runs in a subprocess (scripts/crash_round.py: the
library's stages with a fixed clock, under the crawl directory's lock) and is killed with
SIGKILL — the driver and its JVM, the whole process group — at three points:

(a) during fetch, once the replay web's access log shows some but not all pages requested
    (every page has a 1 s delay fault, so fetch is slow);
(b) during updatedb's crawldb MERGE: after the linkdb commit of the segment appears in the
    linkdb's ``_delta_log`` (updatedb commits the linkdb first, then the crawldb);
(c) during scoring (OPIC): shortly after the process announces the score stage.

The crashes are chained on one crawl directory to keep the test small (each run starts a JVM):
run 1 is killed at (a), run 2 resumes and is killed at (b), run 3 resumes and is killed at (c),
run 4 resumes and finishes. After each kill and at the end the crawl directory is checked:

- the crawldb is at the version before or after the stage, never in between: every Delta
  commit carries a stage tag in ``userMetadata``; the segment's URLs are all updated or none;
- no URL is lost: every URL known before is still there;
- no link is duplicated: the linkdb has unique (src, dst);
- OPIC cash (the virtual page ``crawlkit:virtual`` included) sums to 1 within 1e-9;
- resume: the rerun fetches only URLs without a spilled result, so no URL is requested twice
  unless its result was not yet spilled when the process died (the fetcher spills every 2 s).
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

from crawlkit import linkdb, storage

# one real crawl on a 2-core machine shared with other Spark jobs can take more than the
# suite's default 600 s
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3000)]

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 4, 1, 12, 0, 0)
SEGMENT = NOW.strftime("%Y%m%d%H%M%S")
TOP_N = 20
PAGE_DELAY = 1.0
VIRTUAL = "crawlkit:virtual"
STAGE_TIMEOUT = 600


class Run:
    """scripts/crash_round.py in its own session (process group), stderr to a file."""

    def __init__(self, tmp: Path, name: str, args: list[str]):
        self.log = tmp / f"{name}.stderr"
        self.out = tmp / f"{name}.stdout"
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "scripts" / "crash_round.py"), *args], cwd=ROOT,
            stdout=self.out.open("wb"), stderr=self.log.open("wb"), start_new_session=True)

    def stages(self) -> list[str]:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return [l.split()[1] for l in text.splitlines() if l.startswith("STAGE ")]

    def wait_for(self, condition, what: str, timeout: float = STAGE_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if self.proc.poll() is not None:
                raise AssertionError(f"the round ended (rc {self.proc.returncode}) before {what}:\n"
                                     + self.log.read_text(errors="replace")[-3000:])
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.05)

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)   # the driver, its JVM and Python workers
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=60)

    def finish(self) -> dict:
        try:
            self.proc.wait(timeout=STAGE_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        assert self.proc.returncode == 0, self.log.read_text(errors="replace")[-3000:]
        return json.loads(self.out.read_text().strip().splitlines()[-1])


def page_requests(server) -> list[str]:
    return [r["url"] for r in server.access_log()
            if not r["url"].endswith("/robots.txt") and r["status"]]


def delta_commits(table_dir: Path) -> list[dict]:
    """commitInfo of every commit of a Delta table, in version order (read from _delta_log)."""
    commits = []
    for path in sorted(glob.glob(str(table_dir / "_delta_log" / "*.json"))):
        for line in Path(path).read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                commits.append(dict(action["commitInfo"], version=int(Path(path).stem)))
    return commits


def tags(table_dir: Path) -> list[str]:
    """The stage tags of every commit (its userMetadata but a link append's carried count,
    ``linkdb.SINCE_COMPACTION``; "" when untagged) but the table's creation (version 0,
    CREATE TABLE, made by storage.ensure_table outside any stage tag; it holds no rows)."""
    return [" ".join(t for t in storage.tags_of(c.get("userMetadata")) if not t.startswith(linkdb.SINCE_COMPACTION))
            for c in delta_commits(table_dir)
            if not (c["version"] == 0 and c.get("operation", "").startswith("CREATE"))]


def snapshot(spark, crawl_dir: str) -> dict:
    """What the checks need of the crawl directory, read as a new reader would see it."""
    db = storage.read_table(spark, storage.crawldb_path(crawl_dir), "crawldb") \
        .select("url", "status", "generated_segment", "opic_cash").collect()
    link_path = storage.linkdb_path(crawl_dir)
    stored = (storage.read_table(spark, link_path, "links").select("src", "dst", "commit_version").collect()
              if storage.is_delta(spark, link_path) else [])
    return dict(db={r.url: r for r in db}, links=[(l.src, l.dst, l.commit_version) for l in stored],
                crawldb_tags=tags(Path(crawl_dir) / "crawldb"),
                linkdb_tags=tags(Path(crawl_dir) / "linkdb") if stored else [])


def check_invariants(snap: dict, before: dict | None) -> None:
    db = snap["db"]
    assert all(snap["crawldb_tags"]), f"an untagged crawldb commit: {snap['crawldb_tags']}"
    assert all(snap["linkdb_tags"]), f"an untagged linkdb commit: {snap['linkdb_tags']}"
    if before is not None:
        lost = set(before["db"]) - set(db)
        assert not lost, f"URLs lost: {sorted(lost)[:10]}"
    assert len(snap["links"]) == len(set(snap["links"])), "a link appended twice in one version"
    cash = sum(r.opic_cash or 0.0 for r in db.values())
    assert VIRTUAL in db and abs(cash - 1.0) < 1e-9, cash
    # the segment's URLs: all still locked by it (updatedb not applied) or none (applied)
    locked = [u for u, r in db.items() if r.generated_segment == SEGMENT]
    applied = f"updatedb:{SEGMENT}" in snap["crawldb_tags"]
    assert len(locked) == (0 if applied else TOP_N), (applied, len(locked))


@pytest.fixture(scope="module")
def crashes(spark, tmp_path_factory):
    from crawlkit.replay import ReplayServer

    tmp = tmp_path_factory.mktemp("crash")
    crawl_dir = str(tmp / "crawl")
    faults = [{"glob": "http://*.gen.test/*", "kind": "delay", "seconds": PAGE_DELAY}]
    server = ReplayServer(["gen:30,seed=2,hosts=3"], workdir=tmp / "replay", faults=faults).start()
    seeds = tmp / "seeds.txt"
    from crawlkit.replay.generated import GeneratedWeb
    web = GeneratedWeb("gen:30,seed=2,hosts=3")
    seeds.write_text("".join(web.url(i) + "\n" for i in range(web.num_pages)))   # all 30 pages
    common = ["--crawl-dir", crawl_dir, "--proxy", server.proxy_url, "--now", NOW.isoformat(),
              "--topN", str(TOP_N), "--scorer", "opic"]
    result = dict(crawl_dir=crawl_dir, server=server)
    run = None
    try:
        # Run 1: inject + generate, then killed during fetch.
        run = Run(tmp, "run1", [*common, "--seeds", str(seeds)])
        run.wait_for(lambda: "fetch" in run.stages() and len(page_requests(server)) >= 6,
                     "six pages fetched")
        run.kill()
        result["fetch_kill"] = dict(requested=page_requests(server),
                                    spilled=spilled_urls(crawl_dir))
        result["after_fetch_kill"] = snapshot(spark, crawl_dir)

        # Run 2: resume; killed during updatedb, once the linkdb commit is in.
        run = Run(tmp, "run2", [*common, "--resume"])
        linkdb = Path(crawl_dir) / "linkdb"
        run.wait_for(lambda: "updatedb" in run.stages() and f"linkdb:{SEGMENT}" in tags(linkdb),
                     "the linkdb commit of updatedb")
        time.sleep(1.0)
        run.kill()
        result["requested_after_run2"] = page_requests(server)
        result["after_updatedb_kill"] = snapshot(spark, crawl_dir)

        # Run 3: resume; killed during scoring.
        run = Run(tmp, "run3", [*common, "--resume"])
        run.wait_for(lambda: "score" in run.stages(), "the score stage")
        time.sleep(2.0)
        run.kill()
        result["run3_stages"] = run.stages()
        result["after_score_kill"] = snapshot(spark, crawl_dir)

        # Run 4: resume to the end.
        run = Run(tmp, "run4", [*common, "--resume"])
        result["final_counters"] = run.finish()["counters"]
        result["final"] = snapshot(spark, crawl_dir)
        result["requested_final"] = page_requests(server)
        yield result
    finally:
        if run is not None and run.proc.poll() is None:
            run.kill()
        server.stop()


def spilled_urls(crawl_dir: str) -> set[str]:
    import pyarrow.parquet as pq
    files = glob.glob(f"{crawl_dir}/segments/{SEGMENT}/content_parts/part-*.parquet")
    return {u for f in files for u in pq.read_table(f, columns=["url"]).column("url").to_pylist()}


def test_kill_during_fetch_leaves_the_crawldb_as_generate_left_it(crashes):
    snap = crashes["after_fetch_kill"]
    check_invariants(snap, None)
    assert snap["crawldb_tags"][-1] == f"generate:{SEGMENT}"
    requested = set(crashes["fetch_kill"]["requested"])
    assert 0 < len(requested) < TOP_N, "killed with some but not all pages fetched"
    assert crashes["fetch_kill"]["spilled"] <= requested


def test_resumed_fetch_requests_only_urls_without_a_spilled_result(crashes):
    spilled = crashes["fetch_kill"]["spilled"]
    first = crashes["fetch_kill"]["requested"]
    # (a request in flight at the kill is logged when the server's answer ends: after the kill)
    later = Counter(crashes["requested_after_run2"]) - Counter(first)
    assert not spilled & set(later), "a URL with a spilled result was fetched again"
    # every fetch-list URL fetched in the end; twice only if its result was not spilled yet
    twice = {u for u in set(crashes["requested_final"]) if crashes["requested_final"].count(u) > 1}
    assert not twice & spilled
    assert len(twice) <= TOP_N - len(spilled)


def test_kill_during_updatedb_leaves_the_version_before_or_after(crashes):
    before = crashes["after_fetch_kill"]
    snap = crashes["after_updatedb_kill"]
    check_invariants(snap, before)
    last = snap["crawldb_tags"][-1]
    assert last in (f"generate:{SEGMENT}", f"updatedb:{SEGMENT}"), snap["crawldb_tags"]
    if last == f"generate:{SEGMENT}":      # before: not one row changed
        assert set(snap["db"]) == set(before["db"])
        assert {u: r.status for u, r in snap["db"].items()} == \
            {u: r.status for u, r in before["db"].items()}
    else:                                   # after: every URL of the segment updated
        assert len(snap["db"]) > len(before["db"])


def test_kill_during_scoring_leaves_the_version_before_or_after(crashes):
    assert "score" in crashes["run3_stages"]
    before = crashes["after_updatedb_kill"]
    snap = crashes["after_score_kill"]
    check_invariants(snap, before)
    assert f"updatedb:{SEGMENT}" in snap["crawldb_tags"]
    last = snap["crawldb_tags"][-1]   # before scoring, or after one of the round's scorers
    assert last == f"updatedb:{SEGMENT}" or (last.startswith("score-") and last.endswith(f":{SEGMENT}"))


def test_after_the_crashes_the_round_completes_once(crashes):
    final = crashes["final"]
    check_invariants(final, crashes["after_score_kill"])
    db_tags = [t for commit in final["crawldb_tags"] for t in storage.tags_of(commit)]
    for tag in (f"generate:{SEGMENT}", f"updatedb:{SEGMENT}", f"score-opic:{SEGMENT}"):
        assert db_tags.count(tag) == 1, db_tags
    # a crash between the two commits of updatedb leaves the linkdb commit made; the rerun
    # finds its tag and appends nothing (no link twice: check_invariants)
    assert set(final["linkdb_tags"]) == {f"linkdb:{SEGMENT}"}
    fetched = {u for u, r in final["db"].items() if r.status == "fetched"}
    assert len(fetched) == TOP_N
    requested = set(crashes["requested_final"])
    assert fetched <= requested
