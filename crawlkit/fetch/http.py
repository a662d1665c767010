"""One HTTP request with every limit the fetcher needs, and nothing it does not.

:class:`HttpClient` sends through one urllib3 pool manager shared by all fetch threads of a
partition, so a host's (or the proxy's) keep-alive connections are reused by whichever thread
fetches it next; urllib3's pools are thread-safe.

Why urllib3 and not ``requests``: requests is a layer over the same urllib3 pools, and its
per-request work (merging session settings, preparing a Request model, hooks, the cookie jar)
halves single-thread throughput against the replay web (measured: ~600 vs ~1100 pages/s), on
the crawl's hot path, while the crawler wants none of it (no cookies, no redirects followed,
no proxy settings from the environment).

Limits, and why they are enforced here:

* ``page_deadline`` — the body is read with ``read1`` (returns whatever arrived) and the
  socket timeout is lowered to the time left before each read, so a server dripping one
  byte a second is cut at the deadline, not after ``max_content`` seconds; the status line
  and headers (read inside http.client) and an error page being drained are watched by a
  :class:`~crawlkit.fetch.watchdog.Watchdog`, which shuts the socket down at the deadline;
* ``max_content`` and the decompression guard — the raw stream is inflated by
  :class:`~crawlkit.fetch.decode.BodyBuffer` with an output cap;
* ``max_header_bytes`` — checked once the headers are in, over every header line as sent
  (http.client itself refuses single lines over 64 KiB and more than 100 headers, which
  bounds what it buffers).

The client reports facts (:class:`Response`); turning them into a fetch status is the
fetcher's job.
"""
from __future__ import annotations

import enum
import http.client
import math
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Mapping
from urllib.parse import urlsplit

import certifi
import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import (ConnectTimeoutError, HTTPError, LocationValueError,
                                NameResolutionError, NewConnectionError, ProtocolError,
                                ProxyError, ReadTimeoutError, SSLError)
from urllib3.exceptions import TimeoutError as Urllib3Timeout

from crawlkit.fetch.decode import ACCEPT_ENCODING, BodyBuffer, DecodeError
from crawlkit.fetch.guard import AddressGuard, BlockedAddress, guarded_connection_class
from crawlkit.fetch.outcomes import media_type, utcnow
from crawlkit.fetch.settings import FetchSettings
from crawlkit.fetch.watchdog import (Watchdog, cut_by_watchdog, deadline_connection_class,
                                     request_deadline)

CHUNK_BYTES = 64 * 1024
# Bodies we do not keep (error pages, redirects) are read to the end when at most this long,
# so the connection can be reused; longer ones cost a new connection instead of a download.
DRAIN_LIMIT = 64 * 1024
# Headers kept one value per line when repeated, not joined with ", " as RFC 9110 lets other
# headers be: a cookie's Expires date holds a comma (RFC 6265 3), "googlebot: noarchive"
# would swallow the X-Robots-Tag after it, and a second Content-Type would run into the
# first one's charset (browsers take the last value). The WARC writer gives each line its
# own header.
LINE_PER_VALUE = ("set-cookie", "x-robots-tag", "content-type")


class Failure(enum.Enum):
    """Why a request produced no usable response."""
    TRANSPORT = "transport"   # connect/read error, timeout, reset, deadline, broken body
    BLOCKED = "blocked"       # the SSRF guard refused the address
    INVALID_URL = "invalid"   # the URL cannot be requested at all


@dataclass(slots=True)
class Response:
    url: str
    fetched_at: datetime
    elapsed_ms: int = 0
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str | None = None
    body: bytes | None = None
    truncated: bool = False
    failure: Failure | None = None
    error: str | None = None


class HttpClient:
    """Makes requests for one partition; thread-safe; ``close()`` when done."""

    def __init__(self, settings: FetchSettings, guard: AddressGuard):
        self.settings = settings
        self.guard = guard
        self._proxied = bool(settings.proxy)
        self._headers = {
            "User-Agent": settings.user_agent,
            "Accept": ",".join(sorted(settings.accept_types)) + ",*/*;q=0.5",
            "Accept-Encoding": ACCEPT_ENCODING,
            "Connection": "keep-alive",
        }
        self._watchdog = Watchdog()
        self._pools = self._make_pools(settings, guard)

    def _make_pools(self, settings: FetchSettings, guard: AddressGuard) -> urllib3.PoolManager:
        # One pool per host (direct) or one pool to the proxy, each able to hold a connection
        # per thread; num_pools is how many hosts' pools stay open.
        verify = settings.verify_tls
        options = dict(num_pools=max(64, 4 * settings.threads), maxsize=settings.threads,
                       retries=False, cert_reqs="CERT_REQUIRED" if verify else "CERT_NONE",
                       ca_certs=certifi.where() if verify else None)
        pools = (urllib3.ProxyManager(settings.proxy, **options) if self._proxied
                 else urllib3.PoolManager(**options))
        # through a proxy nothing connects to the target itself: the guard judges targets
        # before asking (_check_target)
        guarded = guard.enabled and not self._proxied

        def connections(base: type) -> type:
            return deadline_connection_class(
                guarded_connection_class(base, guard) if guarded else base, self._watchdog)
        pools.pool_classes_by_scheme = {
            "http": type("CrawlHTTPConnectionPool", (HTTPConnectionPool,), {
                "ConnectionCls": connections(HTTPConnection)}),
            "https": type("CrawlHTTPSConnectionPool", (HTTPSConnectionPool,), {
                "ConnectionCls": connections(HTTPSConnection)}),
        }
        return pools

    def close(self) -> None:
        self._pools.clear()
        self._watchdog.close()

    def get(self, url: str, *, deadline: float, max_bytes: int,
            accept_types: frozenset[str] | None = None,
            headers: Mapping[str, str] | None = None) -> Response:
        """GET ``url`` without following redirects. The body is read (up to ``max_bytes``)
        for 2xx responses whose media type is in ``accept_types`` (None: any type, and also
        when the server sends none); ``deadline`` is a ``time.monotonic()`` value."""
        started = time.monotonic()
        response = Response(url=url, fetched_at=utcnow())
        remaining = deadline - started
        try:
            if not url[:8].lower().startswith(("http://", "https://")):
                raise LocationValueError("not an http(s) URL")
            self._check_target(url)
            if remaining <= 0:
                raise _Deadline()
            with request_deadline(deadline):
                raw = self._pools.urlopen(
                    "GET", url, headers={**self._headers, **headers} if headers else self._headers,
                    redirect=False, retries=False, preload_content=False, decode_content=False,
                    timeout=urllib3.Timeout(connect=min(self.settings.connect_timeout, remaining),
                                            read=min(self.settings.read_timeout, remaining)))
        except BlockedAddress as exc:
            _fail(response, Failure.BLOCKED, f"blocked address {exc.address}")
        except _Deadline:
            _fail(response, Failure.TRANSPORT, "deadline")
        except (LocationValueError, ValueError) as exc:
            _fail(response, Failure.INVALID_URL, f"invalid url: {_first_line(exc)}")
        except (HTTPError, OSError) as exc:
            _fail(response, Failure.TRANSPORT,
                  "deadline" if cut_by_watchdog() else describe_error(exc, deadline))
        else:
            self._read(raw, response, deadline, max_bytes, accept_types)
        response.elapsed_ms = int((time.monotonic() - started) * 1000)
        return response

    def _check_target(self, url: str) -> None:
        """Through a proxy nothing resolves the target locally: judge it before asking."""
        if self._proxied and self.guard.enabled:
            host = urlsplit(url).hostname
            if not host:
                raise LocationValueError("no host")
            address = self.guard.check_proxied_target(host)
            if address is not None:
                raise BlockedAddress(host, address)

    def _read(self, raw: urllib3.BaseHTTPResponse, response: Response, deadline: float,
              max_bytes: int, accept_types: frozenset[str] | None) -> None:
        reusable = False
        try:
            response.status = status = raw.status
            headers = {name.lower(): _as_utf8(value) for name, value in raw.headers.itermerged()}
            for name in LINE_PER_VALUE:   # values a ", " join would run together
                values = raw.headers.getlist(name)
                if len(values) > 1:
                    headers[name] = "\n".join(_as_utf8(v) for v in values)
            response.headers = headers
            # a repeated Content-Type (a framework's and the server's default): the last one
            # counts, as in browsers; merged, "text/html, text/html" is no media type at all
            content_types = raw.headers.getlist("content-type")
            response.content_type = media_type(content_types[-1]) if content_types else None
            # every line as sent ("Name: value\r\n"), a repeated header's name each time
            header_bytes = sum(len(k) + len(v) + 4 for k, v in raw.headers.iteritems())
            if header_bytes > self.settings.max_header_bytes:
                _fail(response, Failure.TRANSPORT, "headers too large")
            elif 200 <= status < 300 and (
                    accept_types is None or response.content_type is None
                    or response.content_type in accept_types):
                reusable = self._read_body(raw, response, headers, deadline, max_bytes)
            else:
                with self._watchdog.watch(getattr(raw.connection, "sock", None), deadline) as watch:
                    reusable = _drain(raw, headers)
                reusable = reusable and not watch.cut
        finally:
            if not reusable:
                raw.close()
            raw.release_conn()

    def _read_body(self, raw: urllib3.BaseHTTPResponse, response: Response,
                   headers: dict[str, str], deadline: float, max_bytes: int) -> bool:
        """Read the body into ``response``; True when the connection can be reused."""
        try:
            buffer = BodyBuffer(headers.get("content-encoding"), max_bytes,
                                self.settings.max_decompression_ratio)
        except DecodeError as exc:
            _fail(response, Failure.TRANSPORT, str(exc))
            return False
        sock = getattr(raw.connection, "sock", None)
        read_timeout = self.settings.read_timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    _fail(response, Failure.TRANSPORT, "deadline")
                    return False
                if sock is not None and remaining < read_timeout:
                    sock.settimeout(remaining)
                data = raw.read1(CHUNK_BYTES, decode_content=False)
                if not data or not buffer.feed(data):
                    break
            response.body = buffer.body()
        except DecodeError as exc:
            _fail(response, Failure.TRANSPORT, str(exc))
            return False
        except (HTTPError, OSError) as exc:
            _fail(response, Failure.TRANSPORT, describe_error(exc, deadline))
            return False
        response.truncated = buffer.truncated
        response.error = buffer.error
        return not buffer.truncated


class _Deadline(Exception):
    """The page's deadline passed before the request could start."""


def _fail(response: Response, failure: Failure, error: str) -> None:
    response.failure = failure
    response.error = error
    response.body = None


def _as_utf8(value: str) -> str:
    """A header value as its sender wrote it. http.client decodes header bytes as latin-1,
    but servers send UTF-8 (a Location to ``/café``); bytes that are valid UTF-8 are read as
    UTF-8, as browsers do, and anything else stays latin-1."""
    if value.isascii():
        return value
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return value


def _drain(raw: urllib3.BaseHTTPResponse, headers: Mapping[str, str]) -> bool:
    """Read a short unwanted body so the connection stays reusable; False to close instead."""
    length = headers.get("content-length")
    if length is None or not length.isdigit() or int(length) > DRAIN_LIMIT:
        return False
    try:
        raw.read(int(length), decode_content=False)
    except (HTTPError, OSError):
        return False
    return True


def describe_error(exc: BaseException, deadline: float = math.inf) -> str:
    """A short, stable error text (the content table's ``error``), not a traceback. A timeout
    once the page's ``deadline`` has passed is the deadline's doing: its timeouts were capped
    by the time left."""
    if isinstance(exc, Urllib3Timeout) and time.monotonic() >= deadline - 0.01:
        return "deadline"   # (poll timeouts have millisecond resolution: allow for rounding)
    if isinstance(exc, NameResolutionError):
        return "dns failure"
    if isinstance(exc, ProxyError):
        return "proxy error"
    if isinstance(exc, SSLError):
        return "tls error"
    if isinstance(exc, ReadTimeoutError):
        return "read timeout"
    if isinstance(exc, ConnectTimeoutError) and not isinstance(exc, NewConnectionError):
        return "connect timeout"
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, ConnectionResetError):
            return "connection reset"
        if isinstance(cause, http.client.IncompleteRead) or (
                isinstance(cause, ProtocolError) and "IncompleteRead" in str(cause)):
            return "incomplete body"
        if isinstance(cause, http.client.RemoteDisconnected):
            return "connection closed"
        if isinstance(cause, http.client.LineTooLong) or "got more than" in str(cause):
            return "headers too large"
        cause = _inner(cause)
    if isinstance(exc, NewConnectionError):
        return "connection error"
    if isinstance(exc, ProtocolError):
        return "protocol error"
    return f"error: {type(exc).__name__}"


def _inner(exc: BaseException) -> BaseException | None:
    """The wrapped exception: urllib3 nests causes in ``args`` and ``reason``."""
    for candidate in (getattr(exc, "reason", None), *exc.args, exc.__cause__, exc.__context__):
        if isinstance(candidate, BaseException) and candidate is not exc:
            return candidate
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0][:200] if text else type(exc).__name__
