"""AMH, all metadata: A·UH + B·TeH + C·TiH (``focus.amh_a``, ``amh_b``, ``amh_c``; each
in [0, 1], summing to 1), so a link whose URL, text and title all name the topic ranks
above one where only the text does."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from crawlkit.conf import Conf
from crawlkit.scoring.base import BaseScorer, ScoringContext, register
from crawlkit.scoring.focus.metadata import by_target, link_words
from crawlkit.scoring.focus.query import load_query
from crawlkit.scoring.focus.teh import teh
from crawlkit.scoring.focus.tih import tih
from crawlkit.scoring.focus.uh import uh


def weights(conf: Conf) -> tuple[float, float, float]:
    """A, B, C (the configuration checks they sum to 1)."""
    a, b, c = (float(conf[f"focus.amh_{k}"]) for k in "abc")
    return a, b, c


@register
class AllMetadataHeuristic(BaseScorer):
    name = "amh"

    def score(self, ctx: ScoringContext) -> DataFrame:
        a, b, c = weights(ctx.conf)
        q = load_query(ctx.conf)
        s = F.lit(a) * uh(q) + F.lit(b) * teh(q) + F.lit(c) * tih(q)
        return by_target(ctx, link_words(ctx.links).select("dst", s.alias("s")))
