"""The baseline of an incremental export: what the index holds before the increment is loaded.

Every export writes a ``state/`` part: the records the index holds once it has loaded that
export (and the exports it was based on). An incremental export compares with

* ``--since-export DIR``: the state of that complete export;
* ``--since-version V``: the state of the newest complete export of crawldb version V in the
  same format under ``<crawl>/exports/``;
* when no such export has a state (exports made before states existed), V's records rebuilt
  from the crawldb at V (Delta time travel) and the parse rows of the segments V had applied.
  This is only an approximation of what was sent (the counters say ``"baseline": "rebuilt"``):
  pages whose segments were deleted since are missing from it.

Example::

    base = resolve(spark, conf, version=9, since_version=7, since_export=None, rebuild=build)
    base.records, base.since_version, base.source
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

from pyspark.sql import DataFrame, SparkSession

from crawlkit import schemas, storage
from crawlkit.export.pages import parse_rows

MANIFEST = "_export.json"
STATE = "state"
REBUILT = "rebuilt"


@dataclass(frozen=True)
class Baseline:
    records: DataFrame    # boosts schema: what the index holds
    since_version: int    # crawldb version of the baseline export (or of the rebuild)
    source: str           # the export directory read, or REBUILT


def manifest(spark: SparkSession, directory: str) -> dict | None:
    """The counters of a complete export in ``directory``, None when there is none."""
    text = storage.read_text(spark, storage.join(directory, MANIFEST))
    try:
        return None if text is None else json.loads(text)
    except json.JSONDecodeError:
        return None


def has_state(spark: SparkSession, directory: str) -> bool:
    return storage.path_exists(spark, storage.join(directory, STATE, "_SUCCESS"))


def read_state(spark: SparkSession, directory: str) -> DataFrame:
    return spark.read.schema(schemas.struct("boosts")).parquet(storage.join(directory, STATE))


def from_export(spark: SparkSession, directory: str, version: int) -> Baseline:
    """The state of the export in ``directory``; ValueError when it is not a complete export
    with a state, or describes a crawldb version newer than ``version``."""
    counters = manifest(spark, directory)
    if counters is None:
        raise ValueError(f"--since-export {directory}: not a complete export (no {MANIFEST})")
    if not has_state(spark, directory):
        raise ValueError(f"--since-export {directory}: the export has no state/ part (made by an older "
                         f"crawlkit); use --since-version {counters.get('crawl_version')} or a full export")
    if counters["crawl_version"] > version:
        raise ValueError(f"--since-export {directory} is of crawldb version {counters['crawl_version']}, "
                         f"newer than the crawldb version {version}")
    return Baseline(read_state(spark, directory), counters["crawl_version"], directory)


def newest_export_of(spark: SparkSession, crawl_dir: str, fmt: str, version: int) -> str | None:
    """The newest (by manifest time) complete export with a state of crawldb ``version`` in
    format ``fmt`` under ``<crawl>/exports/``; hidden directories are unfinished swaps."""
    fs, hpath = storage.hadoop_fs(spark, storage.join(crawl_dir, "exports"))
    if not fs.exists(hpath):
        return None
    found = []
    for status in fs.listStatus(hpath):
        name = status.getPath().getName()
        directory = storage.join(crawl_dir, "exports", name)
        if not status.isDirectory() or name.startswith("."):
            continue
        counters = manifest(spark, directory)
        if (counters and counters.get("format") == fmt and counters.get("crawl_version") == version
                and has_state(spark, directory)):
            mf, mpath = storage.hadoop_fs(spark, storage.join(directory, MANIFEST))
            found.append((mf.getFileStatus(mpath).getModificationTime(), name, directory))
    return max(found)[2] if found else None


def applied_by(commits: list[dict], version: int) -> Callable[[str], bool]:
    """Whether a segment's parse belongs to crawldb ``version``: its ``updatedb:<segment>``
    commit is at or before it. A segment no commit names (its commits are older than the
    history Delta keeps, or it was written by hand) is older than every kept version: kept."""
    applied = storage.applied_segments(commits, version)
    named = {segment for stage, _, segment in (tag.partition(":") for tag in storage.tags_in(commits))
             if stage in ("generate", "updatedb")}
    return lambda segment: segment in applied or segment not in named


def check_readable(spark: SparkSession, db_path: str, version: int) -> None:
    """ValueError, before anything is written, when time travel to ``version`` would fail."""
    reason = storage.unreadable_version(spark, db_path, "crawldb", version)
    if reason is not None:
        raise ValueError(f"crawldb version {version} is no longer readable ({reason}); run a full export")


def rebuilt(spark: SparkSession, crawl_dir: str, version: int,
            rebuild: Callable[[int, DataFrame], DataFrame]) -> Baseline:
    """``version``'s records rebuilt by ``rebuild(version, parse rows)`` from the segments
    that version had applied (today's newer parses of unchanged content are left out)."""
    db_path = storage.crawldb_path(crawl_dir)
    check_readable(spark, db_path, version)
    keep = applied_by(storage.history(spark, db_path), version)
    return Baseline(rebuild(version, parse_rows(spark, crawl_dir, keep)), version, REBUILT)


def resolve(spark: SparkSession, crawl_dir: str, fmt: str, version: int, since_version: int | None,
            since_export: str | None, rebuild: Callable[[int, DataFrame], DataFrame]) -> Baseline:
    """The baseline named by ``--since-export`` or ``--since-version`` (module docstring)."""
    if since_export is not None:
        return from_export(spark, since_export, version)
    found = newest_export_of(spark, crawl_dir, fmt, since_version)
    if found is not None:
        return Baseline(read_state(spark, found), since_version, found)
    return rebuilt(spark, crawl_dir, since_version, rebuild)
