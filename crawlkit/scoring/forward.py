"""Forward link count IF(P): the links out of P (Cho et al. §2); directories score high.

Known exactly once P is fetched (IF' = IF): distinct targets in the prepared link table.
Pages not fetched yet score 0.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from crawlkit.scoring.base import BaseScorer, ScoringContext, register
from crawlkit.scoring.links import prepare_links


@register
class ForwardScorer(BaseScorer):
    name = "forward"

    def score(self, ctx: ScoringContext) -> DataFrame:
        pages = ctx.pages
        counts = (prepare_links(ctx.links, ctx.conf, crawldb=pages)
                  .groupBy(F.col("src").alias("url"))
                  .agg(F.countDistinct("dst").cast("double").alias("n")))
        return (pages.select("url").join(counts, on="url", how="left")
                .select("url", F.coalesce(F.col("n"), F.lit(0.0)).alias("score")))
