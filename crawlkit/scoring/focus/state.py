"""The focus step of a scoring run: hot pages, ``hot_distance`` and the hot-queue flag.

Run by :func:`crawlkit.scoring.job.run_scoring` whenever ``focus.words`` is set, whatever
the scorer, and written in the scoring run's MERGE (one commit per run). It lives in scoring,
not in updatedb, because it needs the parse output of every segment (hot pages) and the
whole link table, which the scoring job reads anyway.

Columns: ``hot`` (true/false for parsed pages, null for the rest), ``hot_distance`` and
``hot_link`` (1.0 when the page's URL or the anchor text of an in-link holds a topic word:
the paper's test for the hot queue; stored as ``scores['hot_link']``).
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from crawlkit.scoring.base import ScoringContext
from crawlkit.scoring.focus.hot import hot_distances, judge
from crawlkit.scoring.focus.query import Query, url_words, words

HOT_LINK = "hot_link"


def hot_link(pages: DataFrame, links: DataFrame, query: Query) -> DataFrame:
    """url, hot_link: topic word in the URL or in an in-link's anchor (paper's hot queue)."""
    by_anchor = (links.filter(query.hits(words(F.col("anchor"))))
                 .select(F.col("dst").alias("url")).distinct().withColumn("_a", F.lit(True)))
    flag = query.hits(url_words(F.col("url"))) | F.coalesce(F.col("_a"), F.lit(False))
    return pages.select("url").join(by_anchor, on="url", how="left").select(
        "url", F.when(flag, 1.0).otherwise(0.0).alias(HOT_LINK))


def focus_state(ctx: ScoringContext, query: Query) -> DataFrame:
    """url, hot, hot_distance, hot_link for every page of the crawldb (checkpointed)."""
    texts = ctx.texts if ctx.texts is not None else ctx.spark.createDataFrame(
        [], "url string, title string, text string")
    hot = judge(texts.dropDuplicates(["url"]), query, ctx.conf).localCheckpoint()
    pages = ctx.pages
    dist = hot_distances(pages, ctx.links, hot, int(ctx.conf["focus.max_distance"]))
    return (dist.join(hot, on="url", how="left")
            .join(hot_link(pages, ctx.links, query), on="url", how="left")
            .select("url", "hot", "hot_distance", HOT_LINK)
            .localCheckpoint())
