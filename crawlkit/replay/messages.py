"""Requests and responses, described as data so faults can bend any answer.

A fault such as "slow first byte" or "reset mid-body" must apply to whatever the
page would have been (a graph page, an archived page, a trap), so the web builds
a plain :class:`Response` and faults adjust its timing and framing fields; only the
server turns it into bytes on the socket.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from http import HTTPStatus

HTML = "text/html; charset=utf-8"


@dataclass
class Request:
    """One parsed request, reduced to what the web looks at."""

    method: str
    url: str  # absolute, as asked (absolute-form) or rebuilt from the site/Host (origin-form)
    host: str  # lowercase, without :80
    path: str
    query: str
    headers: dict[str, str]  # lowercase names; the last value wins
    client: str = ""


@dataclass
class Response:
    """One HTTP answer plus the misbehaviour to apply while sending it.

    ``headers`` never holds Content-Length, Transfer-Encoding or Connection: the
    server frames every body itself (with ``declared_length`` to lie about it).
    """

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    reason: str | None = None
    # A body too large to hold in memory: a factory of its chunks, and their total size.
    stream: Callable[[], Iterator[bytes]] | None = None
    stream_length: int = 0
    declared_length: int | None = None  # Content-Length to announce instead of the true one
    first_byte_delay: float = 0.0  # seconds before the status line
    drip: tuple[int, float] | None = None  # send the body N bytes every T seconds
    reset_after: int | None = None  # abort the connection (TCP RST) after this many body bytes
    hang: float | None = None  # send nothing for this many seconds, then close
    close: bool = False  # close the connection after this response
    fault: str | None = None  # name of the fault that shaped it, for the access log

    @property
    def length(self) -> int:
        """True number of body bytes."""
        return self.stream_length if self.stream is not None else len(self.body)

    @property
    def reason_phrase(self) -> str:
        if self.reason is not None:
            return self.reason
        try:
            return HTTPStatus(self.status).phrase
        except ValueError:
            return "Unknown"

    def header(self, name: str) -> str | None:
        """Value of the first header called ``name`` (case-insensitive)."""
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)

    def with_headers(self, **changes: str | None) -> Response:
        """A copy with headers set (value) or removed (None); keyword ``_`` stands for ``-``."""
        names = {k.replace("_", "-").lower(): (k.replace("_", "-"), v) for k, v in changes.items()}
        kept = [(k, v) for k, v in self.headers if k.lower() not in names]
        added = [(k, v) for k, v in names.values() if v is not None]
        return replace(self, headers=kept + added)


def html_response(body: str | bytes, status: int = 200, headers: list[tuple[str, str]] | None = None) -> Response:
    """An HTML page, UTF-8."""
    data = body.encode("utf-8") if isinstance(body, str) else body
    return Response(status, [("Content-Type", HTML), *(headers or [])], data)


def text_response(text: str, status: int = 200, content_type: str = "text/plain; charset=utf-8") -> Response:
    return Response(status, [("Content-Type", content_type)], text.encode("utf-8"))


def not_found() -> Response:
    return html_response("<!DOCTYPE html><html><head><title>404 Not Found</title></head>"
                         "<body><h1>Not Found</h1></body></html>", 404)
