"""The asyncio HTTP/1.1 server: forward proxy for any host, or origin server for one site.

A hand-written parser on asyncio streams serves thousands of small pages a second
on one core, keeps connections alive, and lets drip-fed or delayed answers wait
without holding up anyone else (a thread-per-connection server manages neither).

Request targets: absolute-form (``GET http://host/path HTTP/1.1``, what a client
configured with this server as its HTTP proxy sends) for any host; origin-form
(``GET /path``) for the site given by ``--site`` or else the Host header. Requests
for the host ``replay.control`` go to the control endpoints (see :meth:`_control`).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import stat
import struct
import sys
import time
import traceback
from pathlib import Path

from .accesslog import FLUSH_INTERVAL, AccessLog
from .messages import Request, Response, text_response
from .synthetic import http_date
from .urls import query_params, split_url
from .web import Web

CONTROL_HOST = "replay.control"
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_HEAD_LIMIT = 64 * 1024
_WRITE_BUFFER_HIGH = 256 * 1024


class BadRequest(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class ReplayHTTPServer:
    def __init__(self, web: Web, site: str | None = None, access_log: AccessLog | None = None):
        self.web = web
        self.site = site.lower() if site else None
        self.access_log = access_log
        self._stopping = asyncio.Event()
        self._handlers: set[asyncio.Task] = set()

    async def serve(self, host: str = "127.0.0.1", port: int = 0, ready_file: str | None = None,
                    stop_on_eof: bool = False) -> None:
        """Serve until SIGTERM, SIGINT, ``POST http://replay.control/shutdown`` or, with
        ``stop_on_eof``, the end of stdin (the parent holding its pipe has died)."""
        server = await asyncio.start_server(self._handle, host, port, limit=_HEAD_LIMIT, backlog=1024)
        bound = server.sockets[0].getsockname()[1]
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stopping.set)
        if stop_on_eof:
            self._watch_stdin(loop)
        flusher = asyncio.create_task(self._flush_regularly())
        if ready_file:
            temporary = f"{ready_file}.tmp"
            Path(temporary).write_text(f"{bound}\n")
            os.replace(temporary, ready_file)
        print(f"replay: serving on http://{host}:{bound} (use it as an HTTP proxy)", file=sys.stderr, flush=True)
        try:
            await self._stopping.wait()
        finally:
            server.close()
            flusher.cancel()
            for task in list(self._handlers):
                task.cancel()
            await asyncio.gather(*self._handlers, flusher, return_exceptions=True)
            if self.access_log:
                self.access_log.close()

    def _watch_stdin(self, loop: asyncio.AbstractEventLoop) -> None:
        """Stop when stdin reaches EOF: the kernel closes a dead parent's end of the pipe,
        even after SIGKILL, so a server is never left running without its owner."""
        fd = sys.stdin.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode) and not stat.S_ISSOCK(os.fstat(fd).st_mode):
            # /dev/null or a file (nohup, a script's background job): no owner to watch
            print("replay: --stop-on-eof needs stdin to be a pipe; ignored", file=sys.stderr, flush=True)
            return

        def readable() -> None:
            if not os.read(fd, 4096):
                loop.remove_reader(fd)
                self._stopping.set()

        loop.add_reader(fd, readable)

    async def _flush_regularly(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_INTERVAL)
            if self.access_log:
                self.access_log.flush()

    # -- one connection ----------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._handlers.add(task)
        peer = writer.get_extra_info("peername")
        client = f"{peer[0]}:{peer[1]}" if peer else ""
        try:
            while await self._one_request(reader, writer, client):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:  # shutdown: end quietly, the stream machinery reports cancelled tasks
            pass
        finally:
            self._handlers.discard(task)
            writer.close()

    async def _one_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client: str) -> bool:
        """Read, answer and log one request; False when the connection should close."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False
        except asyncio.LimitOverrunError:
            await self._send(writer, "GET", text_response("request head too large\n", 431), False)
            return False
        arrived, started = time.time(), time.perf_counter()
        try:
            request, version = self._parse(head, client)
            length = request.headers.get("content-length", "0")
            if not length.isdigit():
                raise BadRequest(400, f"bad Content-Length {length[:20]!r}")
            length = int(length)
            if length:
                await reader.readexactly(length)
        except BadRequest as error:
            await self._send(writer, "GET", text_response(f"{error}\n", error.status), False)
            return False
        connection = request.headers.get("connection", request.headers.get("proxy-connection", "")).lower()
        keep_alive = version == "HTTP/1.1" and "close" not in connection  # HTTP/1.0: one request per connection

        if request.host.partition(":")[0] == CONTROL_HOST:
            response = self._control(request)
            await self._send(writer, request.method, response, keep_alive)
            return keep_alive
        clock = self.web.clock.now()
        if request.method in ("GET", "HEAD"):
            try:
                response = self.web.respond(request)
            except Exception:  # a bug behind one URL must not take the connection (or the server) down
                traceback.print_exc()
                response = text_response("replay web: internal error (see the server log)\n", 500)
        else:
            response = text_response(f"method {request.method} not allowed\n", 405).with_headers(allow="GET, HEAD")
        sent, alive = await self._send(writer, request.method, response, keep_alive and not response.close)
        if self.access_log:
            entry = {"ts": arrived, "clock": clock, "client": client, "method": request.method,
                     "host": request.host, "url": request.url, "status": response.status, "bytes": sent,
                     "duration": round(time.perf_counter() - started, 6)}
            if response.fault:
                entry["fault"] = response.fault
            self.access_log.record(entry)
        return alive and keep_alive and not response.close

    def _parse(self, head: bytes, client: str) -> tuple[Request, str]:
        lines = head[:-4].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise BadRequest(400, f"bad request line {lines[0][:100]!r}")
        method, target, version = parts
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "transfer-encoding" in headers:
            raise BadRequest(411, "request bodies must have a Content-Length")
        if method == "CONNECT":
            raise BadRequest(501, "CONNECT is not supported: the replay web serves http:// URLs only")
        if _ABSOLUTE.match(target):  # any scheme: archives hold ftp:// pages too, as proxies serve them
            url = target
        elif target.startswith("/"):
            host = self.site or headers.get("host", "").lower()
            if not host:
                raise BadRequest(400, "origin-form request without a Host header (or start with --site)")
            url = f"http://{host}{target}"
        else:
            raise BadRequest(400, f"unsupported request target {target[:100]!r}")
        host, path, query = split_url(url)
        return Request(method, url, host, path, query, headers, client), version

    # -- sending -----------------------------------------------------------------------------

    async def _send(self, writer: asyncio.StreamWriter, method: str, response: Response, keep_alive: bool) -> tuple[int, bool]:
        """Write ``response`` with its misbehaviour; ``(body bytes sent, connection still usable)``."""
        if response.hang is not None:
            await asyncio.sleep(response.hang)
            return 0, False
        if response.first_byte_delay:
            await asyncio.sleep(response.first_byte_delay)
        status = response.status
        has_body = status not in (204, 304) and status >= 200
        lines = [f"HTTP/1.1 {status} {response.reason_phrase}"]
        lines += [f"{name}: {_header_value(value)}" for name, value in response.headers]
        if response.header("date") is None:
            lines.append(f"Date: {self._date()}")
        if has_body:
            length = response.length if response.declared_length is None else response.declared_length
            lines.append(f"Content-Length: {length}")
        if not keep_alive:
            lines.append("Connection: close")
        text = "\r\n".join(lines) + "\r\n\r\n"
        try:
            head = text.encode("latin-1")
        except UnicodeEncodeError:
            head = text.encode("utf-8")
        if not has_body or method == "HEAD":
            writer.write(head)
            return 0, True
        try:
            if response.stream is None and response.drip is None and response.reset_after is None:
                writer.write(head + response.body)
                if writer.transport.get_write_buffer_size() > _WRITE_BUFFER_HIGH:
                    await writer.drain()
                return len(response.body), True
            return await self._send_slowly(writer, head, response)
        except ConnectionError:
            return 0, False

    async def _send_slowly(self, writer: asyncio.StreamWriter, head: bytes, response: Response) -> tuple[int, bool]:
        """Streamed, drip-fed or reset bodies: chunk by chunk, counting what went out."""
        writer.write(head)
        await writer.drain()
        sent, limit = 0, response.reset_after
        chunks = response.stream() if response.stream is not None else (response.body,)
        step = response.drip[0] if response.drip else None
        try:
            for chunk in chunks:
                if limit is not None:
                    chunk = chunk[: max(0, limit - sent)]
                for start in range(0, len(chunk), step or len(chunk) or 1):
                    piece = chunk[start : start + step] if step else chunk
                    if step and sent:
                        await asyncio.sleep(response.drip[1])
                    writer.write(piece)
                    sent += len(piece)
                    await writer.drain()
                if limit is not None and sent >= limit:
                    break
        except ConnectionError:
            return sent, False
        if limit is not None:
            _reset(writer)
            return sent, False
        return sent, True

    def _date(self) -> str:
        return http_date(int(self.web.clock.now()))

    # -- control -----------------------------------------------------------------------------

    def _control(self, request: Request) -> Response:
        """``http://replay.control/...``: ``clock`` (GET; POST ``?t=``), ``page?url=`` (ground truth),
        ``flush`` (write the access log now), ``shutdown`` and ``health``."""
        params = query_params(request.query)
        try:
            if request.path == "/clock":
                if request.method == "POST":
                    self.web.clock.set(float(params["t"]))
                return _json({"clock": self.web.clock.now()})
            if request.path == "/page":
                return _json(self.web.page_info(params["url"]))
            if request.path == "/flush":
                if self.access_log:
                    self.access_log.flush()
                return _json({"flushed": True})
            if request.path == "/shutdown" and request.method == "POST":
                asyncio.get_running_loop().call_soon(self._stopping.set)
                return _json({"stopping": True})
            if request.path == "/health":
                return _json({"ok": True})
        except (KeyError, ValueError) as error:
            return text_response(f"bad control request: {error!r}\n", 400)
        return text_response("no such control endpoint\n", 404)


_CONTROL_ESCAPES = {c: f"%{c:02X}" for c in (*range(0x20), 0x7F) if c != 0x09}


def _header_value(value: str) -> str:
    """``value`` with control characters percent-encoded: a CR/LF from a URL parameter or a
    config file must not end the header and start one of its own (header injection)."""
    return value if value.isprintable() else value.translate(_CONTROL_ESCAPES)


def _json(data: dict) -> Response:
    return text_response(json.dumps(data) + "\n", 200, "application/json")


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST (linger 0) instead of an orderly FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
