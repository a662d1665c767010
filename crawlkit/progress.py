"""Live progress of the fetch stage on the driver: pages done/total, pages/s, bytes, errors,
tasks done and the slowest hosts, as one log line every few seconds.

Why a side channel and not accumulators: PySpark sends accumulator updates to the driver only
when a task ends, and a fetch task owns whole hosts for minutes, so accumulators would stay at
zero for most of the stage. Instead each fetch task sends its partition's *cumulative*
:class:`~crawlkit.fetch.FetchStats` as one small UDP datagram (at most every
:data:`SEND_EVERY` seconds, and once at the end) to the driver, which keeps the latest one per
partition. Cumulative snapshots make a lost datagram harmless (the next one supersedes it),
and sending never blocks or fails a task. Where datagrams cannot reach the driver (a firewall
between executors and driver), the line still shows the tasks done, from
``statusTracker()``; the stage's final counters never depend on this channel.

The line goes to the ``crawlkit.progress`` logger at INFO. The CLI logs INFO to stderr, and at
WARNING under ``--quiet``; when INFO is off, no socket is opened and tasks send nothing.

Example::

    with fetch_progress(spark, "fetch", todo) as sink:   # sink is None when INFO is off
        counts = todo.mapInArrow(_fetch_and_spill(conf, now, parts_uri, sink), "rows long")
"""
from __future__ import annotations

import json
import logging
import secrets
import select
import socket
import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Iterator

from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("crawlkit.progress")

SEND_EVERY = 0.5     # seconds between a task's datagrams
LOG_EVERY = 5.0      # seconds between progress lines, when something changed
QUIET_MAX = 60.0     # a line at least this often even when nothing changed (a stuck host)
SLOW_HOSTS = 3       # slowest hosts named in the line
MAX_DATAGRAM = 65536  # read buffer; a message is a few hundred bytes


@dataclass(frozen=True)
class ProgressSink:
    """The executor side: where a fetch task sends its counters. Small and picklable, it travels
    in the fetch closure; the socket is made on the executor."""
    host: str
    port: int
    token: str

    def follow(self, results: Iterator[dict], stats) -> Iterator[dict]:
        """Pass ``results`` through, sending ``stats`` (filled as rows are yielded) now and then."""
        from pyspark import TaskContext

        context = TaskContext.get()
        key = (context.partitionId(), context.attemptNumber()) if context else (0, 0)
        try:
            sock = socket.socket(_family(self.host), socket.SOCK_DGRAM)
        except OSError:   # the driver's name does not resolve here: fetch on, without progress
            yield from results
            return
        with sock:
            last = 0.0
            for row in results:
                yield row
                if time.monotonic() - last >= SEND_EVERY:
                    self._send(sock, key, stats)
                    last = time.monotonic()
            self._send(sock, key, stats)

    def _send(self, sock: socket.socket, key: tuple[int, int], stats) -> None:
        message = {"token": self.token, "partition": key[0], "attempt": key[1], "rows": stats.rows,
                   "bytes": stats.bytes, "errors": sum(stats.errors.values()), "elapsed_s": stats.elapsed_s,
                   "slowest": stats.slowest_hosts(SLOW_HOSTS)}
        try:
            sock.sendto(json.dumps(message).encode(), (self.host, self.port))
        except OSError:
            pass  # progress is best effort: never fail a fetch task over it


def _family(host: str) -> socket.AddressFamily:
    return socket.getaddrinfo(host, None, type=socket.SOCK_DGRAM)[0][0]


@dataclass
class Snapshot:
    """What the driver knows: the latest counters of each partition."""
    partitions: dict[int, dict] = field(default_factory=dict)

    def add(self, message: dict) -> bool:
        """Keep a partition's newest attempt; returns whether anything changed."""
        old = self.partitions.get(message["partition"])
        if old is not None and (old["attempt"] > message["attempt"] or old == message):
            return False
        self.partitions[message["partition"]] = message
        return True

    def totals(self) -> dict:
        parts = self.partitions.values()
        slowest = sorted((tuple(h) for p in parts for h in p["slowest"]), key=lambda h: -h[1])
        return {"rows": sum(p["rows"] for p in parts), "bytes": sum(p["bytes"] for p in parts),
                "errors": sum(p["errors"] for p in parts), "slowest": slowest[:SLOW_HOSTS]}


def format_line(label: str, totals: dict, total: int, seconds: float, tasks: tuple[int, int] | None) -> str:
    """One progress line, e.g. ``fetch: 412/1000 pages (41%), 12.5 pages/s, 3.1 MB, ...``."""
    done = totals["rows"]
    parts = [f"{label}: {done}/{total} pages ({100 * done / total if total else 100:.0f}%)",
             f"{done / seconds if seconds > 0 else 0.0:.1f} pages/s",
             _size(totals["bytes"]), f"{totals['errors']} errors"]
    if tasks:
        parts.append(f"tasks {tasks[0]}/{tasks[1]} done")
    line = ", ".join(parts)
    if totals["slowest"]:
        line += "; slowest hosts: " + ", ".join(f"{h} {ms:.0f} ms" for h, ms in totals["slowest"])
    return line


def _size(n: float) -> str:
    unit = "B"
    for bigger in ("kB", "MB", "GB"):
        if n < 1000:
            break
        n, unit = n / 1000, bigger
    return f"{n:.0f} B" if unit == "B" else f"{n:.1f} {unit}"


class FetchProgress:
    """The driver side: a UDP socket and a thread that logs a line every :data:`LOG_EVERY`
    seconds while the fetch job runs, and a last line when it ends."""

    def __init__(self, spark: SparkSession, label: str, total: int, every: float = LOG_EVERY):
        self.label, self.total, self.every = label, total, every
        self.tracker = spark.sparkContext.statusTracker()
        # Executors send to the address they know the driver by; the driver listens where it
        # binds (they differ behind NAT or in Kubernetes).
        spark_conf = spark.sparkContext.getConf()
        host = spark_conf.get("spark.driver.host", "127.0.0.1")
        self.sock = socket.socket(_family(host), socket.SOCK_DGRAM)
        try:
            self.sock.bind((spark_conf.get("spark.driver.bindAddress", host), 0))
        except OSError:
            self.sock.close()
            raise
        self.sink = ProgressSink(host, self.sock.getsockname()[1], secrets.token_hex(8))
        self.snapshot = Snapshot()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fetch-progress", daemon=True)
        # When fetching started (the earliest task start the datagrams tell of) and the last
        # datagram: the rate leaves out Spark's start-up and the tail after the last page.
        self._began: float | None = None
        self._last = 0.0

    def __enter__(self) -> ProgressSink:
        self._thread.start()
        return self.sink

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()
        log.info(self.line(self._last) + " (end)")

    def line(self, until: float | None = None) -> str:
        seconds = (until or time.monotonic()) - self._began if self._began is not None else 0.0
        return format_line(self.label, self.snapshot.totals(), self.total, seconds, self._tasks())

    def _tasks(self) -> tuple[int, int] | None:
        """Tasks completed/total over the running stages (the fetch job's one stage)."""
        infos = [self.tracker.getStageInfo(s) for s in self.tracker.getActiveStageIds()]
        infos = [i for i in infos if i is not None]
        if not infos:
            return None
        return sum(i.numCompletedTasks for i in infos), sum(i.numTasks for i in infos)

    def _run(self) -> None:
        last_line = time.monotonic()
        changed = False
        while not self._stop.is_set():
            ready, _, _ = select.select([self.sock], [], [], 0.2)
            if ready:
                changed |= self._drain()
            since = time.monotonic() - last_line
            if (changed and since >= self.every) or since >= max(self.every, QUIET_MAX):
                log.info(self.line())
                last_line, changed = time.monotonic(), False
        self._drain()  # the last datagrams of tasks that just ended

    def _drain(self) -> bool:
        """Read every datagram waiting; returns whether the counters changed."""
        changed = False
        while True:
            try:
                message = json.loads(self.sock.recv(MAX_DATAGRAM, socket.MSG_DONTWAIT))
            except BlockingIOError:
                return changed
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("token") == self.sink.token:
                self._last = time.monotonic()
                began = self._last - message["elapsed_s"]
                self._began = began if self._began is None else min(self._began, began)
                changed |= self.snapshot.add(message)


def fetch_progress(spark: SparkSession, label: str, fetchlist: DataFrame):
    """A :class:`FetchProgress` for fetching ``fetchlist`` (entering it gives the sink), or a
    no-op giving None when the progress logger is off: quiet runs open no socket, count nothing."""
    if not log.isEnabledFor(logging.INFO):
        return nullcontext(None)
    try:
        return FetchProgress(spark, label, fetchlist.count(), LOG_EVERY)
    except OSError as exc:  # no address to listen on: fetch without the line
        log.info("%s: no progress line (%s)", label, exc)
        return nullcontext(None)
