"""The HTML web (WARC replay) and the graph web (links.tsv), served through the proxy."""

from __future__ import annotations

import gzip
import zlib

import pytest
import requests

from crawlkit.replay import LinkGraph, ReplayServer
from crawlkit.replay.graph import write_links
from crawlkit.replay.urls import url_key
from crawlkit.replay.warc import dechunk, parse_http_response

from .conftest import hrefs, raw_get, write_warc

PLAIN = (b"HTTP/1.0 200 OK\r\nServer: CERN/3.0\r\nDate: Sunday, 01-Dec-96 19:26:46 GMT\r\n"
         b"Content-Type: text/html\r\nX-Custom:   spaced value\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n"
         b"Content-Length: 45\r\n\r\n<html><body><a href=\"/x\">x</a></body></html>\n")
CHUNKED = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n"
           b"Connection: keep-alive\r\n\r\n5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n")
SHORT_LENGTH = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 999\r\n\r\ntruncated capture"
GZIPPED_BODY = gzip.compress(b"<html>compressed page</html>")
GZIPPED = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n"
           + f"Content-Length: {len(GZIPPED_BODY)}\r\n\r\n".encode() + GZIPPED_BODY)
MISSING = b"HTTP/1.1 404 Gone Fishing\r\nContent-Type: text/html\r\n\r\n<html>archived 404</html>"
MOVED = b"HTTP/1.1 301 Moved Permanently\r\nLocation: http://arch.test/new\r\n\r\n"
BINARY = b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n\r\n" + bytes(range(256))

LINKS = [
    ("http://g.test/", "http://g.test/a.html"),
    ("http://g.test/", "http://other.test/?q=1&r=2"),
    ("http://g.test/", "http://g.test/a.html"),  # duplicate, kept
    ("http://g.test/", "http://g.test/b.html"),
    ("http://g.test/a.html", "http://g.test/"),
    ("http://g.test/b.html", "http://g.test/a.html"),
    ("http://g.test/a.html", "http://g.test/c.html"),
    ("http://g.test/odd.html", "http://g.test/dir\\page.htm"),  # a raw backslash, as in Hollins
    ("http://g.test/odd.html", "http://g.test/%7euser/a%2fb"),
]


@pytest.fixture(scope="module")
def archive_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("archives")
    write_warc(folder / "pages.warc.gz", [
        ("http://arch.test/plain.html", PLAIN), ("http://arch.test/chunked", CHUNKED),
        ("http://arch.test/short", SHORT_LENGTH), ("http://arch.test/gzipped", GZIPPED),
        ("http://arch.test/missing", MISSING), ("http://arch.test/old", MOVED),
        ("https://arch.test/secure/", BINARY), ("http://arch.test/plain.html", MISSING),
        ("http://arch.test/dir/", PLAIN),
    ])
    with gzip.open(folder / "links.tsv.gz", "wt") as f:
        f.write("# a comment line\n" + "".join(f"{a}\t{b}\n" for a, b in LINKS))
    with ReplayServer([folder / "links.tsv.gz", folder / "pages.warc.gz"], workdir=folder / "run") as server:
        yield server


def test_warc_page_is_byte_identical_with_its_headers(archive_server):
    status, reason, headers, body = raw_get(archive_server.port, "http://arch.test/plain.html")
    assert (status, reason) == (200, "OK")
    assert body == b'<html><body><a href="/x">x</a></body></html>\n'
    archived = [("Server", "CERN/3.0"), ("Date", "Sunday, 01-Dec-96 19:26:46 GMT"), ("Content-Type", "text/html"),
                ("X-Custom", "spaced value"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")]
    assert headers[: len(archived)] == archived  # order, case and repeats as archived
    assert ("Content-Length", str(len(body))) in headers


def test_first_record_wins_and_unknown_urls_are_404(archive_server):
    assert requests.get("http://arch.test/plain.html", proxies=archive_server.proxies).status_code == 200
    assert requests.get("http://arch.test/nowhere", proxies=archive_server.proxies).status_code == 404


def test_chunked_archive_is_dechunked_and_reframed(archive_server):
    status, _, headers, body = raw_get(archive_server.port, "http://arch.test/chunked")
    names = [k.lower() for k, _ in headers]
    assert status == 200 and body == b"hello, world"
    assert "transfer-encoding" not in names and ("Content-Length", "12") in headers
    assert names.count("connection") == 1  # ours (close, as asked), not the archived keep-alive


def test_wrong_archived_length_is_replaced_by_the_true_one(archive_server):
    _, _, headers, body = raw_get(archive_server.port, "http://arch.test/short")
    assert body == b"truncated capture" and ("Content-Length", "17") in headers


def test_archived_content_encoding_is_kept(archive_server):
    _, _, headers, body = raw_get(archive_server.port, "http://arch.test/gzipped")
    assert body == GZIPPED_BODY and ("Content-Encoding", "gzip") in headers
    assert requests.get("http://arch.test/gzipped", proxies=archive_server.proxies).content == b"<html>compressed page</html>"


def test_archived_status_reason_and_redirect(archive_server):
    status, reason, _, body = raw_get(archive_server.port, "http://arch.test/missing")
    assert (status, reason, body) == (404, "Gone Fishing", b"<html>archived 404</html>")
    response = requests.get("http://arch.test/old", proxies=archive_server.proxies, allow_redirects=False)
    assert response.status_code == 301 and response.headers["Location"] == "http://arch.test/new"


def test_scheme_and_trailing_slash_variants_match(archive_server):
    for url in ("http://arch.test/secure/", "http://arch.test/secure", "http://ARCH.test:80/secure"):
        response = requests.get(url, proxies=archive_server.proxies)
        assert response.status_code == 200 and response.content == bytes(range(256)), url


@pytest.mark.parametrize("url, location", [
    ("http://arch.test/dir", "http://arch.test/dir/"), ("http://arch.test/plain.html/", "http://arch.test/plain.html"),
    ("http://arch.test/secure", "http://arch.test/secure/")])
def test_trailing_slash_toggled_url_is_redirected_to_the_archived_one(archive_server, url, location):
    status, _, headers, _ = raw_get(archive_server.port, url)
    assert (status, dict(headers).get("Location")) == (301, location)


def test_graph_page_links_are_exactly_its_out_links(archive_server):
    response = requests.get("http://g.test/", proxies=archive_server.proxies)
    assert response.status_code == 200 and response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert hrefs(response.text) == [b for a, b in LINKS if a == "http://g.test/"]
    for page in ("http://g.test/a.html", "http://g.test/b.html"):
        assert hrefs(requests.get(page, proxies=archive_server.proxies).text) == [b for a, b in LINKS if a == page]


@pytest.mark.parametrize("url, status", [
    ("http://g.test/dir%5Cpage.htm", 200), ("http://g.test/dir%5cpage.htm", 200), ("http://g.test/dir/page.htm", 404),
    ("http://g.test/~user/a%2Fb", 200), ("http://g.test/%7Euser/a%2fb", 200), ("http://g.test/~user/a/b", 404)])
def test_percent_escapes_are_compared_normalised(archive_server, url, status):
    assert raw_get(archive_server.port, url)[0] == status


def test_url_key_normalises_escapes():
    assert url_key("HTTP://H:80/a%2fb%7E%41?q=%e9&r=100%") == "http://h/a%2Fb~A?q=%E9&r=100%25"
    assert url_key("http://h/dir\\page.htm") == url_key("http://h/dir%5cpage.htm") == "http://h/dir%5Cpage.htm"


def test_graph_pages_without_out_links_exist_and_others_are_404(archive_server):
    leaf = requests.get("http://g.test/c.html", proxies=archive_server.proxies)
    assert leaf.status_code == 200 and hrefs(leaf.text) == [] and "<title>" in leaf.text
    assert requests.get("http://g.test/d.html", proxies=archive_server.proxies).status_code == 404


def test_graph_pages_are_deterministic(archive_server):
    first = requests.get("http://g.test/a.html", proxies=archive_server.proxies)
    again = requests.get("http://g.test/a.html", proxies=archive_server.proxies)
    assert first.content == again.content and first.headers["ETag"] == again.headers["ETag"]


def test_link_graph_round_trip(tmp_path):
    path = tmp_path / "links.tsv"
    path.write_text("".join(f"{a}\t{b}\n" for a, b in LINKS))
    graph = LinkGraph.load(path)
    write_links(graph, tmp_path / "again.tsv.gz")
    again = LinkGraph.load(tmp_path / "again.tsv.gz")
    assert graph.urls == again.urls
    assert [graph.out_links(p).tolist() for p in range(graph.num_pages)] == \
           [again.out_links(p).tolist() for p in range(again.num_pages)]
    assert graph.find("http://g.test/") == 0 and graph.find("http://nowhere.test/") is None


def test_bad_links_file_is_rejected(tmp_path):
    path = tmp_path / "links.tsv"
    path.write_text("http://a.test/ only one column\n")
    with pytest.raises(ValueError, match="expected"):
        LinkGraph.load(path)


def test_parse_http_response_and_dechunk():
    status, reason, headers, body = parse_http_response(
        b"HTTP/1.1 200 OK\r\nA: 1\r\nFolded: first\r\n  second\r\nContent-Length: 3\r\n\r\nabc")
    assert (status, reason, body) == (200, "OK", b"abc")
    assert headers == (("A", "1"), ("Folded", "first second"))
    assert dechunk(b"3\r\nabc\r\n0\r\n\r\n") == b"abc"
    assert dechunk(b"not chunked at all") == b"not chunked at all"
    assert dechunk(b"ff\r\nshort") == b"ff\r\nshort"
    assert zlib.crc32(dechunk(b"2;ext=1\r\nab\r\n1\r\nc\r\n0\r\n\r\n")) == zlib.crc32(b"abc")
