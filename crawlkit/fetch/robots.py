"""robots.txt (RFC 9309) per origin, fetched once per partition and parsed with protego.

How a robots.txt fetch turns into rules (RFC 9309 section 2.3.1):

* 2xx: the body (at most 500 KiB; what was read is parsed) — rules and Crawl-delay;
* 3xx: up to five redirects are followed; more, or a target the SSRF guard refuses, counts
  as *unavailable*;
* 4xx ("unavailable"): everything allowed — except 429, which says "too many requests", not
  "no robots.txt", and is treated as unreachable as Google does;
* 5xx, timeouts, connection errors ("unreachable"): everything disallowed *for this round*.
  The host's URLs come out ``retry`` rather than ``robots_denied``: the RFC asks for a complete
  disallow while the file is unreachable, not for a verdict on the URLs, and ``robots_denied``
  would mark them gone in the crawldb.
"""
from __future__ import annotations

import threading
from typing import Callable
from urllib.parse import urljoin, urlsplit

from protego import Protego

from crawlkit.fetch.http import Failure, HttpClient

ROBOTS_MAX_BYTES = 500 * 1024
ROBOTS_MAX_REDIRECTS = 5


class RobotsRules:
    """The verdicts of one origin's robots.txt for our agent."""

    __slots__ = ("_parser", "_agent", "unreachable", "crawl_delay", "reason", "sitemaps")

    def __init__(self, parser: Protego | None, agent: str, *, unreachable: bool = False,
                 reason: str | None = None):
        self._parser = parser
        self._agent = agent
        self.unreachable = unreachable
        self.reason = reason
        self.crawl_delay = parser.crawl_delay(agent) if parser is not None else None
        # the file's Sitemap: lines as written (maybe relative; for every agent: they are no
        # rules), for crawlkit.stages.sitemaps; the verdicts above do not depend on them
        self.sitemaps: tuple[str, ...] = tuple(parser.sitemaps) if parser is not None else ()

    @classmethod
    def allow_all(cls, agent: str) -> "RobotsRules":
        return cls(None, agent)

    @classmethod
    def from_text(cls, text: str, agent: str) -> "RobotsRules":
        try:
            return cls(Protego.parse(text.lstrip("\ufeff")), agent)
        except Exception:  # protego is lenient; a file it still chokes on says nothing usable
            return cls.allow_all(agent)

    def allowed(self, url: str) -> bool:
        if self.unreachable:
            return False
        return self._parser is None or self._parser.can_fetch(url, self._agent)


def origin_of(url: str) -> str:
    """``scheme://host[:port]``: robots.txt applies per origin (RFC 9309 section 2.3)."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def fetch_rules(client: HttpClient, origin: str, agent: str, deadline: float) -> RobotsRules:
    """Fetch and interpret ``origin``'s robots.txt (see the module doc for the mapping)."""
    url = origin + "/robots.txt"
    for _ in range(ROBOTS_MAX_REDIRECTS + 1):
        response = client.get(url, deadline=deadline, max_bytes=ROBOTS_MAX_BYTES)
        if response.failure is Failure.TRANSPORT:
            return RobotsRules(None, agent, unreachable=True,
                               reason=f"robots.txt unreachable: {response.error}")
        if response.failure is not None:
            return RobotsRules.allow_all(agent)
        status = response.status
        if 200 <= status < 300:
            return RobotsRules.from_text((response.body or b"").decode("utf-8", "replace"), agent)
        if 300 <= status < 400 and response.headers.get("location"):
            url = urljoin(url, response.headers["location"])
            continue
        if status == 429 or status >= 500:
            return RobotsRules(None, agent, unreachable=True,
                               reason=f"robots.txt unreachable: http {status}")
        return RobotsRules.allow_all(agent)
    return RobotsRules.allow_all(agent)


class RobotsCache:
    """Rules per origin for one partition; each origin is fetched by one thread only, the
    others asking for it at the same time wait for that result."""

    def __init__(self, fetch: Callable[[str], RobotsRules]):
        self._fetch = fetch
        self._rules: dict[str, RobotsRules] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def peek(self, origin: str) -> RobotsRules | None:
        return self._rules.get(origin)

    def get(self, origin: str) -> RobotsRules:
        rules = self._rules.get(origin)
        if rules is not None:
            return rules
        with self._guard:
            lock = self._locks.setdefault(origin, threading.Lock())
        with lock:
            rules = self._rules.get(origin)
            if rules is None:
                rules = self._rules[origin] = self._fetch(origin)
            return rules
