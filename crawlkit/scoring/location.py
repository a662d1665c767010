"""Location metric IL(P): importance from the URL alone (Cho et al. §2).

IL = tld weight + sum of the weights of the words the URL contains + w / (1 + path
segments), with every rule a conf value: ``scoring.location_tld_weights`` (e.g. edu 1.0,
com 0.5), ``scoring.location_words`` (e.g. home, index) and ``scoring.location_slash_weight``
w (fewer slashes score higher). Needs no fetch and no link: usable from the first round.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from crawlkit.conf import Conf
from crawlkit.scoring.base import BaseScorer, ScoringContext, register


def location_score(url: Column, host: Column, conf: Conf) -> Column:
    """The IL expression for a url column (and its host column)."""
    tld = F.substring_index(F.lower(host), ".", -1)
    total = F.lit(0.0)
    for suffix, weight in sorted(conf["scoring.location_tld_weights"].items()):
        total = total + F.when(tld == F.lit(suffix.lower().lstrip(".")), F.lit(float(weight))).otherwise(0.0)
    lowered = F.lower(url)
    for word, weight in sorted(conf["scoring.location_words"].items()):
        total = total + F.when(lowered.contains(word.lower()), F.lit(float(weight))).otherwise(0.0)
    path = F.regexp_extract(url, r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*([^?#]*)", 1)
    segments = F.size(F.filter(F.split(path, "/"), lambda part: part != F.lit("")))
    slash = F.lit(float(conf["scoring.location_slash_weight"])) / (F.lit(1.0) + segments)
    return (total + slash).cast("double")


@register
class LocationScorer(BaseScorer):
    name = "location"

    def score(self, ctx: ScoringContext) -> DataFrame:
        return ctx.pages.select("url", location_score(F.col("url"), F.col("host"), ctx.conf)
                                .alias("score"))
