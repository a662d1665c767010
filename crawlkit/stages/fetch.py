"""fetch: every URL of a fetch list comes out with a fetch status (nothing dropped).

Each Spark task takes one partition of the fetch list (whole hosts, see generate) and runs
crawlkit.fetch.fetch_partition over it: a thread pool with per-host queues, robots.txt and
politeness. Rows travel as Arrow batches (``mapInArrow``), so there is no per-row Python UDF
overhead. Fetch parallelism = partitions x fetcher.threads.

Resumable: tasks spill their results every ``fetcher.spill_seconds`` (or ``fetcher.spill_rows``
results) into ``content_parts/`` of the segment
(each file written under a temporary name, then renamed, so a killed task leaves no torn
file). A rerun after a crash fetches only the URLs that have no result yet; the stage ends
by assembling ``content/`` from the parts, one row per URL.

A URL can be spilled twice only when its partition ran more than once (a retried task, a
speculative copy, a resubmitted stage) or a rerun resumed earlier parts. A spill file's name
holds the partition and a tag unique to the task's run, so a round where no partition ran
twice skips the search for repeated URLs (a shuffle of every URL).
"""
from __future__ import annotations

import re
import time
import uuid
from datetime import datetime
from typing import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from crawlkit import schemas, storage
from crawlkit.conf import Conf
from crawlkit.progress import ProgressSink, fetch_progress
from crawlkit.stages.generate import partition_by_host
from crawlkit.status import FetchStatus

PARTS = "content_parts"
SPILL_NAME = re.compile(r"part-p(\d+)-([0-9a-f]{12})-\d+\.parquet")  # partition, run of the task


def _to_batch(rows: list[dict], schema: pa.Schema) -> pa.RecordBatch:
    columns = {name: [row.get(name) for row in rows] for name in schema.names}
    columns["headers"] = [list(h.items()) if h else None for h in columns["headers"]]
    return pa.RecordBatch.from_pydict(columns, schema=schema)


def _fetch_and_spill(conf: dict, now: datetime, parts_uri: str, progress: ProgressSink | None):
    """The per-partition task: fetch, spill results to parts_uri, yield the row count; report
    the task's counters to ``progress`` (crawlkit.progress) when given. The schema is resolved
    here, on the driver: executors may not have the schemas/ folder."""
    schema = to_arrow_schema(schemas.struct("content"))

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet as pq
        from pyarrow import fs as pafs
        from pyspark import TaskContext

        from crawlkit.fetch import FetchStats, fetch_partition

        filesystem, folder = pafs.FileSystem.from_uri(parts_uri)
        filesystem.create_dir(folder, recursive=True)
        task = f"p{TaskContext.get().partitionId():05d}-{uuid.uuid4().hex[:12]}"  # see SPILL_NAME
        buffer: list[dict] = []
        written, chunk, last = 0, 0, time.monotonic()
        spill_rows, spill_seconds = conf["fetcher.spill_rows"], conf["fetcher.spill_seconds"]

        def spill():
            nonlocal chunk, written, last, buffer
            name = f"part-{task}-{chunk:05d}.parquet"
            tmp = f"{folder}/_tmp-{name}"
            pq.write_table(pa.Table.from_batches([_to_batch(buffer, schema)]), tmp, filesystem=filesystem)
            filesystem.move(tmp, f"{folder}/{name}")
            chunk, written, last, buffer = chunk + 1, written + len(buffer), time.monotonic(), []

        rows = (row for batch in batches for row in batch.to_pylist())
        stats = FetchStats()
        results = fetch_partition(rows, conf, now, stats)
        for result in (results if progress is None else progress.follow(results, stats)):
            buffer.append(result)
            if len(buffer) >= spill_rows or time.monotonic() - last >= spill_seconds:
                spill()
        if buffer:
            spill()
        yield pa.RecordBatch.from_pydict({"rows": [written]}, schema=pa.schema([("rows", pa.int64())]))
    return run


def _parts(spark: SparkSession, parts_uri: str) -> DataFrame | None:
    if not storage.path_exists(spark, parts_uri):
        return None
    return spark.read.schema(schemas.struct("content")).parquet(parts_uri)


def fetch_remaining(spark: SparkSession, fetchlist: DataFrame, conf: Conf, now: datetime, parts_uri: str) -> int:
    """Fetch the fetch-list URLs that have no spilled result yet; returns rows fetched now."""
    done = _parts(spark, parts_uri)
    todo = fetchlist if done is None else fetchlist.join(done.select("url"), on="url", how="left_anti")
    partitions = conf["generate.partitions"] or spark.sparkContext.defaultParallelism
    with fetch_progress(spark, "fetch", todo) as sink:
        counts = partition_by_host(todo, partitions).mapInArrow(
            _fetch_and_spill(conf.to_dict(), now, parts_uri, sink), "rows long")
        return counts.agg(F.sum("rows")).first()[0] or 0


def spilled_once(spark: SparkSession, parts_uri: str) -> bool:
    """True when each partition's spill files come from one run of its task (see the module
    docstring): then no URL of the parts can repeat. A file named otherwise says False."""
    fs, path = storage.hadoop_fs(spark, parts_uri)
    names = [status.getPath().getName() for status in fs.listStatus(path)] if fs.exists(path) else []
    runs: dict[str, set[str]] = {}
    for name in (n for n in names if n.startswith("part-")):
        match = SPILL_NAME.fullmatch(name)
        if match is None:
            return False
        runs.setdefault(match[1], set()).add(match[2])
    return all(len(tags) == 1 for tags in runs.values())


def assemble(parts: DataFrame, may_repeat: bool = True) -> DataFrame:
    """One content row per URL (a retried task may have spilled a URL twice: keep the first).
    With ``may_repeat`` false (no partition ran twice: :func:`spilled_once`) the parts pass
    as they are. Otherwise looking for a repeated URL reads the url column only; the window
    that removes repeats shuffles every page's content, so it runs only when there is one."""
    if not may_repeat or parts.groupBy("url").count().filter("count > 1").limit(1).count() == 0:
        return parts
    first = Window.partitionBy("url").orderBy("fetched_at")
    return parts.withColumn("_n", F.row_number().over(first)).filter("_n = 1").drop("_n")


def _tally() -> list:
    """The fetch counters, taken as ``content`` is written: rows, bytes, rows per status."""
    status = F.col("fetch_status")
    return [F.count(F.lit(1)).alias("pages"), F.sum(F.length("content")).alias("bytes"),
            *(F.sum((status == s.value).cast("long")).alias(s.value) for s in FetchStatus)]


def by_status(tally: dict) -> dict[str, int]:
    """Rows per fetch status from the tally (statuses with rows only); rows whose status
    is none of FetchStatus are counted as ``other``, so the statuses add up to the rows."""
    counts = {s.value: tally[s.value] for s in FetchStatus if tally[s.value]}
    if tally["pages"] > sum(counts.values()):
        counts["other"] = tally["pages"] - sum(counts.values())
    return counts


def run_fetch(spark: SparkSession, conf: Conf, now: datetime, segment: str) -> dict:
    """Fetch segments/<segment>/fetchlist into segments/<segment>/content (resumable: a rerun
    fetches only the URLs without a spilled result; ``resumed`` says parts were found)."""
    from crawlkit.resume import SegmentStateError, is_abandoned

    crawl_dir = conf["crawl.dir"]
    if is_abandoned(spark, crawl_dir, segment):
        raise SegmentStateError(f"segment {segment} was abandoned (its URLs were released to "
                                "later segments): it is not fetched again")
    if not storage.segment_part_exists(spark, crawl_dir, segment, "fetchlist"):
        raise SegmentStateError(f"segment {segment} has no fetch list under "
                                f"{storage.segment_path(crawl_dir, segment, 'fetchlist')}")
    fetchlist = storage.read_segment_part(spark, crawl_dir, segment, "fetchlist", "fetchlist")
    parts_uri = storage.absolute(storage.segment_path(crawl_dir, segment, PARTS))
    resumed = _parts(spark, parts_uri) is not None
    fetched_now = fetch_remaining(spark, fetchlist, conf, now, parts_uri)
    content = assemble(_parts(spark, parts_uri), may_repeat=resumed or not spilled_once(spark, parts_uri))
    tally = storage.write_segment_part(content, crawl_dir, segment, "content", "content", *_tally())
    counters = {"segment": segment, "pages": tally["pages"], "bytes": tally["bytes"] or 0,
                "by_status": by_status(tally), "fetched_now": fetched_now, "resumed": resumed}
    storage.write_stats(spark, crawl_dir, segment, "fetch", counters)
    return counters
