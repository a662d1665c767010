"""Link metadata as words: one row per link with the words of its URL, texts and titles.

The link table's current view (``crawlkit.linkdb.current``) has one row per (src, dst) with
parse's ``meta`` map; all ten metadata types are read: URL text (the target URL, href,
onmouseover target, src), text (anchor, surrounding text, image alt, area text, frame text)
and title (title and name attributes).
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from crawlkit.scoring.base import ScoringContext
from crawlkit.scoring.focus.query import TEXT_FIELDS, TITLE_FIELDS, URL_FIELDS, field_words, url_words, words


def link_words(links: DataFrame) -> DataFrame:
    """src, dst, url_words, text_words, title_words (self-links dropped)."""
    return (links.filter(F.col("src") != F.col("dst"))
            .select("src", "dst",
                    field_words(URL_FIELDS, F.col("dst"), read=url_words).alias("url_words"),
                    field_words(TEXT_FIELDS, F.col("anchor")).alias("text_words"),
                    field_words(TITLE_FIELDS).alias("title_words")))


def all_words(df: DataFrame) -> DataFrame:
    """Adds ``words``: every metadata word of the link, M(u)."""
    return df.withColumn("words", F.array_distinct(F.concat("url_words", "text_words", "title_words")))


def page_words(texts: DataFrame) -> DataFrame:
    """url, words: the distinct words of each parsed page (title and body)."""
    return texts.select("url", F.array_distinct(F.concat(words(F.col("title")), words(F.col("text"))))
                        .alias("words"))


def by_target(ctx: ScoringContext, link_scores: DataFrame) -> DataFrame:
    """url, score: the best in-link's score per page (0 without in-links), plus the
    breadth-first tie-break ``focus.tie_breadth / (1 + depth)``."""
    best = link_scores.groupBy(F.col("dst").alias("url")).agg(F.max("s").alias("s"))
    tie = F.lit(float(ctx.conf["focus.tie_breadth"])) / (F.lit(1.0) + F.greatest(F.col("depth"), F.lit(0)))
    return (ctx.pages.select("url", "depth").join(best, on="url", how="left")
            .select("url", (F.coalesce(F.col("s"), F.lit(0.0)) + tie).alias("score")))
