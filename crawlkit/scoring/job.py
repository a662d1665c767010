"""The scoring job: run scorers over the crawl and write their results into the crawldb.

One Delta MERGE per run updates, for every page a scorer scored, ``scores[name]``, the
ordering score ``score`` (the combiner over the whole ``scores`` map) and the scorer's own
state columns (OPIC's cash, history, last_processed), so a crash leaves either the old or
the new crawldb, never a half-scored one. A round runs all its scorers in that one MERGE.
Each scorer's tag ``score-<name>:<segment>`` goes into the commit (space-separated):

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
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from crawlkit import linkdb, schemas, segment_names, storage
from crawlkit.conf import Conf
from crawlkit.scoring.base import VIRTUAL_URL, Scorer, ScoringContext, combine, get_scorer
from crawlkit.scoring.focus.query import load_query
from crawlkit.scoring.focus.state import HOT_LINK, focus_state
from crawlkit.scoring.opic import PROCESSED_FETCH_STATUSES, virtual_page_row, virtual_state

log = logging.getLogger(__name__)


def processed_pages(spark: SparkSession, crawl_dir: str, segment: str) -> DataFrame:
    """URLs the segment processed: fetched (or found unchanged, or redirected)."""
    content = storage.read_segment_part(spark, crawl_dir, segment, "content", "content")
    return (content.filter(F.col("fetch_status").isin(*PROCESSED_FETCH_STATUSES))
            .select("url").distinct())


def crawled_texts(spark: SparkSession, crawl_dir: str, upto: str | None) -> DataFrame:
    """(url, title, text) of every page parsed so far, the latest parse of each (idf input)."""
    segments = [s for s in storage.list_segments(spark, crawl_dir)
                if upto is None or segment_names.order_key(s) <= segment_names.order_key(upto)]
    frames = [storage.read_segment_part(spark, crawl_dir, s, "parse", "parse")
              for s in segments if storage.segment_part_exists(spark, crawl_dir, s, "parse")]
    if not frames:
        return spark.createDataFrame([], "url string, title string, text string")
    parsed = frames[0]
    for frame in frames[1:]:
        parsed = parsed.unionByName(frame)
    latest = (parsed.filter(F.col("parse_status") == "success")
              .groupBy("url").agg(F.max_by(F.struct("title", "text"),
                                           segment_names.order_column(F.col("segment"))).alias("p")))
    return latest.select("url", F.col("p.title").alias("title"), F.col("p.text").alias("text"))


def run_scoring(spark: SparkSession, crawl_dir: str, conf: Conf, now: datetime,
                segment: str | None = None, scorer: str | Scorer | None = None) -> dict:
    """Score the crawl with ``scorer`` (default ``scoring.scorer``) and MERGE the result.

    In a focused crawl the focus step (hot pages, hot_distance) joins the MERGE.
    Returns counters: scorer, tag, pages (rows updated), skipped, seconds, and for PageRank
    the engine and iterations.
    """
    impl = get_scorer(scorer or conf["scoring.scorer"]) if not hasattr(scorer, "score") else scorer
    return score_together(spark, crawl_dir, conf, now, segment, [impl])


def score_together(spark: SparkSession, crawl_dir: str, conf: Conf, now: datetime,
                   segment: str | None, scorers: list[Scorer]) -> dict:
    """Run ``scorers`` over one read of the crawl and write all their results in one MERGE.

    The commit carries every scorer's tag, space-separated (``score-pagerank:<seg>
    score-backlinks:<seg>``): each stays findable by ``storage.was_applied``. A scorer that
    needs the segment and whose tag is already in the history is left out (OPIC's cash moves
    once). Returns the first scorer's counters, the others' under ``also``.
    """
    started = time.monotonic()
    for impl in scorers:
        if impl.needs_segment and not segment:
            raise ValueError(f"scorer {impl.name!r} moves state per segment: pass the segment to score")
    tags = {impl.name: f"score-{impl.name}:{segment or 'all'}" for impl in scorers}
    db_path = storage.crawldb_path(crawl_dir)
    due = [impl for impl in scorers
           if not (impl.needs_segment and storage.was_applied(spark, db_path, tags[impl.name],
                                                        since=storage.generated_tag(segment)))]
    per_scorer = {impl.name: {"scorer": impl.name, "tag": tags[impl.name], "pages": 0,
                              "skipped": int(impl not in due)} for impl in scorers}
    for impl in scorers:
        if impl not in due:
            log.info("%s already applied: nothing to do", tags[impl.name])
    if due:
        if storage.is_delta(spark, db_path):   # brought up to its declaration, as the stages do
            storage.ensure_table(spark, db_path, "crawldb")
        crawldb = storage.read_table(spark, db_path, "crawldb")
        links = linkdb.read_current(spark, crawl_dir)
        processed = processed_pages(spark, crawl_dir, segment) if segment else None
        query = load_query(conf)
        needs_texts = query.enabled or any(impl.name == "similarity" or getattr(impl, "needs_texts", False)
                                           for impl in due)
        texts = crawled_texts(spark, crawl_dir, segment) if needs_texts else None
        ctx = ScoringContext(spark, conf, now, crawldb=crawldb, links=links, processed=processed,
                             texts=texts, segment=segment,
                             links_at_most=linkdb.stored_rows(spark, storage.linkdb_path(crawl_dir)))
        if query.enabled:  # focused crawl: hot pages and hot_distance, in the same commit
            ctx = replace(ctx, focus=focus_state(ctx, query))
        results = [(impl, impl.score(ctx)) for impl in due]
        pages = merge_scores(spark, db_path, crawldb, results, conf,
                             " ".join(tags[impl.name] for impl in due), ctx.focus)
        for impl in due:   # pages and seconds are the joint commit's
            per_scorer[impl.name]["pages"] = pages
            last = getattr(impl, "last_result", None)
            if last is not None:
                per_scorer[impl.name].update(engine=last.engine, iterations=last.iterations, delta=last.delta)
    seconds = round(time.monotonic() - started, 3)
    for impl in scorers:
        per_scorer[impl.name]["seconds"] = seconds
        if segment and impl in due:
            storage.write_stats(spark, crawl_dir, segment, f"score-{impl.name}", per_scorer[impl.name])
    first, *others = scorers
    counters = per_scorer[first.name]
    if others:
        counters["also"] = {impl.name: per_scorer[impl.name] for impl in others}
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
    """A round's scoring: every one of :func:`round_scorers` in one tagged MERGE.

    One commit rewrites the scored rows once however many metrics the next fetch list reads
    (the default interleave needs two): half the crawldb rewrites of one MERGE per scorer, and
    no crawldb that holds one metric of the round and not the other. Returns the main
    scorer's counters, with the others' under ``also``.
    """
    return score_together(spark, crawl_dir, conf, now, segment, [get_scorer(n) for n in round_scorers(conf)])


def _with_entry(scores, key: str, value):
    """The map ``scores`` with ``key`` set to ``value``."""
    return F.map_concat(F.map_filter(scores, lambda k, v: k != F.lit(key)),
                        F.create_map(F.lit(key), value.cast("double")))


def _scored(results: list[tuple[Scorer, DataFrame]], focus: DataFrame | None) -> DataFrame:
    """One row per page any scorer scored: url, each scorer's ``_new<i>`` score, state
    columns ``_<column>`` and ``_scored<i>`` flag, and with ``focus`` ``_hot_distance`` and
    ``_hot_link``."""
    res = None
    for i, (impl, result) in enumerate(results):
        part = result.select("url", F.col("score").alias(f"_new{i}"),
                             *[F.col(c).alias(f"_{c}") for c in impl.state_columns],
                             F.lit(True).alias(f"_scored{i}"))
        res = part if res is None else res.join(part, on="url", how="full")
    if focus is not None:
        res = res.join(focus.select("url", F.col("hot_distance").alias("_hot_distance"),
                                    F.col(HOT_LINK).alias("_hot_link")), on="url", how="full")
    return res


def _new_values(results: list[tuple[Scorer, DataFrame]], conf: Conf, focused: bool,
                old, new) -> dict[str, Column]:
    """The columns a scoring run sets, as expressions over a row's current values (``old(c)``)
    and the ``_scored`` columns (``new(c)``): scores[name] and the scorer's state where that
    scorer scored the page, ``score`` combined over the whole map; with focus, hot_distance
    and scores['hot_link'] where the focus step reached the page."""
    scores = F.coalesce(old("scores"), F.create_map().cast("map<string,double>"))
    values: dict[str, Column] = {}
    for i, (impl, _) in enumerate(results):
        scored = new(f"_scored{i}")
        scores = F.when(scored, _with_entry(scores, impl.name, new(f"_new{i}"))).otherwise(scores)
        for c in impl.state_columns:
            values[c] = F.when(scored, new(f"_{c}")).otherwise(old(c))
    if focused:
        reached = new("_hot_link").isNotNull()
        scores = F.when(reached, _with_entry(scores, HOT_LINK, new("_hot_link"))).otherwise(scores)
        values["hot_distance"] = F.when(reached, new("_hot_distance")).otherwise(old("hot_distance"))
    values["scores"] = scores
    values["score"] = F.when(old("url") == F.lit(VIRTUAL_URL), F.lit(0.0)).otherwise(combine(scores, conf))
    return values


# Share of the crawldb's rows at or above which the scoring MERGE does without deletion
# vectors (see merge_scores). Without them the rows a touched file keeps are copied: at
# every row updated that is nothing (measured: the MERGE 10-14% faster), at a few rows
# nearly every touched file whole. Half sits between the two ends, not tuned.
DENSE_SHARE = 0.5


def merge_scores(spark: SparkSession, db_path: str, crawldb: DataFrame,
                 results: list[tuple[Scorer, DataFrame]], conf: Conf, tag: str,
                 focus: DataFrame | None = None) -> int:
    """One MERGE of every (scorer, result): scores[name], the scorer's state columns, and
    score (combined over the whole map); with ``focus`` (a focused crawl) also hot_distance
    and scores['hot_link'] of every page. A row takes a scorer's values only where that
    scorer scored it. Returns the pages written.

    The MERGE's source is the scored values alone (a few columns a page, checkpointed), and
    the new row is computed in the MERGE's update from the target row: joining them with
    the crawldb first, to hand the MERGE whole rows, cost a third join of all N rows and a
    checkpoint of the crawldb (docs/scale.md). OPIC's virtual page, when the crawldb lacks
    it (a crawl started under another scorer), is inserted by the same MERGE from its row
    carried in the source.

    A MERGE that updates most rows (a global scorer: every page) rewrites the touched files
    whole, without deletion vectors (``DENSE_SHARE``): with them, Delta writes the updated
    rows, then reads the touched files and joins them with the source once more to mark the
    old rows deleted, only to find every row of every file gone. At 10^7 pages that pass
    took 19 s of the MERGE's 102 (docs/scale.md). A sparse MERGE keeps them: it writes the
    few rows it changes instead of copying whole files."""
    scored = _scored(results, focus)
    insert_virtual = any(c == "opic_cash" for impl, _ in results for c in impl.state_columns) and \
        virtual_state(crawldb) is None
    columns = schemas.columns("crawldb")
    if insert_virtual:
        row = virtual_page_row(spark, 0.0).select(*[F.col(c).alias(f"_row_{c}") for c in columns])
        scored = scored.join(row.withColumnRenamed("_row_url", "url"), on="url", how="left")
    seen = Observation()
    source = scored.observe(seen, F.count(F.lit(1)).alias("rows")).localCheckpoint(eager=True)
    new = lambda c: F.col(f"s.{c}")  # noqa: E731
    merge = (DeltaTable.forPath(spark, db_path).alias("t").merge(source.alias("s"), "t.url = s.url")
             .whenMatchedUpdate(set=_new_values(results, conf, focus is not None, lambda c: F.col(f"t.{c}"), new)))
    if insert_virtual:
        old = lambda c: new("url") if c == "url" else new(f"_row_{c}")  # noqa: E731
        values = {c: old(c) for c in columns} | _new_values(results, conf, focus is not None, old, new)
        merge = merge.whenNotMatchedInsert(condition=new("url") == F.lit(VIRTUAL_URL), values=values)
    dense = seen.get["rows"] >= DENSE_SHARE * storage.stored_rows(spark, db_path)
    with storage.commit_tag(spark, tag), storage.merge_source_materialized(spark), \
            (storage.merge_without_deletion_vectors(spark) if dense else nullcontext()):
        written = merge.execute().first()
    return written["num_updated_rows"] + written["num_inserted_rows"]
