"""robots.txt decisions (RFC 9309) with a stand-in HTTP client: no server needed."""
import threading
import time
from datetime import datetime

import pytest

from crawlkit.fetch.http import Failure, Response
from crawlkit.fetch.robots import (ROBOTS_MAX_BYTES, RobotsCache, RobotsRules, fetch_rules,
                                   origin_of)

AGENT = "crawlkit"


class FakeClient:
    """Answers GETs from a URL -> Response table and records them."""

    def __init__(self, answers):
        self.answers = answers
        self.asked = []

    def get(self, url, *, deadline, max_bytes, accept_types=None, headers=None):
        self.asked.append((url, max_bytes))
        return self.answers(url) if callable(self.answers) else self.answers[url]


def answer(url, status=200, body=None, failure=None, error=None, **headers):
    return Response(url=url, fetched_at=datetime(2024, 1, 1), status=status, body=body,
                    headers=headers, failure=failure, error=error)


def rules_for(answers):
    client = FakeClient(answers)
    return fetch_rules(client, "http://a.test", AGENT, time.monotonic() + 5), client


def test_rules_apply_the_most_specific_group():
    text = ("User-agent: *\nDisallow: /\n\n"
            "User-agent: crawlkit\nDisallow: /secret/\nCrawl-delay: 2.5\n")
    rules = RobotsRules.from_text(text, AGENT)
    assert rules.allowed("http://a.test/page") and not rules.allowed("http://a.test/secret/x")
    assert rules.crawl_delay == 2.5
    other = RobotsRules.from_text(text, "otherbot")
    assert not other.allowed("http://a.test/page") and other.crawl_delay is None


def test_allow_longest_match_wins():
    rules = RobotsRules.from_text("User-agent: *\nDisallow: /a/\nAllow: /a/b/\n", AGENT)
    assert rules.allowed("http://a.test/a/b/c") and not rules.allowed("http://a.test/a/c")


def test_2xx_is_parsed_and_read_at_most_500_kib():
    rules, client = rules_for({"http://a.test/robots.txt": answer(
        "http://a.test/robots.txt", body=b"\xef\xbb\xbfUser-agent: *\nDisallow: /x\n")})
    assert not rules.allowed("http://a.test/x") and rules.allowed("http://a.test/y")
    assert client.asked == [("http://a.test/robots.txt", ROBOTS_MAX_BYTES)]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410])
def test_4xx_allows_everything(status):
    rules, _ = rules_for(lambda url: answer(url, status=status))
    assert rules.allowed("http://a.test/anything") and not rules.unreachable


@pytest.mark.parametrize("status", [429, 500, 503])
def test_429_and_5xx_disallow_everything_for_now(status):
    rules, _ = rules_for(lambda url: answer(url, status=status))
    assert rules.unreachable and not rules.allowed("http://a.test/anything")
    assert rules.reason == f"robots.txt unreachable: http {status}"


def test_network_failure_is_unreachable():
    rules, _ = rules_for(lambda url: answer(url, status=None, failure=Failure.TRANSPORT,
                                            error="read timeout"))
    assert rules.unreachable and rules.reason == "robots.txt unreachable: read timeout"


def test_redirects_are_followed_up_to_five():
    def chain(hops):
        def answers(url):
            n = int(url.rsplit("/", 1)[1].split(".")[0].removeprefix("robots") or 0)
            if n < hops:
                return answer(url, status=301, location=f"/robots{n + 1}.txt")
            return answer(url, body=b"User-agent: *\nDisallow: /\n")
        return answers

    rules, client = rules_for(chain(5))
    assert not rules.allowed("http://a.test/x") and len(client.asked) == 6
    rules, client = rules_for(chain(6))   # more than five: unavailable, allow all
    assert rules.allowed("http://a.test/x") and len(client.asked) == 6


def test_blocked_target_counts_as_unavailable():
    rules, _ = rules_for(lambda url: answer(url, status=None, failure=Failure.BLOCKED,
                                            error="blocked address 10.0.0.1"))
    assert rules.allowed("http://a.test/x") and not rules.unreachable


def test_origin_of():
    assert origin_of("HTTP://A.test:8080/x?y") == "http://a.test:8080"
    assert origin_of("https://a.test/") == "https://a.test"


def test_cache_fetches_each_origin_once_even_when_asked_concurrently():
    calls = []

    def slow_fetch(origin):
        calls.append(origin)
        time.sleep(0.05)
        return RobotsRules.allow_all(AGENT)

    cache = RobotsCache(slow_fetch)
    threads = [threading.Thread(target=cache.get, args=("http://a.test",)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == ["http://a.test"]
    assert cache.peek("http://a.test") is cache.get("http://a.test")
    assert cache.peek("http://b.test") is None
