"""UH, the URL heuristic: 1 when the link's URL text (target URL, href, onmouseover
target, src) holds a topic word, else 0. A 0 says little: most relevant URLs are opaque."""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from crawlkit.scoring.base import BaseScorer, ScoringContext, register
from crawlkit.scoring.focus.metadata import by_target, link_words
from crawlkit.scoring.focus.query import Query, load_query


def uh(query: Query) -> Column:
    return F.when(query.hits(F.col("url_words")), 1.0).otherwise(0.0)


@register
class UrlHeuristic(BaseScorer):
    name = "uh"

    def score(self, ctx: ScoringContext) -> DataFrame:
        return by_target(ctx, link_words(ctx.links).select("dst", uh(load_query(ctx.conf)).alias("s")))
