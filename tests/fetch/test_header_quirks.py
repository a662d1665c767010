"""What real servers send that a test web rarely does: a charset only in the header, repeated
headers, UTF-8 bytes in a Location, Retry-After dates, redirect targets that fail, robots.txt
rules first met on a redirect hop. Straight to local servers (no proxy), pure Python."""
import threading
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fetch_helpers import NOW, fetch_row

from crawlkit.conf import make_conf
from crawlkit.fetch import fetch_partition
from crawlkit.stages.parse import row_parser

RUSSIAN = "<html><head><title>Привет мир</title></head><body><p>Русский текст</p></body></html>"
CAFE = "/café/日本".encode("utf-8").decode("latin-1")   # UTF-8 bytes, as http.server sends str
SERVER_DATE = datetime(2030, 6, 1, 12, 0, 0, tzinfo=timezone.utc)   # the server's clock, far from the round's NOW


class Quirks(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    routes: dict = {}
    log: list = []

    def do_GET(self):
        self.log.append((self.path, self.server.server_address[1]))
        status, headers, body = self.routes.get(self.path, (404, [], b""))
        if status is None:   # hang up without an answer
            self.close_connection = True
            return
        if callable(status):  # a tarpit: writes its own answer, slowly
            status(self)
            return
        self.send_response_only(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _drip(head: bytes, body: bytes = b"", head_every: float = 0.0, body_every: float = 0.05,
          at_most: float = 4.0):
    """A tarpit answer: each byte of ``head``, then of ``body``, after its own pause; for at
    most ``at_most`` seconds."""
    def write(handler):
        handler.close_connection = True
        stop = time.monotonic() + at_most
        for part, every in ((head, head_every), (body, body_every)):
            for byte in part:
                if time.monotonic() > stop:
                    return
                try:
                    handler.wfile.write(bytes([byte]))
                    handler.wfile.flush()
                except OSError:
                    return
                if every:
                    time.sleep(every)
    return write


def _serve(routes):
    handler = type("Routes", (Quirks,), {"routes": routes, "log": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, handler.log


@pytest.fixture(scope="module")
def web():
    """Two origins on 127.0.0.1 (so one host queue): ``a`` answers the quirks, ``b`` asks
    for a Crawl-delay in its robots.txt."""
    b, b_log = _serve({"/robots.txt": (200, [("Content-Type", "text/plain")],
                                       b"User-agent: *\nCrawl-delay: 0.25\n")}
                      | {f"/p{i}": (200, [("Content-Type", "text/html")], b"<p>b</p>")
                         for i in range(4)}
                      | {"/landing": (200, [("Content-Type", "text/html")], b"<p>landed</p>"),
                         "/hang-up": (None, [], b"")})
    b_origin = f"http://127.0.0.1:{b.server_address[1]}"
    html = [("Content-Type", "text/html")]
    a, a_log = _serve({
        "/robots.txt": (404, [], b""),
        "/cp1251": (200, [("Content-Type", "text/html; charset=windows-1251")],
                    RUSSIAN.encode("cp1251")),
        "/two-types": (200, [("Content-Type", "text/html"),
                             ("Content-Type", "text/html; charset=UTF-8")], b"<p>ok</p>"),
        "/two-charsets": (200, [("Content-Type", "text/html; charset=iso-8859-1"),
                                ("Content-Type", "text/html; charset=windows-1251")], RUSSIAN.encode("cp1251")),
        "/many-cookies": (200, html + [("Set-Cookie", f"c{i}=1") for i in range(40)], b"<p>ok</p>"),
        "/utf8-location": (302, [("Location", CAFE)], b""),
        "/robots-tags": (200, html + [("X-Robots-Tag", "googlebot: noarchive"),
                                      ("X-Robots-Tag", "noindex, nofollow")],
                         b"<p>hidden <a href='/x'>x</a></p>"),
        "/cookies": (200, html + [("Set-Cookie", "a=1; Expires=Wed, 09 Jun 2027 10:18:14 GMT"),
                                  ("Set-Cookie", "b=2; Path=/")], b"<p>two cookies</p>"),
        "/busy": (503, [("Date", format_datetime(SERVER_DATE, usegmt=True)),
                        ("Retry-After", format_datetime(SERVER_DATE + timedelta(seconds=90),
                                                        usegmt=True))], b""),
        "/to-b": (301, [("Location", f"{b_origin}/landing")], b""),
        "/drip-headers": (_drip(b"HTTP/1.1 200 OK\r\nX-Slow: " + b"z" * 200, head_every=0.05),
                          [], b""),
        "/drip-error": (_drip(b"HTTP/1.1 404 Not Found\r\nContent-Length: 500\r\n\r\n",
                              b"x" * 500), [], b""),
    } | {f"/dead{i}": (302, [("Location", f"{b_origin}/hang-up")], b"") for i in range(4)})
    yield f"http://127.0.0.1:{a.server_address[1]}", b_origin, a_log, b_log
    for server in (a, b):
        server.shutdown()
        server.server_close()


def fetch(urls, **conf):
    options = dict(fetcher__server_delay=0.0, fetcher__threads=1, fetcher__page_deadline=5.0,
                   fetcher__allow_private=["127.0.0.1/32"])
    options.update(conf)
    rows = [fetch_row(url) for url in urls]
    return {r["url"]: r for r in fetch_partition(rows, make_conf(**options), NOW)}


def parse(row):
    return row_parser(make_conf().to_dict())({**row, "headers": list(row["headers"].items())})


def test_a_charset_given_only_in_the_header_decodes_the_page(web):
    a, *_ = web
    row = fetch([f"{a}/cp1251"])[f"{a}/cp1251"]
    assert row["content_type"] == "text/html"   # the column keeps the bare media type
    parsed = parse(row)
    assert (parsed["title"], parsed["text"]) == ("Привет мир", "Русский текст")


def test_a_repeated_content_type_counts_by_its_last_value(web):
    a, *_ = web
    row = fetch([f"{a}/two-types"])[f"{a}/two-types"]
    assert (row["fetch_status"], row["content_type"]) == ("success", "text/html")


def test_a_repeated_content_type_takes_its_charset_from_the_last_value(web):
    a, *_ = web
    row = fetch([f"{a}/two-charsets"])[f"{a}/two-charsets"]
    # merged with ", " the first value's charset read "iso-8859-1, text/html", no codec at all
    assert row["headers"]["content-type"].split("\n") == ["text/html; charset=iso-8859-1",
                                                          "text/html; charset=windows-1251"]
    assert parse(row)["title"] == "Привет мир"


def test_repeated_headers_count_in_full_against_max_header_bytes(web):
    a, *_ = web
    # 40 lines "Set-Cookie: cN=1" are over 600 bytes on the wire; the name counted once, under 300
    refused = fetch([f"{a}/many-cookies"], fetcher__max_header_bytes=400)[f"{a}/many-cookies"]
    assert (refused["fetch_status"], refused["error"]) == ("retry", "headers too large")
    assert fetch([f"{a}/many-cookies"], fetcher__max_header_bytes=1000)[f"{a}/many-cookies"]["fetch_status"] == "success"


def test_a_utf8_location_is_read_as_utf8(web):
    a, *_ = web
    row = fetch([f"{a}/utf8-location"])[f"{a}/utf8-location"]
    assert row["fetch_status"] == "redirect_temp"
    assert row["redirect_url"] == f"{a}/caf%C3%A9/%E6%97%A5%E6%9C%AC"


def test_repeated_robots_tags_keep_their_own_scope(web):
    a, *_ = web
    parsed = parse(fetch([f"{a}/robots-tags"])[f"{a}/robots-tags"])
    # the second header is for every crawler, whatever the first one said for googlebot
    assert parsed["noindex"] and parsed["nofollow"]


def test_repeated_set_cookies_stay_apart(web):
    a, *_ = web
    row = fetch([f"{a}/cookies"])[f"{a}/cookies"]
    # joined with ", " the first cookie's Expires date could not be told from a second cookie
    assert row["headers"]["set-cookie"].split("\n") == [
        "a=1; Expires=Wed, 09 Jun 2027 10:18:14 GMT", "b=2; Path=/"]


def test_a_retry_after_date_counts_from_the_servers_answer_not_the_round(web):
    a, *_ = web
    row = fetch([f"{a}/busy"], fetcher__max_retry_after=3600)[f"{a}/busy"]
    # by the round's NOW (2024) the date is six years away and would hit the cap
    assert (row["fetch_status"], row["retry_after"]) == ("retry", 90)


def test_a_redirect_whose_target_fails_is_recorded_as_the_redirect(web):
    a, b, *_ = web
    urls = [f"{a}/dead{i}" for i in range(4)]
    rows = fetch(urls, fetcher__follow_redirects=2, fetcher__max_exceptions_per_host=2)
    # the target's failure is not this host's: no URL turns into a retry, none is skipped
    assert {(r["fetch_status"], r["redirect_url"]) for r in rows.values()} == {
        ("redirect_temp", f"{b}/hang-up")}
    assert all(r["error"].startswith("redirect target failed") for r in rows.values())


def test_a_crawl_delay_met_on_a_redirect_hop_holds_for_that_origin(web):
    a, b, _, b_log = web
    b_log.clear()
    pages = [f"{b}/p{i}" for i in range(4)]
    with_hop = fetch([f"{a}/to-b"] + pages, fetcher__follow_redirects=1)
    assert with_hop[f"{a}/to-b"]["redirect_url"] == f"{b}/landing"
    assert [path for path, _ in b_log] == ["/robots.txt", "/landing"] + [
        f"/p{i}" for i in range(4)]
    assert {with_hop[url]["fetch_status"] for url in pages} == {"success"}
    # b's robots.txt came in on a's redirect hop; its pages still wait 0.25 s between them
    starts = [with_hop[url]["fetched_at"] for url in pages]
    gaps = [(later - earlier).total_seconds() for earlier, later in zip(starts, starts[1:])]
    assert min(gaps) >= 0.2, gaps


@pytest.mark.parametrize("path,status", [("/drip-headers", "retry"), ("/drip-error", "not_found")])
def test_a_server_dripping_headers_or_an_error_page_is_cut_at_the_page_deadline(web, path, status):
    # every byte comes within read_timeout, so only the page deadline can end the request:
    # the server would go on for 4 s
    a, *_ = web
    row = fetch([a + path], fetcher__page_deadline=1.0, fetcher__read_timeout=0.5,
                fetcher__respect_robots=False)[a + path]
    assert row["fetch_status"] == status and row["elapsed_ms"] < 2500, row
    if status == "retry":
        assert row["error"] == "deadline"
