"""Security: the SSRF guard against address spellings an attacker would try, and limits.

Already covered in tests/fetch (not repeated here):
- address classes (private, loopback, link-local, metadata, multicast, unspecified, reserved,
  CGNAT, unique local, IPv4-mapped) and the allow-list: tests/fetch/test_guard.py;
- direct connections refused before connecting, allow-list letting a local server through,
  headers over max_header_bytes refused: tests/fetch/test_direct.py;
- IP-literal targets blocked before the proxy is asked, followed redirect hops to the metadata
  address blocked: tests/fetch/test_fetch_replay.py (test_internal_targets_are_blocked_...,
  test_followed_hops_obey_robots_and_the_guard);
- body size (truncation) and decompression bombs (ratio and output cap):
  tests/fetch/test_decode.py and test_fetch_replay.py::test_size_limits.

Added here, through the replay web (a forward proxy that would happily serve any host: a URL
it logs is a URL that got out): alternative spellings of internal addresses (integer, hex,
octal and short IPv4 forms, IPv6 with embedded IPv4, userinfo tricks, ``localhost`` names) with
the default configuration (targets resolved before going to the proxy), redirects to internal
addresses that are followed (relative and absolute, several hops) or merely recorded, robots.txt
never fetched from a blocked host, and the header, body and decompression limits in one place.
"""
from __future__ import annotations

import pytest

from crawlkit.conf import make_conf
from crawlkit.fetch import fetch_partition

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fetch"))
from fetch_helpers import NOW, fetch_row  # noqa: E402


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    from crawlkit.replay import ReplayServer

    faults = [{"glob": "http://hop.test/internal", "kind": "redirect", "to": "http://127.0.0.1/admin"},
              {"glob": "http://hop.test/metadata2", "kind": "redirect", "hops": 2,
               "to": "http://169.254.169.254/latest/meta-data/"},
              {"glob": "http://hop.test/localname", "kind": "redirect", "to": "http://localhost/"}]
    with ReplayServer(["gen:10,seed=5"], workdir=tmp_path_factory.mktemp("replay"),
                      faults=faults) as server:
        yield server


def fetch(replay, urls, **overrides):
    # the defaults of the product, except the proxy and short timeouts
    options = dict(fetcher__proxy=replay.proxy_url, fetcher__server_delay=0.0,
                   fetcher__threads=4, fetcher__read_timeout=2.0, fetcher__page_deadline=3.0)
    options.update(overrides)
    rows = [fetch_row(u) for u in urls]
    return {r["url"]: r for r in fetch_partition(rows, make_conf(**options), NOW)}


def internal_hosts_logged(replay):
    """Hosts of requests that reached the proxy and are not the made-up public test hosts."""
    return sorted({r["host"] for r in replay.access_log() if not r["host"].endswith(".test")})


INTERNAL_SPELLINGS = [
    "http://2130706433/",                 # 127.0.0.1 as one integer
    "http://0x7f000001/",                 # hex integer
    "http://0x7f.0.0.1/",                 # hex octet
    "http://0177.0.0.1/",                 # octal octet
    "http://127.1/",                      # short form
    "http://127.0.0.1.:80/x",             # trailing dot and explicit port
    "http://[::ffff:127.0.0.1]/",         # IPv4-mapped IPv6
    "http://[::ffff:7f00:1]/",            # the same, hex
    "http://[0:0:0:0:0:ffff:a9fe:a9fe]/latest/meta-data/",  # metadata, mapped
    "http://[fd00:ec2::254]/latest/meta-data/",            # AWS IPv6 metadata
    "http://user:pw@127.0.0.1/",          # userinfo
    "http://public.test@169.254.169.254/",  # userinfo looking like a host
    "http://localhost/",                  # a name of loopback
    "http://localhost./",
    "http://LOCALHOST:8080/",
    "http://0.0.0.0/",
    "http://10.0.0.1:22/",
    "http://169.254.169.254/latest/user-data",
]


def test_internal_address_spellings_are_blocked_and_never_reach_the_proxy(replay):
    results = fetch(replay, INTERNAL_SPELLINGS)
    wrong = {u: (r["fetch_status"], r["error"]) for u, r in results.items()
             if r["fetch_status"] not in ("blocked", "access_denied")}
    assert wrong == {}
    assert not internal_hosts_logged(replay)


def test_normalized_spellings_keep_the_guard_effective():
    """URLs are normalized before they reach a fetch list; the normalized form of an internal
    address must still be judged internal (or be refused by the normalizer)."""
    from crawlkit.fetch.guard import AddressGuard
    from crawlkit.urls import UrlNormalizer, host_of

    normalize = UrlNormalizer(make_conf().section("urls"))
    guard = AddressGuard(True)
    for url in INTERNAL_SPELLINGS:
        normalized = normalize(url)
        if normalized is None:
            continue
        host = host_of(normalized).strip("[]").rstrip(".")
        try:
            import ipaddress
            ipaddress.ip_address(host)
        except ValueError:
            continue   # a name: resolved and judged at fetch time (test above)
        assert guard.is_blocked(host), (url, normalized)


def test_followed_redirects_into_internal_addresses_are_blocked(replay):
    urls = ["http://hop.test/internal", "http://hop.test/metadata2", "http://hop.test/localname",
            "http://hop2.test/__trap/redirect/1?to=http://[::1]:8080/x",
            "http://hop3.test/__trap/redirect/3?relative=1&to=http://10.1.2.3/"]
    results = fetch(replay, urls, fetcher__follow_redirects=5)
    assert {u: r["fetch_status"] for u, r in results.items()} == {u: "blocked" for u in urls}
    assert not internal_hosts_logged(replay)


def test_recorded_redirects_to_internal_addresses_are_not_fetched(replay):
    """follow_redirects = 0: the redirect is only recorded; the target is fetched in a later
    round, where the guard blocks it like any other URL."""
    results = fetch(replay, ["http://hop.test/internal"])
    row = results["http://hop.test/internal"]
    assert row["fetch_status"] == "redirect_perm" and row["redirect_url"] == "http://127.0.0.1/admin"
    later = fetch(replay, [row["redirect_url"]])
    assert later[row["redirect_url"]]["fetch_status"] == "blocked"


def test_allow_list_exempts_only_what_it_names(replay):
    results = fetch(replay, ["http://10.0.0.1/", "http://10.0.0.2/"],
                    fetcher__allow_private=["10.0.0.1/32"], fetcher__connect_timeout=1.0,
                    fetcher__max_exceptions_per_host=1)
    assert results["http://10.0.0.2/"]["fetch_status"] == "blocked"
    assert results["http://10.0.0.1/"]["fetch_status"] != "blocked"


def test_limits_in_one_place(replay):
    big = "http://limits1.test/__trap/big/2"
    bomb = "http://limits2.test/__trap/bomb/1073741824"
    deflate = "http://limits3.test/__trap/encoding/deflate"
    # (the ratio is checked once more than 64 KiB came out: a cap above that)
    results = fetch(replay, [big, bomb, deflate], fetcher__max_content=500_000,
                    fetcher__max_decompression_ratio=20.0)
    assert results[big]["truncated"] and len(results[big]["content"]) == 500_000
    assert results[bomb]["truncated"] and len(results[bomb]["content"]) <= 500_000
    assert results[bomb]["error"] == "decompression limit"
    assert results[deflate]["fetch_status"] == "success" and not results[deflate]["truncated"]
    served = {r["url"]: r["bytes"] for r in replay.access_log()}
    # the 1 GiB bomb was not downloaded whole: the client hung up early
    assert served[bomb] < 1_100_000
