"""fetch: every URL of a fetch list comes out with a fetch status (nothing dropped).

Each Spark task takes one partition of the fetch list (whole hosts, see generate) and runs
crawlkit.fetch.fetch_partition over it: a thread pool with per-host queues, robots.txt and
politeness. Rows travel as Arrow batches (``mapInArrow``), so there is no per-row Python UDF
overhead. Fetch parallelism = partitions x fetcher.threads.
"""
from __future__ import annotations

from datetime import datetime
from typing import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from crawlkit import schemas, storage
from crawlkit.conf import Conf

BATCH_ROWS = 64  # small batches: results stream out while slow hosts are still being fetched


def _fetch_batches(conf: dict, now: datetime):
    from crawlkit.fetch import fetch_partition  # imported on the executor

    arrow_schema = to_arrow_schema(schemas.struct("content"))
    names = arrow_schema.names

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = (row for batch in batches for row in batch.to_pylist())
        buffer: list[dict] = []
        for result in fetch_partition(rows, conf, now):
            buffer.append(result)
            if len(buffer) >= BATCH_ROWS:
                yield _to_batch(buffer, names, arrow_schema)
                buffer = []
        if buffer:
            yield _to_batch(buffer, names, arrow_schema)
    return run


def _to_batch(rows: list[dict], names: list[str], schema: pa.Schema) -> pa.RecordBatch:
    columns = {name: [row.get(name) for row in rows] for name in names}
    columns["headers"] = [list(h.items()) if h else None for h in columns["headers"]]
    return pa.RecordBatch.from_pydict(columns, schema=schema)


def fetch(fetchlist: DataFrame, conf: Conf, now: datetime) -> DataFrame:
    """The content DataFrame of a fetch list, fetched partition by partition."""
    return fetchlist.mapInArrow(_fetch_batches(conf.to_dict(), now), schemas.struct("content"))


def run_fetch(spark: SparkSession, conf: Conf, now: datetime, segment: str) -> dict:
    """Fetch segments/<segment>/fetchlist into segments/<segment>/content."""
    crawl_dir = conf["crawl.dir"]
    fetchlist = storage.read_segment_part(spark, crawl_dir, segment, "fetchlist", "fetchlist")
    storage.write_segment_part(fetch(fetchlist, conf, now), crawl_dir, segment, "content", "content")
    content = storage.read_segment_part(spark, crawl_dir, segment, "content", "content")
    by_status = {r["fetch_status"]: r["n"] for r in
                 content.groupBy("fetch_status").agg(F.count("*").alias("n")).collect()}
    totals = content.agg(F.count("*").alias("pages"),
                         F.sum(F.length("content")).alias("bytes"),
                         F.sum("elapsed_ms").alias("elapsed_ms")).first()
    counters = {"segment": segment, "pages": totals["pages"], "bytes": totals["bytes"] or 0,
                "by_status": by_status}
    storage.write_stats(spark, crawl_dir, segment, "fetch", counters)
    return counters
