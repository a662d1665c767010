"""Per-host queues with politeness, as Nutch's FetchItemQueues, for one partition.

Every host has a queue of pending fetch-list rows, a count of requests in flight (at most
``threads_per_host``) and the earliest time its next request may start: the end of its last
request plus its delay (``server_delay``, or the robots.txt Crawl-delay), multiplied by
``backoff`` for each server error in a row (5xx, 429, connection errors: the host is failing or
overloaded, and asking again at the same rate makes it worse). Ready hosts sit in a
heap keyed by that time, so a free thread always takes the host that has waited longest —
many hosts are fetched in parallel while each one stays polite — and a thread with nothing
ready sleeps exactly until the next host is due.

A host can be *closed* for the rest of the round (too many errors in a row, a long
Retry-After, robots.txt unreachable, an address the guard refuses): its pending rows, and any
row fed for it later, go to the ``reject`` callback with the :class:`Closure` that says why.
When the partition's time limit passes, every host is closed the same way. Rows are never
dropped: each leaves through a worker (``take``) or through ``reject``.

:meth:`HostQueues.poll` is the whole scheduling decision and takes the time as an argument,
so tests drive it with a fake clock; :meth:`HostQueues.take` is the blocking wrapper the
threads use.
"""
from __future__ import annotations

import heapq
import itertools
import math
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

from crawlkit.status import FetchStatus

Row = dict[str, Any]


@dataclass(frozen=True)
class Closure:
    """Why a host takes no more requests this round; every later row of it gets this."""
    status: FetchStatus
    error: str
    retry_after: int | None = None


TIME_LIMIT = Closure(FetchStatus.SKIPPED, "time limit")
HOST_ERROR_CAP = Closure(FetchStatus.SKIPPED, "host error cap")


class HostQueue:
    """One host's state; mutated only under the :class:`HostQueues` lock."""

    __slots__ = ("host", "pending", "active", "next_start", "delay", "errors", "closure",
                 "version")

    def __init__(self, host: str, delay: float):
        self.host = host
        self.pending: deque[Row] = deque()
        self.active = 0
        self.next_start = 0.0
        self.delay = delay
        self.errors = 0
        self.closure: Closure | None = None
        self.version = 0


class HostQueues:
    """The per-host queues of one partition, shared by the fetch threads."""

    def __init__(self, *, threads_per_host: int, delay: float, max_errors: int,
                 max_pause: float, backoff: float = 1.0, deadline: float = math.inf,
                 reject: Callable[[str, Row, Closure], None],
                 clock: Callable[[], float] = time.monotonic):
        self.threads_per_host = max(1, threads_per_host)
        self.default_delay = delay
        self.max_errors = max_errors
        self.max_pause = max_pause
        self.backoff = backoff
        self.deadline = deadline
        self._reject = reject
        self._clock = clock
        self._hosts: dict[str, HostQueue] = {}
        self._ready: list[tuple[float, int, int, HostQueue]] = []
        self._seq = itertools.count()
        self._pending = 0
        self._active = 0
        self._feeding = True
        self._closed_all: Closure | None = None
        self._cond = threading.Condition(threading.Lock())

    # --- feeding -------------------------------------------------------------------------

    def add(self, host: str, row: Row) -> None:
        """Queue ``row`` for ``host`` (or reject it at once if the host is closed)."""
        with self._cond:
            hq = self._hosts.get(host)
            if hq is None:
                hq = self._hosts[host] = HostQueue(host, self.default_delay)
            closure = self._closed_all or hq.closure
            if closure is not None:
                self._reject(host, row, closure)
                return
            hq.pending.append(row)
            self._pending += 1
            if len(hq.pending) == 1 and self._schedule(hq):
                self._cond.notify()

    def finish_feed(self) -> None:
        """No more rows will come: threads may exit once the queues are empty."""
        with self._cond:
            self._feeding = False
            self._cond.notify_all()

    # --- taking and releasing ------------------------------------------------------------

    def poll(self, now: float) -> tuple[HostQueue, Row] | float | None:
        """The scheduling decision at time ``now``: a host slot and row to fetch, else the
        seconds to wait (``math.inf``: until something changes), or None when the work is over
        (all done, time limit reached, or stopped). Call with the lock held (``take`` does);
        tests call it directly."""
        if self._closed_all is not None:
            return None
        if now >= self.deadline:
            self._close_all(TIME_LIMIT)
            return None
        ready = self._ready
        while ready and ready[0][2] != ready[0][3].version:
            heapq.heappop(ready)
        if ready:
            due, _, _, hq = ready[0]
            if due <= now:
                heapq.heappop(ready)
                row = hq.pending.popleft()
                self._pending -= 1
                hq.active += 1
                self._active += 1
                self._schedule(hq)
                return hq, row
            if due >= self.deadline and not self._active and not self._feeding:
                # Nothing can start before the time limit: stop now instead of idling to it.
                self._close_all(TIME_LIMIT)
                return None
            return min(due, self.deadline) - now
        if not self._feeding and not self._pending and not self._active:
            return None
        return self.deadline - now

    def take(self) -> tuple[HostQueue, Row] | None:
        """Block until a host slot is due and return it with its row; None when over."""
        with self._cond:
            while True:
                decision = self.poll(self._clock())
                if decision is None:
                    self._cond.notify_all()
                    return None
                if isinstance(decision, tuple):
                    return decision
                self._cond.wait(None if decision == math.inf else decision)

    def release(self, hq: HostQueue, *, requested: bool, server_error: bool = False,
                delay: float | None = None, retry_after: int | None = None,
                requeue: Row | None = None) -> None:
        """End a slot taken with ``take``.

        ``requested``: a request was made, so the host's delay starts now (otherwise its
        schedule is unchanged). ``server_error`` (a 5xx or 429 answer, a connection error):
        counts towards ``max_errors`` in a row (any other outcome resets the count); at the cap
        the host is closed, below it the host waits ``delay * backoff ** errors`` (at most
        ``max_pause``, never less than its delay) before its next request. ``delay``: the host's
        new delay (robots.txt Crawl-delay). ``retry_after``: seconds the server asked us to wait;
        the host pauses that long, or is closed when that is beyond ``max_pause`` or the time
        limit.
        ``requeue``: put a row back at the head of the host's queue (fetched robots.txt first).
        """
        with self._cond:
            hq.active -= 1
            self._active -= 1
            if delay is not None:
                hq.delay = delay
            if requested:
                end = self._clock()
                hq.errors = hq.errors + 1 if server_error else 0
                hq.next_start = max(hq.next_start, end + self._wait(hq), end + (retry_after or 0))
            if requeue is not None:
                if hq.closure is None and self._closed_all is None:
                    hq.pending.appendleft(requeue)
                    self._pending += 1
                else:
                    self._reject(hq.host, requeue, hq.closure or self._closed_all)
            if hq.closure is None:
                if server_error and hq.errors >= self.max_errors > 0:
                    self._close_host(hq, HOST_ERROR_CAP)
                elif retry_after and (retry_after > self.max_pause
                                      or hq.next_start >= self.deadline):
                    self._close_host(hq, Closure(FetchStatus.SKIPPED, "retry-after", retry_after))
            self._schedule(hq)
            self._cond.notify()

    def close_host(self, hq: HostQueue, closure: Closure) -> None:
        """Reject the host's pending rows and every later one (e.g. robots.txt unreachable)."""
        with self._cond:
            if hq.closure is None:
                self._close_host(hq, closure)
                self._schedule(hq)
                self._cond.notify_all()

    def reject_pending(self, hq: HostQueue, verdict: Callable[[Row], Closure | None]) -> None:
        """Reject the pending rows for which ``verdict`` gives a closure (robots.txt denials
        known as soon as the file is in), keeping the others in order."""
        with self._cond:
            kept: deque[Row] = deque()
            for row in hq.pending:
                closure = verdict(row)
                if closure is None:
                    kept.append(row)
                else:
                    self._reject(hq.host, row, closure)
            self._pending -= len(hq.pending) - len(kept)
            hq.pending = kept
            self._schedule(hq)
            self._cond.notify_all()

    def stop(self, closure: Closure) -> None:
        """Reject everything still pending and make the threads exit (shutdown, failure)."""
        with self._cond:
            if self._closed_all is None:
                self._close_all(closure)
            self._cond.notify_all()

    # --- internals (lock held) -----------------------------------------------------------

    def _wait(self, hq: HostQueue) -> float:
        """The host's wait after a request: its delay, backed off after errors in a row."""
        if not hq.errors or self.backoff <= 1.0:
            return hq.delay
        return max(hq.delay, min(hq.delay * self.backoff ** min(hq.errors, 64), self.max_pause))

    def _schedule(self, hq: HostQueue) -> bool:
        """Re-file ``hq`` in the ready heap after a change; True when it is eligible."""
        hq.version += 1
        if hq.pending and hq.active < self.threads_per_host and hq.closure is None:
            heapq.heappush(self._ready, (hq.next_start, next(self._seq), hq.version, hq))
            return True
        return False

    def _close_host(self, hq: HostQueue, closure: Closure) -> None:
        hq.closure = closure
        self._pending -= len(hq.pending)
        while hq.pending:
            self._reject(hq.host, hq.pending.popleft(), closure)

    def _close_all(self, closure: Closure) -> None:
        self._closed_all = closure
        for hq in self._hosts.values():
            if hq.closure is None:
                self._close_host(hq, closure)
        self._ready.clear()
