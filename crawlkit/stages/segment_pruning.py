"""Segment pruning: delete the old segments nothing reads any more (part of ``crawlkit maintain``).

Every round writes a segment (fetch list, raw content, parse) and nothing removes it, so a
crawl that recrawls for months keeps a copy of every page it ever fetched. Nutch leaves this
to the operator (``rm`` a segment once indexed, or ``mergesegs``); here ``maintain`` does it
when ``maintain.keep_segments`` is N > 0, deleting a segment only when all of these hold:

* it is not one of the N newest segments (the latest rounds stay for ``inspect``, ``warc``
  and ``report``);
* it is settled: its round finished (``round.json``), or it was abandoned, or updatedb applied
  it and a newer segment was applied after it (the newest applied one may still be scored by
  a resumed round, which reads its content); and no crawldb row is locked by it (a segment
  generated and not applied is resumed from its fetch list);
* no page needs its parse: it holds neither a page's newest successful parse (the similarity
  scorer's corpus, ``scoring.job.crawled_texts``) nor the newest parse of the content the
  crawldb describes (what ``export`` indexes, ``export.pages``). A page refetched unchanged
  with a 304 keeps the segment of its last full fetch alive.

What is lost with a segment: its raw content (``crawlkit warc`` of it, ``inspect`` of its
pages), its rounds in ``report`` and ``evaluate``, and a rebuilt export of an old crawldb
version (``export --since-version`` without a saved state) for the pages it held.

A segment is first moved out of ``segments/`` into ``<crawl>/_pruning/`` (one rename: a
reader lists it whole or not at all), then deleted there; a run killed in between leaves it
in ``_pruning/``, which the next run empties first.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from crawlkit import segment_names, storage
from crawlkit.export.pages import INDEXABLE, parse_rows

PRUNING_DIR = "_pruning"


def needed_by_pages(crawldb: DataFrame, parses: DataFrame) -> DataFrame:
    """Segments (one ``segment`` column, distinct) that hold a page's newest successful parse,
    or the newest parse of the content its crawldb row describes (same URL and signature)."""
    order = segment_names.order_column(F.col("segment"))
    newest = parses.groupBy("url").agg(F.max_by("segment", order).alias("segment"))
    current = (crawldb.filter(F.col("status").isin(*INDEXABLE)).select("url", "signature").alias("db")
               .join(parses.alias("p"), on=(F.col("db.url") == F.col("p.url"))
                     & F.col("db.signature").eqNullSafe(F.col("p.signature")))
               .groupBy("db.url").agg(F.max_by("p.segment", order).alias("segment")))
    return newest.select("segment").union(current.select("segment")).distinct()


def settled(spark: SparkSession, crawl_dir: str, segments: list[str], locked: set[str]) -> list[str]:
    """Of ``segments`` (oldest first), those no round will read again (see the module doc)."""
    from crawlkit.resume import is_abandoned

    def has_stats(segment: str, stage: str) -> bool:
        return storage.path_exists(spark, storage.join(storage.segment_path(crawl_dir, segment), "_stats",
                                                       f"{stage}.json"))
    applied = [s for s in segments if has_stats(s, "updatedb")]
    newest_applied = applied[-1] if applied else None
    return [s for s in segments if s not in locked
            and (has_stats(s, "round") or is_abandoned(spark, crawl_dir, s)
                 or (s in applied and s != newest_applied))]


def locked_segments(crawldb: DataFrame) -> set[str]:
    """Segments that still lock crawldb rows (generated, not applied or abandoned)."""
    rows = crawldb.filter(F.col("generated_segment").isNotNull()).select("generated_segment").distinct().collect()
    return {r["generated_segment"] for r in rows}


def clear_pruning_dir(spark: SparkSession, crawl_dir: str) -> None:
    """Delete ``_pruning/``: at the start, what a killed run left there (segments already out
    of ``segments/``); at the end, the folder itself."""
    fs, path = storage.hadoop_fs(spark, storage.join(crawl_dir, PRUNING_DIR))
    fs.delete(path, True)


def remove_segment(spark: SparkSession, crawl_dir: str, segment: str) -> int:
    """Move ``segment`` out of ``segments/``, then delete it; the bytes it held."""
    fs, source = storage.hadoop_fs(spark, storage.segment_path(crawl_dir, segment))
    size = int(fs.getContentSummary(source).getLength())
    _, target = storage.hadoop_fs(spark, storage.join(crawl_dir, PRUNING_DIR, segment))
    fs.mkdirs(target.getParent())
    if not fs.rename(source, target):
        raise OSError(f"could not move segment {segment} to {storage.join(crawl_dir, PRUNING_DIR)}")
    fs.delete(target, True)
    return size


def prune_segments(spark: SparkSession, crawl_dir: str, keep: int) -> dict:
    """Delete the segments beyond the ``keep`` newest that are settled and that no page needs;
    counters: segments before, removed (names), kept_needed (old but needed), bytes_freed."""
    clear_pruning_dir(spark, crawl_dir)
    segments = storage.list_segments(spark, crawl_dir)
    old = segments[:-keep] if keep else []
    db_path = storage.crawldb_path(crawl_dir)
    if not old or not storage.is_delta(spark, db_path):
        return {"segments": len(segments), "removed": [], "kept_needed": 0, "bytes_freed": 0}
    crawldb = storage.read_table(spark, db_path, "crawldb")
    candidates = settled(spark, crawl_dir, old, locked_segments(crawldb))
    needed = {r["segment"] for r in needed_by_pages(crawldb, parse_rows(spark, crawl_dir)).collect()}
    removable = [s for s in candidates if s not in needed]
    freed = sum(remove_segment(spark, crawl_dir, s) for s in removable)
    clear_pruning_dir(spark, crawl_dir)
    return {"segments": len(segments), "removed": removable,
            "kept_needed": sum(s in needed for s in candidates), "bytes_freed": freed}
