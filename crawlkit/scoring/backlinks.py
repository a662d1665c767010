"""Backlink count IB'(P): the links to P seen so far (Cho et al. §2).

Counts distinct source pages of the prepared link table (so self-links, duplicates,
nofollow and spam links never count), or distinct source hosts with
``scoring.backlinks_distinct_hosts`` (a site linking from every page counts once). Pages
without in-links score 0.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from crawlkit.scoring.base import BaseScorer, ScoringContext, register
from crawlkit.scoring.links import prepare_links


@register
class BacklinksScorer(BaseScorer):
    name = "backlinks"

    def score(self, ctx: ScoringContext) -> DataFrame:
        pages = ctx.pages
        by = "src_host" if ctx.conf["scoring.backlinks_distinct_hosts"] else "src"
        counts = (prepare_links(ctx.links, ctx.conf, crawldb=pages)
                  .groupBy(F.col("dst").alias("url"))
                  .agg(F.countDistinct(by).cast("double").alias("n")))
        return (pages.select("url").join(counts, on="url", how="left")
                .select("url", F.coalesce(F.col("n"), F.lit(0.0)).alias("score")))
