"""Breadth-first order as a metric: 1 / (1 + depth), so seeds (depth 0) score 1.

Sorting a fetch list by it crawls level by level, the baseline the paper's orderings beat.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from crawlkit.conf import Conf
from crawlkit.scoring.base import BaseScorer, ScoringContext, register


@register
class DepthScorer(BaseScorer):
    name = "depth"

    def initial_score(self, conf: Conf) -> float:
        return 1.0   # a seed has depth 0

    def score(self, ctx: ScoringContext) -> DataFrame:
        return ctx.pages.select(
            "url", (F.lit(1.0) / (F.lit(1.0) + F.greatest(F.col("depth"), F.lit(0)))).alias("score"))
