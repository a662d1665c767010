"""Cut a request's socket when its page deadline passes, wherever the read is blocked.

Socket timeouts bound each ``recv``, not a whole read: a server that drips its status line
and headers (or the error page being drained) a byte at a time, each within
``fetcher.read_timeout``, holds a fetch thread for as long as it likes, and with it the
partition past ``fetcher.time_limit``. The body loop checks the deadline between reads
(http.py); the header read happens inside http.client, out of reach, so one thread per
client watches the deadlines of the requests in those phases and shuts their socket down
when one passes: the blocked ``recv`` returns, and the request fails as ``deadline``.
"""
from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time
from contextlib import contextmanager
from typing import Iterator


class Watch:
    """One watched phase of a request: ``cut`` once the watchdog shut its socket down."""
    __slots__ = ("sock", "active", "cut")

    def __init__(self, sock: socket.socket | None):
        self.sock, self.active, self.cut = sock, True, False


class Watchdog:
    """Deadlines of blocked reads; a daemon thread, started on first use, ``close()`` ends it."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Watch]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False

    @contextmanager
    def watch(self, sock: socket.socket | None, deadline: float) -> Iterator[Watch]:
        """Shut ``sock`` down if the block is still running at ``deadline`` (monotonic)."""
        entry = Watch(sock)
        if sock is None or deadline == float("inf"):
            yield entry
            return
        with self._cond:
            heapq.heappush(self._heap, (deadline, next(self._order), entry))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="fetch-watchdog", daemon=True)
                self._thread.start()
            if self._heap[0][2] is entry:   # the thread sleeps until the earliest deadline:
                self._cond.notify()         # wake it only when that is this one

        try:
            yield entry
        finally:
            with self._cond:        # under the lock: never cut once the block has ended
                entry.active = False

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join()   # it wakes at once: a partition leaves no thread behind

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                while self._heap and not self._heap[0][2].active:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                entry = heapq.heappop(self._heap)[2]
                entry.cut = True
                try:
                    entry.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


_request = threading.local()   # the deadline of the request this thread is making


def deadline_connection_class(base: type, watchdog: Watchdog) -> type:
    """``base`` (a urllib3 connection class) whose ``getresponse``, the read of the status
    line and headers, is watched against the deadline of the thread's current request."""

    def getresponse(self, *args, **kwargs):
        deadline = getattr(_request, "deadline", float("inf"))
        with watchdog.watch(getattr(self, "sock", None), deadline) as entry:
            _request.watch = entry
            return base.getresponse(self, *args, **kwargs)

    return type(f"Deadline{base.__name__}", (base,), {"getresponse": getresponse})


@contextmanager
def request_deadline(deadline: float) -> Iterator[None]:
    """Make ``deadline`` the current thread's request deadline for the connections above."""
    _request.deadline, _request.watch = deadline, None
    try:
        yield
    finally:
        _request.deadline = float("inf")


def cut_by_watchdog() -> bool:
    """Whether the watchdog cut the current thread's last watched header read."""
    entry = getattr(_request, "watch", None)
    return bool(entry and entry.cut)
