"""Segment names, and the order of segments.

A segment is named by its round's logical time (``20261207010203``); rounds at the same
logical time (``crawl --now T`` pins every round to T, an abandoned segment is left in place)
get a numeric suffix, ``-000001``, ``-000002``... Which segment is the latest, and which parse
of a page is the newest, go by this order, so the suffix is zero-padded (the names sort as
strings, for operators' ``ls`` and scripts too) and every comparison in crawlkit goes through
``order_key`` / ``order_column``, which also order the unpadded suffixes of older crawl
directories (``X-9`` before ``X-10``, which a string comparison reverses).
"""
from __future__ import annotations

import re
from datetime import datetime

from pyspark.sql import Column
from pyspark.sql import functions as F

SUFFIX_DIGITS = 6
_NAME = re.compile(r"(?P<base>.*?)(?:-(?P<k>\d+))?")


def base_name(now: datetime) -> str:
    return now.strftime("%Y%m%d%H%M%S")


def _parts(name: str) -> tuple[str, int]:
    match = _NAME.fullmatch(name)
    return match["base"], int(match["k"] or 0)


def order_key(name: str) -> str:
    """A string that sorts segments in the order they were made (``sorted(key=order_key)``)."""
    base, k = _parts(name)
    return f"{base}-{k:0{SUFFIX_DIGITS}d}"


def order_column(name: Column) -> Column:
    """order_key as a Spark expression (for ``max_by`` over a ``segment`` column)."""
    suffix = F.regexp_extract(name, r"-(\d+)$", 1)
    base = F.when(suffix == "", name).otherwise(F.regexp_extract(name, r"^(.*)-\d+$", 1))
    return F.concat(base, F.lit("-"), F.lpad(suffix, SUFFIX_DIGITS, "0"))


def next_name(now: datetime, existing: list[str]) -> str:
    """A new segment's name: the logical time, suffixed past every segment of that time, so
    the new one is the latest (it never meets an old segment's folder, whose spilled results
    fetch would take for its own)."""
    base = base_name(now)
    taken = [k for b, k in map(_parts, existing) if b == base] + [0 if base in existing else -1]
    k = max(taken) + 1
    if k >= 10 ** SUFFIX_DIGITS:
        raise ValueError(f"more than {10 ** SUFFIX_DIGITS - 1} segments at {base}")
    return base if k == 0 else f"{base}-{k:0{SUFFIX_DIGITS}d}"
