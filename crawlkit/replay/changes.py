"""Change over time: which pages change, when, under a clock the caller controls.

Each page falls, by a hash of its URL, into one class of a change spec such as
``0.4:never,0.4:30d,0.2:1d`` (share:mean interval). A page in a class with mean
interval ``m`` changes at the events of a Poisson process of rate ``1/m`` whose
inter-arrival times come from hashes of (seed, URL, k), so the true change times
are a pure function of the URL: the server and a test computing ground truth for
a freshness estimator agree without talking to each other.
"""

from __future__ import annotations

import bisect
import math
import os
import sys
from dataclasses import dataclass

from .hashing import unit

DEFAULT_CHANGES = "0.4:never,0.4:30d,0.2:1d"
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
_CACHE_LIMIT = 200_000


@dataclass(frozen=True)
class ChangeClass:
    share: float
    interval: float | None  # mean seconds between changes; None: never changes


def parse_duration(text: str) -> float:
    """Seconds in ``"90"``, ``"90s"``, ``"15m"``, ``"6h"``, ``"30d"`` or ``"2w"``."""
    text = text.strip()
    if text and text[-1] in _UNITS:
        return float(text[:-1]) * _UNITS[text[-1]]
    return float(text)


def parse_change_spec(spec: str) -> list[ChangeClass]:
    """``share:interval`` pairs, comma separated; ``never`` for pages that never change.

    Shares are normalised to sum to 1, so ``1:never`` disables change altogether.
    """
    classes = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        share, sep, interval = part.partition(":")
        if not sep:
            raise ValueError(f"change class {part!r}: expected SHARE:INTERVAL, e.g. 0.2:1d")
        classes.append(ChangeClass(float(share), None if interval.strip() == "never" else parse_duration(interval)))
    total = sum(c.share for c in classes)
    if not classes or total <= 0 or any(c.share < 0 or (c.interval is not None and c.interval <= 0) for c in classes):
        raise ValueError(f"bad change spec {spec!r}")
    return [ChangeClass(c.share / total, c.interval) for c in classes]


class ChangeModel:
    """True change times of every page, for a change spec and a seed."""

    def __init__(self, spec: str = DEFAULT_CHANGES, seed: int = 0):
        self.spec = spec
        self.seed = seed
        self.classes = parse_change_spec(spec)
        self._times: dict[str, list[float]] = {}  # URL -> change times generated so far

    def interval(self, url: str) -> float | None:
        """Mean seconds between changes of ``url``; None if it never changes."""
        u = unit(self.seed, "change-class", url)
        for cls in self.classes:
            if u < cls.share:
                return cls.interval
            u -= cls.share
        return self.classes[-1].interval

    def rate(self, url: str) -> float:
        """Changes per second of ``url`` (0 for pages that never change)."""
        interval = self.interval(url)
        return 0.0 if interval is None else 1.0 / interval

    def change_times(self, url: str, until: float) -> list[float]:
        """Clock times in (0, until] at which ``url`` changed, in order."""
        interval = self.interval(url)
        if interval is None or until <= 0:
            return []
        times = self._times.get(url)
        if times is None:
            if len(self._times) >= _CACHE_LIMIT:
                self._times.clear()
            times = self._times[url] = []
        while not times or times[-1] <= until:
            gap = -math.log(unit(self.seed, "change", url, len(times))) * interval
            times.append((times[-1] if times else 0.0) + gap)
        return times[: bisect.bisect_right(times, until)]

    def version(self, url: str, t: float) -> tuple[int, float]:
        """``(number of changes up to t, time of the last one or 0.0)``: the page's state at ``t``."""
        times = self.change_times(url, t)
        return len(times), (times[-1] if times else 0.0)


class Clock:
    """The replay web's notion of "now", in seconds; set by the caller, never by wall time.

    Set over the control endpoint, or (``path``) by writing a number to a file that
    is checked on every read, for drivers that would rather write a file; the most
    recent setting wins. Replace the file atomically (write, then rename) so that two
    settings within one timestamp tick are still told apart by the inode.
    """

    def __init__(self, start: float = 0.0, path: str | None = None):
        self._now = float(start)
        self._path = path
        self._seen: tuple[int, int, int] | None = None

    def set(self, t: float) -> None:
        if not math.isfinite(t) or t < 0:
            raise ValueError(f"clock must be a finite number >= 0, got {t!r}")
        self._now = float(t)

    def now(self) -> float:
        if self._path is not None:
            try:
                st = os.stat(self._path)
                stamp = (st.st_mtime_ns, st.st_ino, st.st_size)
            except FileNotFoundError:
                stamp = None
            if stamp is not None and stamp != self._seen:
                self._seen = stamp
                self._read_file()
        return self._now

    def _read_file(self) -> None:
        """Adopt the file's value; a bad one is logged and the last good value kept, because
        every request asks for the time and none should fail for a typo in the clock file."""
        try:
            with open(self._path) as f:
                text = f.read().strip()
            if text:
                self.set(float(text))
        except (OSError, ValueError) as error:
            print(f"replay: clock file {self._path}: {error}; the clock stays at {self._now:g}",
                  file=sys.stderr, flush=True)
