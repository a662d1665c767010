"""One consistent view of a crawl: the crawldb at a version and the linkdb as it was then.

The crawldb and the linkdb are two Delta tables with their own version numbers. updatedb
commits the linkdb first and the crawldb second, so the linkdb that goes with crawldb version V
is the newest linkdb version committed no later than V: the commit timestamps in the two
tables' histories decide. This is Delta's ``timestampAsOf`` made explicit, so every view can
say which linkdb version it read. Pseudo-URLs (``crawlkit:``, e.g. OPIC's virtual page) are
not web pages and are left out of both tables here, so no count includes them.

Example::

    snap = snapshot(spark, "crawl", version=12)
    snap.crawldb.count(), snap.linkdb_version
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from crawlkit import linkdb, schemas, storage
from crawlkit.stages.generate import VIRTUAL_PREFIX


@dataclass(frozen=True)
class Snapshot:
    crawldb: DataFrame            # web pages only
    links: DataFrame              # links between web pages; empty when there was no linkdb yet
    crawldb_version: int
    linkdb_version: int | None    # None: no linkdb commit before the crawldb version
    committed_at: datetime        # commit time of the crawldb version
    generated: frozenset[str]     # segments generated at or before the version (generate:<segment> tags)

    def versions(self) -> dict:
        return {"crawldb_version": self.crawldb_version, "linkdb_version": self.linkdb_version,
                "committed_at": self.committed_at}


def _history(spark: SparkSession, path: str) -> dict[int, tuple[datetime, str | None]]:
    """version -> (commit time, userMetadata tag)."""
    rows = DeltaTable.forPath(spark, path).history().select("version", "timestamp", "userMetadata").collect()
    return {r["version"]: (r["timestamp"], r["userMetadata"]) for r in rows}


def paired_link_version(crawldb_history: dict, link_history: dict, version: int) -> int | None:
    """The link table version that goes with crawldb ``version``: the newest append of a
    segment (``linkdb:<segment>``) whose updatedb commit (``updatedb:<segment>``) is at or
    before ``version``. By the commits' tags, not their times: Delta takes a commit's time from
    its log file's modification time, which a copy of the crawl directory (``cp -r``, a backup
    restored, an S3 copy) rewrites. Only the commits before the first append (the empty
    table's creation), and every commit of a table without such tags (an older crawl), are
    paired by time."""
    applied = {tag.removeprefix("updatedb:") for v, (_, meta) in crawldb_history.items() if v <= version
               for tag in storage.tags_of(meta) if tag.startswith("updatedb:")}
    appends = {v: tag.removeprefix("linkdb:") for v, (_, meta) in link_history.items()
               for tag in storage.tags_of(meta) if tag.startswith("linkdb:")}
    committed_at = crawldb_history[version][0]
    first_append = min(appends, default=None)
    by_time = [v for v, (at, _) in link_history.items()     # the table's creation, before any append
               if at <= committed_at and (first_append is None or v < first_append)]
    return max(by_time + [v for v, segment in appends.items() if segment in applied], default=None)


def snapshot(spark: SparkSession, crawl_dir: str, version: int | None = None) -> Snapshot:
    """The crawl at crawldb ``version`` (default: the latest); ValueError when there is no
    crawldb or no such version."""
    db_path, link_path = storage.crawldb_path(crawl_dir), storage.linkdb_path(crawl_dir)
    if not storage.is_delta(spark, db_path):
        raise ValueError(f"no crawldb under {crawl_dir}")
    history = _history(spark, db_path)
    version = max(history) if version is None else version
    if version not in history:
        raise ValueError(f"crawldb version {version} does not exist (versions {min(history)}..{max(history)})")
    committed_at = history[version][0]
    generated = frozenset(tag.removeprefix(storage.GENERATE_TAG) for v, (_, tag) in history.items()
                          if v <= version and tag and tag.startswith(storage.GENERATE_TAG))
    link_version = None
    if storage.is_delta(spark, link_path):
        link_version = paired_link_version(history, _history(spark, link_path), version)
    crawldb = storage.read_table(spark, db_path, "crawldb", version)
    links = (linkdb.read_current(spark, crawl_dir, link_version) if link_version is not None
             else schemas.empty(spark, "links"))
    return Snapshot(
        crawldb=crawldb.filter(~F.col("url").startswith(VIRTUAL_PREFIX)),
        links=links.filter(~F.col("src").startswith(VIRTUAL_PREFIX) & ~F.col("dst").startswith(VIRTUAL_PREFIX)),
        crawldb_version=version, linkdb_version=link_version, committed_at=committed_at, generated=generated)
