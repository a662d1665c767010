"""Per-partition fetch counters.

Filled by the generator :func:`~crawlkit.fetch.fetch_partition` returns, in the consumer's
thread as each row is yielded, so no locking is needed and the numbers always match what the
caller has received. Pass a :class:`FetchStats` in to read them (e.g. into Spark accumulators
or the stage log) once the iterator is exhausted.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FetchStats:
    by_status: Counter = field(default_factory=Counter)   # fetch_status -> rows
    errors: Counter = field(default_factory=Counter)      # error text -> rows
    bytes: int = 0                                        # content bytes kept
    requests: int = 0                                     # rows that made a request
    elapsed_s: float = 0.0                                # partition wall time so far
    host_ms: Counter = field(default_factory=Counter)     # host -> request time, summed
    host_requests: Counter = field(default_factory=Counter)
    _started: float = field(default_factory=time.monotonic, repr=False)

    def begin(self) -> None:
        """Start the clock (the fetcher calls this when the partition starts)."""
        self._started = time.monotonic()

    def record(self, row: dict[str, Any]) -> None:
        self.by_status[row["fetch_status"]] += 1
        if row["error"]:
            self.errors[row["error"]] += 1
        if row["content"] is not None:
            self.bytes += len(row["content"])
        if row["elapsed_ms"] is not None:
            self.requests += 1
            self.host_ms[row["host"]] += row["elapsed_ms"]
            self.host_requests[row["host"]] += 1
        self.elapsed_s = time.monotonic() - self._started

    @property
    def rows(self) -> int:
        return sum(self.by_status.values())

    def slowest_hosts(self, n: int = 10) -> list[tuple[str, float]]:
        """Hosts by mean request time (ms), slowest first."""
        means = ((host, total / self.host_requests[host]) for host, total in self.host_ms.items())
        return sorted(means, key=lambda pair: pair[1], reverse=True)[:n]

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "requests": self.requests,
            "by_status": dict(self.by_status),
            "errors": dict(self.errors),
            "bytes": self.bytes,
            "elapsed_s": round(self.elapsed_s, 3),
            "pages_per_s": round(self.rows / self.elapsed_s, 1) if self.elapsed_s else 0.0,
            "slowest_hosts": self.slowest_hosts(),
        }
