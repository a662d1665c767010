"""RWB, relevance weighting with boosting: RW, plus random boosts that open "tunnels"
through irrelevant pages to relevant ones behind them.

For a link below c: draw P1 in [0, 1); if P1 >= d (``focus.rwb_boost``) re-score the link
with the words of the whole text T of the page holding it; if that reaches c use it, else
draw P2 in [0, 1) and use P2. Below c without the boost: 0. Draws are xxhash64 of
(``focus.seed``, segment, src, dst): the same run gives the same order, and each round draws
afresh, so a link that lost once can win later and the crawl never stalls.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from crawlkit.scoring.base import BaseScorer, ScoringContext, register
from crawlkit.scoring.focus.metadata import by_target, page_words
from crawlkit.scoring.focus.query import load_query
from crawlkit.scoring.focus.relatedness import relatedness
from crawlkit.scoring.focus.rw import best_relatedness, rw_links


def draw(seed: int, segment: str | None, which: int) -> Column:
    """A reproducible uniform draw in [0, 1) per link."""
    h = F.xxhash64(F.lit(int(seed)), F.lit(segment or ""), F.lit(which), F.col("src"), F.col("dst"))
    return F.pmod(h, F.lit(2 ** 53)).cast("double") / F.lit(float(2 ** 53))


@register
class RelevanceWeightingBoost(BaseScorer):
    name = "rwb"
    needs_texts = True

    def score(self, ctx: ScoringContext) -> DataFrame:
        conf = ctx.conf
        c, d, seed = float(conf["focus.rw_threshold"]), float(conf["focus.rwb_boost"]), conf["focus.seed"]
        rel = relatedness(ctx, load_query(conf))
        texts = ctx.texts if ctx.texts is not None else ctx.spark.createDataFrame(
            [], "url string, title string, text string")
        page_rel = best_relatedness(page_words(texts.dropDuplicates(["url"])), ["url"], rel)
        links = rw_links(ctx, rel).join(
            page_rel.select(F.col("url").alias("src"), F.col("rel").alias("trel")), on="src", how="left")
        p1, p2 = draw(seed, ctx.segment, 1), draw(seed, ctx.segment, 2)
        boosted = F.when(F.coalesce(F.col("trel"), F.lit(0.0)) >= F.lit(c), F.col("trel")).otherwise(p2)
        s = (F.when(F.col("rw") >= F.lit(c), F.col("rw"))
             .when(p1 >= F.lit(d), boosted).otherwise(F.lit(0.0)))
        return by_target(ctx, links.select("dst", s.alias("s")))
