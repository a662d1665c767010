"""sitemaps: URLs and their lastmod from the sitemaps of the crawldb's hosts, merged into it.

As Nutch's SitemapProcessor: every host the crawldb knows is visited each run (there is no
per-host "sitemaps read" marker: the crawldb has no column for one, and a run costs a
robots.txt and a few documents per host), in tasks that own whole hosts as fetch's do. Per
host, one request at a time, ``fetcher.server_delay`` (or the robots.txt Crawl-delay, capped
at ``fetcher.max_crawl_delay``) apart:

1. robots.txt of each origin (scheme://host:port) of the host with crawldb rows; under
   ``fetcher.respect_robots`` an unreachable one (5xx, timeout) skips the origin this run,
   and sitemap URLs it disallows are not fetched;
2. its ``Sitemap:`` lines, else ``/sitemap.xml`` when ``sitemaps.guess``;
3. indexes followed breadth first to ``sitemaps.max_depth``, at most
   ``sitemaps.max_sitemaps_per_host`` documents and ``sitemaps.max_urls_per_host`` URLs.

Only sitemap documents on the host itself are fetched (a task owns its hosts' politeness;
a Sitemap: line naming another host is counted ``sitemaps_other_host``), and only URLs on the
host itself are kept (the protocol's rule; the others are counted ``refused_other_host``;
the protocol's narrower rule, URLs under the sitemap's own directory, is not applied). URLs
are normalized and filtered as inject's seeds.

The merge is one tagged commit (``sitemaps:<now>``), none when nothing changes (a second run
over unchanged sitemaps commits nothing):

* a new URL is inserted unfetched, depth 1, with the score inject gives a seed without one,
  metadata ``source=sitemap`` and ``sitemap_lastmod`` / ``sitemap_priority`` when given;
* a known URL the crawl holds a copy of (fetched, not_modified, redirect_*), not locked by a
  generated segment, whose sitemap lastmod is later than its last fetch on the crawl's
  clock (crawlkit.schedule.last_fetch_time) and not after ``now`` (a lastmod to come is a
  made-up date, not evidence of a change), and which is not due yet, becomes due ``now``;
  unfetched and retrying URLs are due on their own schedule, gone, evicted and duplicate
  ones are left alone.

Counters are printed and written to ``<crawl>/_stats/sitemaps-<now>.json`` (this stage has
no segment).
"""
from __future__ import annotations

import json
import time
from collections import Counter, deque
from datetime import datetime
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import urljoin

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from crawlkit import storage
from crawlkit.conf import Conf
from crawlkit.fetch.guard import AddressGuard
from crawlkit.fetch.http import HttpClient
from crawlkit.fetch.robots import RobotsRules, fetch_rules
from crawlkit.fetch.settings import FetchSettings
from crawlkit.fetch.sitemap import parse_sitemap
from crawlkit.schedule import last_fetch_time
from crawlkit.status import Status
from crawlkit.urls import UrlFilter, UrlNormalizer, domain_of, host_of

FOUND_SCHEMA = pa.schema([
    ("url", pa.string()), ("host", pa.string()), ("domain", pa.string()),
    ("lastmod", pa.timestamp("us", tz="UTC")), ("changefreq", pa.string()),
    ("priority", pa.float64()), ("sitemap", pa.string()), ("counters", pa.string())])
FOUND_DDL = ("url string, host string, domain string, lastmod timestamp, changefreq string, "
             "priority double, sitemap string, counters string")
# statuses whose rows hold a fetched copy: a newer lastmod makes them due
HELD = (Status.FETCHED, Status.NOT_MODIFIED, Status.REDIRECT_TEMP, Status.REDIRECT_PERM)


# --- per host (executors; plain Python) -----------------------------------------------------

class HostReader:
    """Reads the sitemaps of one host after another, politely (see the module doc)."""

    def __init__(self, conf: Mapping[str, Any], client: HttpClient, sleep: Callable[[float], None] = time.sleep):
        self.settings = client.settings
        self.client = client
        self.sleep = sleep
        self.guess = conf["sitemaps.guess"]
        self.max_depth = conf["sitemaps.max_depth"]
        self.max_docs = conf["sitemaps.max_sitemaps_per_host"]
        self.max_urls = conf["sitemaps.max_urls_per_host"]
        self.max_entries = conf["sitemaps.max_entries"]
        self.max_bytes = conf["sitemaps.max_bytes"]
        self.normalize = UrlNormalizer(self.settings.url_settings)
        self.url_filter = UrlFilter(self.settings.url_settings)
        self._waited_for: float | None = None   # when the last request to the host ended

    def read(self, host: str, origins: list[str]) -> tuple[dict[str, dict], Counter]:
        """The host's sitemap URLs (url -> row) and the counters of reading them."""
        counters: Counter = Counter(hosts=1)
        found: dict[str, dict] = {}
        self._waited_for = None   # a new host: its first request waits for nothing
        docs = 0
        for origin in origins:
            rules, roots = self._roots(origin, counters)
            queue = deque((url, 0) for url in roots)
            seen: set[str] = set()
            while queue and docs < self.max_docs and len(found) < self.max_urls:
                url, depth = queue.popleft()
                if url in seen:
                    continue
                seen.add(url)
                if host_of(url) != host:
                    counters["sitemaps_other_host"] += 1
                    continue
                if self.settings.respect_robots and not rules.allowed(url):
                    counters["sitemaps_robots_denied"] += 1
                    continue
                docs += 1
                body = self._get(url, rules, counters)
                if body is None:
                    continue
                document = parse_sitemap(body, max_entries=self.max_entries, max_bytes=self.max_bytes)
                counters["sitemaps_truncated"] += document.truncated
                if document.kind == "invalid":
                    counters["invalid"] += 1
                    continue
                counters["fetched"] += 1
                children = [urljoin(url, child) for child in document.sitemaps]
                if depth < self.max_depth:
                    queue.extend((child, depth + 1) for child in children)
                else:
                    counters["sitemaps_too_deep"] += len(children)
                for entry in document.urls:
                    self._take(entry, url, host, found, counters)
            counters["sitemaps_over_cap"] += len(queue) if docs >= self.max_docs else 0
        return found, counters

    def _roots(self, origin: str, counters: Counter) -> tuple[RobotsRules, list[str]]:
        """The origin's robots rules and its first sitemaps (module doc, steps 1 and 2)."""
        rules = RobotsRules.allow_all(self.settings.robots_agent)
        if self.settings.respect_robots:
            self._wait(rules)
            rules = fetch_rules(self.client, origin, self.settings.robots_agent,
                                time.monotonic() + self.settings.page_deadline)
            if rules.unreachable:
                counters["robots_unreachable"] += 1
                return rules, []
        listed = [urljoin(origin + "/robots.txt", line.strip()) for line in rules.sitemaps if line.strip()]
        counters["robots_sitemaps"] += len(listed)
        return rules, listed or ([origin + "/sitemap.xml"] if self.guess else [])

    def _wait(self, rules: RobotsRules) -> None:
        """Sleep the host's delay since the last request to it (the first one waits nothing)."""
        if self._waited_for is not None:
            delay = self.settings.server_delay if rules.crawl_delay is None else min(
                float(rules.crawl_delay), self.settings.max_crawl_delay)
            left = self._waited_for + delay - time.monotonic()
            if left > 0:
                self.sleep(left)
        self._waited_for = time.monotonic()

    def _get(self, url: str, rules: RobotsRules, counters: Counter) -> bytes | None:
        self._wait(rules)
        response = self.client.get(url, deadline=time.monotonic() + self.settings.page_deadline,
                                   max_bytes=self.max_bytes)
        self._waited_for = time.monotonic()   # the delay runs from the end of a request
        if response.failure is not None or response.status is None:
            counters["failed"] += 1
        elif not 200 <= response.status < 300:
            counters["missing" if 400 <= response.status < 500 and response.status != 429 else "failed"] += 1
        else:
            return response.body or b""
        return None

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


def _read_partition(conf: dict):
    """The mapInArrow task: (host, origin) rows sorted by host in; the found URLs out, then
    one row with the task's counters (JSON) in ``counters``."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        settings = FetchSettings.from_conf(conf)
        guard = AddressGuard(settings.block_private, settings.allow_private, settings.proxy_resolve_targets)
        client = HttpClient(settings, guard)
        reader = HostReader(conf, client)
        totals: Counter = Counter()
        by_host: dict[str, list[str]] = {}
        for batch in batches:
            for row in batch.to_pylist():
                by_host.setdefault(row["host"], []).append(row["origin"])
        try:
            for host, origins in by_host.items():
                found, counters = reader.read(host, sorted(set(origins)))
                totals.update(counters)
                if found:
                    domain = domain_of(host)
                    rows = [{**row, "domain": domain, "counters": None} for row in found.values()]
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


def read_sitemaps(origins: DataFrame, conf: Conf) -> DataFrame:
    """The sitemap-found rows (url, host, domain, lastmod, changefreq, priority, sitemap)
    and the tasks' counter rows (``counters`` set, everything else null)."""
    spark = origins.sparkSession
    partitions = conf["sitemaps.partitions"] or spark.sparkContext.defaultParallelism
    return (origins.repartition(partitions, "host").sortWithinPartitions("host", "origin")
            .mapInArrow(_read_partition(conf.to_dict()), FOUND_DDL))


def one_per_url(found: DataFrame) -> DataFrame:
    """One row per URL (a host's reader already gives each once; this makes it a key)."""
    return found.groupBy("url").agg(
        F.first("host").alias("host"), F.first("domain").alias("domain"),
        F.max("lastmod").alias("lastmod"), F.max("priority").alias("priority"),
        F.first("changefreq", ignorenulls=True).alias("changefreq"), F.min("sitemap").alias("sitemap"))


def new_rows(found: DataFrame, crawldb: DataFrame, score: float) -> DataFrame:
    """(url, host, domain, depth, score, metadata) of the found URLs the crawldb lacks."""
    pairs = [F.lit("source"), F.lit("sitemap"),
             F.lit("sitemap_lastmod"), F.date_format("lastmod", "yyyy-MM-dd'T'HH:mm:ss'Z'"),
             F.lit("sitemap_priority"), F.col("priority").cast("string")]
    return (found.join(crawldb.select("url"), "url", "left_anti")
            .select("url", "host", "domain", F.lit(1).alias("depth"), F.lit(score).alias("score"),
                    F.map_filter(F.create_map(*pairs), lambda _k, v: v.isNotNull()).alias("metadata")))


def made_due(found: DataFrame, crawldb: DataFrame, now: datetime) -> DataFrame:
    """(url, fetch_time) of the known URLs a newer sitemap lastmod makes due now (module doc)."""
    now_ts = F.lit(now).cast("timestamp")
    return (crawldb.join(found.select("url", "lastmod"), "url")
            .filter(F.col("status").isin([s.value for s in HELD])
                    & F.col("generated_segment").isNull()
                    & F.col("lastmod").isNotNull()
                    & (F.col("lastmod") <= now_ts)   # a date to come is made up: it proves no change
                    & (F.col("lastmod") > last_fetch_time())
                    & (F.col("fetch_time") > now_ts))
            .select("url", now_ts.alias("fetch_time")))


def run_sitemaps(spark: SparkSession, conf: Conf, now: datetime) -> dict:
    """Read the crawldb hosts' sitemaps and merge what they list (one commit, or none)."""
    from crawlkit.scoring import get_scorer, real_pages
    from crawlkit.stages.inject import seed_rows

    path = storage.crawldb_path(conf["crawl.dir"])
    table = storage.ensure_table(spark, path, "crawldb", deletion_vectors=conf["db.deletion_vectors"])
    crawldb = table.toDF()
    output = read_sitemaps(crawldb_origins(real_pages(crawldb)), conf).localCheckpoint(eager=True)
    counters: Counter = Counter()
    for row in output.filter(F.col("counters").isNotNull()).select("counters").collect():
        counters.update(json.loads(row["counters"]))
    found = one_per_url(output.filter(F.col("url").isNotNull()))
    fresh = new_rows(found, crawldb, get_scorer(conf["scoring.scorer"]).initial_score(conf))
    fresh = fresh.localCheckpoint(eager=True)
    due = made_due(found, crawldb, now).localCheckpoint(eager=True)
    new, made = fresh.count(), due.count()
    if new or made:
        source = due.withColumn("_known", F.lit(True))
        if new:
            source = seed_rows(fresh, crawldb, conf, now).withColumn("_known", F.lit(False)).unionByName(
                source, allowMissingColumns=True)
        source = source.localCheckpoint(eager=True)
        columns = [f.name for f in crawldb.schema.fields]
        with storage.commit_tag(spark, f"sitemaps:{now.isoformat()}"):
            # new URLs inserted; known ones made due; OPIC's virtual page gives the new ones cash
            (table.alias("db").merge(source.alias("s"), "db.url = s.url")
             .whenMatchedUpdate(condition="s._known", set={"fetch_time": "s.fetch_time"})
             .whenMatchedUpdate(set={"opic_cash": "s.opic_cash"})
             .whenNotMatchedInsert(values={c: f"s.{c}" for c in columns}).execute())
    result = {"hosts": counters.pop("hosts", 0), "sitemaps_fetched": counters.pop("fetched", 0),
              "failed": counters.pop("failed", 0), "urls_seen": counters.pop("urls_seen", 0),
              "refused_other_host": counters.pop("refused_other_host", 0),
              "filtered": counters.pop("filtered", 0), "new": new, "made_due": made,
              **dict(sorted(counters.items()))}
    write_counters(spark, conf["crawl.dir"], now, result)
    return result


def write_counters(spark: SparkSession, crawl_dir: str, now: datetime, counters: dict) -> None:
    """``<crawl>/_stats/sitemaps-<yyyymmddHHMMSS>.json``, written beside and renamed into place."""
    stats = storage.join(crawl_dir, "_stats")
    name = f"sitemaps-{now.strftime('%Y%m%d%H%M%S')}.json"
    staging = storage.join(stats, f".{name}.writing")
    storage.write_text(spark, staging, json.dumps(counters, sort_keys=True, default=str))
    storage.move_into_place(spark, staging, storage.join(stats, name))
