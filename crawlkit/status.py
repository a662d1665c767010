"""The crawldb status set and its transition table (as Nutch's CrawlDatum, but smaller).

A URL's crawldb status changes in updatedb, through :data:`TRANSITIONS` (the limited buffer,
crawlkit.stages.evict, alone moves pages to and from ``evicted``):
the fetcher's outcome for the URL picks the new status, whatever the old one was, except that
transient failures count up to ``db.retry_max`` and then become ``gone``. Statuses not in a
segment keep their state. The table is enumerated by tests/unit/test_status.py.

=================  ==========================================================================
crawldb status     meaning
=================  ==========================================================================
unfetched          known (injected or linked), never fetched successfully
fetched            fetched and parsed (or kept as a non-HTML page)
not_modified       refetched; the server answered 304 or the signature was unchanged
redirect_temp      302/303/307: the target was added to the crawldb; refetched on schedule
redirect_perm      301/308: the target was added to the crawldb
gone               404/410, robots denied, or too many transient failures; rechecked rarely
retry              a transient failure (timeout, 5xx, 429, connection error); retried later
duplicate          same visible text as a page the crawl keeps (crawlkit.stages.dedup)
evicted            limited-buffer crawl: content dropped, URL kept known
=================  ==========================================================================
"""
from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    UNFETCHED = "unfetched"
    FETCHED = "fetched"
    NOT_MODIFIED = "not_modified"
    REDIRECT_TEMP = "redirect_temp"
    REDIRECT_PERM = "redirect_perm"
    GONE = "gone"
    RETRY = "retry"
    DUPLICATE = "duplicate"
    EVICTED = "evicted"


class FetchStatus(str, Enum):
    """The fetcher's outcome for one URL (content.fetch_status)."""
    SUCCESS = "success"
    NOT_MODIFIED = "not_modified"
    REDIRECT_PERM = "redirect_perm"
    REDIRECT_TEMP = "redirect_temp"
    NOT_FOUND = "not_found"          # 404
    GONE = "gone"                    # 410
    ACCESS_DENIED = "access_denied"  # 401/403 and other final 4xx
    ROBOTS_DENIED = "robots_denied"
    UNSUPPORTED_TYPE = "unsupported_type"
    RETRY = "retry"                  # 429, 5xx, timeouts, resets: transient
    SKIPPED = "skipped"              # not attempted: fetch time limit, host error cap, blocked address
    BLOCKED = "blocked"              # refused by the SSRF guard (final)


class Schedule(str, Enum):
    """Which interval the next fetch time is computed with."""
    NORMAL = "normal"        # the fetch schedule's interval
    RETRY = "retry"          # db.retry_interval, or the server's Retry-After
    GONE = "gone"            # db.gone_recheck_interval


# fetch outcome -> (new crawldb status or None to keep the old one, schedule, resets retries)
TRANSITIONS: dict[FetchStatus, tuple[Status | None, Schedule, bool]] = {
    FetchStatus.SUCCESS: (Status.FETCHED, Schedule.NORMAL, True),
    FetchStatus.NOT_MODIFIED: (Status.NOT_MODIFIED, Schedule.NORMAL, True),
    FetchStatus.REDIRECT_PERM: (Status.REDIRECT_PERM, Schedule.NORMAL, True),
    FetchStatus.REDIRECT_TEMP: (Status.REDIRECT_TEMP, Schedule.NORMAL, True),
    FetchStatus.NOT_FOUND: (Status.GONE, Schedule.GONE, True),
    FetchStatus.GONE: (Status.GONE, Schedule.GONE, True),
    FetchStatus.ACCESS_DENIED: (Status.GONE, Schedule.GONE, True),
    FetchStatus.ROBOTS_DENIED: (Status.GONE, Schedule.GONE, True),
    FetchStatus.BLOCKED: (Status.GONE, Schedule.GONE, True),
    FetchStatus.UNSUPPORTED_TYPE: (Status.FETCHED, Schedule.NORMAL, True),
    FetchStatus.RETRY: (Status.RETRY, Schedule.RETRY, False),
    FetchStatus.SKIPPED: (None, Schedule.RETRY, False),
}

# Transient outcomes that count towards db.retry_max (SKIPPED was never tried: it does not).
COUNTS_AS_FAILURE = {FetchStatus.RETRY}

# Outcomes that answer for the page as it is now, every one but the transient ones: OPIC
# processes such a page (its cash flows along its current links, all of it to the virtual
# page when it has none: a 404, a robots.txt denial, a PDF), and, but for NOT_MODIFIED, its
# links are known afresh (updatedb.LINKS_REFRESHED).
ANSWERED = tuple(s for s in FetchStatus if s not in (FetchStatus.RETRY, FetchStatus.SKIPPED))


def transition(old: Status, outcome: FetchStatus, retries: int, retry_max: int
               ) -> tuple[Status, Schedule, int]:
    """Plain-Python reference of the table (updatedb applies the same rules as a Spark
    expression): the new status, the schedule to use and the new retry count."""
    status, schedule, resets = TRANSITIONS[outcome]
    new_retries = 0 if resets else retries + (1 if outcome in COUNTS_AS_FAILURE else 0)
    if status is Status.RETRY and new_retries > retry_max:
        return Status.GONE, Schedule.GONE, new_retries
    return (status or old), schedule, new_retries
