"""robots.txt conformance with RFC 9309, table-driven, against crawlkit/fetch/robots.py.

tests/fetch/test_robots.py already covers: the most specific group applies, a longer allow
beats a shorter disallow, 2xx read with a 500 KiB cap, 4xx (400/401/403/404/410) allow all,
429/500/503 and network failures disallow all (unreachable), redirects followed up to five
(a sixth hop: allow all), a guard-blocked target counts as unavailable, one fetch per origin.
This module adds the matching rules of section 2.2 (longest match, ties, ``*`` and ``$``,
percent-encoding, case), group selection and merging (2.2.1), the status classes at their
edges (2.3.1: all 4xx and 5xx codes, redirects across hosts and relative Locations), and the
500 KiB parsing limit applied to a file that is bigger (2.5).
"""
from __future__ import annotations

import time
from datetime import datetime

import pytest

from crawlkit.fetch.http import Failure, Response
from crawlkit.fetch.robots import ROBOTS_MAX_BYTES, RobotsRules, fetch_rules

AGENT = "crawlkit"

# (case, robots.txt, path, allowed for AGENT)
MATCHING = [
    # 2.2.2: the most specific (longest) match wins, whatever the order of the lines
    ("longest disallow wins", "User-agent: *\nAllow: /p\nDisallow: /page/\n", "/page/x", False),
    ("longest allow wins", "User-agent: *\nDisallow: /page/\nAllow: /page/x\n", "/page/xy", True),
    ("order does not matter", "User-agent: *\nAllow: /page/x\nDisallow: /page/\n", "/page/xy", True),
    # 2.2.2: equivalent allow and disallow: allow wins (SHOULD)
    ("tie: allow wins", "User-agent: *\nDisallow: /folder\nAllow: /folder\n", "/folder/page", True),
    ("tie, other order", "User-agent: *\nAllow: /folder\nDisallow: /folder\n", "/folder/page", True),
    # 2.2.3: '*' any sequence, '$' end of path
    ("star in the middle", "User-agent: *\nDisallow: /*.php\n", "/a/b/index.php?x=1", False),
    ("star, no match", "User-agent: *\nDisallow: /*.php\n", "/a/b/index.html", True),
    ("dollar anchors", "User-agent: *\nDisallow: /*.gif$\n", "/img/a.gif", False),
    ("dollar, longer path", "User-agent: *\nDisallow: /*.gif$\n", "/img/a.gif?size=2", True),
    ("dollar alone", "User-agent: *\nDisallow: /$\n", "/", False),
    ("dollar alone, other page", "User-agent: *\nDisallow: /$\n", "/page", True),
    ("star at the end is a no-op", "User-agent: *\nDisallow: /fish*\n", "/fishheads", False),
    ("allow with dollar beats disallow all", "User-agent: *\nDisallow: /\nAllow: /$\n", "/", True),
    ("... but not below", "User-agent: *\nDisallow: /\nAllow: /$\n", "/x", False),
    # prefixes are case-sensitive
    ("paths are case-sensitive", "User-agent: *\nDisallow: /Private\n", "/private", True),
    ("query is part of the path", "User-agent: *\nDisallow: /search?q=\n", "/search?q=x", False),
    # empty disallow means nothing is disallowed
    ("empty disallow", "User-agent: *\nDisallow:\n", "/anything", True),
    ("no rule for the path", "User-agent: *\nDisallow: /a\n", "/b", True),
    # 2.2.2: percent-encoding: an encoded unreserved character equals itself
    ("percent-encoded rule", "User-agent: *\nDisallow: /%7Ejoe/\n", "/~joe/index.html", False),
    ("percent-encoded path", "User-agent: *\nDisallow: /~joe/\n", "/%7Ejoe/index.html", False),
    # comments and unknown lines are ignored
    ("comments", "# hello\nUser-agent: * # everyone\nDisallow: /x # no x\nFoo: bar\n", "/x", False),
    ("BOM and CRLF", "\ufeffUser-agent: *\r\nDisallow: /x\r\n", "/x", False),
]

# (case, robots.txt, agent, path, allowed)
GROUPS = [
    # 2.2.1: the product token is matched case-insensitively
    ("agent case-insensitive", "User-agent: CrawlKit\nDisallow: /x\n", AGENT, "/x", False),
    # a group for our agent replaces the '*' group entirely
    ("own group beats star", "User-agent: *\nDisallow: /\n\nUser-agent: crawlkit\nDisallow: /x\n",
     AGENT, "/y", True),
    ("star group for others", "User-agent: *\nDisallow: /\n\nUser-agent: crawlkit\nDisallow: /x\n",
     "otherbot", "/y", False),
    # several user-agent lines start one group
    ("one group, several agents", "User-agent: a\nUser-agent: crawlkit\nDisallow: /x\n", AGENT, "/x", False),
    ("one group, several agents (other)", "User-agent: a\nUser-agent: crawlkit\nDisallow: /x\n", "a", "/x", False),
    # groups for the same agent are merged
    ("groups merged (first)", "User-agent: crawlkit\nDisallow: /a\n\nUser-agent: other\nDisallow: /\n\n"
     "User-agent: crawlkit\nDisallow: /b\n", AGENT, "/a", False),
    ("groups merged (second)", "User-agent: crawlkit\nDisallow: /a\n\nUser-agent: other\nDisallow: /\n\n"
     "User-agent: crawlkit\nDisallow: /b\n", AGENT, "/b", False),
    ("groups merged (neither)", "User-agent: crawlkit\nDisallow: /a\n\nUser-agent: other\nDisallow: /\n\n"
     "User-agent: crawlkit\nDisallow: /b\n", AGENT, "/c", True),
    # no matching group and no '*': everything allowed
    ("no group for us", "User-agent: other\nDisallow: /\n", AGENT, "/x", True),
    # rules before any user-agent line belong to no group
    ("rules outside a group", "Disallow: /x\n", AGENT, "/x", True),
]


@pytest.mark.parametrize("text,path,allowed", [c[1:] for c in MATCHING], ids=[c[0] for c in MATCHING])
def test_matching(text, path, allowed):
    assert RobotsRules.from_text(text, AGENT).allowed("http://a.test" + path) is allowed


@pytest.mark.parametrize("text,agent,path,allowed", [c[1:] for c in GROUPS], ids=[c[0] for c in GROUPS])
def test_groups(text, agent, path, allowed):
    assert RobotsRules.from_text(text, agent).allowed("http://a.test" + path) is allowed


class FakeClient:
    def __init__(self, answers):
        self.answers, self.asked = answers, []

    def get(self, url, *, deadline, max_bytes, accept_types=None, headers=None):
        self.asked.append(url)
        response = self.answers(url)
        if response.body is not None and len(response.body) > max_bytes:
            response.body, response.truncated = response.body[:max_bytes], True
        return response


def answer(url, status=200, body=None, failure=None, error=None, **headers):
    return Response(url=url, fetched_at=datetime(2024, 1, 1), status=status, body=body,
                    headers=headers, failure=failure, error=error)


DISALLOW_ALL = b"User-agent: *\nDisallow: /\n"

# (case, answers for the robots.txt URL(s), expected: "allow", "rules" (disallow /) or "unreachable")
STATUSES = [(f"http {code}", code, "allow") for code in (400, 402, 405, 406, 408, 451, 499)] + \
           [(f"http {code}", code, "unreachable") for code in (429, 500, 501, 502, 504, 599)] + \
           [("http 200", 200, "rules"), ("http 203", 203, "rules"), ("http 204 empty", 204, "allow")]


@pytest.mark.parametrize("status,expected", [c[1:] for c in STATUSES], ids=[c[0] for c in STATUSES])
def test_status_classes(status, expected):
    body = DISALLOW_ALL if status in (200, 203) else None
    client = FakeClient(lambda url: answer(url, status=status, body=body))
    rules = fetch_rules(client, "http://a.test", AGENT, time.monotonic() + 5)
    verdict = "unreachable" if rules.unreachable else (
        "allow" if rules.allowed("http://a.test/x") else "rules")
    assert verdict == expected


@pytest.mark.parametrize("error", ["read timeout", "connect timeout", "connection reset",
                                   "connection refused", "dns failure", "deadline"])
def test_transport_failures_are_unreachable(error):
    client = FakeClient(lambda url: answer(url, status=None, failure=Failure.TRANSPORT, error=error))
    rules = fetch_rules(client, "http://a.test", AGENT, time.monotonic() + 5)
    assert rules.unreachable and not rules.allowed("http://a.test/")
    assert rules.reason == f"robots.txt unreachable: {error}"


def test_redirect_across_hosts_with_relative_location_is_followed():
    hops = {"http://a.test/robots.txt": answer("", status=301, location="http://b.test/r/robots.txt"),
            "http://b.test/r/robots.txt": answer("", status=302, location="../final.txt"),
            "http://b.test/final.txt": answer("", body=DISALLOW_ALL)}
    client = FakeClient(lambda url: hops[url])
    rules = fetch_rules(client, "http://a.test", AGENT, time.monotonic() + 5)
    assert client.asked == list(hops)
    assert not rules.allowed("http://a.test/x")


def test_redirect_to_an_unreachable_file_is_unreachable():
    hops = {"http://a.test/robots.txt": answer("", status=301, location="http://b.test/robots.txt"),
            "http://b.test/robots.txt": answer("", status=503)}
    rules = fetch_rules(FakeClient(lambda url: hops[url]), "http://a.test", AGENT, time.monotonic() + 5)
    assert rules.unreachable


def test_redirect_loop_stops_after_five_hops_and_allows():
    client = FakeClient(lambda url: answer(url, status=302, location="/robots.txt"))
    rules = fetch_rules(client, "http://a.test", AGENT, time.monotonic() + 5)
    assert len(client.asked) == 6 and rules.allowed("http://a.test/x")


def test_rules_beyond_500_kib_are_ignored():
    """2.5: at least 500 KiB must be parsed; what is beyond the limit may be ignored. Rules in
    the first 500 KiB apply; a rule past the cut does not (and nothing past it is read)."""
    head = b"User-agent: *\nDisallow: /early\n"
    filler = b"# " + b"x" * 1000 + b"\n"
    body = head + filler * ((ROBOTS_MAX_BYTES - len(head)) // len(filler) + 1) + b"Disallow: /late\n"
    assert len(body) > ROBOTS_MAX_BYTES
    client = FakeClient(lambda url: answer(url, body=body))
    rules = fetch_rules(client, "http://a.test", AGENT, time.monotonic() + 5)
    assert not rules.allowed("http://a.test/early/1")
    assert rules.allowed("http://a.test/late/1")


def test_a_line_cut_by_the_limit_does_not_break_the_file():
    head = b"User-agent: *\nDisallow: /early\n"
    body = head + b"Disallow: /" + b"y" * ROBOTS_MAX_BYTES
    client = FakeClient(lambda url: answer(url, body=body))
    rules = fetch_rules(client, "http://a.test", AGENT, time.monotonic() + 5)
    assert not rules.allowed("http://a.test/early") and rules.allowed("http://a.test/other")


def test_non_utf8_bytes_do_not_break_the_file():
    body = b"User-agent: *\nDisallow: /caf\xe9\nDisallow: /x\n"
    rules = fetch_rules(FakeClient(lambda url: answer(url, body=body)), "http://a.test", AGENT,
                        time.monotonic() + 5)
    assert not rules.allowed("http://a.test/x") and rules.allowed("http://a.test/y")


def test_crawl_delay_of_the_merged_group():
    rules = RobotsRules.from_text("User-agent: *\nCrawl-delay: 9\n\nUser-agent: crawlkit\n"
                                  "Crawl-delay: 1.5\nDisallow: /x\n", AGENT)
    assert rules.crawl_delay == 1.5
