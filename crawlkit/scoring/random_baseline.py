"""Random order, seeded (``scoring.random_seed``): the baseline every ordering must beat.

The score is a hash of (seed, url) mapped to [0, 1): the same seed gives the same order on
every run and machine, and a page keeps its score from round to round.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from crawlkit.conf import Conf
from crawlkit.scoring.base import BaseScorer, ScoringContext, register

_SCALE = float(2 ** 53)


def random_score(url, seed: int):
    """Column in [0, 1) from xxhash64(seed, url)."""
    h = F.xxhash64(F.lit(int(seed)), url)
    return F.pmod(h, F.lit(2 ** 53)).cast("double") / F.lit(_SCALE)


@register
class RandomScorer(BaseScorer):
    name = "random"

    def initial_score(self, conf: Conf) -> float:
        return 0.5

    def score(self, ctx: ScoringContext) -> DataFrame:
        return ctx.pages.select("url", random_score(F.col("url"), ctx.conf["scoring.random_seed"])
                                .alias("score"))
