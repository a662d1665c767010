"""Helpers for the replay web's tests: a raw HTTP client, link extraction, tiny WARC files."""

from __future__ import annotations

import io
import socket
from html.parser import HTMLParser

from warcio.warcwriter import WARCWriter

from crawlkit.replay.testing import replay_factory  # noqa: F401  (the fixture other suites use too)


def raw_exchange(port: int, request: bytes, timeout: float = 10.0) -> bytes:
    """Send raw request bytes to the server and return everything it sends until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        chunks = []
        while True:
            try:
                data = sock.recv(65536)
            except ConnectionResetError:
                break
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks)


def raw_get(port: int, url: str, headers: dict[str, str] | None = None) -> tuple[int, str, list[tuple[str, str]], bytes]:
    """An absolute-form GET with ``Connection: close``: ``(status, reason, headers in order, body bytes as sent)``."""
    lines = [f"GET {url} HTTP/1.1", f"Host: {url.split('/')[2]}", "Connection: close",
             *(f"{k}: {v}" for k, v in (headers or {}).items())]
    return split_response(raw_exchange(port, ("\r\n".join(lines) + "\r\n\r\n").encode()))


def split_response(data: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    _, status, reason = status_line.split(" ", 2)
    headers = [tuple(part.strip() for part in line.split(":", 1)) for line in header_lines]
    return int(status), reason, headers, body


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs.extend(v for k, v in attrs if k == "href")


def hrefs(html: str | bytes) -> list[str]:
    """The href of every ``<a>``, in document order, as a lenient parser sees them."""
    parser = _Links()
    parser.feed(html.decode("utf-8", "replace") if isinstance(html, bytes) else html)
    parser.close()
    return parser.hrefs


def write_warc(path, records: list[tuple[str, bytes]]) -> None:
    """A gzipped WARC of ``response`` records: (target URI, raw HTTP response bytes as archived)."""
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for uri, raw in records:
            record = writer.create_warc_record(uri, "response", payload=io.BytesIO(raw),
                                               warc_headers_dict={"WARC-Date": "2024-01-02T03:04:05Z"},
                                               http_headers=None)
            writer.write_record(record)
