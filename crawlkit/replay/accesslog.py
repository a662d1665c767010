"""The access log: one JSON object per request, appended to a file.

Tests read it to see what a crawler fetched, in what order, and how far apart
requests to one host were, so each record carries the wall time with sub-millisecond
precision. Lines are buffered and written at least every ``FLUSH_INTERVAL`` seconds
(and on shutdown, and on request over the control endpoint), never per request.

Fields: ``ts`` (wall time the request arrived, seconds since the epoch), ``clock``
(replay clock), ``client``, ``method``, ``host``, ``url``, ``status`` (0: no answer
was sent), ``bytes`` (body bytes sent), ``duration`` (seconds until the answer was
sent or abandoned), and ``fault`` when a fault shaped the answer.
"""

from __future__ import annotations

import json
from pathlib import Path

FLUSH_INTERVAL = 0.05

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


class AccessLog:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._file = open(self.path, "a", encoding="utf-8")
        self._pending: list[str] = []

    def record(self, entry: dict) -> None:
        self._pending.append(_encode(entry) + "\n")

    def flush(self) -> None:
        if self._pending:
            self._file.write("".join(self._pending))
            self._pending.clear()
            self._file.flush()

    def close(self) -> None:
        self.flush()
        self._file.close()


def read_access_log(path: str | Path) -> list[dict]:
    """All records of an access log, in order of arrival (``ts``).

    Records are written when an answer ends, so a slow answer is written after
    quicker later ones; sorting restores the order in which requests came in.
    """
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.endswith("\n")]
    return sorted(records, key=lambda r: r["ts"])
