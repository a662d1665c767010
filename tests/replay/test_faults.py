"""Faults: each kind over the wire (trap URLs and a faults file), and the rule mechanics."""

from __future__ import annotations

import gzip
import json
import threading
import time
import zlib
from pathlib import Path

import pytest
import requests

from crawlkit.replay import GeneratedWeb
from crawlkit.replay.changes import ChangeModel, Clock
from crawlkit.replay.faults import KINDS
from crawlkit.replay.messages import Request
from crawlkit.replay.robots import RobotsConfig
from crawlkit.replay.rules import FaultRules
from crawlkit.replay.synthetic import SyntheticSite
from crawlkit.replay.urls import split_url
from crawlkit.replay.web import Web

from .conftest import hrefs, raw_exchange, raw_get, split_response

FAULTS_TOML = r"""
[[fault]]
glob = "http://s1.gen.test/"
kind = "malformed"

[[fault]]
regex = '^http://old\.test/(.*)$'
kind = "redirect"
hops = 3
to = 'http://landing.test/\1'

[[fault]]
glob = "http://s2.gen.test/"
times = 1
kind = "status"
status = 503
retry_after = 2
"""
SPEC = "gen:200,seed=4"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from crawlkit.replay import ReplayServer
    folder = tmp_path_factory.mktemp("faults")
    (folder / "faults.toml").write_text(FAULTS_TOML)
    with ReplayServer([SPEC], workdir=folder, faults=folder / "faults.toml") as server:
        yield server


def get(server, url, **kwargs):
    return requests.get(url, proxies=server.proxies, timeout=10, **kwargs)


@pytest.mark.parametrize("path, status, retry_after", [
    ("status/404", 404, None), ("status/410", 410, None), ("status/429?retry_after=7", 429, "7"),
    ("status/500", 500, None), ("status/503?retry_after=30", 503, "30")])
def test_status_codes(server, path, status, retry_after):
    response = get(server, f"http://any.test/__trap/{path}")
    assert response.status_code == status and response.headers.get("Retry-After") == retry_after


def test_redirect_chain_ends_at_its_target(server):
    response = get(server, "http://any.test/__trap/redirect/3")
    assert [r.status_code for r in response.history] == [301, 301, 301]
    assert response.url == "http://any.test/__trap/page/redirect-target" and response.status_code == 200


def test_relative_redirects(server):
    status, _, headers, _ = raw_get(server.port, "http://any.test/__trap/redirect/3?relative=1&status=302")
    location = dict(headers)["Location"]
    assert status == 302 and location.startswith("2?") and "://" not in location.split("?")[0]
    response = get(server, "http://any.test/__trap/redirect/3?relative=1&status=302")
    assert len(response.history) == 3 and response.url == "http://any.test/__trap/page/redirect-target"


def test_redirect_loop(server):
    with pytest.raises(requests.TooManyRedirects):
        get(server, "http://any.test/__trap/loop/3")


def test_slow_first_byte(server):
    start = time.monotonic()
    assert get(server, "http://any.test/__trap/delay/0.3").status_code == 200
    assert time.monotonic() - start >= 0.3


def test_drip_feeds_the_body_without_blocking_others(server):
    result = {}

    def slow():
        start = time.monotonic()
        result["body"] = get(server, "http://any.test/__trap/drip?bytes=25&every=0.08").content
        result["seconds"], result["end"] = time.monotonic() - start, time.monotonic()

    thread = threading.Thread(target=slow)
    thread.start()
    time.sleep(0.1)
    assert get(server, "http://s0.gen.test/").status_code == 200
    quick_end = time.monotonic()
    thread.join()
    pieces = -(-len(result["body"]) // 25)
    assert result["body"].endswith(b"</html>\n") and result["seconds"] >= (pieces - 1) * 0.08
    assert quick_end < result["end"]  # another client was served while the drip went on


def test_timeout_sends_nothing_then_closes(server):
    start = time.monotonic()
    with pytest.raises(requests.ConnectionError):
        get(server, "http://any.test/__trap/timeout/0.3")
    assert time.monotonic() - start >= 0.3


def test_connection_reset_mid_body(server):
    data = raw_exchange(server.port, b"GET http://any.test/__trap/reset?after=10 HTTP/1.1\r\nHost: any.test\r\n\r\n")
    status, _, headers, body = split_response(data)
    assert status == 200 and len(body) == 10 and int(dict(headers)["Content-Length"]) > 10
    with pytest.raises(requests.RequestException):
        get(server, "http://any.test/__trap/reset")


def test_content_length_longer_than_body(server):
    with pytest.raises(requests.RequestException):
        get(server, "http://any.test/__trap/length/100")


def test_content_length_shorter_than_body(server):
    status, _, headers, body = raw_get(server.port, "http://any.test/__trap/length/-20")
    assert int(dict(headers)["Content-Length"]) == len(body) - 20


def test_oversized_body(server):
    response = get(server, "http://any.test/__trap/big/3")
    assert len(response.content) == 3 << 20 and response.text.endswith("</body></html>\n")


def test_decompression_bomb(server):
    size = (5 << 20) + 13
    status, _, headers, body = raw_get(server.port, f"http://any.test/__trap/bomb/{size}")
    assert dict(headers)["Content-Encoding"] == "gzip" and len(body) < 10_000
    assert gzip.decompress(body) == bytes(size)
    head = requests.head("http://any.test/__trap/bomb", proxies=server.proxies)  # default: 1 GiB
    assert int(head.headers["Content-Length"]) < 2 << 20
    with get(server, "http://any.test/__trap/bomb", stream=True) as response:
        compressed = response.raw.read(100_000, decode_content=False)
    assert zlib.decompressobj(31).decompress(compressed, 1 << 20) == bytes(1 << 20)


@pytest.mark.parametrize("coding, header", [("gzip", "gzip"), ("deflate", "deflate"), ("raw-deflate", "deflate")])
def test_content_encodings(server, coding, header):
    plain = get(server, "http://any.test/__trap/page/x").content
    response = get(server, f"http://any.test/__trap/encoding/{coding}")
    assert response.headers["Content-Encoding"] == header
    assert response.content.replace(b"/__trap/encoding/" + coding.encode(), b"/__trap/page/x") == plain


def test_broken_content_encoding(server):
    with pytest.raises(requests.RequestException):
        get(server, "http://any.test/__trap/encoding/broken")


@pytest.mark.parametrize("kind, content_type, magic", [("png", "image/png", b"\x89PNG"), ("pdf", "application/pdf", b"%PDF")])
def test_non_html_types(server, kind, content_type, magic):
    response = get(server, f"http://any.test/__trap/type/{kind}")
    assert response.headers["Content-Type"] == content_type and response.content.startswith(magic)


def test_charsets(server):
    missing = get(server, "http://any.test/__trap/charset/missing")
    assert missing.headers["Content-Type"] == "text/html" and b"<meta charset" not in missing.content
    assert "Café".encode() in missing.content
    wrong = get(server, "http://any.test/__trap/charset/wrong")
    assert "iso-8859-1" in wrong.headers["Content-Type"] and "Größe".encode() in wrong.content
    invalid = get(server, "http://any.test/__trap/charset/invalid")
    assert "utf-8" in invalid.headers["Content-Type"]
    with pytest.raises(UnicodeDecodeError):
        invalid.content.decode("utf-8")


def test_malformed_html_keeps_its_links(server):
    web = GeneratedWeb(SPEC)
    response = get(server, "http://s1.gen.test/")
    assert b"</li>" not in response.content and b"<!-- unterminated" in response.content
    assert hrefs(response.content) == [web.url(t) for t in web.out_links(web.find("http://s1.gen.test/")).tolist()]


def test_ten_thousand_links(server):
    links = hrefs(get(server, "http://any.test/__trap/links/10000").content)
    assert len(set(links)) == 10_000 and links[0] == "http://any.test/__trap/page/leaf-0"


def test_calendar_goes_on_forever(server):
    url = "http://any.test/__trap/calendar/2024-12-30"
    for expected in ("2024-12-31", "2025-01-01", "2025-01-02"):
        url = hrefs(get(server, url).content)[0]
        assert url.endswith(expected)
    assert get(server, "http://any.test/__trap/calendar/2024-13-01").status_code == 404


def test_session_ids_are_fresh_every_time(server):
    first = hrefs(get(server, "http://any.test/__trap/session/home").content)
    second = hrefs(get(server, "http://any.test/__trap/session/home").content)
    assert len(first) == 3 and all("?sid=" in u for u in first) and not set(first) & set(second)


def test_unknown_trap_and_bad_parameters(server):
    assert get(server, "http://any.test/__trap/nonsense").status_code == 404
    assert get(server, "http://any.test/__trap/delay?colour=red").status_code == 400
    assert get(server, "http://any.test/__trap/delay/-1").status_code == 400


def test_redirect_target_with_control_characters_is_refused(server):
    data = raw_exchange(server.port, b"GET http://x.test/__trap/redirect/1?to=http://y.test/%0D%0ASet-Cookie:%20a=b"
                                     b" HTTP/1.1\r\nHost: x.test\r\nConnection: close\r\n\r\n")
    status, _, headers, _ = split_response(data)
    assert status == 400 and "Set-Cookie" not in dict(headers) and "Location" not in dict(headers)


def test_faults_file_redirect_template(server):
    response = get(server, "http://old.test/a/b.html")
    assert len(response.history) == 3 and response.url == "http://landing.test/a/b.html"


def test_faults_file_transient_fault(server):
    first, second = get(server, "http://s2.gen.test/"), get(server, "http://s2.gen.test/")
    assert (first.status_code, first.headers["Retry-After"], second.status_code) == (503, "2", 200)


# -- rule mechanics, in process ------------------------------------------------------------------

def make_web(rules: list[dict], seed: int = 0) -> Web:
    site = SyntheticSite(GeneratedWeb(SPEC), ChangeModel("1:never"))
    return Web([site], FaultRules.from_tables(rules, seed), RobotsConfig(), Clock())


def request(url: str) -> Request:
    return Request("GET", url, *split_url(url), {}, "")


def test_rate_picks_a_stable_share_of_urls():
    web = make_web([{"glob": "http://r.test/*", "rate": 0.3, "kind": "status", "status": 500}])
    urls = [f"http://r.test/{i}" for i in range(2000)]
    faulty = {u for u in urls if web.respond(request(u)).status == 500}
    assert 0.25 < len(faulty) / len(urls) < 0.35
    assert faulty == {u for u in urls if web.respond(request(u)).status == 500}  # same URLs every time


def test_disjoint_offsets_never_overlap():
    rules = [{"glob": "http://r.test/*", "rate": 0.5, "offset": 0.0, "kind": "status", "status": 500},
             {"glob": "http://r.test/*", "rate": 0.5, "offset": 0.5, "kind": "status", "status": 503}]
    web = make_web(rules)
    statuses = [web.respond(request(f"http://r.test/{i}")).status for i in range(1000)]
    assert set(statuses) == {500, 503} and 400 < statuses.count(500) < 600


def test_per_request_coin_and_times():
    web = make_web([{"glob": "http://r.test/flaky", "rate": 0.5, "per": "request", "kind": "status", "status": 503},
                    {"glob": "http://s0.gen.test/", "times": 2, "kind": "status", "status": 429}])
    flaky = [web.respond(request("http://r.test/flaky")).status for _ in range(200)]
    assert 60 < flaky.count(503) < 140
    assert [web.respond(request("http://s0.gen.test/")).status for _ in range(4)] == [429, 429, 200, 200]


def test_loop_through_the_faulty_url_itself():
    web = make_web([{"glob": "http://s0.gen.test/", "kind": "loop", "hops": 2}])
    first = web.respond(request("http://s0.gen.test/"))
    hop = first.header("Location")
    assert first.status == 302 and "/__trap/loop/2?at=1" in hop
    assert web.respond(request(hop)).header("Location") == "http://s0.gen.test/"


def test_faults_files_and_validation(tmp_path):
    (tmp_path / "f.toml").write_text(FAULTS_TOML)
    assert len(FaultRules.read_tables(tmp_path / "f.toml")) == 3
    (tmp_path / "f.json").write_text(json.dumps({"faults": [{"glob": "*", "kind": "delay", "seconds": 1}]}))
    assert FaultRules.read_tables(tmp_path / "f.json")[0]["kind"] == "delay"
    for bad in ({"glob": "*", "kind": "explode"}, {"glob": "*", "regex": ".", "kind": "delay"},
                {"glob": "*", "kind": "delay", "secs": 1}, {"glob": "*", "kind": "delay", "per": "day"}):
        with pytest.raises(ValueError):
            FaultRules.from_tables([bad])


def test_every_kind_is_documented():
    docs = (Path(__file__).parents[2] / "docs" / "replay.md").read_text()
    assert all(f"`{name}`" in docs for name in KINDS)


@pytest.mark.parametrize("spelling", ["http://s0.gen.test:80/", "HTTP://S0.GEN.TEST/", "http://s0.gen.test"])
def test_rules_match_the_lookup_key_not_the_spelling(spelling):
    web = make_web([{"glob": "http://s0.gen.test/", "kind": "status", "status": 503},
                    {"glob": "http://r.test/*", "rate": 0.5, "kind": "status", "status": 500}])
    assert web.respond(request(spelling)).status == 503
    coins = [web.respond(request(f"http://r.test/{i}")).status for i in range(50)]
    assert [web.respond(request(f"http://R.TEST:80/{i}")).status for i in range(50)] == coins


@pytest.mark.parametrize("params", [
    {"kind": "status", "status": "abc"}, {"kind": "status", "status": 1000}, {"kind": "status", "retry_after": "soon"},
    {"kind": "status", "retry_after": -1}, {"kind": "delay", "seconds": -1}, {"kind": "delay", "seconds": "x"},
    {"kind": "timeout", "seconds": float("nan")}, {"kind": "encoding", "coding": "zip"},
    {"kind": "charset", "mode": "bogus"}, {"kind": "redirect", "hops": 0}, {"kind": "redirect", "relative": "yes"},
    {"kind": "drip", "bytes": 0}, {"kind": "links", "count": 2.5}, {"kind": "bomb", "size": "1.5"}])
def test_bad_fault_values_fail_at_load(params):
    with pytest.raises(ValueError, match=f"^fault rule .*: {next(k for k in params if k != 'kind')}="):
        FaultRules.from_tables([{"glob": "*", **params}])


@pytest.mark.parametrize("given, sent", [(7, "7"), (1.5, "2"), (0.2, "1"),
                                         ("Wed, 21 Oct 2025 07:28:00 GMT", "Wed, 21 Oct 2025 07:28:00 GMT")])
def test_retry_after_is_whole_seconds_or_a_date(given, sent):
    web = make_web([{"glob": "http://r.test/*", "kind": "status", "status": 503, "retry_after": given}])
    assert web.respond(request("http://r.test/x")).header("Retry-After") == sent
