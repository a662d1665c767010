"""The limited-buffer crawl model (Cho et al., section 3): keep the content of at most B pages.

A crawler with a buffer of B pages keeps crawling after the buffer is full; each page it
fetches competes for a place with the pages it holds, and the one with the lowest estimated
importance (the ordering ``score``) is dropped. Its URL stays known, with status
``evicted``, and generate never picks it again (``generate.NEVER_GENERATED``) unless its
estimate later rises into the top B: then it is made due again, refetched and stored.

After every round's scoring (when the estimates are freshest) the buffer is recomputed as the
top B of the pages that have content, had it, or were readmitted to it (stored ∪ evicted ∪
readmitted and not yet refetched), by score then URL:

* a stored page outside the top B becomes ``evicted`` (``metadata.evicted_at`` records when),
  and so does a readmitted page that has fallen out again before its refetch;
* an evicted page inside the top B becomes ``unfetched`` and due now, so the next generate
  considers it like any new URL; ``metadata.readmitted_at`` marks it as holding its place
  until the refetch resolves (a fetch time limit, a transient failure or the round's caps
  may leave it unfetched for rounds: uncounted, the next evict readmitted another page into
  the same place, and those pages were fetched and evicted again), and is dropped once the
  page is stored;

so the crawldb never holds more than B stored pages after a round. The change is one MERGE
tagged ``evict:<segment>``; rerunning it finds nothing to change. ``crawlkit export`` reads
the ``evicted`` status; ``crawlkit evaluate --buffer crawldb`` reads the buffer with
:func:`holds_place`.
"""
from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from crawlkit import storage
from crawlkit.conf import Conf
from crawlkit.scoring.base import real_pages
from crawlkit.status import Status

STORED = (Status.FETCHED.value, Status.NOT_MODIFIED.value)
READMITTED = "readmitted_at"
AWAITING_REFETCH = (Status.UNFETCHED.value, Status.RETRY.value)   # a readmitted page, not yet stored


def holds_place() -> Column:
    """The crawldb rows holding a place in the buffer: stored pages, and readmitted pages
    awaiting their refetch (they keep their place until it resolves)."""
    marked = F.col("metadata").getItem(READMITTED).isNotNull()
    return F.col("status").isin(*STORED) | (marked & F.col("status").isin(*AWAITING_REFETCH))


def buffer_changes(crawldb: DataFrame, capacity: int, now: datetime) -> DataFrame:
    """(url, status, fetch_time, metadata) for the rows whose buffer state changes."""
    marked = F.col("metadata").getItem(READMITTED).isNotNull()
    stored, evicted = F.col("status").isin(*STORED), F.col("status") == Status.EVICTED.value
    held = holds_place()
    had_content = real_pages(crawldb).filter(held | evicted)
    kept = (had_content.orderBy(F.col("score").desc(), F.col("url")).limit(capacity)
            .select("url", F.lit(True).alias("_kept")))
    ranked = had_content.join(kept, on="url", how="left")
    in_buffer = F.coalesce(F.col("_kept"), F.lit(False))
    evict = held & ~in_buffer
    readmit = evicted & in_buffer
    settled = stored & in_buffer & marked          # refetched and stored: the mark has done its job
    when = F.date_format(F.lit(now), "yyyy-MM-dd'T'HH:mm:ss'Z'")
    metadata = F.map_filter(F.coalesce(F.col("metadata"), F.create_map().cast("map<string,string>")),
                            lambda k, v: ~k.isin("evicted_at", READMITTED))
    return ranked.filter(evict | readmit | settled).select(
        "url",
        F.when(evict, F.lit(Status.EVICTED.value)).when(readmit, F.lit(Status.UNFETCHED.value))
         .otherwise(F.col("status")).alias("status"),
        F.when(readmit, F.lit(now).cast("timestamp")).otherwise(F.col("fetch_time")).alias("fetch_time"),
        F.when(evict, F.map_concat(metadata, F.create_map(F.lit("evicted_at"), when)))
         .when(readmit, F.map_concat(metadata, F.create_map(F.lit(READMITTED), when)))
         .otherwise(metadata).alias("metadata"))


def run_evict(spark: SparkSession, conf: Conf, now: datetime, segment: str) -> dict:
    """Apply the buffer of ``crawl.buffer_pages`` pages to the crawldb (no-op when 0)."""
    capacity = conf["crawl.buffer_pages"]
    if capacity <= 0:
        return {"segment": segment, "skipped": "no buffer"}
    db_path = storage.crawldb_path(conf["crawl.dir"])
    tag = f"evict:{segment}"
    if storage.was_applied(spark, db_path, tag, since=storage.generated_tag(segment)):
        return {"segment": segment, "skipped": "already applied"}
    table = storage.ensure_table(spark, db_path, "crawldb")
    # (a fresh read: a source sharing the target DataFrame's columns cannot be merged into it)
    crawldb = storage.read_table(spark, db_path, "crawldb")
    changes = buffer_changes(crawldb, capacity, now).localCheckpoint(eager=True)
    tally = {r["status"]: r["n"] for r in changes.groupBy("status").agg(F.count("*").alias("n")).collect()}
    with storage.commit_tag(spark, tag), storage.merge_source_materialized(spark):
        (table.alias("db").merge(changes.alias("c"), "db.url = c.url")
         .whenMatchedUpdate(set={"status": "c.status", "fetch_time": "c.fetch_time",
                                 "metadata": "c.metadata"})
         .execute())
    counters = {"segment": segment, "capacity": capacity,
                "evicted": tally.get(Status.EVICTED.value, 0),
                "readmitted": tally.get(Status.UNFETCHED.value, 0)}
    storage.write_stats(spark, conf["crawl.dir"], segment, "evict", counters)
    return counters
