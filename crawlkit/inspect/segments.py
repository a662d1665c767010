"""The history of a crawl, segment by segment: each stage's ``_stats`` counters, the round's
stage durations (``_stats/round.json``, written by the crawl loop) and the fetch outcomes in
the segments' content.

Everything is read in one Spark job per kind (all ``_stats`` files at once, all content at
once), so a crawl of hundreds of rounds costs a few jobs, not a few per segment.
"""
from __future__ import annotations

import json

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from crawlkit import schemas, storage
from crawlkit.segment_names import order_key
from crawlkit.status import FetchStatus

# Fetch outcomes that are not errors: the page (or its redirect or 304) came back as asked.
NOT_ERRORS = (FetchStatus.SUCCESS.value, FetchStatus.NOT_MODIFIED.value, FetchStatus.REDIRECT_PERM.value,
              FetchStatus.REDIRECT_TEMP.value, FetchStatus.UNSUPPORTED_TYPE.value)


def stage_stats(spark: SparkSession, crawl_dir: str) -> dict[str, dict[str, dict]]:
    """segment -> stage -> the counters that stage wrote (segments in order)."""
    paths = glob(spark, storage.join(crawl_dir, "segments", "*", "_stats", "*.json"))
    if not paths:
        return {}
    files = spark.read.text(paths, wholetext=True).select(F.col("_metadata.file_path").alias("path"), "value")
    out: dict[str, dict[str, dict]] = {}
    for path, text in sorted((r["path"], r["value"]) for r in files.collect()):
        segment, _, name = path.split("/")[-3:]
        out.setdefault(segment, {})[name.removesuffix(".json")] = json.loads(text)
    return {segment: out[segment] for segment in sorted(out, key=order_key)}


def glob(spark: SparkSession, pattern: str) -> list[str]:
    """Paths matching a Hadoop glob, sorted (listed here: Spark's reader logs a stack trace
    for a glob before it expands it)."""
    jvm = spark.sparkContext._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(pattern)
    fs = hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return sorted(status.getPath().toString() for status in (fs.globStatus(hpath) or []))


def content(spark: SparkSession, crawl_dir: str) -> DataFrame | None:
    """The content of every fetched segment (None before the first fetch)."""
    paths = [storage.segment_path(crawl_dir, s, "content") for s in storage.list_segments(spark, crawl_dir)
             if storage.segment_part_exists(spark, crawl_dir, s, "content")]
    return spark.read.schema(schemas.struct("content")).parquet(*paths) if paths else None


def fetch_status_by_segment(content_df: DataFrame) -> dict[str, dict[str, int]]:
    """segment -> fetch_status -> pages."""
    out: dict[str, dict[str, int]] = {}
    for r in content_df.groupBy("segment", "fetch_status").count().orderBy("segment", "fetch_status").collect():
        out.setdefault(r["segment"], {})[r["fetch_status"]] = r["count"]
    return out


def hosts_with_errors(content_df: DataFrame, n: int = 25) -> list[dict]:
    """The ``n`` hosts with most failed fetches over all segments: fetches, errors, errors by
    status, the most frequent error message (ties: the first alphabetically), mean request ms."""
    is_error = ~F.col("fetch_status").isin(*NOT_ERRORS)
    worst = (content_df.groupBy("host")
             .agg(F.count("*").alias("fetches"), F.count(F.when(is_error, 1)).alias("errors"),
                  F.round(F.mean("elapsed_ms"), 1).alias("mean_ms"))
             .filter(F.col("errors") > 0)
             .orderBy(F.desc("errors"), "host").limit(n)
             .select("host", "fetches", "errors", "mean_ms").collect())
    failures = (content_df.filter(is_error & F.col("host").isin([r["host"] for r in worst]))
                .groupBy("host", "fetch_status", "error").count().collect())
    by_status: dict[str, dict[str, int]] = {}
    messages: dict[str, dict[str, int]] = {}
    for r in failures:
        statuses = by_status.setdefault(r["host"], {})
        statuses[r["fetch_status"]] = statuses.get(r["fetch_status"], 0) + r["count"]
        if r["error"] is not None:
            host_messages = messages.setdefault(r["host"], {})
            host_messages[r["error"]] = host_messages.get(r["error"], 0) + r["count"]
    return [{**r.asDict(), "by_status": dict(sorted(by_status[r["host"]].items())),
             "top_error": min(messages[r["host"]].items(), key=lambda m: (-m[1], m[0]))[0]
             if r["host"] in messages else None} for r in worst]
