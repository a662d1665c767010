"""From HTTP facts to a content row: the status mapping, Retry-After, and the row shape.

Kept free of I/O so the whole mapping is unit-tested on plain values.
"""
from __future__ import annotations

import math
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, Mapping

from crawlkit.status import FetchStatus

CONTENT_COLUMNS = ("url", "host", "fetch_status", "http_status", "fetched_at", "elapsed_ms",
                   "content_type", "headers", "content", "truncated", "redirect_url",
                   "retry_after", "error", "segment")

PERMANENT_REDIRECTS = frozenset((301, 308))
TEMPORARY_REDIRECTS = frozenset((300, 302, 303, 307))
RETRY_AFTER_CODES = frozenset((429, 503))


def status_for_code(code: int) -> FetchStatus:
    """The outcome of a response with HTTP status ``code`` (before the content-type check).

    3xx other than 304 map to a redirect; the caller turns one without a usable Location into
    ``access_denied``. Codes outside 2xx-5xx are server bugs: ``retry`` (which the crawldb
    turns into ``gone`` after ``db.retry_max`` rounds).
    """
    if 200 <= code < 300:
        return FetchStatus.SUCCESS
    if code == 304:
        return FetchStatus.NOT_MODIFIED
    if code in PERMANENT_REDIRECTS:
        return FetchStatus.REDIRECT_PERM
    if 300 <= code < 400:
        return FetchStatus.REDIRECT_TEMP
    if code == 404:
        return FetchStatus.NOT_FOUND
    if code == 410:
        return FetchStatus.GONE
    if code == 429:
        return FetchStatus.RETRY
    if 400 <= code < 500:
        return FetchStatus.ACCESS_DENIED
    return FetchStatus.RETRY


def media_type(content_type: str | None) -> str | None:
    """``"Text/HTML; charset=utf-8"`` -> ``"text/html"``; None when absent or empty."""
    if not content_type:
        return None
    value = content_type.partition(";")[0].strip().lower()
    return value or None


def parse_retry_after(value: str | None, now: datetime, cap: float) -> int | None:
    """Seconds to wait from a Retry-After header (delta-seconds, or an HTTP date counted from
    ``now``: when the server answered), capped at ``cap``; None when absent or unparsable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        seconds = float(value)
    else:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is not None:
            when = when.astimezone(timezone.utc).replace(tzinfo=None)
        reference = now.astimezone(timezone.utc).replace(tzinfo=None) if now.tzinfo else now
        seconds = (when - reference).total_seconds()
    return int(math.ceil(min(max(seconds, 0.0), cap)))


def utcnow() -> datetime:
    """Timezone-naive UTC wall-clock time, as the content table stores it."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def make_row(fetch_row: Mapping[str, Any], host: str, status: FetchStatus, *,
             fetched_at: datetime | None = None, http_status: int | None = None,
             elapsed_ms: int | None = None, content_type: str | None = None,
             headers: dict[str, str] | None = None, content: bytes | None = None,
             truncated: bool = False, redirect_url: str | None = None,
             retry_after: int | None = None, error: str | None = None) -> dict[str, Any]:
    """A content row with exactly the content table's columns, for ``fetch_row``."""
    return {
        "url": fetch_row["url"],
        "host": host,
        "fetch_status": status.value,
        "http_status": http_status,
        "fetched_at": fetched_at or utcnow(),
        "elapsed_ms": elapsed_ms,
        "content_type": content_type,
        "headers": headers,
        "content": content,
        "truncated": truncated,
        "redirect_url": redirect_url,
        "retry_after": retry_after,
        "error": error,
        "segment": fetch_row.get("segment"),
    }
