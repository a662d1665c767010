"""TiH, the title heuristic: 1 when the link's title or name attribute holds a topic word,
else 0 (rare metadata, but written by the page's author on purpose)."""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from crawlkit.scoring.base import BaseScorer, ScoringContext, register
from crawlkit.scoring.focus.metadata import by_target, link_words
from crawlkit.scoring.focus.query import Query, load_query


def tih(query: Query) -> Column:
    return F.when(query.hits(F.col("title_words")), 1.0).otherwise(0.0)


@register
class TitleHeuristic(BaseScorer):
    name = "tih"

    def score(self, ctx: ScoringContext) -> DataFrame:
        return by_target(ctx, link_words(ctx.links).select("dst", tih(load_query(ctx.conf)).alias("s")))
