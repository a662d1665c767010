"""Fault kinds: functions that turn a page's normal response into a misbehaving one.

Every kind is a function ``kind(ctx, **params) -> Response``. Kinds that *bend*
the page (delay, drip, reset, length, encoding, charset, malformed) call
``ctx.base()`` for the normal response; the others replace it. Kinds are applied
by URL rules (rules.py) or requested directly under ``/__trap/KIND[/ARG]?PARAMS``
on any host, so a test page can link to a fault. See docs/replay.md for each kind.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import re
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from email.utils import parsedate_to_datetime
from functools import lru_cache
from inspect import signature
from urllib.parse import urlencode

from .hashing import stable_hash
from .messages import HTML, Request, Response, html_response
from .text import link_item, render_html
from .urls import query_params

TRAP_PREFIX = "/__trap/"
MB = 1 << 20


@dataclass
class FaultContext:
    request: Request
    base: Callable[[], Response]  # the response the page would have had
    counter: Iterator[int] = field(default_factory=itertools.count)  # fresh numbers (session ids)


@dataclass(frozen=True)
class FaultKind:
    name: str
    apply: Callable[..., Response]
    positional: str | None  # parameter filled by ARG in /__trap/KIND/ARG
    parameters: dict[str, str] = field(default_factory=dict)  # name -> annotation, e.g. "int | None"

    def check(self, params: dict) -> None:
        """Raise TypeError for parameters this kind does not take and ValueError for bad values,
        so that a faults file fails at start-up instead of answering 400 to every request it hits."""
        unknown = sorted(set(params) - set(self.parameters))
        if unknown:
            raise TypeError(f"{self.name!r} takes no parameter {', '.join(map(repr, unknown))}")
        for name, value in params.items():
            why = _value_problem(name, self.parameters[name], value)
            if why:
                raise ValueError(f"{name}={value!r}: {why}")


KINDS: dict[str, FaultKind] = {}


def _kind(name: str, positional: str | None = None):
    def register(fn):
        parameters = {p.name: str(p.annotation) for p in list(signature(fn).parameters.values())[1:]}
        KINDS[name] = FaultKind(name, fn, positional, parameters)
        return fn
    return register


# -- parameter values ----------------------------------------------------------------------

_CHOICES = {"coding": ("gzip", "deflate", "raw-deflate", "broken"), "mode": ("missing", "wrong", "invalid")}
_LEAST = {"hops": 1, "seconds": 0, "bytes": 1, "every": 0, "after": 0, "megabytes": 0, "size": 0, "count": 0,
          "at": 0, "retry_after": 0}


def _value_problem(name: str, annotation: str, value) -> str | None:
    """Why ``value`` cannot be parameter ``name`` (annotated ``annotation``), or None."""
    if value is None:
        return None if "None" in annotation else "must be given"
    if name == "retry_after" and isinstance(value, str):
        return None if value.isdigit() or _is_http_date(value) else "must be seconds or an HTTP date"
    types = annotation.split(" | ")
    if "bool" in types:
        return None if value in (True, False) else "must be true or false (or 1/0)"
    if "int" not in types and "float" not in types:
        return f"must be one of {', '.join(_CHOICES[name])}" if name in _CHOICES and value not in _CHOICES[name] else None
    number = _as_number(value, "int" in types)
    if number is None:
        return "must be an integer" if "int" in types else "must be a finite number"
    if name == "status" and not 100 <= number <= 599:
        return "must be an HTTP status code (100-599)"
    if name in _LEAST and number < _LEAST[name]:
        return f"must be >= {_LEAST[name]}"
    return None


def _as_number(value, integer: bool) -> float | None:
    """``value`` as a finite number (integral if ``integer``), or None; bools and text like
    "1.5" for an integer are not numbers here."""
    if isinstance(value, bool):
        return None
    try:
        number = float(int(value) if integer and isinstance(value, str) else value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number) or (integer and not number.is_integer()):
        return None
    return number


def _is_http_date(text: str) -> bool:
    try:
        return parsedate_to_datetime(text) is not None
    except (TypeError, ValueError):
        return False


def _retry_after(value) -> str:
    """A Retry-After value: whole seconds (rounded up: a client must not come back early), or
    an HTTP date as given."""
    return value if isinstance(value, str) else str(math.ceil(float(value)))


def _page(title: str, paragraphs: list[str] = (), links: list[tuple[str, str]] = ()) -> bytes:
    return render_html(title, paragraphs, "".join(link_item(href, text) for href, text in links))


def _origin(request: Request) -> str:
    return f"http://{request.host}"


# -- status codes and redirects -------------------------------------------------------------

@_kind("status", "status")
def status_fault(ctx: FaultContext, status: int = 503, retry_after: float | str | None = None) -> Response:
    response = html_response(_page(f"{status} error"), int(status))
    if retry_after is not None:
        response.headers.append(("Retry-After", _retry_after(retry_after)))
    return response


@_kind("redirect", "hops")
def redirect(ctx: FaultContext, hops: int = 1, status: int = 301, to: str | None = None, relative: bool = False) -> Response:
    """A chain of ``hops`` redirects through /__trap/redirect/N, ending at ``to``."""
    request = ctx.request
    target = str(to) if to else f"{_origin(request)}{TRAP_PREFIX}page/redirect-target"
    _check_url(target)
    if hops <= 1:
        location = target
        if relative and target.startswith(_origin(request) + "/"):
            location = target[len(_origin(request)):]
    else:
        query = urlencode({"to": target, "status": status, "relative": int(bool(relative))})
        if not relative:
            location = f"{_origin(request)}{TRAP_PREFIX}redirect/{hops - 1}?{query}"
        elif request.path.startswith(f"{TRAP_PREFIX}redirect/"):
            location = f"{hops - 1}?{query}"  # path-relative: resolves against /__trap/redirect/
        else:
            location = f"{TRAP_PREFIX}redirect/{hops - 1}?{query}"
    return Response(int(status), [("Location", location), ("Content-Type", HTML)], _page("Moved"))


def _check_url(url: str) -> None:
    """Refuse a Location target with control characters: ``?to=%0D%0A...`` would inject headers."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        raise ValueError(f"control character in URL {url!r}")


@_kind("loop", "hops")
def loop(ctx: FaultContext, hops: int = 2, status: int = 302, at: int = 0, back: str | None = None) -> Response:
    """Redirects that cycle through ``hops`` URLs (through the faulty URL itself, if there is one)."""
    request = ctx.request
    if not request.path.startswith(f"{TRAP_PREFIX}loop/") and back is None:
        back, at = request.url, 0
    _check_url(str(back or ""))

    def step(n: int) -> str:
        query = urlencode({"at": n, **({"back": back} if back else {})})
        return f"{_origin(request)}{TRAP_PREFIX}loop/{hops}?{query}"

    following = at + 1
    location = (back or step(0)) if following >= hops else step(following)
    return Response(int(status), [("Location", location), ("Content-Type", HTML)], _page("Moved"))


# -- timing and framing ----------------------------------------------------------------------

@_kind("delay", "seconds")
def delay(ctx: FaultContext, seconds: float = 1.0) -> Response:
    """The normal response after ``seconds`` of silence (slow first byte)."""
    response = ctx.base()
    return replace(response, first_byte_delay=response.first_byte_delay + float(seconds))


@_kind("drip")
def drip(ctx: FaultContext, bytes: int = 1, every: float = 0.1) -> Response:
    """A tarpit: headers at once, then the body ``bytes`` at a time every ``every`` seconds."""
    return replace(ctx.base(), drip=(max(1, int(bytes)), float(every)))


@_kind("timeout", "seconds")
def timeout(ctx: FaultContext, seconds: float = 10.0) -> Response:
    """No answer at all for ``seconds``, then the connection closes (status 0 in the log)."""
    return Response(0, hang=float(seconds), close=True)


@_kind("reset", "after")
def reset(ctx: FaultContext, after: int | None = None) -> Response:
    """Headers and ``after`` body bytes (default: half), then a TCP reset."""
    response = ctx.base()
    return replace(response, reset_after=response.length // 2 if after is None else int(after))


@_kind("length", "delta")
def length(ctx: FaultContext, delta: int = 100) -> Response:
    """A Content-Length ``delta`` bytes off the body sent (>0 longer, <0 shorter); then close."""
    response = ctx.base()
    return replace(response, declared_length=max(0, response.length + int(delta)), close=True)


# -- bodies ----------------------------------------------------------------------------------

@_kind("big", "megabytes")
def big(ctx: FaultContext, megabytes: float = 10) -> Response:
    """An HTML page of ``megabytes`` MiB, streamed, never held in memory."""
    head = b"<!DOCTYPE html>\n<html><head><title>Big page</title></head><body>\n"
    tail = b"</body></html>\n"
    total = max(int(float(megabytes) * MB), len(head) + len(tail))
    filler = (b"<p>" + b"filler text " * 20 + b"</p>\n") * 256

    def chunks() -> Iterator[bytes]:
        yield head
        remaining = total - len(head) - len(tail)
        while remaining > 0:
            piece = filler[:remaining]
            remaining -= len(piece)
            yield piece
        yield tail

    return Response(200, [("Content-Type", HTML)], stream=chunks, stream_length=total)


@_kind("bomb", "size")
def bomb(ctx: FaultContext, size: int = 1 << 30) -> Response:
    """A gzip body of a few KB that expands to ``size`` zero bytes (default 1 GiB).

    Built from one precompressed MiB: after a full flush deflate restarts from an
    empty window, so compressing another MiB of zeros gives the same bytes again.
    """
    size = int(size)
    full, rest = divmod(size, MB)
    tail_compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    tail = tail_compressor.compress(bytes(rest)) + tail_compressor.flush(zlib.Z_FINISH)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    block = _deflated_zero_mib()

    def chunks() -> Iterator[bytes]:
        yield header
        for _ in range(full):
            yield block
        # The CRC of a GiB of zeros takes a while: only a client that read all of it needs it.
        yield tail + struct.pack("<II", _zeros_crc32(size), size & 0xFFFFFFFF)

    length_ = len(header) + full * len(block) + len(tail) + 8
    return Response(200, [("Content-Type", HTML), ("Content-Encoding", "gzip")], stream=chunks, stream_length=length_)


@lru_cache(maxsize=1)
def _deflated_zero_mib() -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return compressor.compress(bytes(MB)) + compressor.flush(zlib.Z_FULL_FLUSH)


@lru_cache(maxsize=8)
def _zeros_crc32(size: int) -> int:
    crc, zeros = 0, bytes(MB)
    for _ in range(size // MB):
        crc = zlib.crc32(zeros, crc)
    return zlib.crc32(bytes(size % MB), crc)


@_kind("encoding", "coding")
def encoding(ctx: FaultContext, coding: str = "gzip") -> Response:
    """The body compressed: ``gzip``, ``deflate`` (zlib), ``raw-deflate`` (no zlib wrapper, as
    some servers send), or ``broken`` (says gzip, is not)."""
    response = ctx.base()
    body = response.body
    if coding == "gzip":
        compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
        body, label = compressor.compress(body) + compressor.flush(), "gzip"
    elif coding == "deflate":
        body, label = zlib.compress(body), "deflate"
    elif coding == "raw-deflate":
        compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
        body, label = compressor.compress(body) + compressor.flush(), "deflate"
    elif coding == "broken":
        label = "gzip"
    else:
        raise ValueError(f"unknown coding {coding!r}")
    return replace(response.with_headers(content_encoding=label), body=body)


_SAMPLE_TYPES = {"png": "image/png", "pdf": "application/pdf"}


@_kind("type", "content_type")
def content_type(ctx: FaultContext, content_type: str = "pdf") -> Response:
    """A non-HTML answer: a small real PNG or PDF (``png``/``pdf``), or the page under another type."""
    mime = _SAMPLE_TYPES.get(content_type, content_type)
    if mime == "image/png":
        return Response(200, [("Content-Type", mime)], _png())
    if mime == "application/pdf":
        return Response(200, [("Content-Type", mime)], _PDF)
    return ctx.base().with_headers(content_type=mime)


def _png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1 pixel, 8-bit RGB
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b"")


_PDF = (b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
        b"2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
        b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\n"
        b"trailer<</Root 1 0 R>>\n%%EOF\n")

_NON_ASCII = "Café crème, naïve façade, Größe, Ελληνικά, 日本語"
_META_CHARSET = re.compile(rb"<meta\s+charset=[\"']?[\w-]+[\"']?\s*/?>", re.I)


def _insert_paragraph(body: bytes, paragraph: bytes) -> bytes:
    at = body.lower().rfind(b"</body>")
    return body + paragraph if at < 0 else body[:at] + paragraph + body[at:]


@_kind("charset", "mode")
def charset(ctx: FaultContext, mode: str = "missing") -> Response:
    """Non-ASCII text under a bad declaration: ``missing`` (no charset anywhere), ``wrong``
    (says ISO-8859-1, is UTF-8), ``invalid`` (says UTF-8, has invalid UTF-8 bytes)."""
    response = ctx.base()
    body = _insert_paragraph(response.body, f"<p>{_NON_ASCII}</p>\n".encode())
    if mode == "missing":
        body, declared = _META_CHARSET.sub(b"", body), "text/html"
    elif mode == "wrong":
        body, declared = _META_CHARSET.sub(b"", body), "text/html; charset=iso-8859-1"
    elif mode == "invalid":
        body, declared = _insert_paragraph(body, b"<p>bad bytes: \xff\xfe \xc3\x28 \x80 caf\xe9 \xe2\x82</p>\n"), HTML
    else:
        raise ValueError(f"unknown charset mode {mode!r}")
    return replace(response.with_headers(content_type=declared), body=body)


_CLOSING_TAGS = re.compile(rb"</(?:p|li|ul|a|h1|body|html)>", re.I)


@_kind("malformed")
def malformed(ctx: FaultContext) -> Response:
    """The page as sloppy HTML: closing tags dropped, bad nesting, stray '<', an unterminated comment.

    Links stay where they were, so a lenient parser still finds them all.
    """
    response = ctx.base()
    body = _CLOSING_TAGS.sub(b"", response.body)
    junk = b"<div><table><tr><td><b><i>Unclosed <font color=red>markup & a stray < bracket</b></i></div></span>\n"
    at = body.lower().find(b"<body>")
    body = body + junk if at < 0 else body[: at + 6] + junk + body[at + 6 :]
    return replace(response, body=body + b"<!-- unterminated comment\n")


# -- traps: link structures that never end ---------------------------------------------------

@_kind("page")
def page(ctx: FaultContext) -> Response:
    """A plain page without links: redirect targets and leaves of the other traps."""
    return html_response(_page(f"Page {ctx.request.path}", ["A page with nothing to follow."]))


@_kind("links", "count")
def links(ctx: FaultContext, count: int = 10_000) -> Response:
    """A page with ``count`` links to distinct leaf pages."""
    origin = _origin(ctx.request)
    hrefs = [(f"{origin}{TRAP_PREFIX}page/leaf-{i}", f"leaf {i}") for i in range(int(count))]
    return html_response(_page(f"{count} links", [], hrefs))


@_kind("calendar", "date")
def calendar(ctx: FaultContext, date: str = "2024-01-01") -> Response:
    """A calendar day linking to the next and previous day and the next month, forever."""
    try:
        day = dt.date.fromisoformat(str(date))
    except ValueError:
        return html_response(_page("No such day"), 404)
    base = f"{_origin(ctx.request)}{TRAP_PREFIX}calendar/"
    hrefs = []
    for days, label in ((1, "next day"), (-1, "previous day"), (31, "next month")):
        try:
            hrefs.append((f"{base}{(day + dt.timedelta(days=days)).isoformat()}", label))
        except OverflowError:  # year 1 or 9999: the only ends of this calendar
            pass
    return html_response(_page(f"Events on {day.isoformat()}", ["No events."], hrefs))


@_kind("session")
def session(ctx: FaultContext, sid: str | None = None) -> Response:
    """A page whose links carry a fresh ``?sid=`` on every fetch: endless distinct URLs, one page."""
    base = f"{_origin(ctx.request)}{TRAP_PREFIX}session/"
    hrefs = [(f"{base}{name}?sid={stable_hash(ctx.request.url, next(ctx.counter)):016x}", f"section {name}")
             for name in ("home", "news", "contact")]
    return html_response(_page("Session page", ["Welcome back."], hrefs))


def trap_fault(request: Request) -> tuple[FaultKind, dict] | None:
    """The fault requested by a ``/__trap/KIND[/ARG]?PARAMS`` URL (None for other paths or unknown kinds)."""
    if not request.path.startswith(TRAP_PREFIX):
        return None
    name, _, argument = request.path[len(TRAP_PREFIX):].partition("/")
    kind = KINDS.get(name)
    if kind is None:
        return None
    params = {key: coerce(value) for key, value in query_params(request.query).items()}
    if argument and kind.positional:
        params[kind.positional] = coerce(argument)
    return kind, params


def coerce(text: str) -> object:
    """A query-string value as int, float or bool when it reads as one, else the string."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)
