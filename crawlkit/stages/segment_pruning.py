"""Segment pruning: cut old segments down to what is still read (part of ``crawlkit maintain``).

Every round writes a segment (fetch list, raw content, parse) and nothing removes it, so a
crawl that recrawls for months keeps a copy of every page it ever fetched. Nutch leaves this
to the operator (``rm`` a segment once indexed, or ``mergesegs``); here ``maintain`` does it
when ``maintain.keep_segments`` is N > 0, for each segment that is

* old: not one of the N newest (the latest rounds stay for ``inspect``, ``warc``, ``report``);
* settled: its round finished (``round.json``), it was abandoned, or updatedb applied it;
  and no round will read it: no crawldb row is locked by it (a segment generated and not
  applied is resumed from its fetch list), and it is not the one the crawldb's newest
  ``updatedb:`` commit names (a resumed round scores it, reading its content: resume.py).

Such a segment is deleted when no page needs a parse row of it, and otherwise cut down to
the rows pages need, its content and fetch list deleted (most old segments hold some page's
current parse while pages of every change rate are recrawled). A page needs a row when it is
the page's newest successful parse (the similarity scorer's corpus,
``scoring.job.crawled_texts``) or the newest parse of the content the crawldb describes for a
page, whatever its status (what ``export`` indexes once the page has content again,
``export.pages``: a ``duplicate`` dedup revives, a page in ``retry`` a 304 answers). A page refetched unchanged with a 304 keeps the row of its last full fetch.

What goes with a segment or its content: the raw content (``crawlkit warc`` of it,
``inspect`` of its pages), its round's fetch outcomes in ``report`` and ``evaluate``, and a
rebuilt export of an old crawldb version (``export --since-version`` without a saved state)
for the pages it held.

A pruning makes ``<crawl>/_pruning/`` when it begins and deletes it at its end. A segment or
part is moved there in one rename, then deleted; a cut-down parse is written beside its
segment and renamed in. After a killed pruning (``_pruning/`` left) the next ``maintain`` or
round first renames in the cut-down parse parts left complete beside an empty place, then
empties ``_pruning/``. Export and warc take no lock: ``maintain`` records each pruning and the
crawldb version it planned against before it deletes anything, and an export is refused at
its end (export/job.py) when a pruning ran while it did, is under way or was killed, or was
planned against a newer crawldb version than the export's: a page's parse as the export's
version describes it may be gone.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from crawlkit import schemas, segment_names, storage
from crawlkit.export.pages import parse_rows

PRUNING_DIR = "_pruning"


@dataclass(frozen=True)
class Plan:
    segments: int              # segments before
    removable: list[str]       # to delete, oldest first
    slim: list[str]            # to cut down to the parse rows pages need
    kept_needed: int           # old and settled, kept (whole or slimmed) for a page's parse
    crawldb_version: int | None   # the crawldb version the pages' needs were read at
    needed: DataFrame | None = None   # (url, segment) of the parse rows the slim segments keep


def needed_parses(crawldb: DataFrame, parses: DataFrame) -> DataFrame:
    """(url, segment) of the parse rows pages need: a page's newest successful parse, and the
    newest parse of the content its crawldb row describes (same URL and signature), whatever
    the row's status: a ``duplicate`` dedup revives, a page in ``retry`` or ``gone`` that a
    later 304 makes ``not_modified`` keep their content's signature."""
    order = segment_names.order_column(F.col("segment"))
    newest = parses.groupBy("url").agg(F.max_by("segment", order).alias("segment"))
    current = (crawldb.select("url", "signature").alias("db")
               .join(parses.alias("p"), on=(F.col("db.url") == F.col("p.url"))
                     & F.col("db.signature").eqNullSafe(F.col("p.signature")))
               .groupBy(F.col("db.url").alias("url")).agg(F.max_by("p.segment", order).alias("segment")))
    return newest.unionByName(current).distinct()


def last_applied(spark: SparkSession, crawl_dir: str, applied: list[str]) -> set[str]:
    """The segments a resumed round may still score: the one the crawldb's newest
    ``updatedb:`` commit names (resume.py reads the same; a segment applied late by hand is
    it, whatever its name), and the newest of ``applied`` (those with ``updatedb.json``, by
    name: where the history no longer reaches back to an updatedb)."""
    db_path = storage.crawldb_path(crawl_dir)
    commits = storage.recent_history(spark, db_path,
                                     lambda cs: any(t.startswith("updatedb:") for t in storage.tags_in(cs)))
    tags = [t for c in commits for t in storage.tags_of(c["userMetadata"]) if t.startswith("updatedb:")]
    by_history = {tags[-1].split(":", 1)[1]} if tags else set()
    return by_history | set(applied[-1:])


def settled(spark: SparkSession, crawl_dir: str, candidates: list[str], applied: set[str], locked: set[str],
            protected: set[str]) -> list[str]:
    """Of ``candidates`` (oldest first), those no round will read again (see the module doc)."""
    from crawlkit.resume import is_abandoned
    return [s for s in candidates if s not in locked and s not in protected
            and (s in applied or storage.has_stats(spark, crawl_dir, s, "round")
                 or is_abandoned(spark, crawl_dir, s))]


def locked_segments(crawldb: DataFrame) -> set[str]:
    """Segments that still lock crawldb rows (generated, not applied or abandoned)."""
    rows = crawldb.filter(F.col("generated_segment").isNotNull()).select("generated_segment").distinct().collect()
    return {r["generated_segment"] for r in rows}


def clear_pruning_dir(spark: SparkSession, crawl_dir: str) -> None:
    """Delete ``_pruning/``, which a pruning makes when it begins: its being there says a
    pruning runs, or was killed (``interrupted``)."""
    fs, path = storage.hadoop_fs(spark, storage.join(crawl_dir, PRUNING_DIR))
    fs.delete(path, True)


def interrupted(spark: SparkSession, crawl_dir: str) -> bool:
    """Whether a pruning is under way or was killed (an export refuses to finish then)."""
    return storage.path_exists(spark, storage.join(crawl_dir, PRUNING_DIR))


def finish_interrupted(spark: SparkSession, crawl_dir: str) -> None:
    """After a pruning that was killed: rename in the cut-down parse parts it left complete
    beside an empty place (a reader would take the segment for one without pages), then
    delete what it had moved out. Run by ``maintain`` and at a round's start (both hold the
    crawl directory's lock)."""
    if interrupted(spark, crawl_dir):
        finish_parse_rewrites(spark, crawl_dir, storage.list_segments(spark, crawl_dir))
        clear_pruning_dir(spark, crawl_dir)


def remove_segment(spark: SparkSession, crawl_dir: str, segment: str) -> int:
    """Move ``segment`` out of ``segments/``, then delete it; the bytes it held."""
    return _delete_moved(spark, storage.segment_path(crawl_dir, segment), storage.join(crawl_dir, PRUNING_DIR, segment))


def _delete_moved(spark: SparkSession, path: str, pruning_path: str) -> int:
    """Move ``path`` (if there) into ``_pruning/`` in one rename, then delete it; its bytes."""
    fs, source = storage.hadoop_fs(spark, path)
    if not fs.exists(source):
        return 0
    size = int(fs.getContentSummary(source).getLength())
    _, target = storage.hadoop_fs(spark, pruning_path)
    fs.mkdirs(target.getParent())
    if not fs.rename(source, target):
        raise OSError(f"could not move {path} to {pruning_path}")
    fs.delete(target, True)
    return size


def plan_pruning(spark: SparkSession, crawl_dir: str, keep: int) -> Plan:
    """Of the settled segments beyond the ``keep`` newest: those no page needs (removable),
    and those holding more than the parse rows pages need (slim)."""
    finish_interrupted(spark, crawl_dir)
    segments = storage.list_segments(spark, crawl_dir)
    old = segments[:-keep] if keep else []
    db_path = storage.crawldb_path(crawl_dir)
    if not old or not storage.is_delta(spark, db_path):
        return Plan(len(segments), [], [], 0, None)
    version = storage.table_version(spark, db_path)
    crawldb = storage.read_table(spark, db_path, "crawldb", version)
    applied = [s for s in segments if storage.has_stats(spark, crawl_dir, s, "updatedb")]
    candidates = settled(spark, crawl_dir, old, set(applied), locked_segments(crawldb),
                         last_applied(spark, crawl_dir, applied))
    needed = needed_parses(crawldb, parse_rows(spark, crawl_dir))
    kept_rows = {r["segment"]: r["count"] for r in needed.groupBy("segment").count().collect()}
    rows = _parse_rows_by_segment(spark, crawl_dir, [s for s in candidates if s in kept_rows])
    slim = [s for s in candidates if s in kept_rows
            and (rows.get(s, 0) > kept_rows[s] or _has_part(spark, crawl_dir, s, "content")
                 or _has_part(spark, crawl_dir, s, "fetchlist"))]
    return Plan(len(segments), [s for s in candidates if s not in kept_rows], slim,
                sum(s in kept_rows for s in candidates), version,
                needed.filter(F.col("segment").isin(slim)).localCheckpoint() if slim else None)


def _parse_rows_by_segment(spark: SparkSession, crawl_dir: str, segments: list[str]) -> dict[str, int]:
    paths = [storage.segment_path(crawl_dir, s, "parse") for s in segments
             if storage.segment_part_exists(spark, crawl_dir, s, "parse")]
    if not paths:
        return {}
    counted = spark.read.schema(schemas.struct("parse")).parquet(*paths).groupBy("segment").count().collect()
    return {r["segment"]: r["count"] for r in counted}


def _has_part(spark: SparkSession, crawl_dir: str, segment: str, part: str) -> bool:
    return storage.path_exists(spark, storage.segment_path(crawl_dir, segment, part))


def slim_segment(spark: SparkSession, crawl_dir: str, segment: str, needed: DataFrame) -> int:
    """Cut ``segment`` to the parse rows ``needed`` names (its parse rewritten beside and
    renamed into place), then delete its content and fetch list; the bytes freed."""
    fs, path = storage.hadoop_fs(spark, storage.segment_path(crawl_dir, segment))
    before = int(fs.getContentSummary(path).getLength())
    parse = storage.read_segment_part(spark, crawl_dir, segment, "parse", "parse")
    keep = needed.filter(F.col("segment") == segment).select("url")
    storage.write_segment_part(parse.filter(F.col("parse_status") == "success").join(keep, "url", "left_semi"),
                               crawl_dir, segment, "parse", "parse")
    for part in ("content", "fetchlist"):
        _delete_moved(spark, storage.segment_path(crawl_dir, segment, part),
                      storage.join(crawl_dir, PRUNING_DIR, segment, part))
    return before - int(fs.getContentSummary(path).getLength())


def finish_parse_rewrites(spark: SparkSession, crawl_dir: str, segments: list[str]) -> None:
    """A run killed inside a parse rewrite's delete-and-rename left the complete new part
    beside the segment (``.parse.writing``) and none in place: rename it in."""
    for segment in segments:
        staging = storage.join(storage.segment_path(crawl_dir, segment), ".parse.writing")
        if (storage.path_exists(spark, storage.join(staging, "_SUCCESS"))
                and not storage.path_exists(spark, storage.segment_path(crawl_dir, segment, "parse"))):
            storage.move_into_place(spark, staging, storage.segment_path(crawl_dir, segment, "parse"))


def prune(spark: SparkSession, crawl_dir: str, plan: Plan) -> dict:
    """Delete and slim the plan's segments; counters: segments before, removed and slimmed
    (names), kept_needed (old but needed), bytes_freed."""
    fs, marker = storage.hadoop_fs(spark, storage.join(crawl_dir, PRUNING_DIR))
    fs.mkdirs(marker)   # under way (``interrupted``) until the end
    freed = sum(remove_segment(spark, crawl_dir, s) for s in plan.removable)
    freed += sum(slim_segment(spark, crawl_dir, s, plan.needed) for s in plan.slim)
    clear_pruning_dir(spark, crawl_dir)
    return {"segments": plan.segments, "removed": plan.removable, "slimmed": plan.slim,
            "kept_needed": plan.kept_needed, "bytes_freed": freed, "crawldb_version": plan.crawldb_version}


def prune_segments(spark: SparkSession, crawl_dir: str, keep: int) -> dict:
    """plan_pruning, then prune (``maintain`` records the plan in between)."""
    return prune(spark, crawl_dir, plan_pruning(spark, crawl_dir, keep))
