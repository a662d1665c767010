"""The fault matrix: ONE real crawl round (inject + generate -> fetch -> parse -> updatedb ->
score) through the replay web, whose seeds are trap URLs of every fault kind the replay web can
inject, each on its own host so no fault spills onto another (host pauses, error caps).

For every fault the table gives the fetch outcome, the crawldb status, the retry count and
the wait until the next fetch; the crawl must finish (no crash), with the slow answers cut by
the client (no hang: every request has a read timeout and a page deadline; the fetch stage has
a time limit, which must never have to cut here), and every outcome must be counted in the
round's statistics (``by_status`` of the round report and of ``_stats/fetch.json``).

Nothing here races the clock: the logical time is passed in (``ROUND``), every slow fault is
slower than the page deadline (so it is cut whether the read timeout fires on time or the
machine stalls the fetch thread past it), the timeouts are loose enough for a loaded machine to
answer robots.txt and ordinary pages in time, and the access log is read only once every seed's
answer has ended (the replay web logs a request when its answer ends, a hang 20 s later).

The traps with unbounded link spaces (10^4 links, calendar, session ids, redirects to trap
URLs) check the crawl-side caps: ``db.max_outlinks_per_page``, ``db.max_urls_per_host``,
``urls.max_length``, ``urls.max_repeated_segments``, ``urls.session_params``.

Fetcher-level details of each fault (error texts, truncation sizes) are tested without Spark
in tests/fetch/test_fetch_replay.py; this module checks what the crawl makes of them.
"""
from __future__ import annotations

import json
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from crawlkit import linkdb, storage

# one real crawl on a 2-core machine shared with other Spark jobs can take more than the
# suite's default 600 s
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

NOW = datetime(2026, 3, 1, 0, 0, 0)
ROUND = NOW + timedelta(hours=1)
RETRY_INTERVAL = 86400
READ_TIMEOUT, PAGE_DEADLINE = 5.0, 10.0
SLOW = 20            # seconds of silence of the slow faults: longer than the page deadline
TIME_LIMIT = 600.0   # the fetch stage's backstop; the matrix's outcomes must not depend on it
GONE_INTERVAL = None     # filled from the conf (db.gone_recheck_interval)
MAX_RETRY_AFTER = 3600
MAX_OUTLINKS_PER_PAGE = 200
MAX_URLS_PER_HOST = 30
MAX_LENGTH = 200
LONG_TAIL = "x" * 300

# (trap path, fetch outcome, crawldb status, retries, wait kind); wait kind is "normal" (the
# fetch interval), "retry" (db.retry_interval), "gone" (db.gone_recheck_interval) or seconds
# (a Retry-After, capped at fetcher.max_retry_after).
MATRIX = [
    ("status/404", "not_found", "gone", 0, "gone"),
    ("status/410", "gone", "gone", 0, "gone"),
    ("status/429?retry_after=20", "retry", "retry", 1, 20),
    ("status/500", "retry", "retry", 1, "retry"),
    ("status/503?retry_after=7200", "retry", "retry", 1, MAX_RETRY_AFTER),
    ("redirect/3", "redirect_perm", "redirect_perm", 0, "normal"),
    ("redirect/1?relative=1", "redirect_perm", "redirect_perm", 0, "normal"),
    ("redirect/1?status=302", "redirect_temp", "redirect_temp", 0, "normal"),
    ("loop/2", "redirect_temp", "redirect_temp", 0, "normal"),
    (f"delay/{SLOW}", "retry", "retry", 1, "retry"),    # silent past the read timeout and the deadline: cut

    ("drip?every=0.2", "retry", "retry", 1, "retry"),
    (f"timeout/{SLOW}", "retry", "retry", 1, "retry"),
    ("reset", "retry", "retry", 1, "retry"),
    ("length/100", "retry", "retry", 1, "retry"),
    ("length/-100", "success", "fetched", 0, "normal"),
    ("big/3", "success", "fetched", 0, "normal"),
    ("bomb/268435456", "success", "fetched", 0, "normal"),
    ("encoding/gzip", "success", "fetched", 0, "normal"),
    ("encoding/deflate", "success", "fetched", 0, "normal"),
    ("encoding/raw-deflate", "success", "fetched", 0, "normal"),
    ("encoding/broken", "retry", "retry", 1, "retry"),
    ("type/pdf", "unsupported_type", "fetched", 0, "normal"),
    ("type/png", "unsupported_type", "fetched", 0, "normal"),
    ("charset/missing", "success", "fetched", 0, "normal"),
    ("charset/wrong", "success", "fetched", 0, "normal"),
    ("charset/invalid", "success", "fetched", 0, "normal"),
    ("malformed", "success", "fetched", 0, "normal"),
    ("links/10000", "success", "fetched", 0, "normal"),
    ("calendar/2024-01-31", "success", "fetched", 0, "normal"),
    ("session", "success", "fetched", 0, "normal"),
    # redirects into spider traps: the targets must be filtered like any other link
    # (rules of the faults file, not trap URLs: a seed holding the target would be filtered)
    ("http://rep.test/start", "redirect_perm", "redirect_perm", 0, "normal"),
    ("http://long.test/start", "redirect_perm", "redirect_perm", 0, "normal"),
]
RULES = [{"glob": "http://rep.test/start", "kind": "redirect", "to": "http://rep.test/a/a/a/a/a/x"},
         {"glob": "http://long.test/start", "kind": "redirect", "to": f"http://long.test/{LONG_TAIL}"}]


def seed_url(index: int, path: str) -> str:
    return path if path.startswith("http") else f"http://f{index}.test/__trap/{path}"


SEEDS = {seed_url(i, path): (path, *rest) for i, (path, *rest) in enumerate(MATRIX)}
LINKS_PAGE = next(u for u, v in SEEDS.items() if v[0] == "links/10000")
CALENDAR = next(u for u, v in SEEDS.items() if v[0].startswith("calendar"))
SESSION = next(u for u, v in SEEDS.items() if v[0] == "session")


def complete_log(server, wait: float = 120.0) -> list[dict]:
    """The access log once every seed's answer has ended (a hung answer is logged when the
    server gives up on it, SLOW seconds after the request). Polls; asserts nothing on time."""
    deadline = time.monotonic() + wait
    while True:
        log = server.access_log()
        if set(SEEDS) <= {r["url"] for r in log} or time.monotonic() > deadline:
            return log
        time.sleep(0.5)


@pytest.fixture(scope="module")
def crawl(spark, tmp_path_factory):
    """One crawl round over the fault seeds, for all the checks of this module."""
    from crawlkit.conf import make_conf
    from crawlkit.crawl import run_crawl
    from crawlkit.replay import ReplayServer

    tmp = tmp_path_factory.mktemp("faults")
    server = ReplayServer(["gen:10,seed=1"], workdir=tmp / "replay", faults=RULES).start()
    try:
        seeds = tmp / "seeds.txt"
        seeds.write_text("\n".join(SEEDS) + "\n")
        conf = make_conf(crawl__dir=str(tmp / "crawl"), crawl__topN=1000,
                         generate__partitions=2, spark__shuffle_partitions=2,
                         fetcher__proxy=server.proxy_url, fetcher__server_delay=0.0,
                         fetcher__threads=16, fetcher__read_timeout=READ_TIMEOUT,
                         fetcher__page_deadline=PAGE_DEADLINE, fetcher__time_limit=TIME_LIMIT,
                         fetcher__max_content=200_000,
                         fetcher__max_retry_after=float(MAX_RETRY_AFTER),
                         db__retry_interval=RETRY_INTERVAL,
                         db__max_outlinks_per_page=MAX_OUTLINKS_PER_PAGE,
                         db__max_urls_per_host=MAX_URLS_PER_HOST,
                         urls__max_length=MAX_LENGTH)
        clock_values = iter([NOW, ROUND])
        reports = run_crawl(spark, conf, str(seeds), 1, lambda: next(clock_values),
                            log=lambda _m: None)
        crawl_dir = conf["crawl.dir"]
        segment = reports[0].segment
        stats_file = Path(crawl_dir) / "segments" / segment / "_stats" / "fetch.json"
        content = storage.read_segment_part(spark, crawl_dir, segment, "content", "content") \
            .select("url", "fetch_status", "error", "truncated", "redirect_url").collect()
        yield dict(
            conf=conf, reports=reports, log=complete_log(server),
            stats=json.loads(stats_file.read_text()),
            content={r.url: r for r in content},
            db={r.url: r for r in storage.read_table(
                spark, storage.crawldb_path(crawl_dir), "crawldb").collect()},
            links=linkdb.read_current(spark, crawl_dir).select("src", "dst").collect())
    finally:
        server.stop()


def test_the_round_finished_with_an_outcome_for_every_seed(crawl):
    assert len(crawl["reports"]) == 1
    assert crawl["reports"][0].counters["generate"]["generated"] == len(SEEDS)
    assert set(crawl["content"]) == set(SEEDS)
    # the fetch time limit is a backstop that must not have decided any outcome here
    assert not [u for u, r in crawl["content"].items() if r.error == "time limit"]


@pytest.mark.parametrize("path", [f"delay/{SLOW}", f"timeout/{SLOW}", "drip?every=0.2"])
def test_slow_answers_are_cut_by_the_client(crawl, path):
    """No hang: the client gave up (read timeout or page deadline), the server did not end it."""
    url = next(u for u, v in SEEDS.items() if v[0] == path)
    assert crawl["content"][url].error in ("read timeout", "deadline"), crawl["content"][url]


@pytest.mark.parametrize("url", list(SEEDS), ids=[v[0] for v in SEEDS.values()])
def test_fault(crawl, url):
    """One row of the matrix: fetch outcome, crawldb status, retries, next fetch time."""
    _path, outcome, status, retries, wait = SEEDS[url]
    conf = crawl["conf"]
    assert crawl["content"][url].fetch_status == outcome, crawl["content"][url]
    row = crawl["db"][url]
    assert (row.status, row.retries) == (status, retries)
    seconds = {"normal": row.fetch_interval, "retry": conf["db.retry_interval"],
               "gone": conf["db.gone_recheck_interval"]}.get(wait, wait)
    assert row.fetch_time == ROUND + timedelta(seconds=seconds)
    requested = [r for r in crawl["log"] if r["url"] == url]
    assert len(requested) == 1, "each fault URL is requested exactly once in the round"


def test_every_outcome_is_counted_in_the_round_statistics(crawl):
    expected = Counter(outcome for _p, outcome, *_ in SEEDS.values())
    assert crawl["reports"][0].counters["fetch"]["by_status"] == dict(expected)
    assert crawl["stats"]["by_status"] == dict(expected)
    assert sum(crawl["stats"]["by_status"].values()) == len(SEEDS)


def test_size_limits_are_applied_in_the_crawl(crawl):
    content = crawl["content"]
    big, bomb = seed_url(15, "big/3"), seed_url(16, "bomb/268435456")
    assert content[big].truncated and content[bomb].truncated
    assert content[bomb].error == "decompression limit"


def test_outlinks_per_page_cap(crawl):
    """10^4 links on one page: at most db.max_outlinks_per_page of them become links."""
    from_page = [l for l in crawl["links"] if l.src == LINKS_PAGE]
    assert len(from_page) == MAX_OUTLINKS_PER_PAGE


def test_urls_per_host_cap(crawl):
    """The 10^4-link page's host gets at most db.max_urls_per_host crawldb rows."""
    host = LINKS_PAGE.split("/")[2]
    on_host = [u for u in crawl["db"] if u.split("/")[2] == host]
    assert len(on_host) == MAX_URLS_PER_HOST
    per_host = Counter(u.split("/")[2] for u in crawl["db"])
    assert max(per_host.values()) <= MAX_URLS_PER_HOST


def test_calendar_adds_only_its_three_neighbours(crawl):
    host = CALENDAR.split("/")[2]
    assert sorted(u for u in crawl["db"] if u.split("/")[2] == host) == sorted([
        CALENDAR, f"http://{host}/__trap/calendar/2024-02-01",
        f"http://{host}/__trap/calendar/2024-01-30", f"http://{host}/__trap/calendar/2024-03-02"])


def test_session_ids_are_stripped(crawl):
    host = SESSION.split("/")[2]
    on_host = sorted(u for u in crawl["db"] if u.split("/")[2] == host)
    assert on_host == sorted([SESSION] + [f"http://{host}/__trap/session/{n}"
                                          for n in ("home", "news", "contact")])
    assert not [u for u in crawl["db"] if "sid=" in u]


REDIRECT_TARGETS = {"http://rep.test/a/a/a/a/a/x", f"http://long.test/{LONG_TAIL}"}


def url_cap_violations(crawl):
    from crawlkit.urls import UrlFilter

    url_filter = UrlFilter(crawl["conf"].section("urls"))
    return {u: url_filter.check(u) for u in crawl["db"] if u not in SEEDS and url_filter.check(u)}


def test_no_linked_url_in_the_crawldb_breaks_the_url_caps(crawl):
    """Length and repeated segments of URLs found as links (filtered in parse)."""
    bad = url_cap_violations(crawl)
    assert set(bad) <= REDIRECT_TARGETS, bad


def test_redirect_targets_are_filtered_like_links(crawl):
    """A redirect into a spider trap (a URL too long, /a/a/a/a/a/) must not enter the crawldb."""
    assert url_cap_violations(crawl) == {}
