"""TeH, the text heuristic: 1 when any text of the link (anchor, surrounding text, image
alt, area text, frame text) holds a topic word, else 0."""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from crawlkit.scoring.base import BaseScorer, ScoringContext, register
from crawlkit.scoring.focus.metadata import by_target, link_words
from crawlkit.scoring.focus.query import Query, load_query


def teh(query: Query) -> Column:
    return F.when(query.hits(F.col("text_words")), 1.0).otherwise(0.0)


@register
class TextHeuristic(BaseScorer):
    name = "teh"

    def score(self, ctx: ScoringContext) -> DataFrame:
        return by_target(ctx, link_words(ctx.links).select("dst", teh(load_query(ctx.conf)).alias("s")))
