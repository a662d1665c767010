"""RW, relevance weighting: the best relatedness rel(t, W) over the words t of all the
link's metadata M(u), kept when it reaches the threshold c (``focus.rw_threshold``), else 0.

rel comes from :mod:`crawlkit.scoring.focus.relatedness` (lexicon, or learned from the
pages judged hot so far).
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from crawlkit.scoring.base import BaseScorer, ScoringContext, register
from crawlkit.scoring.focus.metadata import all_words, by_target, link_words
from crawlkit.scoring.focus.query import load_query
from crawlkit.scoring.focus.relatedness import relatedness


def best_relatedness(word_rows: DataFrame, keys: list[str], rel: DataFrame) -> DataFrame:
    """keys..., rel: the max rel over the ``words`` array of each row (0 when none is known)."""
    best = (word_rows.select(*keys, F.explode("words").alias("word"))
            .join(rel, on="word", how="inner").groupBy(*keys).agg(F.max("rel").alias("rel")))
    return (word_rows.select(*keys).join(best, on=keys, how="left")
            .select(*keys, F.coalesce(F.col("rel"), F.lit(0.0)).alias("rel")))


def rw_links(ctx: ScoringContext, rel: DataFrame) -> DataFrame:
    """src, dst, rw (the link's RW value)."""
    c = float(ctx.conf["focus.rw_threshold"])
    best = best_relatedness(all_words(link_words(ctx.links)), ["src", "dst"], rel)
    return best.select("src", "dst", F.when(F.col("rel") >= F.lit(c), F.col("rel")).otherwise(0.0).alias("rw"))


@register
class RelevanceWeighting(BaseScorer):
    name = "rw"
    needs_texts = True

    def score(self, ctx: ScoringContext) -> DataFrame:
        rel = relatedness(ctx, load_query(ctx.conf))
        return by_target(ctx, rw_links(ctx, rel).select("dst", F.col("rw").alias("s")))
