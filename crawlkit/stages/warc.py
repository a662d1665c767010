"""warc: a segment's fetched responses as WARC 1.1 files (ISO 28500), for archives and replay.

What Nutch's ``warc`` exporter and StormCrawler's WARC module write, from the segment's
``content`` part (nothing is fetched again):

* a ``warcinfo`` record opening every file: crawlkit's version, the segment, the operator
  (``warc.operator``), the User-Agent and whether robots.txt was obeyed; every other record
  names it in ``WARC-Warcinfo-ID``;
* a ``response`` record for every URL a server answered in full (2xx, 3xx, 4xx, 5xx), its HTTP
  status line and headers rebuilt from what the fetcher kept, and its body. The fetcher keeps
  bodies inflated (gzip, br, ...), so the headers that describe the bytes on the wire,
  ``Content-Encoding``, ``Transfer-Encoding`` and ``Content-Length``, are kept renamed
  ``X-Crawlkit-Original-...`` and ``Content-Length`` is the stored body's, as StormCrawler's
  WARC writer does: a WARC reader then serves the payload as it is. A body the fetcher cut at
  ``fetcher.max_content`` is marked ``WARC-Truncated: length``, one it did not keep
  ``unspecified``. Header values are written as UTF-8 bytes, a repeated X-Robots-Tag (kept
  joined by newlines) as one line per value;
* a ``revisit`` record (profile server-not-modified, headers only) for a 304;
* nothing for a URL no server answered (a timeout, a refused connection, robots.txt denial,
  a URL skipped) nor for an answer that broke off after its headers (a reset, the page
  deadline: ``incomplete``): a WARC holds what was on the wire, and the crawldb keeps those
  outcomes.

A response reached through redirects the fetcher followed (``fetcher.follow_redirects``) is
recorded under the URL that sent it, the last hop; the hops before it are not kept.

One Spark task writes each partition of the content part as gzip-compressed files
``<warc.prefix>-<segment>-<run>-<partition>-<serial>.warc.gz`` (every record its own gzip
member, as readers expect), starting a new file past ``warc.max_file_bytes``; ``<run>`` is
a random id of the run. A file is written as ``_tmp-<name>`` and renamed
whole. Only once the job succeeded does the driver remove the segment's files of earlier runs
(and any ``_tmp-``), so a rerun replaces the export, and a failed one leaves the earlier export
whole (its own files removed, or left for the next run to remove). Counters go to the
segment's ``_stats/warc.json``.
"""
from __future__ import annotations

import io
import json
import re
import uuid
from http import HTTPStatus
from typing import Iterator

import pyarrow as pa
from pyspark.sql import SparkSession
from warcio.statusandheaders import StatusAndHeaders

import crawlkit
from crawlkit import storage
from crawlkit.conf import Conf, ConfError
from crawlkit.paths import scheme_of
from crawlkit.status import FetchStatus

WIRE_HEADERS = ("content-encoding", "transfer-encoding", "content-length")   # describe the bytes sent, not kept
ORIGINAL_PREFIX = "x-crawlkit-original-"
REVISIT_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
COLUMNS = ("url", "fetch_status", "http_status", "fetched_at", "headers", "content", "truncated",
           "redirect_url", "error")
COUNTS_SCHEMA = pa.schema([("counters", pa.string())])
# outcomes that are a server's whole answer; a retry is one only without an error (a 5xx, a 429:
# the server's own answer), not when the transfer failed after the headers (a reset, a deadline)
ANSWERED = frozenset(s.value for s in (
    FetchStatus.SUCCESS, FetchStatus.NOT_MODIFIED, FetchStatus.REDIRECT_PERM, FetchStatus.REDIRECT_TEMP,
    FetchStatus.NOT_FOUND, FetchStatus.GONE, FetchStatus.ACCESS_DENIED, FetchStatus.UNSUPPORTED_TYPE))
REDIRECTS = frozenset((FetchStatus.REDIRECT_PERM.value, FetchStatus.REDIRECT_TEMP.value))
LINE_BREAKS = re.compile(r"[\r\n]+")
RUN_ID = r"[0-9a-f]{12}"   # a run's id: 12 characters, never the 6 digits of a segment's -NNNNNN suffix


class HttpHead(StatusAndHeaders):
    """A status line and headers written as the fetcher read them: warcio's own writer
    percent-encodes a non-ASCII value (``/café`` -> ``/caf%C3%A9``), which breaks a Location or
    a Set-Cookie. Values go out as UTF-8, which the fetcher read first (http.py ``_as_utf8``)
    and warcio's reader decodes first, so a reader gets the fetcher's value back."""

    def compute_headers_buffer(self, header_filter=None):
        lines = [f"{self.protocol} {self.statusline}"]
        for header in self.headers:
            header = header_filter(header) if header_filter else header
            if header:
                lines.append(": ".join(header))
        self.headers_buff = "\r\n".join(lines).encode("utf-8") + b"\r\n\r\n"


def header_lines(value: str | None) -> list[str]:
    """A kept header value as header lines: one per line of it (the fetcher joins a repeated
    Set-Cookie or X-Robots-Tag with newlines: http.py ``LINE_PER_VALUE``), empty ones
    dropped, so no CR or LF ends the header early."""
    return [line.strip() for line in LINE_BREAKS.split(value or "") if line.strip()]


def http_headers(status: int, headers: dict[str, str] | None, body_length: int) -> HttpHead:
    """The status line (HTTP/1.1, the standard reason phrase) and headers of a response the
    fetcher kept: the headers in the fetcher's lower case, the wire-only ones renamed (module
    doc) and ``Content-Length`` the kept body's."""
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Unknown"
    pairs = []
    for name, value in sorted((headers or {}).items()):
        name = ORIGINAL_PREFIX + name if name in WIRE_HEADERS else name
        pairs.extend((name, line) for line in header_lines(value))
    if status != 304:
        pairs.append(("content-length", str(body_length)))
    return HttpHead(f"{status} {reason}", pairs, protocol="HTTP/1.1")


def record_kind(row: dict) -> str:
    """What a content row is in the WARC: ``response``, ``revisit`` (a 304), or no record:
    ``no_response`` (no server answered) or ``incomplete`` (the answer broke off after its
    headers; the row keeps the status, not the body)."""
    if row["http_status"] is None:
        return "no_response"
    if not answered(row):
        return "incomplete"
    return "revisit" if row["http_status"] == 304 else "response"


def answered(row: dict) -> bool:
    """Whether a row with a status holds the whole answer (``ANSWERED``)."""
    return row["fetch_status"] in ANSWERED or (row["fetch_status"] == FetchStatus.RETRY.value and not row["error"])


def target_uri(row: dict) -> str:
    """The URL that sent the row's response: after redirects the fetcher followed, the last
    hop's, which a row whose answer is no redirect keeps as ``redirect_url``. (A redirect keeps
    its Location there instead: its record goes under the row's URL.)"""
    if row["redirect_url"] and row["fetch_status"] not in REDIRECTS:
        return row["redirect_url"]
    return row["url"]


def body_missing(status: int, headers: dict[str, str]) -> bool:
    """Whether a response without a kept body had one: not a 1xx, 204 or 304, nor a
    ``Content-Length: 0``."""
    return not (100 <= status < 200 or status in (204, 304)) and headers.get("content-length") != "0"


def warc_record(writer, row: dict):
    """The WARC record of one content row; None for a row that is none (:func:`record_kind`)."""
    kind = record_kind(row)
    if kind not in ("response", "revisit"):
        return None
    uri, status = target_uri(row), row["http_status"]
    warc_headers = {"WARC-Date": row["fetched_at"].strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
    headers = dict(row["headers"] or [])
    if kind == "revisit":
        warc_headers.update({"WARC-Profile": REVISIT_NOT_MODIFIED, "WARC-Refers-To-Target-URI": uri})
        return writer.create_warc_record(uri, "revisit", http_headers=http_headers(status, headers, 0),
                                         warc_headers_dict=warc_headers)
    body = row["content"] or b""
    if row["truncated"]:
        warc_headers["WARC-Truncated"] = "length"
    elif row["content"] is None and body_missing(status, headers):
        warc_headers["WARC-Truncated"] = "unspecified"   # answered with a body the fetcher did not keep
    return writer.create_warc_record(uri, "response", payload=io.BytesIO(body), length=len(body),
                                     http_headers=http_headers(status, headers, len(body)),
                                     warc_headers_dict=warc_headers)


class RollingWarcFiles:
    """WARC files of one partition: ``<stem>-<serial>.warc.gz`` under ``folder`` of
    ``fs`` (pyarrow), each opened by a warcinfo record, the next one begun once the current
    one has ``max_bytes``; each written as ``_tmp-<name>`` and renamed when closed."""

    def __init__(self, fs, folder: str, stem: str, max_bytes: int, info: dict):
        self.fs, self.folder, self.stem, self.max_bytes, self.info = fs, folder, stem, max_bytes, info
        self.serial, self.names, self.bytes = 0, [], 0
        self._out = self._writer = self._name = self._info_id = None

    def write(self, make_record) -> None:
        """Write the record ``make_record(writer)`` builds (None: nothing), naming the file's
        warcinfo record (WARC-Warcinfo-ID, as Heritrix and Common Crawl do)."""
        if self._out is None:
            self._open()
        record = make_record(self._writer)
        if record is None:
            return
        record.rec_headers.add_header("WARC-Warcinfo-ID", self._info_id)
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
        info = self._writer.create_warcinfo_record(self._name, self.info)
        self._info_id = info.rec_headers.get_header("WARC-Record-ID")
        self._writer.write_record(info)

    def close(self) -> None:
        if self._out is None:
            return
        self.bytes += self._out.tell()
        self._out.close()
        self.fs.move(f"{self.folder}/_tmp-{self._name}", f"{self.folder}/{self._name}")
        self.names.append(self._name)
        self._out = self._writer = None


def new_run() -> str:
    """A run's id in its file names: 12 random hex digits (the stages read no clock but
    ``--now``, which two runs may share)."""
    return uuid.uuid4().hex[:12]


def file_pattern(prefix: str, segment: str, run: str | None = None, partition: int | None = None) -> re.Pattern:
    """Names of the segment's WARC files (of one run, of one partition), finished or ``_tmp-``:
    the run id's fixed length keeps segment ``S`` from matching segment ``S-000001``'s files."""
    runs = RUN_ID if run is None else re.escape(run)
    part = r"\d{5,}" if partition is None else f"{partition:05d}"
    return re.compile(rf"(?:_tmp-)?{re.escape(prefix)}-{re.escape(segment)}-{runs}-{part}-\d{{3,}}\.warc\.gz")


def remove_files(fs, folder: str, pattern: re.Pattern, keep: re.Pattern | None = None) -> int:
    """Remove the files of ``folder`` whose names match ``pattern`` and not ``keep``; how many."""
    from pyarrow import fs as pafs

    removed = 0
    for info in fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True)):
        if (info.type == pafs.FileType.File and pattern.fullmatch(info.base_name)
                and not (keep and keep.fullmatch(info.base_name))):
            fs.delete_file(info.path)
            removed += 1
    return removed


def _write_partition(folder_uri: str, prefix: str, segment: str, run: str, max_bytes: int, info: dict):
    """The mapInArrow task: the partition's content rows in, its WARC files written, one
    row of counters (JSON) out."""

    def run_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyarrow import fs as pafs
        from pyspark import TaskContext

        fs, folder = pafs.FileSystem.from_uri(folder_uri)
        fs.create_dir(folder, recursive=True)
        partition = TaskContext.get().partitionId()
        remove_files(fs, folder, file_pattern(prefix, segment, run, partition))   # a retried task's
        files = RollingWarcFiles(fs, folder, f"{prefix}-{segment}-{run}-{partition:05d}", max_bytes, info)
        counters = dict.fromkeys(("response", "revisit", "no_response", "incomplete", "truncated", "redirected"), 0)
        for batch in batches:
            for row in batch.to_pylist():
                kind = record_kind(row)
                counters[kind] += 1
                if kind in ("response", "revisit"):
                    counters["truncated"] += bool(row["truncated"])
                    counters["redirected"] += target_uri(row) != row["url"]
                    files.write(lambda writer, row=row: warc_record(writer, row))
        files.close()
        counters.update(files=len(files.names), bytes=files.bytes)
        yield pa.RecordBatch.from_pylist([{"counters": json.dumps(counters)}], schema=COUNTS_SCHEMA)
    return run_task


def warcinfo(conf: Conf, segment: str) -> dict:
    """The warcinfo record's fields (WARC 1.1, annex of recommended fields)."""
    info = {"software": f"crawlkit/{crawlkit.__version__}", "format": "WARC File Format 1.1",
            "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
            "isPartOf": segment, "http-header-user-agent": conf["fetcher.user_agent"],
            "robots": "obey" if conf["fetcher.respect_robots"] else "ignore"}
    if conf["warc.operator"]:
        info["operator"] = conf["warc.operator"]
    return info


def check_no_speculation(spark: SparkSession) -> None:
    """Refuse ``spark.speculation``, as fetch does (for another reason): a speculative copy of
    a task removes the partition's files of its run when it starts, the first copy's too."""
    from crawlkit.stages import fetch

    try:
        fetch.check_no_speculation(spark.sparkContext.getConf().get("spark.speculation", "false"))
    except ConfError:
        raise ConfError("spark.speculation is on: a speculative copy of a warc task would remove the "
                        "files the first copy wrote; turn it off for crawlkit's jobs") from None


def out_uri(spark: SparkSession, crawl_dir: str, out: str) -> str:
    """``out`` as the tasks open it with pyarrow; refused when pyarrow cannot open its scheme,
    or when it is in the crawl's segments folder, where every stage would take it for the
    newest segment."""
    from crawlkit.stages.fetch import ARROW_SCHEMES, executor_uri

    try:
        uri = executor_uri(spark, out)
    except ConfError:
        raise ConfError(f"--out {out!r} is a {scheme_of(storage.absolute(spark, out))}: location, which the warc tasks cannot write "
                        f"(they write with pyarrow, which opens {', '.join(sorted(ARROW_SCHEMES))}); "
                        "on S3 use s3:// (docs/cluster.md)") from None
    segments = storage.qualified(spark, storage.join(crawl_dir, "segments")).rstrip("/")
    try:
        where = storage.qualified(spark, uri).rstrip("/")
    except Exception:   # a scheme Hadoop has no filesystem for: not where the crawl is
        where = uri
    if where == segments or where.startswith(segments + "/"):
        raise ConfError(f"--out {out!r} is inside the crawl's segments folder {segments}, where every stage "
                        "would take it for the newest segment: write the WARC files elsewhere")
    return uri


def run_warc(spark: SparkSession, conf: Conf, segment: str, out: str) -> dict:
    """Write ``segment``'s content as WARC files under ``out``, then remove the segment's
    files of earlier runs there (module doc); the counters."""
    from pyarrow import fs as pafs

    crawl_dir, prefix = conf["crawl.dir"], conf["warc.prefix"]
    if not re.fullmatch(r"[A-Za-z0-9._-]+", prefix):
        raise ConfError(f"warc.prefix must be letters, digits, '.', '_' or '-' (a file name's start), "
                        f"got {prefix!r}")
    check_no_speculation(spark)
    folder_uri = out_uri(spark, crawl_dir, out)
    if not storage.segment_part_exists(spark, crawl_dir, segment, "content"):
        raise SystemExit(f"crawlkit warc: segment {segment} has no content yet (fetch it first)")
    fs, folder = pafs.FileSystem.from_uri(folder_uri)
    run = new_run()
    content = storage.read_segment_part(spark, crawl_dir, segment, "content", "content").select(*COLUMNS)
    task = _write_partition(folder_uri, prefix, segment, run, conf["warc.max_file_bytes"], warcinfo(conf, segment))
    try:
        # a few rows per Arrow batch: a body may be fetcher.max_content bytes
        with storage.session_setting(spark, "spark.sql.execution.arrow.maxRecordsPerBatch", "64"):
            rows = content.mapInArrow(task, "counters string").collect()   # one row per task
    except Exception:
        remove_files(fs, folder, file_pattern(prefix, segment, run))   # the earlier export stays whole
        raise
    removed = remove_files(fs, folder, file_pattern(prefix, segment), keep=file_pattern(prefix, segment, run))
    counters: dict = {"segment": segment, "out": out, "replaced_files": removed}
    for row in rows:
        for key, value in json.loads(row["counters"]).items():
            counters[key] = counters.get(key, 0) + value
    storage.write_stats(spark, crawl_dir, segment, "warc", counters)
    return counters
