"""One consistent view of a crawl: the crawldb at a version and the linkdb as it was then.

The crawldb and the linkdb are two Delta tables with their own version numbers. updatedb
commits the linkdb first (``linkdb:<segment>``) and the crawldb second (``updatedb:<segment>``),
so the linkdb that goes with crawldb version V is the newest append of a segment V had applied
(:func:`paired_link_version`), made explicit so that every view can say which linkdb version
it read. Pseudo-URLs (``crawlkit:``, e.g. OPIC's virtual page) are not web pages and are left
out of both tables here, so no count includes them.

Example::

    snap = snapshot(spark, "crawl", version=12)
    snap.crawldb.count(), snap.linkdb_version
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

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
    applied: frozenset[str] = frozenset()   # of those, the ones updatedb had applied (updatedb:<segment>)

    def versions(self) -> dict:
        return {"crawldb_version": self.crawldb_version, "linkdb_version": self.linkdb_version,
                "committed_at": self.committed_at}


def paired_link_version(crawldb_commits: list[dict], link_commits: list[dict], version: int) -> int | None:
    """The link table version that goes with crawldb ``version``: the newest append of a
    segment (``linkdb:<segment>``) whose updatedb commit (``updatedb:<segment>``) is at or
    before ``version``. By the commits' tags, not their times: Delta takes a commit's time from
    its log file's modification time, which a copy of the crawl directory (``cp -r``, a backup
    restored, an S3 copy) rewrites. Only the commits before the first append (the empty
    table's creation), and every commit of a table without such tags (an older crawl), are
    paired by time. Commits as ``storage.history`` gives them."""
    applied = storage.applied_segments(crawldb_commits, version)
    appends = {c["version"]: tag.removeprefix("linkdb:") for c in link_commits
               for tag in storage.tags_of(c["userMetadata"]) if tag.startswith("linkdb:")}
    committed_at = next(c["timestamp"] for c in crawldb_commits if c["version"] == version)
    first_append = min(appends, default=None)
    by_time = [c["version"] for c in link_commits     # the table's creation, before any append
               if c["timestamp"] <= committed_at and (first_append is None or c["version"] < first_append)]
    return max(by_time + [v for v, segment in appends.items() if segment in applied], default=None)


def snapshot(spark: SparkSession, crawl_dir: str, version: int | None = None) -> Snapshot:
    """The crawl at crawldb ``version`` (default: the latest); ValueError when there is no
    crawldb or no such version."""
    db_path, link_path = storage.crawldb_path(crawl_dir), storage.linkdb_path(crawl_dir)
    if not storage.is_delta(spark, db_path):
        raise ValueError(f"no crawldb under {crawl_dir}")
    commits = storage.history(spark, db_path)
    versions = [c["version"] for c in commits]
    version = versions[-1] if version is None else version
    if version not in versions:
        raise ValueError(f"crawldb version {version} does not exist (versions {versions[0]}..{versions[-1]})")
    committed_at = next(c["timestamp"] for c in commits if c["version"] == version)
    link_version = None
    if storage.is_delta(spark, link_path):
        link_version = paired_link_version(commits, storage.history(spark, link_path), version)
    crawldb = storage.read_table(spark, db_path, "crawldb", version)
    links = (linkdb.read_current(spark, crawl_dir, link_version) if link_version is not None
             else schemas.empty(spark, "links"))
    return Snapshot(
        crawldb=crawldb.filter(~F.col("url").startswith(VIRTUAL_PREFIX)),
        links=links.filter(~F.col("src").startswith(VIRTUAL_PREFIX) & ~F.col("dst").startswith(VIRTUAL_PREFIX)),
        crawldb_version=version, linkdb_version=link_version, committed_at=committed_at,
        generated=frozenset(storage.generated_segments(commits, version)),
        applied=frozenset(storage.applied_segments(commits, version)))
