"""fetch: every URL of a fetch list comes out with a fetch status (nothing dropped).

Each Spark task takes one partition of the fetch list (whole hosts, see generate) and runs
crawlkit.fetch.fetch_partition over it: a thread pool with per-host queues, robots.txt and
politeness. Rows travel as Arrow batches (``mapInArrow``), so there is no per-row Python UDF
overhead. Fetch parallelism = partitions x fetcher.threads.

Resumable: tasks spill their results every ``fetcher.spill_seconds`` (or ``fetcher.spill_rows``
results) into ``content_parts/`` of the segment
(each file written under a temporary name, then renamed, so a killed task leaves no torn
file). A rerun after a crash fetches only the URLs that have no result yet; the stage ends
by making ``content/`` of the parts, one row per URL.

A URL can be spilled twice only when its partition ran more than once (a retried task, a
speculative copy, a resubmitted stage) or a rerun resumed earlier parts. A spill file's name
holds the partition and a tag unique to the task's run. In a round where no partition ran
twice and nothing was resumed (the usual case) the parts hold each URL once, so they *are*
``content/``: the folder is renamed (copied by Spark on object stores, :data:`CHEAP_RENAME`),
and the counters come from the tasks. Otherwise the parts are read, repeated URLs dropped,
and ``content/`` written by Spark.

With ``fetcher.parse`` each task also parses its pages as they arrive (the parse stage's
:func:`~crawlkit.stages.parse.row_parser`) and spills their parse rows to ``parse_parts/``
under the same file names, parse file first. When the parts become ``content/`` by a rename
and the two folders hold the same names, ``parse_parts/`` becomes ``parse/`` the same way and
the counters say ``parsed``: the round's parse stage has nothing left to do. Else the parse
parts are dropped and the parse stage parses ``content/`` as before.

A task that ends with more than one spill file merges them into one (``fetcher.merge_spills``,
parse and content alike), so a renamed ``content/`` holds one file per task, not one per
spill: spills are small on the real web (a task waiting on polite hosts saves a few pages
every ``spill_seconds``), and thousands of small files a segment weigh on HDFS and on every
reader of the segment. A killed task leaves its spills as they are, to be resumed from.
"""
from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections import Counter
from contextlib import contextmanager
from datetime import datetime
from typing import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from crawlkit import schemas, storage
from crawlkit.conf import Conf, ConfError
from crawlkit.paths import scheme_of
from crawlkit.progress import ProgressSink, fetch_progress
from crawlkit.stages.generate import partition_by_host
from crawlkit.status import FetchStatus

log = logging.getLogger(__name__)
PARTS = "content_parts"
PARSE_PARTS = "parse_parts"
SPILL_NAME = re.compile(r"part-p(\d+)-([0-9a-f]{12})-\d+\.parquet")  # partition, run of the task
MERGE_GROUP_BYTES = 64 << 20   # row-group size of a task's merged spill file (memory: ~ this + one spill)


def _to_batch(rows: list[dict], schema: pa.Schema) -> pa.RecordBatch:
    columns = {name: [row.get(name) for row in rows] for name in schema.names}
    columns["headers"] = [list(h.items()) if h else None for h in columns["headers"]]
    return pa.RecordBatch.from_pydict(columns, schema=schema)


@contextmanager
def _written_as(fs, directory: str, name: str) -> Iterator[str]:
    """The path to write the spill file ``name`` of ``directory`` to: a ``_tmp-`` file, moved
    to ``name`` once the block has written it whole, so that a reader of the parts (or a
    resumed fetch) never sees half a file."""
    tmp = f"{directory}/_tmp-{name}"
    yield tmp
    fs.move(tmp, f"{directory}/{name}")


def _fetch_and_spill(conf: dict, now: datetime, parts_uri: str, progress: ProgressSink | None,
                     parse_parts_uri: str | None = None, ends_at: float | None = None):
    """The per-partition task: fetch, spill results to parts_uri (and, given
    ``parse_parts_uri``, parse each page and spill its parse row there under the same name),
    yield the task's counters as one JSON row (:func:`_task_counters`); report progress to
    ``progress`` (crawlkit.progress) when given. The schemas are resolved here, on the
    driver: executors may not have the schemas/ folder."""
    schema = to_arrow_schema(schemas.struct("content"))
    parse_schema = to_arrow_schema(schemas.struct("parse"))

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet as pq
        from pyarrow import fs as pafs
        from pyspark import TaskContext

        from crawlkit.fetch import FetchStats, fetch_partition
        from crawlkit.stages.parse import is_parsed, parse_totals, row_parser

        filesystem, folder = pafs.FileSystem.from_uri(parts_uri)
        filesystem.create_dir(folder, recursive=True)
        parse_folder = None
        if parse_parts_uri is not None:
            parse_row = row_parser(conf)
            parse_fs, parse_folder = pafs.FileSystem.from_uri(parse_parts_uri)
            parse_fs.create_dir(parse_folder, recursive=True)
        context = TaskContext.get()   # None when called outside Spark (the benchmarks' in-process runs)
        task = f"p{context.partitionId() if context else 0:05d}-{uuid.uuid4().hex[:12]}"  # see SPILL_NAME
        buffer: list[dict] = []
        parsed: list[dict] = []
        totals = _no_counters()
        chunk, last = 0, time.monotonic()
        spill_rows, spill_seconds = conf["fetcher.spill_rows"], conf["fetcher.spill_seconds"]

        def write(fs, directory, name, table):
            with _written_as(fs, directory, name) as tmp:
                pq.write_table(table, tmp, filesystem=fs)

        def merge(fs, directory, names, name, file_schema):
            """The files ``names`` of ``directory`` rewritten as one file, ``name``, in row
            groups of ~MERGE_GROUP_BYTES."""
            with _written_as(fs, directory, name) as tmp, \
                    pq.ParquetWriter(tmp, file_schema, filesystem=fs) as writer:
                group, size = [], 0
                for spilled in names:
                    table = pq.read_table(f"{directory}/{spilled}", filesystem=fs, schema=file_schema)
                    group.append(table)
                    size += table.nbytes
                    if size >= MERGE_GROUP_BYTES:
                        writer.write_table(pa.concat_tables(group))
                        group, size = [], 0
                if group:
                    writer.write_table(pa.concat_tables(group))

        def spill_name(number: int) -> str:   # see SPILL_NAME
            return f"part-{task}-{number:05d}.parquet"

        def merge_spills() -> str:
            """One file per task instead of one per spill (module doc). The merged file takes
            the next spill number, so it still names this run of the task; parse first, as in
            ``spill``. A failure before the spills are gone leaves URLs twice under one run's
            name, but a failed task is run again (or the fetch resumed), and then the parts
            are assembled, which drops repeated URLs. Returns the merged file's name."""
            names = [spill_name(i) for i in range(chunk)]
            merged = spill_name(chunk)
            if parse_folder is not None:
                merge(parse_fs, parse_folder, names, merged, parse_schema)
            merge(filesystem, folder, names, merged, schema)
            for name in names:
                filesystem.delete_file(f"{folder}/{name}")
                if parse_folder is not None:
                    parse_fs.delete_file(f"{parse_folder}/{name}")
            return merged

        def spill():
            nonlocal chunk, last, buffer, parsed
            name = spill_name(chunk)
            if parse_folder is not None:   # first: a content file is the mark of a URL done
                write(parse_fs, parse_folder, name, pa.Table.from_pylist(parsed, schema=parse_schema))
                totals["parse"].update(parse_totals(parsed))
            write(filesystem, folder, name, pa.Table.from_batches([_to_batch(buffer, schema)]))
            totals["rows"] += len(buffer)
            totals["bytes"] += sum(len(r["content"]) for r in buffer if r.get("content") is not None)
            totals["by_status"].update(r["fetch_status"] for r in buffer)
            chunk, last, buffer, parsed = chunk + 1, time.monotonic(), [], []

        saved = _saved_urls(filesystem, folder, context.partitionId() if context else 0)
        totals["retried"] = bool(saved)   # then the parts are assembled: see run_fetch
        rows = (row for batch in batches for row in batch.to_pylist() if row["url"] not in saved)
        stats = FetchStats()
        results = fetch_partition(rows, conf, now, stats, ends_at)
        for result in (results if progress is None else progress.follow(results, stats)):
            buffer.append(result)
            if parse_folder is not None and is_parsed(result):
                parsed.append(parse_row(result))
            if len(buffer) >= spill_rows or time.monotonic() - last >= spill_seconds:
                spill()
        if buffer:
            spill()
        if conf["fetcher.merge_spills"] and chunk > 1:
            totals["files"] = [merge_spills()]
        else:
            totals["files"] = [spill_name(i) for i in range(chunk)]
        yield pa.RecordBatch.from_pydict({"counters": [json.dumps(totals)]},
                                         schema=pa.schema([("counters", pa.string())]))
    return run


def _saved_urls(filesystem, folder: str, partition: int) -> set[str]:
    """URLs whose results an earlier attempt of this task saved (its spill files, named by
    the partition): when Spark runs a task again (an executor lost or preempted), the new
    attempt fetches only what the old one had not saved, instead of asking the same hosts
    for the same pages again. A first attempt finds no such file."""
    import pyarrow.parquet as pq
    from pyarrow import fs as pafs

    prefix = f"part-p{partition:05d}-"
    files = [info.path for info in filesystem.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
             if info.base_name.startswith(prefix)]
    return {url for path in files
            for url in pq.read_table(path, columns=["url"], filesystem=filesystem).column("url").to_pylist()}


def _no_counters() -> dict:
    """A task's counters before its first spill: rows, bytes, by_status, (when it parses)
    parse, the names of the content files it left (the driver checks it sees them), and
    whether it found an earlier attempt's files (then it counted only what it fetched)."""
    return {"rows": 0, "bytes": 0, "by_status": Counter(), "parse": Counter(), "files": [],
            "retried": False}


def _task_counters(rows) -> dict:
    """The tasks' counters summed (see :func:`_no_counters`)."""
    total = _no_counters()
    for row in rows:
        task = json.loads(row["counters"])
        total["rows"] += task["rows"]
        total["bytes"] += task["bytes"]
        total["by_status"].update(task["by_status"])
        total["parse"].update(task["parse"])
        total["files"] += task["files"]
        total["retried"] = total["retried"] or task["retried"]
    return total


# URI schemes pyarrow's FileSystem.from_uri opens (pyarrow 26); s3a://, s3n://, wasbs://,
# dbfs:/ and the like it does not, though Hadoop may (docs/cluster.md, "crawl directory").
ARROW_SCHEMES = frozenset({"file", "s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss"})


def executor_uri(spark: SparkSession, path: str) -> str:
    """``path`` as the fetch tasks open it (storage.absolute), refused when pyarrow cannot
    open it on the executors: before anything is fetched, and (the CLI asks before generate,
    round and crawl) before URLs are locked in a segment no fetch could write."""
    return check_executor_scheme(storage.absolute(spark, path), path)


def check_executor_scheme(uri: str, given: str | None = None) -> str:
    """``uri`` if pyarrow opens its scheme, else a ConfError naming ``given`` (the crawl dir)."""
    scheme = scheme_of(uri) or "file"
    if scheme not in ARROW_SCHEMES:
        raise ConfError(f"crawl.dir {given or uri!r} resolves to {scheme}:, which the fetch tasks cannot "
                        f"write (they spill with pyarrow, which opens {', '.join(sorted(ARROW_SCHEMES))}); "
                        "on S3 use s3:// with spark.hadoop.fs.s3.impl="
                        "org.apache.hadoop.fs.s3a.S3AFileSystem (docs/cluster.md)")
    return uri


def spill_uri(spark: SparkSession, crawl_dir: str, segment: str, part: str) -> str:
    """Where the fetch tasks spill a segment's ``part`` (:func:`executor_uri`)."""
    return executor_uri(spark, storage.segment_path(crawl_dir, segment, part))


def check_no_speculation(setting: str) -> None:
    """Refuse ``spark.speculation``: a speculative copy of a slow fetch task (and polite
    tasks are slow by design) would ask the same hosts for the same pages at the same time."""
    if setting.strip().lower() == "true":
        raise ConfError("spark.speculation is on: a speculative copy of a fetch task would fetch "
                        "its hosts a second time, at once (one task owns each host: docs/cluster.md); "
                        "turn it off for crawlkit's jobs")


def _check_visible(spark: SparkSession, parts_uri: str, written: list[str]) -> None:
    """Refuse to publish a fetch whose tasks wrote files the driver cannot see: executors and
    driver then do not share ``parts_uri`` (each executor's own disk), and publishing would
    apply a segment without its pages."""
    unseen = sorted(set(written) - _part_names(spark, parts_uri))
    if unseen:
        from crawlkit.resume import SegmentStateError
        raise SegmentStateError(
            f"the fetch tasks wrote {len(unseen)} result files that the driver does not find under "
            f"{parts_uri} (e.g. {unseen[0]}): the executors and the driver do not share that "
            "filesystem; give crawl.dir as a URI all of them open (hdfs://, s3://: docs/cluster.md)")


def _parts(spark: SparkSession, parts_uri: str) -> DataFrame | None:
    if not storage.path_exists(spark, parts_uri):
        return None
    return spark.read.schema(schemas.struct("content")).parquet(parts_uri)


def fetch_remaining(spark: SparkSession, fetchlist: DataFrame, conf: Conf, now: datetime, parts_uri: str,
                    parse_parts_uri: str | None = None) -> dict:
    """Fetch the fetch-list URLs that have no spilled result yet (and parse them, given
    ``parse_parts_uri``); returns the counters of what was fetched now (:func:`_task_counters`)."""
    done = _parts(spark, parts_uri)
    todo = fetchlist if done is None else fetchlist.join(done.select("url"), on="url", how="left_anti")
    partitions = conf["generate.partitions"] or spark.sparkContext.defaultParallelism
    limit = conf["fetcher.time_limit"]
    ends_at = time.time() + limit if limit > 0 else None   # the stage's, not each task's
    with fetch_progress(spark, "fetch", todo) as sink:
        tasks = partition_by_host(todo, partitions).mapInArrow(
            _fetch_and_spill(conf.to_dict(), now, parts_uri, sink, parse_parts_uri, ends_at), "counters string")
        return _task_counters(tasks.collect())


def _part_names(spark: SparkSession, parts_uri: str) -> set[str]:
    """The spill files of a parts folder (not the ``_tmp-`` files of unfinished spills)."""
    fs, path = storage.hadoop_fs(spark, parts_uri)
    names = [status.getPath().getName() for status in fs.listStatus(path)] if fs.exists(path) else []
    return {n for n in names if n.startswith("part-")}


def spilled_once(spark: SparkSession, parts_uri: str) -> bool:
    """True when each partition's spill files come from one run of its task (see the module
    docstring): then no URL of the parts can repeat. A file named otherwise says False."""
    return _one_run_each(_part_names(spark, parts_uri))


def _one_run_each(names: set[str]) -> bool:
    runs: dict[str, set[str]] = {}
    for name in names:
        match = SPILL_NAME.fullmatch(name)
        if match is None:
            return False
        runs.setdefault(match[1], set()).add(match[2])
    return all(len(tags) == 1 for tags in runs.values())


def assemble(parts: DataFrame) -> DataFrame:
    """One content row per URL (a retried task may have spilled a URL twice: keep the first).
    Parts known to hold each URL once (:func:`spilled_once`) are renamed instead, see
    :func:`run_fetch`. Looking for a repeated URL reads the url column only; the window that
    removes repeats shuffles every page's content, so it runs only when there is one."""
    if parts.groupBy("url").count().filter("count > 1").limit(1).count() == 0:
        return parts
    first = Window.partitionBy("url").orderBy("fetched_at")
    return parts.withColumn("_n", F.row_number().over(first)).filter("_n = 1").drop("_n")


def _tally() -> list:
    """The fetch counters, taken as ``content`` is written: rows, bytes, rows per status."""
    status = F.col("fetch_status")
    return [F.count(F.lit(1)).alias("pages"), F.sum(F.length("content")).alias("bytes"),
            *(F.sum((status == s.value).cast("long")).alias(s.value) for s in FetchStatus)]


def _content_counters(tally: dict) -> dict:
    """pages, bytes and by_status of the fetch counters, from a :func:`_tally`."""
    return {"pages": tally["pages"], "bytes": tally["bytes"] or 0, "by_status": by_status(tally)}


NOT_REQUESTED = (FetchStatus.SKIPPED, FetchStatus.ROBOTS_DENIED, FetchStatus.BLOCKED)


def requested(task_counters: dict) -> int:
    """The URLs a fetch asked their servers for: its rows but those answered without a
    request (skipped by the time limit or a host's pause, denied by robots.txt, refused by the
    address guard). Crawl-and-stop counts these (``crawl.max_pages``): a round whose URLs were
    mostly skipped has not crawled them."""
    return task_counters["rows"] - sum(task_counters["by_status"][s.value] for s in NOT_REQUESTED)


def by_status(tally: dict) -> dict[str, int]:
    """Rows per fetch status from the tally (statuses with rows only); rows whose status
    is none of FetchStatus are counted as ``other``, so the statuses add up to the rows."""
    counts = {s.value: tally[s.value] for s in FetchStatus if tally[s.value]}
    if tally["pages"] > sum(counts.values()):
        counts["other"] = tally["pages"] - sum(counts.values())
    return counts


# Filesystems where renaming a folder is one metadata operation; on object stores (s3, gs)
# it is a copy of every file, one by one from the driver, so a Spark job copies instead.
CHEAP_RENAME = frozenset({"file", "hdfs", "viewfs", "abfs", "abfss", "ofs", "o3fs"})


def renames_cheaply(uri: str) -> bool:
    return (uri.split("://", 1)[0] if "://" in uri else "file").lower() in CHEAP_RENAME


def _publish(spark: SparkSession, parts_uri: str, crawl_dir: str, segment: str, table: str) -> None:
    """Make a parts folder the segment part ``table`` (content or parse): rename it into
    place, marked complete (``_SUCCESS``, what :func:`storage.segment_part_exists` checks),
    where that is cheap; else copy it with Spark and drop the parts."""
    part_uri = storage.absolute(spark, storage.segment_path(crawl_dir, segment, table))
    if not renames_cheaply(parts_uri):
        parts = spark.read.schema(schemas.struct(table)).parquet(parts_uri)
        storage.write_segment_part(parts, crawl_dir, segment, table, table)
        _drop(spark, parts_uri)
        return
    fs, success = storage.hadoop_fs(spark, storage.join(parts_uri, "_SUCCESS"))
    fs.create(success, True).close()
    storage.move_into_place(spark, parts_uri, part_uri)


def _drop(spark: SparkSession, uri: str) -> None:
    fs, path = storage.hadoop_fs(spark, uri)
    fs.delete(path, True)


def _counters_file(spark: SparkSession, path: str) -> dict | None:
    """A stage's counters, or None when the file is missing or unreadable (written by an
    older crawlkit in place and cut by a kill: torn, or failing its checksum): then they are
    counted again."""
    try:
        text = storage.read_text(spark, path)
        return None if text is None else json.loads(text)
    except Exception:  # noqa: BLE001 - JSON, or Hadoop's checksum error through Py4J
        log.warning("%s is unreadable: counting again", path)
        return None


def _finished_earlier(spark: SparkSession, crawl_dir: str, segment: str) -> dict | None:
    """The counters of a fetch that already published ``content/`` by renaming its parts
    (no parts left to resume from), with nothing fetched now; None if there is none."""
    if not storage.segment_part_exists(spark, crawl_dir, segment, "content"):
        return None
    stats = _counters_file(spark, storage.join(storage.segment_path(crawl_dir, segment), "_stats", "fetch.json"))
    if stats is None:      # died between the rename and the stats: count content/ again
        content = storage.read_segment_part(spark, crawl_dir, segment, "content", "content")
        counters = {"segment": segment, **_content_counters(content.agg(*_tally()).first().asDict()),
                    "parsed": None}
        storage.write_stats(spark, crawl_dir, segment, "fetch", counters)   # once, not every rerun
    else:
        counters = stats
    parsed = counters.get("parsed")
    if parsed and not storage.segment_part_exists(spark, crawl_dir, segment, "parse"):
        parsed = None
    return {**counters, "parsed": parsed, "fetched_now": 0, "resumed": True}


def run_fetch(spark: SparkSession, conf: Conf, now: datetime, segment: str) -> dict:
    """Fetch segments/<segment>/fetchlist into segments/<segment>/content (resumable: a rerun
    fetches only the URLs without a spilled result; ``resumed`` says parts were found). With
    ``fetcher.parse``, ``parsed`` holds the parse counters when parse/ was written too."""
    from crawlkit.resume import SegmentStateError, is_abandoned

    crawl_dir = conf["crawl.dir"]
    check_no_speculation(spark.sparkContext.getConf().get("spark.speculation", "false"))
    if is_abandoned(spark, crawl_dir, segment):
        raise SegmentStateError(f"segment {segment} was abandoned (its URLs were released to "
                                "later segments): it is not fetched again")
    if not storage.segment_part_exists(spark, crawl_dir, segment, "fetchlist"):
        raise SegmentStateError(f"segment {segment} has no fetch list under "
                                f"{storage.segment_path(crawl_dir, segment, 'fetchlist')}")
    parts_uri = spill_uri(spark, crawl_dir, segment, PARTS)
    parse_parts_uri = spill_uri(spark, crawl_dir, segment, PARSE_PARTS)
    resumed = _parts(spark, parts_uri) is not None
    if not resumed and (earlier := _finished_earlier(spark, crawl_dir, segment)) is not None:
        return earlier
    fetchlist = storage.read_segment_part(spark, crawl_dir, segment, "fetchlist", "fetchlist")
    # a resumed fetch assembles content/ from two runs' parts: its pages are parsed by the stage
    parse_now = conf["fetcher.parse"] and not resumed
    now_counters = fetch_remaining(spark, fetchlist, conf, now, parts_uri, parse_parts_uri if parse_now else None)
    _check_visible(spark, parts_uri, now_counters["files"])
    counters = {"segment": segment, "fetched_now": requested(now_counters), "resumed": resumed,
                "parsed": None}
    if not resumed and not now_counters["retried"] and _one_run_each(names := _part_names(spark, parts_uri)):
        # the parts hold each URL once, and the tasks counted them: rename, do not assemble
        # (a task Spark ran again may have found its lost attempt's files, even a merged file
        # beside the spills it was deleting, under one run's name: then assemble and count)
        if parse_now and _part_names(spark, parse_parts_uri) == names:
            _publish(spark, parse_parts_uri, crawl_dir, segment, "parse")
            counters["parsed"] = {"segment": segment, "pages": 0, "failed": 0, "outlinks": 0,
                                  **now_counters["parse"]}
            storage.write_stats(spark, crawl_dir, segment, "parse", counters["parsed"])
        _publish(spark, parts_uri, crawl_dir, segment, "content")
        tally = {"pages": now_counters["rows"], "bytes": now_counters["bytes"],
                 **{st.value: now_counters["by_status"][st.value] for st in FetchStatus}}
    else:
        content = assemble(_parts(spark, parts_uri))
        tally = storage.write_segment_part(content, crawl_dir, segment, "content", "content", *_tally())
        _drop(spark, parts_uri)       # content/ holds them now: a rerun finds a finished fetch
    counters.update(_content_counters(tally))
    _drop(spark, parse_parts_uri)     # published, or left to the parse stage
    storage.write_stats(spark, crawl_dir, segment, "fetch", counters)
    return counters
