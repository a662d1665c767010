"""The per-partition fetch driver: rows in, one content row out per row, as they complete.

The calling thread (the consumer of the generator — a Spark task) reads fetch-list rows into
the per-host queues and yields results; ``fetcher.threads`` worker threads take host slots from
the queues (see queues.py), check robots.txt, make the request and put the content row on a
result queue. Every row leaves exactly once: through a worker, or rejected by the queues
(host closed, time limit) — so nothing is dropped whatever happens.
"""
from __future__ import annotations

import logging
import math
import queue
import threading
import time
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, Iterable, Iterator, Mapping

from crawlkit.fetch.guard import AddressGuard
from crawlkit.fetch.http import Failure, HttpClient, Response
from crawlkit.fetch.outcomes import (RETRY_AFTER_CODES, make_row, parse_retry_after,
                                     status_for_code)
from crawlkit.fetch.queues import Closure, HostQueue, HostQueues
from crawlkit.fetch.robots import RobotsCache, RobotsRules, fetch_rules, origin_of
from crawlkit.fetch.settings import FetchSettings
from crawlkit.fetch.stats import FetchStats
from crawlkit.status import FetchStatus
from crawlkit.urls import UrlNormalizer, host_of

log = logging.getLogger(__name__)

ROBOTS_DENIED = Closure(FetchStatus.ROBOTS_DENIED, "robots.txt")
STOPPED = Closure(FetchStatus.SKIPPED, "fetcher stopped")
REDIRECTS = (FetchStatus.REDIRECT_PERM, FetchStatus.REDIRECT_TEMP)


def fetch_partition(rows: Iterable[dict], conf: Mapping[str, Any], now: datetime,
                    stats: FetchStats | None = None, ends_at: float | None = None) -> Iterator[dict]:
    """Fetch one partition of a fetch list; yields one content row per input row.

    ``conf`` is a :class:`crawlkit.conf.Conf` or a plain dict of dotted keys; ``now`` is the
    round's logical time (used for Retry-After dates); ``stats``, when given, is filled as
    rows are yielded. ``ends_at`` (epoch seconds): when the whole fetch stage ends
    (``fetcher.time_limit`` from the stage's start on the driver), so a task that starts late,
    in a later wave of tasks, gets what is left of it. Nothing starts until the first
    ``next()``; closing the generator early stops the threads after their current request.
    """
    settings = FetchSettings.from_conf(conf)
    return _PartitionFetch(settings, now, stats if stats is not None else FetchStats(), ends_at).run(rows)


class _PartitionFetch:
    def __init__(self, settings: FetchSettings, now: datetime, stats: FetchStats,
                 ends_at: float | None = None):
        self.settings = settings
        self.ends_at = ends_at
        self.now = now
        self.stats = stats
        self.results: queue.SimpleQueue[dict] = queue.SimpleQueue()
        self.guard = AddressGuard(settings.block_private, settings.allow_private,
                                  settings.proxy_resolve_targets)
        self.client: HttpClient | None = None
        self.robots = RobotsCache(self._fetch_robots)
        self.normalize = UrlNormalizer(settings.url_settings)
        self.deadline = math.inf
        self.queues: HostQueues | None = None

    # --- the consumer side ---------------------------------------------------------------

    def run(self, rows: Iterable[dict]) -> Iterator[dict]:
        settings = self.settings
        self.stats.begin()
        budgets = [settings.time_limit] if settings.time_limit > 0 else []
        if self.ends_at is not None:
            budgets.append(self.ends_at - time.time())    # the stage's, begun on the driver
        if budgets:
            self.deadline = time.monotonic() + max(0.0, min(budgets))
        self.client = HttpClient(settings, self.guard)
        self.queues = HostQueues(
            threads_per_host=settings.threads_per_host, delay=settings.server_delay,
            max_errors=settings.max_exceptions_per_host, max_pause=settings.max_host_pause,
            backoff=settings.error_backoff, deadline=self.deadline, reject=self._reject)
        threads = [threading.Thread(target=self._work, name=f"fetch-{i}", daemon=True)
                   for i in range(max(1, settings.threads))]
        for thread in threads:
            thread.start()
        capacity = settings.queue_capacity or math.inf
        fed = done = 0
        finished = False
        try:
            for row in rows:
                self.queues.add(row.get("host") or host_of(row["url"]) or "", row)
                fed += 1
                while True:  # stream out what is ready; wait only when the read-ahead is full
                    try:
                        result = (self.results.get() if fed - done >= capacity
                                  else self.results.get_nowait())
                    except queue.Empty:
                        break
                    done += 1
                    self.stats.record(result)
                    yield result
            self.queues.finish_feed()
            while done < fed:
                result = self.results.get()
                done += 1
                self.stats.record(result)
                yield result
            finished = True
        finally:
            self.queues.stop(STOPPED)
            if finished:
                for thread in threads:
                    thread.join()
            self.client.close()

    def _reject(self, host: str, row: dict, closure: Closure) -> None:
        self.results.put(make_row(row, host, closure.status, error=closure.error,
                                  retry_after=closure.retry_after))

    # --- the worker side -----------------------------------------------------------------

    def _work(self) -> None:
        try:
            while (slot := self.queues.take()) is not None:
                self._process(*slot)
        except BaseException:
            log.exception("fetch thread failed; skipping what is left of the partition")
            self.queues.stop(Closure(FetchStatus.SKIPPED, "fetcher failure"))
            raise

    def _process(self, hq: HostQueue, row: dict) -> None:
        """Fetch one row in its host slot; the slot is always released, the row always
        answered (or re-queued)."""
        release: dict[str, Any] = {"requested": False}
        try:
            result, release = self._fetch_row(hq, row)
        except Exception as exc:
            log.exception("fetching %s failed", row.get("url"))
            result = make_row(row, hq.host, FetchStatus.RETRY,
                              error=f"internal error: {type(exc).__name__}")
        finally:
            self.queues.release(hq, **release)
        if result is not None:
            self.results.put(result)

    def _fetch_row(self, hq: HostQueue, row: dict) -> tuple[dict | None, dict[str, Any]]:
        """The row's result (None when re-queued) and how to release the host slot."""
        url = row["url"]
        release: dict[str, Any] = {}
        if self.settings.respect_robots:
            origin = origin_of(url)
            rules = self.robots.peek(origin)
            if rules is None:
                return self._first_visit(hq, row, origin)
            if rules.unreachable:
                return make_row(row, hq.host, FetchStatus.RETRY, error=rules.reason), {
                    "requested": False}
            if not rules.allowed(url):
                return make_row(row, hq.host, FetchStatus.ROBOTS_DENIED,
                                error=ROBOTS_DENIED.error), {"requested": False}
            # the rules may have come in on another host's redirect hop, before this host's
            # first visit: its Crawl-delay holds all the same
            release["delay"] = self._delay_for(rules)
        response, hops, note = self._fetch_page(row)
        result = self._result(row, hq.host, response, hops, note)
        if response.failure is Failure.BLOCKED and not hops:
            self.queues.close_host(hq, Closure(FetchStatus.BLOCKED, response.error))
            return result, {"requested": False}
        return result, {
            **release,
            "requested": True,
            "server_error": _server_error(response, hops, result),
            "retry_after": result["retry_after"],
        }

    def _first_visit(self, hq: HostQueue, row: dict, origin: str) -> tuple[dict | None, dict]:
        """Fetch robots.txt first; it is a request like any other, so the page waits for the
        host's delay and is re-queued rather than fetched right away."""
        rules = self.robots.get(origin)
        if rules.unreachable and time.monotonic() >= self.deadline:
            return make_row(row, hq.host, FetchStatus.SKIPPED, error="time limit"), {
                "requested": True}
        if rules.unreachable:
            self.queues.close_host(hq, Closure(FetchStatus.RETRY, rules.reason))
            return make_row(row, hq.host, FetchStatus.RETRY, error=rules.reason), {
                "requested": True}
        self.queues.reject_pending(hq, lambda other: None if (
            rules.allowed(other["url"]) or origin_of(other["url"]) != origin) else ROBOTS_DENIED)
        return None, {"requested": True, "delay": self._delay_for(rules), "requeue": row}

    def _delay_for(self, rules: RobotsRules) -> float:
        """robots.txt Crawl-delay overrides server_delay, capped at max_crawl_delay (a host
        asking for more is fetched at the cap rather than skipped as Nutch does)."""
        if rules.crawl_delay is None:
            return self.settings.server_delay
        return min(float(rules.crawl_delay), self.settings.max_crawl_delay)

    def _fetch_robots(self, origin: str) -> RobotsRules:
        deadline = min(time.monotonic() + self.settings.page_deadline, self.deadline)
        return fetch_rules(self.client, origin, self.settings.robots_agent, deadline)

    def _fetch_page(self, row: dict) -> tuple[Response, int, str | None]:
        """GET the row's URL, following up to ``follow_redirects`` hops inline (each hop is
        guard-checked by the client and robots-checked; a hop robots.txt does not allow is
        not taken, so the URL comes out as the redirect to it). Returns the last response,
        the hops taken and a note ("redirect loop") when following stopped early."""
        settings = self.settings
        deadline = min(time.monotonic() + settings.page_deadline, self.deadline)
        headers = {}
        if row.get("etag"):
            headers["If-None-Match"] = row["etag"]
        if row.get("last_modified"):
            headers["If-Modified-Since"] = row["last_modified"]
        url = row["url"]
        response = self.client.get(url, deadline=deadline, max_bytes=settings.max_content,
                                   accept_types=settings.accept_types, headers=headers or None)
        seen = {url}
        hops = 0
        while hops < settings.follow_redirects and response.failure is None:
            status = status_for_code(response.status)
            target = self._redirect_target(response) if status in REDIRECTS else None
            if target is None:
                break
            if target in seen:
                return response, hops, "redirect loop"
            if settings.respect_robots and not self.robots.get(origin_of(target)).allowed(target):
                break
            seen.add(target)
            answer = self.client.get(target, deadline=deadline, max_bytes=settings.max_content,
                                     accept_types=settings.accept_types)
            if answer.failure is Failure.TRANSPORT:
                # the target's host failed, not this one: the URL is the redirect it answered,
                # and the target is fetched (and its failures counted) in its own host's slot
                return response, hops, f"redirect target failed: {answer.error}"
            response, hops = answer, hops + 1
        return response, hops, None

    def _redirect_target(self, response: Response) -> str | None:
        location = response.headers.get("location")
        return self.normalize(location, response.url) if location else None

    def _result(self, row: dict, host: str, response: Response, hops: int,
                note: str | None) -> dict:
        """The content row for a response (see docs/fetcher.md for the mapping)."""
        common = dict(fetched_at=response.fetched_at, elapsed_ms=response.elapsed_ms)
        if response.failure is Failure.BLOCKED:
            return make_row(row, host, FetchStatus.BLOCKED, fetched_at=response.fetched_at,
                            error=response.error)
        if response.failure is Failure.INVALID_URL:
            return make_row(row, host, FetchStatus.ACCESS_DENIED,
                            fetched_at=response.fetched_at, error=response.error)
        if response.failure is Failure.TRANSPORT:
            status, error = FetchStatus.RETRY, response.error
            if error == "deadline" and time.monotonic() >= self.deadline:
                status, error = FetchStatus.SKIPPED, "time limit"
            return make_row(row, host, status, http_status=response.status, error=error,
                            headers=response.headers or None,
                            content_type=response.content_type, **common)
        code = response.status
        status = status_for_code(code)
        content = None
        redirect_url = response.url if hops else None
        retry_after = None
        error = note or response.error
        if status is FetchStatus.SUCCESS:
            if (response.content_type is not None
                    and response.content_type not in self.settings.accept_types):
                status = FetchStatus.UNSUPPORTED_TYPE
            else:
                content = response.body
        elif status in REDIRECTS:
            redirect_url = self._redirect_target(response)
            if redirect_url is None:
                status, error = FetchStatus.ACCESS_DENIED, "redirect without usable location"
        elif code in RETRY_AFTER_CODES:
            retry_after = parse_retry_after(response.headers.get("retry-after"),
                                            _server_time(response),
                                            self.settings.max_retry_after)
        return make_row(row, host, status, http_status=code, content_type=response.content_type,
                        headers=response.headers, content=content,
                        truncated=response.truncated, redirect_url=redirect_url,
                        retry_after=retry_after, error=error, **common)


def _server_error(response: Response, hops: int, result: dict) -> bool:
    """Whether the host itself failed the request: a connection error (not one our time limit
    cut), or an answer asking to come back later (5xx, 429). An answer that came from a
    redirect target is the target's host's, not this one's."""
    if response.failure is Failure.TRANSPORT:
        return result["error"] != "time limit"
    return (response.failure is None and not hops
            and result["fetch_status"] == FetchStatus.RETRY.value)


def _server_time(response: Response) -> datetime:
    """When the server answered, by its own clock (its Date header), else by ours: a
    Retry-After date is a time on the server's clock, to be waited for from the answer on,
    not from the round's logical start."""
    try:
        sent = parsedate_to_datetime(response.headers.get("date") or "")
    except (TypeError, ValueError, IndexError):
        return response.fetched_at
    return sent.astimezone(timezone.utc).replace(tzinfo=None) if sent.tzinfo else sent
