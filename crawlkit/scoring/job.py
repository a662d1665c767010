"""The scoring job: run one scorer over the crawl and write its result into the crawldb.

One Delta MERGE per run updates, for every page the scorer scored, ``scores[name]``, the
ordering score ``score`` (the combiner over the whole ``scores`` map) and the scorer's own
state columns (OPIC's cash, history, last_processed), so a crash leaves either the old or
the new crawldb, never a half-scored one. The commit is tagged ``score-<name>:<segment>``:

* incremental scorers (OPIC) move each segment's cash **exactly once**: a rerun whose tag is
  already in the crawldb's history is a no-op (``counters["skipped"] = 1``);
* global scorers (PageRank, HITS, ...) recompute everything from the link table each time,
  so a rerun just writes the same values again (the tag is ``score-<name>:all`` without a
  segment).

Example::

    counters = run_scoring(spark, "crawl", conf, now, segment="20240101120000")
"""
from __future__ import annotations

import logging
import time
from dataclasses import replace
from datetime import datetime

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from crawlkit import schemas, storage
from crawlkit.conf import Conf
from crawlkit.scoring.base import VIRTUAL_URL, Scorer, ScoringContext, combine, get_scorer
from crawlkit.scoring.focus.query import load_query
from crawlkit.scoring.focus.state import HOT_LINK, focus_state
from crawlkit.scoring.opic import PROCESSED_FETCH_STATUSES, virtual_page_row

log = logging.getLogger(__name__)


def processed_pages(spark: SparkSession, crawl_dir: str, segment: str) -> DataFrame:
    """URLs the segment processed: fetched (or found unchanged, or redirected)."""
    content = storage.read_segment_part(spark, crawl_dir, segment, "content", "content")
    return (content.filter(F.col("fetch_status").isin(*PROCESSED_FETCH_STATUSES))
            .select("url").distinct())


def crawled_texts(spark: SparkSession, crawl_dir: str, upto: str | None) -> DataFrame:
    """(url, title, text) of every page parsed so far, the latest parse of each (idf input)."""
    segments = [s for s in storage.list_segments(spark, crawl_dir) if upto is None or s <= upto]
    frames = [storage.read_segment_part(spark, crawl_dir, s, "parse", "parse")
              for s in segments if storage.segment_part_exists(spark, crawl_dir, s, "parse")]
    if not frames:
        return spark.createDataFrame([], "url string, title string, text string")
    parsed = frames[0]
    for frame in frames[1:]:
        parsed = parsed.unionByName(frame)
    latest = (parsed.filter(F.col("parse_status") == "success")
              .groupBy("url").agg(F.max_by(F.struct("title", "text"), F.col("segment")).alias("p")))
    return latest.select("url", F.col("p.title").alias("title"), F.col("p.text").alias("text"))


def run_scoring(spark: SparkSession, crawl_dir: str, conf: Conf, now: datetime,
                segment: str | None = None, scorer: str | Scorer | None = None,
                focus_step: bool = True) -> dict:
    """Score the crawl with ``scorer`` (default ``scoring.scorer``) and MERGE the result.

    In a focused crawl the focus step (hot pages, hot_distance) joins the MERGE unless
    ``focus_step`` is false: a round's further scorers leave it to its main one.
    Returns counters: scorer, tag, pages (rows updated), skipped, seconds, and for PageRank
    the engine and iterations.
    """
    started = time.monotonic()
    impl = get_scorer(scorer or conf["scoring.scorer"]) if not hasattr(scorer, "score") else scorer
    name = impl.name
    if impl.needs_segment and not segment:
        raise ValueError(f"scorer {name!r} moves state per segment: pass the segment to score")
    tag = f"score-{name}:{segment or 'all'}"
    db_path = storage.crawldb_path(crawl_dir)
    counters = {"scorer": name, "tag": tag, "pages": 0, "skipped": 0}
    if impl.needs_segment and storage.was_applied(spark, db_path, tag):
        log.info("%s already applied: nothing to do", tag)
        counters["skipped"] = 1
        return counters

    crawldb = storage.read_table(spark, db_path, "crawldb")
    link_path = storage.linkdb_path(crawl_dir)
    links = (storage.read_table(spark, link_path, "links") if storage.is_delta(spark, link_path)
             else schemas.empty(spark, "links"))
    processed = processed_pages(spark, crawl_dir, segment) if segment else None
    query = load_query(conf)
    needs_texts = name == "similarity" or query.enabled or getattr(impl, "needs_texts", False)
    texts = crawled_texts(spark, crawl_dir, segment) if needs_texts else None
    ctx = ScoringContext(spark, conf, now, crawldb=crawldb, links=links, processed=processed,
                         texts=texts, segment=segment)
    if query.enabled and focus_step:  # focused crawl: hot pages and hot_distance, in the same commit
        ctx = replace(ctx, focus=focus_state(ctx, query))
    result = impl.score(ctx)

    counters["pages"] = merge_scores(spark, db_path, crawldb, result, impl, conf, tag, ctx.focus)
    last = getattr(impl, "last_result", None)
    if last is not None:
        counters.update(engine=last.engine, iterations=last.iterations, delta=last.delta)
    counters["seconds"] = round(time.monotonic() - started, 3)
    if segment:
        storage.write_stats(spark, crawl_dir, segment, f"score-{name}", counters)
    return counters


def round_scorers(conf: Conf) -> list[str]:
    """The scorers a round runs: ``scoring.scorer``, then every other metric the next fetch
    list reads (``generate.interleave``, ``scoring.combine``)."""
    from crawlkit.stages.interleave import interleaved_metrics

    main = conf["scoring.scorer"]
    needed = dict.fromkeys([*interleaved_metrics(conf), *conf["scoring.combine"]])
    return [main, *(name for name in needed if name not in ("score", main))]


def run_round_scoring(spark: SparkSession, crawl_dir: str, conf: Conf, now: datetime,
                      segment: str | None = None) -> dict:
    """A round's scoring: each of :func:`round_scorers` in its own tagged MERGE.

    Each MERGE recomputes ``score`` from the whole ``scores`` map, so the last one leaves it
    consistent. Returns the main scorer's counters, with the others' under ``also``.
    """
    main, *extra = round_scorers(conf)
    counters = run_scoring(spark, crawl_dir, conf, now, segment, scorer=main)
    if extra:
        counters["also"] = {name: run_scoring(spark, crawl_dir, conf, now, segment, scorer=name, focus_step=False)
                            for name in extra}
    return counters


def merge_scores(spark: SparkSession, db_path: str, crawldb: DataFrame, result: DataFrame,
                 impl: Scorer, conf: Conf, tag: str, focus: DataFrame | None = None) -> int:
    """One MERGE: scores[name], score (combined) and the scorer's state columns; with
    ``focus`` (a focused crawl) also hot_distance and scores['hot_link'] of every page."""
    name = impl.name
    state = list(impl.state_columns)
    res = result.select("url", F.col("score").alias("_new"), *[F.col(c).alias(f"_{c}") for c in state],
                        F.lit(True).alias("_scored"))
    old = F.coalesce(F.col("scores"), F.create_map().cast("map<string,double>"))
    new_map = F.map_concat(F.map_filter(old, lambda k, v: k != F.lit(name)),
                           F.create_map(F.lit(name), F.col("_new").cast("double")))
    if focus is not None:
        res = res.join(focus.select("url", F.col("hot_distance").alias("_hot_distance"),
                                    F.col(HOT_LINK).alias("_hot_link")), on="url", how="full")
        new_map = F.when(F.col("_scored"), new_map).otherwise(old)
        new_map = F.when(F.col("_hot_link").isNull(), new_map).otherwise(F.map_concat(
            F.map_filter(new_map, lambda k, v: k != F.lit(HOT_LINK)),
            F.create_map(F.lit(HOT_LINK), F.col("_hot_link").cast("double"))))
    source = crawldb.join(res, on="url", how="inner")
    if state and "opic_cash" in state:
        # OPIC's virtual page may be new (crawl started under another scorer): insert it.
        have_virtual = crawldb.filter(F.col("url") == F.lit(VIRTUAL_URL)).limit(1).count() > 0
        if not have_virtual:
            source = source.unionByName(
                virtual_page_row(spark, 0.0).join(res, on="url", how="inner"))
    source = source.withColumn("scores", new_map)
    score = F.when(F.col("url") == F.lit(VIRTUAL_URL), F.lit(0.0)).otherwise(
        combine(F.col("scores"), conf))
    source = source.withColumn("score", score)
    for c in state:
        source = source.withColumn(c, F.when(F.col("_scored"), F.col(f"_{c}")).otherwise(F.col(c)))
    updated = ["scores", "score", *state]
    if focus is not None:
        source = source.withColumn("hot_distance", F.when(F.col("_hot_link").isNull(), F.col("hot_distance"))
                                   .otherwise(F.col("_hot_distance")))
        source = source.drop("_hot_distance", "_hot_link")
        updated.append("hot_distance")
    source = source.drop("_new", "_scored", *[f"_{c}" for c in state]).localCheckpoint(eager=True)
    with storage.commit_tag(spark, tag), storage.merge_source_materialized(spark):
        (DeltaTable.forPath(spark, db_path).alias("t")
         .merge(source.alias("s"), "t.url = s.url")
         .whenMatchedUpdate(set={c: f"s.{c}" for c in updated})
         .whenNotMatchedInsertAll()
         .execute())
    return source.count()
