"""parse: text, title and outlinks (with extended link metadata) of the fetched pages.

Runs crawlkit.parse.parse_document over Arrow batches of the segment's content. Outlinks are
normalized, filtered and unique per page here, on the executors, and content has one row per
URL, so a segment's parse holds each (page, target) link once: updatedb relies on it.
A page that cannot be parsed gets parse_status "failed" and its error; it never fails the job.
With ``fetcher.parse`` (the default) the fetch tasks parse each page as it arrives, with the
same :func:`row_parser`, and a round skips this stage (Nutch's ``fetcher.parse``); run alone,
it parses the segment again (after a parser change, say).
"""
from __future__ import annotations

from typing import Callable, Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from crawlkit import schemas, storage
from crawlkit.conf import Conf
from crawlkit.status import FetchStatus


def row_parser(conf: dict) -> Callable[[dict], dict]:
    """The parse of one content row (a dict of the content schema) into a parse row. Built
    once per task: it holds the URL normalizer and filter. The parse stage and a fetch task
    that parses (``fetcher.parse``) both call it, so the two give the same rows."""
    from crawlkit.parse import parse_document
    from crawlkit.urls import UrlFilter, UrlNormalizer

    urls_conf = {k[len("urls."):]: v for k, v in conf.items() if k.startswith("urls.")}
    normalizer, url_filter = UrlNormalizer(urls_conf), UrlFilter(urls_conf)
    options = dict(max_outlinks=conf["parser.max_outlinks"], max_text=conf["parser.max_text"],
                   backend=conf["parser.backend"], signature=conf["parser.signature"],
                   normalizer=normalizer)

    def parse_row(row: dict) -> dict:
        # a page reached through redirects followed inline (fetcher.follow_redirects) was
        # served from redirect_url: relative links resolve against it, as in a browser
        served_from = row["redirect_url"] or row["url"]
        result = parse_document(served_from, row["content"] or b"", row["content_type"],
                                dict(row["headers"] or []), **options)
        self_urls = {row["url"], served_from} if conf["parser.ignore_same_page_links"] else set()
        outlinks = []
        for link in result.get("outlinks") or []:
            url = link["url"]  # already normalized by the parser, with the [urls] rules
            if url_filter.check(url) or url in self_urls:
                continue
            outlinks.append({"url": url, "anchor": link.get("anchor") or None,
                             "nofollow": bool(link.get("nofollow")),
                             "meta": list((link.get("meta") or {}).items())})
        error = result.get("error")
        return {"url": row["url"], "parse_status": "failed" if error else "success",
                "title": result.get("title"), "text": result.get("text"),
                "signature": result.get("signature"), "digest": result.get("digest"), "outlinks": outlinks,
                "noindex": bool(result.get("noindex")), "nofollow": bool(result.get("nofollow")),
                "canonical": result.get("canonical"), "lang": result.get("lang"),
                "error": error, "segment": row["segment"]}
    return parse_row


def is_parsed(row: dict) -> bool:
    """Which content rows have a parse row: the pages fetched with a body."""
    return row["fetch_status"] == FetchStatus.SUCCESS.value and row["content"] is not None


def parse_totals(rows: list[dict]) -> dict[str, int]:
    """The parse stage's counters over parse rows (summed over tasks by a fetch that parses)."""
    return {"pages": len(rows), "failed": sum(r["parse_status"] == "failed" for r in rows),
            "outlinks": sum(len(r["outlinks"]) for r in rows)}


def _parse_batches(conf: dict):
    parse_row = row_parser(conf)
    arrow_schema = to_arrow_schema(schemas.struct("parse"))

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            rows = [parse_row(r) for r in batch.to_pylist()]
            if rows:
                yield pa.RecordBatch.from_pylist(rows, schema=arrow_schema)
    return run


def parse(content: DataFrame, conf: Conf) -> DataFrame:
    """Parse output for the successfully fetched pages of a content DataFrame."""
    pages = content.filter((F.col("fetch_status") == FetchStatus.SUCCESS.value) & F.col("content").isNotNull())
    return pages.mapInArrow(_parse_batches(conf.to_dict()), schemas.struct("parse"))


def run_parse(spark: SparkSession, conf: Conf, segment: str, fetched: dict | None = None) -> dict:
    """Parse segments/<segment>/content into segments/<segment>/parse. ``fetched`` is the
    fetch stage's counters: when its tasks already parsed the pages (``fetcher.parse``,
    counters ``parsed``), parse/ is written and this returns its counters without a job."""
    if fetched and fetched.get("parsed"):
        return fetched["parsed"]
    crawl_dir = conf["crawl.dir"]
    content = storage.read_segment_part(spark, crawl_dir, segment, "content", "content")
    totals = storage.write_segment_part(
        parse(content, conf), crawl_dir, segment, "parse", "parse",
        F.count(F.lit(1)).alias("pages"),
        F.sum(F.when(F.col("parse_status") == "failed", 1).otherwise(0)).alias("failed"),
        F.sum(F.size("outlinks")).alias("outlinks"))
    counters = {"segment": segment, "pages": totals["pages"], "failed": totals["failed"] or 0,
                "outlinks": totals["outlinks"] or 0}
    storage.write_stats(spark, crawl_dir, segment, "parse", counters)
    return counters
