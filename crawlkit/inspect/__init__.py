"""Reading a crawl directory for people: statistics, single pages, the history of rounds.

Every view starts from a :class:`Snapshot` (the crawldb at a version and the linkdb as it was
then) and returns small Python structures; :mod:`crawlkit.inspect.text` formats them for a
terminal, the CLI prints them as JSON with ``--json``, and :mod:`crawlkit.report` draws them.

Example::

    snap = snapshot(spark, "crawl")               # or version=12
    crawl_stats(snap, conf, now)["by_status"]     # {"fetched": 812, "unfetched": 4410, ...}
    top(snap, 10)[0]["url"]
    dump(snap, "http://example.com/")["inlinks"]["total"]
"""
from __future__ import annotations

from pyspark.sql import SparkSession

from crawlkit.inspect.pages import dump, top
from crawlkit.inspect.snapshot import Snapshot, snapshot
from crawlkit.inspect.stats import crawl_stats
from crawlkit.inspect.text import format_dump, format_stats, format_summary, format_top

__all__ = ["Snapshot", "counts_by_status", "crawl_stats", "dump", "format_dump", "format_stats",
           "format_summary", "format_top", "snapshot", "top", "top_pages"]


def counts_by_status(spark: SparkSession, crawl_dir: str, version: int | None = None) -> dict[str, int]:
    """URLs by crawldb status (web pages only), statuses in alphabetical order."""
    db = snapshot(spark, crawl_dir, version).crawldb
    return dict(sorted((r["status"], r["count"]) for r in db.groupBy("status").count().collect()))


def top_pages(spark: SparkSession, crawl_dir: str, n: int = 10, version: int | None = None) -> list[dict]:
    """:func:`top` of the crawl at ``version`` (default: the latest)."""
    return top(snapshot(spark, crawl_dir, version), n)
