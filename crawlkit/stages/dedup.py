"""dedup: mark pages whose visible text another kept page already has as ``duplicate``.

The same page is often reachable under several URLs: ``www.`` and bare host, http and https,
session ids and tracking parameters the normalizer cannot know, printer views, a redirect
followed inline and its target fetched again. Indexed twice it is one result shown twice;
scored twice, its outlinks vote twice. So after every updatedb, as Nutch's DeduplicationJob,
the pages with content (``fetched``, ``not_modified``, ``duplicate``) are grouped by
``digest`` (MD5 of the whole visible text: exact duplicates only; the text-profile
``signature`` also matches different short pages, see crawlkit.parse.signature), and one
page per group is kept:

1. a page that is not ``duplicate`` (one the crawl has content of as its own);
2. of those, the one the group's duplicates point to (``metadata.duplicate_of``): the page
   the crawl already keeps keeps its place while its text stays, so the index and the link
   graph do not flip between copies as the scores move from round to round;
3. then the higher ordering ``score`` (when copies first meet, the most important is kept);
4. then the shorter URL, then the URL (a total order, the same on every run).

The others become ``duplicate`` with ``metadata.duplicate_of`` = the kept URL. A duplicate is
refetched on its schedule like any page, and stays ``duplicate`` while it answers (updatedb's
transition); when its text changes it leaves the group, and when the kept page leaves (gone,
changed, evicted) the best remaining copy is kept in its place: both come back ``fetched``
here. Duplicates are not exported and their links do not vote (crawlkit.scoring.links).

One MERGE of the rows that change, tagged ``dedup:<segment>``; a rerun finds none.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from crawlkit import storage
from crawlkit.conf import Conf
from crawlkit.scoring.base import real_pages
from crawlkit.status import Status

WITH_CONTENT = (Status.FETCHED.value, Status.NOT_MODIFIED.value, Status.DUPLICATE.value)
DUPLICATE_OF = "duplicate_of"


def duplicate_changes(crawldb: DataFrame) -> DataFrame:
    """(url, status, metadata) of the rows whose duplicate state changes."""
    duplicate = F.col("status") == Status.DUPLICATE.value
    # a page without a digest (no text, or fetched before digests were kept) is a group of
    # its own: kept, so a duplicate whose text is gone comes back
    pages = (real_pages(crawldb).filter(F.col("status").isin(*WITH_CONTENT))
             .withColumn("_group", F.coalesce(F.col("digest"), F.concat(F.lit("url:"), F.col("url")))))
    # A group of one page that is not a duplicate is already as it should be: most pages.
    # Only the others are ranked, so the sort below is bounded by the copies, not the crawl.
    open_groups = (pages.groupBy("_group")
                   .agg(((F.count(F.lit(1)) > 1) | F.max(duplicate)).alias("_open"))
                   .filter("_open").select("_group"))   # (a narrow shuffle: the group key alone)
    pages = pages.join(open_groups, "_group", "left_semi")
    copy_of = F.col("metadata").getItem(DUPLICATE_OF)
    # the page the group's duplicates point to: the one the crawl keeps for this text
    pointed = F.array_contains(F.collect_set(copy_of).over(Window.partitionBy("_group")), F.col("url"))
    best_first = Window.partitionBy("_group").orderBy(
        duplicate.asc(), pointed.desc(), F.col("score").desc_nulls_last(), F.length("url"), F.col("url"))
    ranked = pages.select("url", "status", "metadata",
                          F.first("url").over(best_first).alias("_kept"))
    kept = F.col("url") == F.col("_kept")
    revive = kept & duplicate
    mark = ~kept & (~duplicate | ~copy_of.eqNullSafe(F.col("_kept")))
    return ranked.filter(revive | mark).select(
        "url",
        F.when(revive, F.lit(Status.FETCHED.value)).otherwise(F.lit(Status.DUPLICATE.value)).alias("status"),
        F.when(revive, _without_copy_of(F.col("metadata")))
         .otherwise(F.map_concat(_without_copy_of(F.col("metadata")),
                                 F.create_map(F.lit(DUPLICATE_OF), F.col("_kept")))).alias("metadata"))


def _without_copy_of(metadata: Column) -> Column:
    return F.map_filter(F.coalesce(metadata, F.create_map().cast("map<string,string>")),
                        lambda k, _v: k != F.lit(DUPLICATE_OF))


def run_dedup(spark: SparkSession, conf: Conf, segment: str) -> dict:
    """Apply the duplicate marks to the crawldb (``db.dedup``; a no-op when off)."""
    if not conf["db.dedup"]:
        return {"segment": segment, "skipped": "db.dedup is off"}
    db_path = storage.crawldb_path(conf["crawl.dir"])
    table = storage.ensure_table(spark, db_path, "crawldb")
    # (a fresh read: a source sharing the target DataFrame's columns cannot be merged into it)
    crawldb = storage.read_table(spark, db_path, "crawldb")
    changes = duplicate_changes(crawldb).localCheckpoint(eager=True)
    counts = {r["status"]: r["count"] for r in changes.groupBy("status").count().collect()}
    marked, revived = counts.get(Status.DUPLICATE.value, 0), counts.get(Status.FETCHED.value, 0)
    if marked or revived:
        with storage.commit_tag(spark, f"dedup:{segment}"), storage.merge_source_materialized(spark):
            (table.alias("db").merge(changes.alias("c"), "db.url = c.url")
             .whenMatchedUpdate(set={"status": "c.status", "metadata": "c.metadata"}).execute())
    counters = {"segment": segment, "marked": marked, "revived": revived}
    storage.write_stats(spark, conf["crawl.dir"], segment, "dedup", counters)
    return counters
