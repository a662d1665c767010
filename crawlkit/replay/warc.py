"""The HTML web: replay of archived ``response`` records from WARC files.

A page comes back with its archived status code, reason, headers (names, order
and values) and body bytes. Only message framing is ours, because the archive's
may not match the bytes we send: ``Transfer-Encoding``, ``Content-Length`` and the
hop-by-hop ``Connection``/``Keep-Alive``/``Proxy-Connection`` headers are dropped, a
body still in chunked encoding is de-chunked, and the server sends the body with a
correct ``Content-Length``. Content-Encoding is left alone: a gzip body stays gzip.

Records are indexed by ``WARC-Target-URI`` (first record wins) and read from disk
on demand, so large archives cost memory only for their index.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from .messages import Request, Response, html_response
from .urls import key_variants, url_key

_FRAMING = frozenset({"transfer-encoding", "content-length", "connection", "keep-alive", "proxy-connection"})
_STATUS_LINE = re.compile(rb"^HTTP/\d(?:\.\d)?\s+(\d{3})(?:\s+(.*))?$")


class WarcArchive:
    """An index from URL key to record offset, and the records as responses."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.offsets: dict[str, int] = {}
        with open(self.path, "rb") as f:
            records = ArchiveIterator(f, no_record_parse=True)
            for record in records:
                if record.rec_type == "response":
                    uri = record.rec_headers.get_header("WARC-Target-URI")
                    if uri:
                        self.offsets.setdefault(url_key(uri.strip("<>")), records.get_record_offset())
        self._file = open(self.path, "rb")
        self._read = lru_cache(maxsize=512)(self._read_record)

    def __len__(self) -> int:
        return len(self.offsets)

    def find(self, key: str) -> int | str | None:
        """Offset of the record for ``key`` (exact match, else the other scheme); for a URL that
        differs from an archived one only by its trailing slash, the URL to redirect to."""
        offset = self.offsets.get(key)
        if offset is not None:
            return offset
        found = next((k for k in key_variants(key) if k in self.offsets), None)
        if found is None or found.endswith("/") == key.endswith("/"):
            return None if found is None else self.offsets[found]
        # The scheme asked for is kept: the replay web is plain HTTP, whatever was archived.
        return f"{key.partition('://')[0]}://{found.partition('://')[2]}"

    def respond(self, handle: int | str, request: Request, clock: float) -> Response:
        """The archived answer (archives do not change over time, so ``clock`` is unused), or a
        301 to the archived form of a slash-toggled URL: served under the other URL, the page's
        relative links would resolve against the wrong directory."""
        if isinstance(handle, str):
            return html_response(b"<html><body>Moved</body></html>", 301, [("Location", handle)])
        status, reason, headers, body = self._read(handle)
        return Response(status, list(headers), body, reason=reason)

    def _read_record(self, offset: int) -> tuple[int, str, tuple[tuple[str, str], ...], bytes]:
        self._file.seek(offset)
        record = next(iter(ArchiveIterator(self._file, no_record_parse=True)))
        return parse_http_response(record.raw_stream.read())


def parse_http_response(raw: bytes) -> tuple[int, str, tuple[tuple[str, str], ...], bytes]:
    """``(status, reason, headers without framing, body)`` of an archived HTTP response block."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        head, sep, body = raw.partition(b"\n\n")
    lines = head.replace(b"\r\n", b"\n").split(b"\n")
    match = _STATUS_LINE.match(lines[0].strip())
    if not match:
        raise ValueError(f"not an HTTP response: {lines[0][:80]!r}")
    headers: list[list[str]] = []
    for line in lines[1:]:
        text = line.decode("latin-1")
        if text[:1] in (" ", "\t") and headers:  # obsolete line folding
            headers[-1][1] += " " + text.strip()
        elif ":" in text:
            name, _, value = text.partition(":")
            headers.append([name.strip(), value.strip()])
    chunked = any(n.lower() == "transfer-encoding" and "chunked" in v.lower() for n, v in headers)
    if chunked:
        body = dechunk(body)
    kept = tuple((n, v) for n, v in headers if n.lower() not in _FRAMING)
    return int(match[1]), (match[2] or b"").decode("latin-1").strip(), kept, body


def dechunk(body: bytes) -> bytes:
    """Decode chunked transfer coding; a body that is not validly chunked is returned unchanged.

    Archivers disagree on whether they store the body as sent or decoded, so the
    header alone cannot tell.
    """
    out, pos = [], 0
    try:
        while True:
            line_end = body.index(b"\r\n", pos)
            size = int(body[pos:line_end].split(b";")[0].strip(), 16)
            if size == 0:
                return b"".join(out)
            start = line_end + 2
            if start + size > len(body):
                return body
            out.append(body[start : start + size])
            pos = start + size + 2
    except ValueError:
        return body
