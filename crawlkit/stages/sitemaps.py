"""sitemaps: URLs and their lastmod from the sitemaps of the crawldb's hosts, merged into it.

As Nutch's SitemapProcessor, for the hosts the crawldb knows, in tasks that own whole hosts
as fetch's do (``spark.speculation`` is refused: a speculative copy would read the same hosts
at once). A host is read again only ``sitemaps.interval`` after its last read to the end,
which the hostdb (``<crawl>/hostdb``, schemas/hostdb.json) records; a read cut short (a 429
or 503, a failed request, an unreachable robots.txt, an error) is retried after a backoff
that doubles with each one in a row, or the host's Retry-After (``record_hosts_read``).
``crawlkit sitemaps`` runs the stage; under ``sitemaps.each_round`` every round runs it
before generate (as Nutch's crawl script's ``--sitemaps-from-hostdb
always``), so a host found in one round has its sitemaps read in the next. A host
``urls.hosts_deny`` / ``hosts_allow`` rejects is asked nothing. Per host, one request at a
time, ``fetcher.server_delay`` apart from the end of the one before (or the largest robots.txt
Crawl-delay of the host's origins, capped at ``fetcher.max_crawl_delay``):

1. robots.txt of each origin (scheme://host:port) of the host with crawldb rows; an
   unreachable one (5xx, 429, timeout) skips the origin this run (a read cut short); under
   ``fetcher.respect_robots`` sitemap URLs it disallows are not fetched; without it,
   robots.txt is still read for its Sitemap: lines, its rules are not applied;
2. its ``Sitemap:`` lines, else ``/sitemap.xml`` when ``sitemaps.guess``;
3. indexes followed breadth first to ``sitemaps.max_depth``, at most
   ``sitemaps.max_sitemaps_per_host`` documents and ``sitemaps.max_urls_per_host`` URLs. A
   sitemap URL is read once per host, whichever origins list it.

Hosts never begun go first, then those begun longest ago. ``sitemaps.time_limit`` bounds
the step as ``fetcher.time_limit`` bounds fetch: no request starts after it (one begun runs
to its end, robots.txt's redirects included), a task that met it begins no more hosts, and
a host it stopped (what it found is merged) or never began stays due; the stopped one goes
behind the others, as begun. A host whose read takes longer than the limit is never read to
the end: it yields what its first documents list, each run.

Only sitemap documents on the host itself are fetched (a task owns its hosts' politeness;
a Sitemap: line naming another host is counted ``sitemaps_other_host``). Redirects are
followed, at most 5, each hop checked as a sitemap URL (same host, http or https; robots)
and waiting the delay. A 429 or 503 ends the host's reading for this run (``host_paused``).
Only URLs on the host itself are kept (the protocol's rule; the others are counted
``refused_other_host``; the protocol's narrower rule, URLs under the sitemap's own directory,
is not applied). URLs are normalized and filtered as inject's seeds. A host whose reading
fails unexpectedly is logged and counted (``host_errors``); the task goes on.

The merge is one tagged commit (``sitemaps:<now>``), none when nothing changes (a second run
over unchanged sitemaps commits nothing to the crawldb):

* a new URL is inserted unfetched, depth 1, with the score inject gives a seed without one,
  metadata ``source=sitemap`` and ``sitemap_lastmod`` / ``sitemap_priority`` /
  ``sitemap_changefreq`` when given, and under ``sitemaps.changefreq`` a first fetch interval
  from its changefreq (hourly: an hour, ..., clamped to the schedule's bounds; an adaptive
  schedule starts from it, the fixed one replaces it at the first fetch; not under
  change_rate, first_interval);
* a known URL the crawl holds a copy of (fetched, not_modified, redirect_*), not locked by a
  generated segment, whose sitemap lastmod is later than its last fetch on the crawl's
  clock (crawlkit.schedule.last_fetch_time) and not after ``now`` (a lastmod to come is a
  made-up date, not evidence of a change), and which is not due yet, becomes due ``now``
  (its fetch_interval shrinks as much, so its last fetch time stays);
  unfetched and retrying URLs are due on their own schedule, gone, evicted and duplicate
  ones are left alone.

The hosts read are then recorded in the hostdb, in a second commit with the same tag: a crash
between the two leaves those hosts unrecorded, and the next run reads them again and merges
nothing new (the merge is idempotent).

Counters (``ALWAYS``, and the others that happened) are printed and written to ``<crawl>/_stats/sitemaps-<now>.json``
(this stage has no segment).
"""
from __future__ import annotations

import json
import logging
import math
import time
from collections import Counter, deque
from datetime import datetime, timedelta
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import urljoin

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from crawlkit import segment_names, storage
from crawlkit.conf import Conf
from crawlkit.fetch.guard import AddressGuard
from crawlkit.fetch.http import HttpClient, Response
from crawlkit.fetch.outcomes import parse_retry_after
from crawlkit.fetch.robots import RobotsRules, fetch_rules
from crawlkit.fetch.settings import FetchSettings
from crawlkit.fetch.sitemap import parse_sitemap
from crawlkit.schedule import bounded_interval, last_fetch_time
from crawlkit.status import Status
from crawlkit.urls import UrlFilter, UrlNormalizer, domain_of, host_of

FOUND_SCHEMA = pa.schema([
    ("url", pa.string()), ("host", pa.string()), ("domain", pa.string()),
    ("lastmod", pa.timestamp("us", tz="UTC")), ("changefreq", pa.string()),
    ("priority", pa.float64()), ("sitemap", pa.string()), ("counters", pa.string()),
    ("outcome", pa.string()), ("found_urls", pa.int32()), ("retry_after", pa.int32())])
FOUND_DDL = ("url string, host string, domain string, lastmod timestamp, changefreq string, "
             "priority double, sitemap string, counters string, outcome string, found_urls int, retry_after int")
# a host's read with one of these counters was cut short: retried after a backoff (hosts_due)
CUT_SHORT = ("robots_unreachable", "failed", "host_paused", "host_errors")
RETRY_BASE = 3600.0   # seconds before a cut-short read is retried, doubling with each one in a row
# statuses whose rows hold a fetched copy: a newer lastmod makes them due
HELD = (Status.FETCHED, Status.NOT_MODIFIED, Status.REDIRECT_TEMP, Status.REDIRECT_PERM)
MAX_REDIRECTS = 5   # as for robots.txt (RFC 9309)
# a new URL's first fetch interval from its changefreq (as Nutch's SitemapProcessor), clamped
# to [schedule.min_interval, schedule.max_interval]: "always" is no licence to refetch each
# second, "never" waits the longest the schedule allows
CHANGEFREQ_SECONDS = {"always": 0, "hourly": 3600, "daily": 86400, "weekly": 7 * 86400,
                      "monthly": 30 * 86400, "yearly": 365 * 86400, "never": 2**31 - 1}
ALWAYS = ("hosts", "sitemaps_fetched", "urls_seen", "new", "made_due", "hosts_recorded")   # counters given even when 0
log = logging.getLogger(__name__)


class TimeUp(Exception):
    """``sitemaps.time_limit`` would pass before the host's next request."""


# --- per host (executors; plain Python) -----------------------------------------------------

class HostReader:
    """Reads the sitemaps of one host after another, politely (see the module doc)."""

    def __init__(self, conf: Mapping[str, Any], client: HttpClient, sleep: Callable[[float], None] | None = None,
                 deadline: float = math.inf):
        self.settings = client.settings
        self.deadline = deadline   # time.monotonic() of the stage's time limit: no request after it
        self.client = client
        self.sleep = sleep or time.sleep   # looked up now: a test's clock replaces the module's time
        self.guess = conf["sitemaps.guess"]
        self.max_depth = conf["sitemaps.max_depth"]
        self.max_docs = conf["sitemaps.max_sitemaps_per_host"]
        self.max_urls = conf["sitemaps.max_urls_per_host"]
        self.max_entries = conf["sitemaps.max_entries"]
        self.max_bytes = conf["sitemaps.max_bytes"]
        self.normalize = UrlNormalizer(self.settings.url_settings)
        self.url_filter = UrlFilter(self.settings.url_settings)
        self._waited_for: float | None = None   # when the last request to the host ended
        self._delay = self.settings.server_delay   # the host's delay: the largest asked for
        self._paused = False   # the host answered 429 or 503: no more requests this run
        self.retry_after: int | None = None   # seconds the host's 429/503 asked for (Retry-After)
        self.timed_out = False   # TimeUp came: the task begins no more hosts

    def read(self, host: str, origins: list[str]) -> tuple[dict[str, dict], Counter]:
        """The host's sitemap URLs (url -> row) and the counters of reading them (none zero)."""
        counters: Counter = Counter(hosts=1)
        found: dict[str, dict] = {}
        if self.url_filter.check_host(host):   # the crawl would not fetch its pages: ask it nothing
            counters["hosts_filtered"] += 1
            return found, counters
        self._waited_for, self._delay, self._paused = None, self.settings.server_delay, False
        self.retry_after = None
        try:
            self._read_origins(host, origins, found, counters)
        except TimeUp:   # what was found counts; the host stays due (record_hosts_read) ...
            self.timed_out = True
            if not any(counters[k] for k in CUT_SHORT):   # ... unless it failed first: backed off
                counters["hosts_unfinished"] += 1
        return found, +counters

    def _read_origins(self, host: str, origins: list[str], found: dict[str, dict], counters: Counter) -> None:
        seen: set[str] = set()   # per host: http and https robots.txt often list the same sitemap
        docs = 0
        for origin in origins:
            if self._paused or docs >= self.max_docs or len(found) >= self.max_urls:
                break
            rules, roots = self._roots(origin, counters)
            queue = deque((url, 0) for url in roots)
            while queue and not self._paused and docs < self.max_docs and len(found) < self.max_urls:
                url, depth = queue.popleft()
                if url in seen:
                    continue
                seen.add(url)
                if not self._may_fetch(url, host, rules, counters, "sitemaps_other_host"):
                    continue
                docs += 1
                fetched = self._get(url, host, rules, counters)
                if fetched is not None:
                    self._read_document(*fetched, depth, host, queue, found, counters)
            if not self._paused:
                counters["sitemaps_over_cap"] += len(queue)   # left by the document or URL cap

    def _may_fetch(self, url: str, host: str, rules: RobotsRules, counters: Counter, other_host: str) -> bool:
        """A sitemap URL (or a redirect's target) may be asked for: on the host itself (the
        task owns its politeness, and the host passed the host rules) and robots-allowed."""
        if host_of(url) != host:
            counters[other_host] += 1
            return False
        if self.settings.respect_robots and not rules.allowed(url):
            counters["sitemaps_robots_denied"] += 1
            return False
        return True

    def _read_document(self, url: str, response: Response, depth: int, host: str, queue: deque,
                       found: dict[str, dict], counters: Counter) -> None:
        """Parse one fetched document (``url`` its final URL): its child sitemaps are queued,
        its page URLs taken."""
        document = parse_sitemap(response.body or b"", max_entries=self.max_entries,
                                 max_bytes=self.max_bytes, truncated=response.truncated)
        counters["sitemaps_truncated"] += document.truncated
        if document.kind == "invalid":
            counters["invalid"] += 1
            return
        counters["fetched"] += 1
        children = [child for child in (_join(url, loc, counters) for loc in document.sitemaps) if child]
        if depth < self.max_depth:
            queue.extend((child, depth + 1) for child in children)
        else:
            counters["sitemaps_too_deep"] += len(children)
        for entry in document.urls:
            self._take(entry, url, host, found, counters)

    def _roots(self, origin: str, counters: Counter) -> tuple[RobotsRules, list[str]]:
        """The origin's robots rules and its first sitemaps (module doc, steps 1 and 2).
        robots.txt is read even without ``fetcher.respect_robots``: its rules are then not
        kept, its Sitemap: lines are."""
        self._wait()
        rules = fetch_rules(self.client, origin, self.settings.robots_agent,
                            time.monotonic() + self.settings.page_deadline)
        self._waited_for = time.monotonic()   # the delay runs from the end of a request
        if rules.unreachable:   # a failing server (5xx, 429, timeout): asked nothing more this run
            counters["robots_unreachable"] += 1
            return rules, []
        if self.settings.respect_robots and rules.crawl_delay is not None:
            # the largest Crawl-delay holds for the host's later origins too
            self._delay = max(self._delay, min(float(rules.crawl_delay), self.settings.max_crawl_delay))
        lines = [line.strip() for line in rules.sitemaps if line.strip()]
        listed = [url for url in (_join(origin + "/robots.txt", line, counters) for line in lines) if url]
        counters["robots_sitemaps"] += len(listed)
        if lines:   # listed, even if none of them is a URL: no guessing then
            return rules, listed
        return rules, [origin + "/sitemap.xml"] if self.guess else []

    def _wait(self) -> None:
        """Sleep the host's delay since the last request to it (the first one waits nothing);
        raise TimeUp instead when the request would start at or after the deadline."""
        left = 0.0 if self._waited_for is None else self._waited_for + self._delay - time.monotonic()
        if time.monotonic() + max(left, 0.0) >= self.deadline:
            raise TimeUp()
        if left > 0:
            self.sleep(left)
        self._waited_for = time.monotonic()

    def _get(self, url: str, host: str, rules: RobotsRules, counters: Counter) -> tuple[str, Response] | None:
        """(final URL, 2xx response) of a sitemap, redirects followed (HttpClient follows
        none), each hop checked as a sitemap URL is; None when there is none."""
        for _ in range(MAX_REDIRECTS + 1):
            response = self._request(url)
            status = response.status
            if response.failure is None and status is not None and 200 <= status < 300:
                return url, response
            location = response.headers.get("location") if status and 300 <= status < 400 else None
            if not location:
                self._count_failure(response, counters)
                return None
            target = _join(url, location, counters)
            if target is None or not self._may_fetch(target, host, rules, counters, "redirect_other_host"):
                return None
            url = target
        counters["too_many_redirects"] += 1
        return None

    def _request(self, url: str) -> Response:
        self._wait()
        response = self.client.get(url, deadline=time.monotonic() + self.settings.page_deadline,
                                   max_bytes=self.max_bytes)
        self._waited_for = time.monotonic()   # the delay runs from the end of a request
        return response

    def _count_failure(self, response: Response, counters: Counter) -> None:
        """Count a failed request; a 429 or 503 pauses the host for this run, as the fetcher
        stops asking a host that wants a pause, and its Retry-After is kept: the host is not
        asked again before it (``record_hosts_read``)."""
        status = response.status
        if response.failure is not None or status is None:
            counters["failed"] += 1
        elif status in (429, 503):
            counters["failed"] += 1
            counters["host_paused"] += 1
            self._paused = True
            self.retry_after = parse_retry_after(response.headers.get("retry-after"), response.fetched_at,
                                                 self.settings.max_retry_after)
        else:
            counters["missing" if 400 <= status < 500 else "failed"] += 1

    def _take(self, entry, sitemap: str, host: str, found: dict[str, dict], counters: Counter) -> None:
        counters["urls_seen"] += 1
        url = self.normalize(entry.loc)
        if url is None or self.url_filter.check(url) is not None:
            counters["filtered"] += 1
            return
        if host_of(url) != host:
            counters["refused_other_host"] += 1
            return
        known = found.get(url)
        if known is not None:   # listed twice: the latest lastmod counts
            if entry.lastmod is not None and (known["lastmod"] is None or entry.lastmod > known["lastmod"]):
                known["lastmod"] = entry.lastmod
            return
        if len(found) >= self.max_urls:
            counters["urls_over_cap"] += 1
            return
        found[url] = {"url": url, "host": host, "lastmod": entry.lastmod, "changefreq": entry.changefreq,
                      "priority": entry.priority, "sitemap": sitemap}


def _join(base: str, ref: str, counters: Counter) -> str | None:
    """``ref`` resolved against ``base``; None (counted ``bad_sitemap_url``) when it is no URL
    at all (``http://[oops/``: urljoin raises)."""
    try:
        return urljoin(base, ref)
    except ValueError:
        counters["bad_sitemap_url"] += 1
        return None


def host_outcome(counters: Counter) -> str:
    """``filtered`` (asked nothing), ``cut_short`` (CUT_SHORT: the host failed, backed off),
    ``unfinished`` (the time limit came first: still due) or ``complete``."""
    if counters["hosts_filtered"]:
        return "filtered"
    if any(counters[k] for k in CUT_SHORT):
        return "cut_short"
    return "unfinished" if counters["hosts_unfinished"] else "complete"


def _read_host(reader: HostReader, host: str, origins: list[str]) -> tuple[dict[str, dict], Counter]:
    """One host's read; an error it did not expect is logged and counted (``host_errors``),
    and the task goes on with its other hosts."""
    try:
        return reader.read(host, origins)
    except Exception:
        log.exception("sitemaps: reading host %s failed", host)
        return {}, Counter(hosts=1, host_errors=1)


def _read_partition(conf: dict, ends_at: float | None = None):
    """The mapInArrow task: (host, origin) rows, a host's together, in the order to read them;
    out, per host its found URLs and one host row (``url`` null; ``outcome``, ``found_urls``,
    ``retry_after``), then one row with the task's counters (JSON) in ``counters``. ``ends_at``
    (epoch seconds, the stage's time limit from its start on the driver, as fetch's): no
    request starts after it, and the hosts not begun by then are counted, not read."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        settings = FetchSettings.from_conf(conf)
        guard = AddressGuard(settings.block_private, settings.allow_private, settings.proxy_resolve_targets)
        client = HttpClient(settings, guard)
        deadline = math.inf if ends_at is None else time.monotonic() + max(0.0, ends_at - time.time())
        reader = HostReader(conf, client, deadline=deadline)
        totals: Counter = Counter()
        by_host: dict[str, list[str]] = {}
        for batch in batches:
            for row in batch.to_pylist():
                by_host.setdefault(row["host"], []).append(row["origin"])
        try:
            for host, origins in by_host.items():
                # once one host met the limit (a delay's sleep short of it) none is begun
                if reader.timed_out or time.monotonic() >= deadline:   # no host row: it stays due
                    totals["hosts_not_reached"] += 1
                    continue
                found, counters = _read_host(reader, host, sorted(set(origins)))
                totals.update(counters)
                domain = domain_of(host) if found else None
                rows = [{**row, "domain": domain} for row in found.values()]
                rows.append({"host": host, "outcome": host_outcome(counters), "found_urls": len(found),
                             "retry_after": reader.retry_after})
                yield pa.RecordBatch.from_pylist(rows, schema=FOUND_SCHEMA)
        finally:
            client.close()
        yield pa.RecordBatch.from_pylist([{"counters": json.dumps(totals)}], schema=FOUND_SCHEMA)
    return run


# --- the Spark side -------------------------------------------------------------------------

def crawldb_origins(crawldb: DataFrame) -> DataFrame:
    """(host, origin): every scheme://authority the crawldb's URLs are on, with its host."""
    origin = F.lower(F.regexp_extract("url", r"^([A-Za-z][A-Za-z0-9+.-]*://[^/?#]+)", 1))
    return (crawldb.select("host", origin.alias("origin"))
            .filter(F.col("origin").rlike("^https?://")).distinct())


def hosts_due(origins: DataFrame, hostdb: DataFrame, now: datetime, interval: float) -> DataFrame:
    """The (host, origin, sitemaps_begun, sitemaps_read) rows of the hosts due for their
    sitemaps: not read to the end within ``interval`` seconds before ``now`` (0: whenever),
    and not waiting out a cut-short read's retry time. A read recorded after ``now`` (a clock
    set back, a run at a later ``--now``) does not count as recent: that host is due. The
    two times order the read under a time limit (reading_order)."""
    now_ts = F.lit(now).cast("timestamp")
    waiting = F.col("sitemaps_retry_at") > now_ts
    if interval > 0:
        since = F.lit(now - timedelta(seconds=interval)).cast("timestamp")
        waiting = waiting | ((F.col("sitemaps_read") > since) & (F.col("sitemaps_read") <= now_ts))
    last = hostdb.select("host", "sitemaps_begun", "sitemaps_read", F.coalesce(waiting, F.lit(False)).alias("_waiting"))
    return origins.join(last, "host", "left").filter(~F.coalesce("_waiting", F.lit(False))).drop("_waiting")


def read_sitemaps(due: DataFrame, conf: Conf, ends_at: float | None = None) -> DataFrame:
    """The sitemap-found rows (url, host, domain, lastmod, changefreq, priority, sitemap),
    a row per host read (``url`` and ``counters`` null; ``outcome``, ``found_urls``,
    ``retry_after``) and the tasks' counter rows (``counters`` set, everything else null).
    A task reads the hosts never begun first, then those begun longest ago: under a time
    limit (``ends_at``) those that waited longest are not the ones left for the next run."""
    partitions = conf["sitemaps.partitions"] or due.sparkSession.sparkContext.defaultParallelism
    return reading_order(due, partitions).mapInArrow(_read_partition(conf.to_dict(), ends_at), FOUND_DDL)


def reading_order(due: DataFrame, partitions: int) -> DataFrame:
    """(host, origin) in ``partitions`` tasks, a host in one, the hosts of a task in the
    order to read them: never begun first, then by when they were last begun (a v1 hostdb's
    rows, without that, by their last read)."""
    begun = F.coalesce("sitemaps_begun", "sitemaps_read")
    return (due.repartition(partitions, "host")
            .sortWithinPartitions(begun.asc_nulls_first(), "host", "origin")
            .select("host", "origin"))


def one_per_url(found: DataFrame) -> DataFrame:
    """One row per URL (a host's reader already gives each once; this makes it a key)."""
    return found.groupBy("url").agg(
        F.first("host").alias("host"), F.first("domain").alias("domain"),
        F.max("lastmod").alias("lastmod"), F.max("priority").alias("priority"),
        F.first("changefreq", ignorenulls=True).alias("changefreq"), F.min("sitemap").alias("sitemap"))


def new_rows(found: DataFrame, crawldb: DataFrame, score: float, conf: Conf) -> DataFrame:
    """(url, host, domain, depth, score, metadata, fetch_interval) of the found URLs the
    crawldb lacks; the interval from the changefreq (``sitemaps.changefreq``), else the
    schedule's default."""
    pairs = [F.lit("source"), F.lit("sitemap"),
             F.lit("sitemap_lastmod"), F.date_format("lastmod", "yyyy-MM-dd'T'HH:mm:ss'Z'"),
             F.lit("sitemap_priority"), F.col("priority").cast("string"),
             F.lit("sitemap_changefreq"), F.col("changefreq")]
    return (found.join(crawldb.select("url"), "url", "left_anti")
            .select("url", "host", "domain", F.lit(1).alias("depth"), F.lit(score).alias("score"),
                    F.map_filter(F.create_map(*pairs), lambda _k, v: v.isNotNull()).alias("metadata"),
                    first_interval(F.col("changefreq"), conf).alias("fetch_interval")))


def first_interval(changefreq, conf: Conf):
    """Seconds to a new URL's first refetch: its changefreq's (CHANGEFREQ_SECONDS) clamped to
    the schedule's bounds under ``sitemaps.changefreq``, else ``schedule.default_interval``.
    Not under the change_rate schedule, which prices a page the crawl lacks by 1/interval: a
    claimed "hourly" would put it behind the held pages; that schedule measures the rate."""
    default = F.lit(conf["schedule.default_interval"])
    if not conf["sitemaps.changefreq"] or conf["schedule.kind"] == "change_rate":
        return default
    seconds = F.create_map(*[F.lit(x) for pair in CHANGEFREQ_SECONDS.items() for x in pair])[changefreq]
    # bounded_interval of a null would be the floor (greatest() skips a null)
    return F.when(seconds.isNotNull(), bounded_interval(seconds, conf)).otherwise(default).cast("int")


def made_due(found: DataFrame, crawldb: DataFrame, now: datetime) -> DataFrame:
    """(url, fetch_time, fetch_interval) of the known URLs a newer sitemap lastmod makes due
    now (module doc). The interval shrinks by as much as fetch_time moves, so that
    ``fetch_time - fetch_interval``, the last fetch on the crawl's clock, stays put."""
    now_ts = F.lit(now).cast("timestamp")
    moved = F.col("fetch_time").cast("long") - now_ts.cast("long")
    interval_type = crawldb.schema["fetch_interval"].dataType
    return (crawldb.join(found.select("url", "lastmod"), "url")
            .filter(F.col("status").isin([s.value for s in HELD])
                    & F.col("generated_segment").isNull()
                    & F.col("lastmod").isNotNull()
                    & (F.col("lastmod") <= now_ts)   # a date to come is made up: it proves no change
                    & (F.col("lastmod") > last_fetch_time())
                    & (F.col("fetch_time") > now_ts))
            .select("url", now_ts.alias("fetch_time"),
                    (F.col("fetch_interval") - moved).cast(interval_type).alias("fetch_interval")))


def run_sitemaps(spark: SparkSession, conf: Conf, now: datetime) -> dict:
    """Read the sitemaps of the crawldb's hosts due for it and merge what they list (one
    crawldb commit, or none), then record the hosts read to the end in the hostdb."""
    from crawlkit.scoring import real_pages
    from crawlkit.stages.fetch import check_no_speculation

    check_no_speculation(spark.sparkContext.getConf().get("spark.speculation", "false"))
    path = storage.crawldb_path(conf["crawl.dir"])
    table = storage.ensure_table(spark, path, "crawldb", deletion_vectors=conf["db.deletion_vectors"])
    hostdb_path = storage.hostdb_path(conf["crawl.dir"])
    hostdb = storage.ensure_table(spark, hostdb_path, "hostdb")
    crawldb = table.toDF()
    origins = crawldb_origins(real_pages(crawldb)).localCheckpoint(eager=True)
    due = hosts_due(origins, hostdb.toDF(), now, conf["sitemaps.interval"]).localCheckpoint(eager=True)
    due_hosts = due.select("host").distinct().count()
    counters: Counter = Counter(hosts_not_due=origins.select("host").distinct().count() - due_hosts)
    new = made_count = 0
    tag = f"sitemaps:{now.isoformat()}"
    if due_hosts:   # else nothing to read, and the crawldb is not scanned for nothing
        limit = conf["sitemaps.time_limit"]
        output = read_sitemaps(due, conf, time.time() + limit if limit > 0 else None).localCheckpoint(eager=True)
        for row in output.filter(F.col("counters").isNotNull()).select("counters").collect():
            counters.update(json.loads(row["counters"]))
        new, made_count = merge_found(spark, table, output.filter(F.col("url").isNotNull()), conf, now, tag)
        counters["hosts_recorded"] = record_hosts_read(spark, hostdb, output, now, conf["sitemaps.interval"], tag)
    counters.update(new=new, made_due=made_count)
    counters["sitemaps_fetched"] = counters.pop("fetched", 0)
    # the run's outcome always; the situational counters when they happened
    result = {k: counters.pop(k, 0) for k in ALWAYS} | {k: v for k, v in sorted(counters.items()) if v}
    write_counters(spark, conf["crawl.dir"], now, result)
    return result


def merge_found(spark: SparkSession, table, found_rows: DataFrame, conf: Conf, now: datetime,
                tag: str) -> tuple[int, int]:
    """Merge the found URLs into the crawldb (module doc): one commit tagged ``tag``, none
    when nothing changes. Returns (new URLs, URLs made due)."""
    from crawlkit.scoring import get_scorer
    from crawlkit.stages.inject import seed_rows

    crawldb = table.toDF()
    found = one_per_url(found_rows)
    fresh = new_rows(found, crawldb, get_scorer(conf["scoring.scorer"]).initial_score(conf), conf)
    fresh = fresh.localCheckpoint(eager=True)
    made = made_due(found, crawldb, now).localCheckpoint(eager=True)
    new, made_count = fresh.count(), made.count()
    if new or made_count:
        source = made.withColumn("_known", F.lit(True))
        if new:
            source = seed_rows(fresh, crawldb, conf, now).withColumn("_known", F.lit(False)).unionByName(
                source, allowMissingColumns=True)
        source = source.localCheckpoint(eager=True)
        columns = [f.name for f in crawldb.schema.fields]
        with storage.commit_tag(spark, tag):
            # new URLs inserted; known ones made due; OPIC's virtual page gives the new ones cash
            (table.alias("db").merge(source.alias("s"), "db.url = s.url")
             .whenMatchedUpdate(condition="s._known", set={"fetch_time": "s.fetch_time",
                                                           "fetch_interval": "s.fetch_interval"})
             .whenMatchedUpdate(set={"opic_cash": "s.opic_cash"})
             .whenNotMatchedInsert(values={c: f"s.{c}" for c in columns}).execute())
    return new, made_count


def write_counters(spark: SparkSession, crawl_dir: str, now: datetime, result: dict) -> None:
    """``<crawl>/_stats/sitemaps-<yyyymmddHHMMSS>.json`` (the stage has no segment); a run
    at the same ``now`` (``crawl --now`` pins every round to it) is suffixed as segments are
    (``-000001``, ...: crawlkit.segment_names), so no run's counters replace another's."""
    folder = storage.join(crawl_dir, "_stats")
    fs, hpath = storage.hadoop_fs(spark, folder)
    names = [s.getPath().getName() for s in fs.listStatus(hpath)] if fs.exists(hpath) else []
    earlier = [n[len("sitemaps-"):-len(".json")] for n in names if n.startswith("sitemaps-") and n.endswith(".json")]
    storage.write_json_file(spark, folder, f"sitemaps-{segment_names.next_name(now, earlier)}.json", result)


def record_hosts_read(spark: SparkSession, hostdb, output: DataFrame, now: datetime, interval: float,
                      tag: str) -> int:
    """Record in the hostdb what each host of ``output`` came to (one commit tagged ``tag``,
    none when no host was begun): a read to the end at ``now``, its failures in a row reset;
    a read cut short counts one more failure in a row and is not retried before
    ``RETRY_BASE`` doubled for each earlier one (at most ``interval``) or the host's
    Retry-After, whichever is later. Every host begun is recorded as begun at ``now``; one the
    time limit stopped only so (it stays due, behind the hosts not begun since); a filtered
    one not at all. Returns the hosts read to the end."""
    hosts = (output.filter(F.col("url").isNull() & F.col("counters").isNull() & (F.col("outcome") != "filtered"))
             .select("host", "outcome", "found_urls", "retry_after")
             .dropDuplicates(["host"]))   # one task reads a host; a MERGE refuses a repeated key
    counted = hosts.agg(F.count(F.lit(1)).alias("hosts"),
                        F.count(F.when(F.col("outcome") == "complete", 1)).alias("read")).first()
    read = counted["read"]
    if not counted["hosts"]:
        return 0
    now_ts = F.lit(now).cast("timestamp")

    def retry_at(failures):   # failures: in a row, this one included
        backoff = F.least(F.lit(RETRY_BASE) * F.pow(F.lit(2.0), failures - 1), F.lit(float(interval)))
        wait = F.greatest(backoff, F.coalesce(F.col("s.retry_after").cast("double"), F.lit(0.0)))
        return F.timestamp_seconds(F.unix_seconds(now_ts) + wait)

    failures = F.coalesce(F.col("h.sitemaps_failures"), F.lit(0)) + 1
    complete, cut_short = F.col("s.outcome") == "complete", F.col("s.outcome") == "cut_short"
    begun = {"sitemaps_begun": now_ts}
    read_set = {**begun, "sitemaps_read": now_ts, "sitemap_urls": F.col("s.found_urls"),
                "sitemaps_failures": F.lit(0), "sitemaps_retry_at": F.lit(None).cast("timestamp")}
    with storage.commit_tag(spark, tag):
        (hostdb.alias("h").merge(hosts.alias("s"), "h.host = s.host")
         .whenMatchedUpdate(condition=complete, set=read_set)
         .whenMatchedUpdate(condition=cut_short, set={**begun, "sitemaps_failures": failures,
                                                           "sitemaps_retry_at": retry_at(failures)})
         .whenMatchedUpdate(set=begun)   # unfinished
         .whenNotMatchedInsert(condition=complete, values={"host": F.col("s.host"), **read_set})
         .whenNotMatchedInsert(condition=cut_short, values={"host": F.col("s.host"), **begun,
                                                            "sitemaps_failures": F.lit(1),
                                                            "sitemaps_retry_at": retry_at(F.lit(1))})
         .whenNotMatchedInsert(values={"host": F.col("s.host"), **begun})
         .execute())
    return read
