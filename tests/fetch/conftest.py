"""Fixtures for the fetcher tests: one replay web and a ``fetch`` runner going through it.

The replay web is shared by the module's tests (starting one costs ~0.5 s); tests keep out of
each other's way by using their own made-up host names, and read the access log for those.
"""
from __future__ import annotations

import pytest
from fetch_helpers import NOW, ROBOTS, fetch_row

from crawlkit.conf import make_conf
from crawlkit.fetch import FetchStats, fetch_partition


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    from crawlkit.replay import ReplayServer

    server = ReplayServer(["gen:200,seed=5"], workdir=tmp_path_factory.mktemp("replay"),
                          robots=ROBOTS)
    with server:
        yield server


@pytest.fixture
def fetch(replay):
    """``fetch(urls_or_rows, **conf) -> (rows by url, stats)`` through the replay web, with
    fast defaults (no delay, short timeouts) that a test overrides as it needs."""

    def run(items, **overrides):
        options = dict(fetcher__proxy=replay.proxy_url, fetcher__server_delay=0.0,
                       fetcher__threads=4, fetcher__connect_timeout=2.0,
                       fetcher__read_timeout=2.0, fetcher__page_deadline=3.0,
                       fetcher__proxy_resolve_targets=False)
        options.update(overrides)
        rows = [fetch_row(item) if isinstance(item, str) else item for item in items]
        stats = FetchStats()
        results = list(fetch_partition(rows, make_conf(**options), NOW, stats))
        assert len(results) == len(rows)
        by_url = {result["url"]: result for result in results}
        assert set(by_url) == {row["url"] for row in rows}
        return by_url, stats

    return run
