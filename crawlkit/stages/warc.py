"""warc: a segment's fetched responses as WARC 1.1 files (ISO 28500), for archives and replay.

What Nutch's ``warc`` exporter and StormCrawler's WARC module write, from the segment's
``content`` part (nothing is fetched again):

* a ``warcinfo`` record opening every file: crawlkit's version, the segment, the operator
  (``warc.operator``), the User-Agent and whether robots.txt was obeyed;
* a ``response`` record for every URL a server answered (2xx, 3xx, 4xx, 5xx), its HTTP
  status line and headers rebuilt from what the fetcher kept, and its body. The fetcher keeps
  bodies inflated (gzip, br, ...), so the headers that describe the bytes on the wire,
  ``Content-Encoding``, ``Transfer-Encoding`` and ``Content-Length``, are kept renamed
  ``X-Crawlkit-Original-...`` and ``Content-Length`` is the stored body's, as StormCrawler's
  WARC writer does: a WARC reader then serves the payload as it is. A body the fetcher cut at
  ``fetcher.max_content`` is marked ``WARC-Truncated: length``, one it did not keep
  ``unspecified``;
* a ``revisit`` record (profile server-not-modified, headers only) for a 304;
* nothing for a URL no server answered (a timeout, a refused connection, robots.txt denial,
  a URL skipped): a WARC holds what was on the wire, and the crawldb keeps those outcomes.

One Spark task writes each partition of the content part as gzip-compressed files
``<warc.prefix>-<segment>-<partition>-<serial>.warc.gz`` (every record its own gzip member,
as readers expect), starting a new file past ``warc.max_file_bytes``. A file is written as
``_tmp-<name>`` and renamed whole. The segment's files from an earlier run are removed first
(by the driver, and by a task for its partition: a retried task), so a rerun replaces the
export instead of leaving stale files beside it. Counters go to the segment's
``_stats/warc.json``.
"""
from __future__ import annotations

import io
import json
import re
from http import HTTPStatus
from typing import Iterator

import pyarrow as pa
from pyspark.sql import SparkSession

import crawlkit
from crawlkit import storage
from crawlkit.conf import Conf, ConfError

WIRE_HEADERS = ("content-encoding", "transfer-encoding", "content-length")   # describe the bytes sent, not kept
ORIGINAL_PREFIX = "x-crawlkit-original-"
REVISIT_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
COLUMNS = ("url", "http_status", "fetched_at", "headers", "content", "truncated")
COUNTS_SCHEMA = pa.schema([("counters", pa.string())])


def http_headers(status: int, headers: dict[str, str] | None, body_length: int):
    """warcio's StatusAndHeaders for a response the fetcher kept: the status line (HTTP/1.1,
    the standard reason phrase), the headers in the fetcher's lower case, the wire-only ones
    renamed (module doc) and ``Content-Length`` the kept body's."""
    from warcio.statusandheaders import StatusAndHeaders

    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Unknown"
    pairs = []
    for name, value in sorted((headers or {}).items()):
        pairs.append((ORIGINAL_PREFIX + name if name in WIRE_HEADERS else name, value))
    if status != 304:
        pairs.append(("content-length", str(body_length)))
    return StatusAndHeaders(f"{status} {reason}", pairs, protocol="HTTP/1.1")


def warc_record(writer, row: dict):
    """The WARC record of one content row that has an HTTP status; None for one without."""
    status = row["http_status"]
    if status is None:
        return None
    date = row["fetched_at"].strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    headers = dict(row["headers"] or [])
    if status == 304:
        return writer.create_warc_record(
            row["url"], "revisit", http_headers=http_headers(status, headers, 0),
            warc_headers_dict={"WARC-Date": date, "WARC-Profile": REVISIT_NOT_MODIFIED})
    body = row["content"] or b""
    warc_headers = {"WARC-Date": date}
    if row["truncated"]:
        warc_headers["WARC-Truncated"] = "length"
    elif row["content"] is None and 200 <= status < 300:
        warc_headers["WARC-Truncated"] = "unspecified"   # answered with a body the fetcher did not keep
    return writer.create_warc_record(row["url"], "response", payload=io.BytesIO(body), length=len(body),
                                     http_headers=http_headers(status, headers, len(body)),
                                     warc_headers_dict=warc_headers)


class RollingWarcFiles:
    """WARC files of one partition: ``<stem>-<serial>.warc.gz`` under ``folder`` of
    ``fs`` (pyarrow), each opened by a warcinfo record, the next one begun once the current
    one has ``max_bytes``; each written as ``_tmp-<name>`` and renamed when closed."""

    def __init__(self, fs, folder: str, stem: str, max_bytes: int, info: dict):
        self.fs, self.folder, self.stem, self.max_bytes, self.info = fs, folder, stem, max_bytes, info
        self.serial, self.names, self.bytes = 0, [], 0
        self._out = self._writer = self._name = None

    def write(self, make_record) -> None:
        """Write the record ``make_record(writer)`` builds (None: nothing)."""
        if self._out is None:
            self._open()
        record = make_record(self._writer)
        if record is None:
            return
        self._writer.write_record(record)
        if self._out.tell() >= self.max_bytes:
            self.close()

    def _open(self) -> None:
        from warcio.warcwriter import WARCWriter

        self._name = f"{self.stem}-{self.serial:03d}.warc.gz"
        self.serial += 1
        # compression=None: pyarrow would gzip a ".gz" name a second time
        self._out = self.fs.open_output_stream(f"{self.folder}/_tmp-{self._name}", compression=None)
        self._writer = WARCWriter(self._out, gzip=True, warc_version="1.1")
        self._writer.write_record(self._writer.create_warcinfo_record(self._name, self.info))

    def close(self) -> None:
        if self._out is None:
            return
        self.bytes += self._out.tell()
        self._out.close()
        self.fs.move(f"{self.folder}/_tmp-{self._name}", f"{self.folder}/{self._name}")
        self.names.append(self._name)
        self._out = self._writer = None


def file_pattern(prefix: str, segment: str, partition: int | None = None) -> re.Pattern:
    """Names of the segment's WARC files (of one partition), finished or ``_tmp-``: the digit
    counts keep segment ``S`` from matching segment ``S-000001``'s files."""
    part = r"\d{5,}" if partition is None else f"{partition:05d}"
    return re.compile(rf"(?:_tmp-)?{re.escape(prefix)}-{re.escape(segment)}-{part}-\d{{3,}}\.warc\.gz")


def remove_earlier(fs, folder: str, pattern: re.Pattern) -> int:
    """Remove the files of ``folder`` whose names match ``pattern``; how many."""
    from pyarrow import fs as pafs

    removed = 0
    for info in fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True)):
        if pattern.fullmatch(info.base_name):
            fs.delete_file(info.path)
            removed += 1
    return removed


def _write_partition(folder_uri: str, prefix: str, segment: str, max_bytes: int, info: dict):
    """The mapInArrow task: the partition's content rows in, its WARC files written, one
    row of counters (JSON) out."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyarrow import fs as pafs
        from pyspark import TaskContext

        fs, folder = pafs.FileSystem.from_uri(folder_uri)
        fs.create_dir(folder, recursive=True)
        partition = TaskContext.get().partitionId()
        remove_earlier(fs, folder, file_pattern(prefix, segment, partition))   # a retried task's
        files = RollingWarcFiles(fs, folder, f"{prefix}-{segment}-{partition:05d}", max_bytes, info)
        counters = {"response": 0, "revisit": 0, "no_response": 0, "truncated": 0}
        for batch in batches:
            for row in batch.to_pylist():
                kind = "no_response" if row["http_status"] is None else \
                    "revisit" if row["http_status"] == 304 else "response"
                counters[kind] += 1
                if kind != "no_response":
                    counters["truncated"] += bool(row["truncated"])
                    files.write(lambda writer, row=row: warc_record(writer, row))
        files.close()
        counters.update(files=len(files.names), bytes=files.bytes)
        yield pa.RecordBatch.from_pylist([{"counters": json.dumps(counters)}], schema=COUNTS_SCHEMA)
    return run


def warcinfo(conf: Conf, segment: str) -> dict:
    """The warcinfo record's fields (WARC 1.1, annex of recommended fields)."""
    info = {"software": f"crawlkit/{crawlkit.__version__}", "format": "WARC File Format 1.1",
            "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
            "isPartOf": segment, "http-header-user-agent": conf["fetcher.user_agent"],
            "robots": "obey" if conf["fetcher.respect_robots"] else "ignore"}
    if conf["warc.operator"]:
        info["operator"] = conf["warc.operator"]
    return info


def run_warc(spark: SparkSession, conf: Conf, segment: str, out: str) -> dict:
    """Write ``segment``'s content as WARC files under ``out``; the counters."""
    from crawlkit.stages.fetch import executor_uri

    crawl_dir = conf["crawl.dir"]
    if not re.fullmatch(r"[A-Za-z0-9._-]+", conf["warc.prefix"]):
        raise ConfError(f"warc.prefix must be letters, digits, '.', '_' or '-' (a file name's start), "
                        f"got {conf['warc.prefix']!r}")
    if not storage.segment_part_exists(spark, crawl_dir, segment, "content"):
        raise SystemExit(f"crawlkit warc: segment {segment} has no content yet (fetch it first)")
    from pyarrow import fs as pafs

    folder_uri = executor_uri(spark, out)
    fs, folder = pafs.FileSystem.from_uri(folder_uri)
    removed = remove_earlier(fs, folder, file_pattern(conf["warc.prefix"], segment))
    content = storage.read_segment_part(spark, crawl_dir, segment, "content", "content").select(*COLUMNS)
    task = _write_partition(folder_uri, conf["warc.prefix"], segment, conf["warc.max_file_bytes"],
                            warcinfo(conf, segment))
    # a few rows per Arrow batch: a body may be fetcher.max_content bytes
    with storage.session_setting(spark, "spark.sql.execution.arrow.maxRecordsPerBatch", "64"):
        rows = content.mapInArrow(task, "counters string").collect()   # one row per task
    counters: dict = {"segment": segment, "out": out, "replaced_files": removed}
    for row in rows:
        for key, value in json.loads(row["counters"]).items():
            counters[key] = counters.get(key, 0) + value
    storage.write_stats(spark, crawl_dir, segment, "warc", counters)
    return counters

