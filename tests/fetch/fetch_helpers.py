"""Helpers shared by the fetcher tests (imported by name: tests/fetch is on sys.path)."""
from __future__ import annotations

from datetime import datetime
from urllib.parse import urlsplit

NOW = datetime(2024, 1, 1)

# robots.txt of the replay web's test hosts (every other host: 404, i.e. allow all).
ROBOTS = {
    "robots.test": ("User-agent: *\nDisallow: /private/\n\n"
                    "User-agent: crawlkit\nDisallow: /secret/\n"),
    "delayed.test": "User-agent: *\nCrawl-delay: 0.3\n",
    "slowpoke.test": "User-agent: *\nCrawl-delay: 100\n",
    "robots503.test": {"status": 503},
    "robots404.test": {"status": 404},
    "robotshang.test": {"timeout": 5},
    "robotsmoved.test": {"redirect": "http://robots.test/robots.txt"},
}


def fetch_row(url: str, **fields) -> dict:
    """A fetch-list row (schemas/fetchlist.json) for ``url``."""
    row = dict(url=url, host=urlsplit(url).hostname, score=1.0, status="unfetched", depth=0,
               etag=None, last_modified=None, signature=None, retries=0, segment="20240101000000")
    row.update(fields)
    return row


def requests_to(replay, host: str) -> list[dict]:
    """Access-log records for ``host``, in order of arrival."""
    return [r for r in replay.access_log() if r["host"] == host]
