"""``focus``: link relevance learned from the crawl itself (the default focused scorer).

RW trusts word relatedness alone and never looks at what following a link brought. This
scorer learns it: every link whose target has been fetched and judged is a labelled
example (target hot or not), and each *feature* of a link gets a smoothed hit rate

    rate(t) = (hot targets of links with t + k · prior(t)) / (links with t + k)

with k = ``focus.learn_prior``. Features are all the words of the link's metadata (the ten
types), plus one for the page holding the link: ``~hot`` when that page is hot, ``~d1``,
``~d2``, ... for its hot_distance, ``~far`` beyond. prior(t) is the word's relatedness
(:mod:`crawlkit.scoring.focus.relatedness`: lexicon, or co-occurrence with the topic in
pages judged hot; topic words 1.0) and never below p0, the share of judged pages that are
hot. So before any evidence a topic word in an anchor ranks first, as in RW; as evidence
comes in, features whose links keep leading to hot pages rise (``~hot`` when hot pages
cluster, a course-number pattern, a directory name) and topic words that mislead fall.
A link scores its best feature's rate; a page its best in-link's, plus the breadth-first
tie-break. Nothing is fitted offline: every rate comes from the running crawl.

With ``focus.calibrate_prior`` the prior is calibrated by the crawl too:
prior(t) = p0 + rel(t) · (p_rel − p0), where p_rel is what links carrying related words have
actually brought (their relatedness-weighted hit rate, shrunk towards 1 by k). Without it a
topic word no link has yet tested keeps prior 1.0, and since a link scores its best
feature, any link whose dozens of metadata words include one untested topic word (a
"homework" in the surrounding text of every link of a course page) ties at the top: the
maximum of many optimistic guesses. Calibrated, such a word starts where topic words have
been found to lead, and a feature with evidence behind it can outrank it. On WebKB it did
not help (recall 0.317 against 0.354 at 250 pages, docs/focused.md), so it is off by default.

A link whose target turned out ``gone`` (404, 410, robots-denied, or failing past the retry
limit) is a labelled example too, a miss: following it brought no hot page
(``focus.learn_from_dead_links``). Without it, features that keep pointing at dead pages
(a stale "Courses" directory) are never corrected, and the crawl spends its budget on 404s.
The base rate p0 stays the share of *parsed* pages that are hot.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from crawlkit.scoring.base import BaseScorer, ScoringContext, register
from crawlkit.scoring.focus.metadata import all_words, by_target, link_words
from crawlkit.scoring.focus.query import load_query
from crawlkit.scoring.focus.relatedness import relatedness
from crawlkit.status import Status


def source_feature(distance_col: str, max_feature: int = 3) -> F.Column:
    d = F.col(distance_col)
    return (F.when(d == 0, F.lit("~hot"))
            .when(d <= max_feature, F.concat(F.lit("~d"), d.cast("string")))
            .otherwise(F.lit("~far")))


def link_features(ctx: ScoringContext) -> DataFrame:
    """src, dst, words: metadata words plus the source-page feature."""
    state = ctx.focus.select(F.col("url").alias("src"), F.col("hot_distance").alias("_d"))
    return (all_words(link_words(ctx.links)).join(state, on="src", how="left")
            .select("src", "dst", F.array_union("words", F.array(source_feature("_d"))).alias("words")))


def link_outcomes(ctx: ScoringContext, judged: DataFrame) -> DataFrame:
    """url, hot: what following a link to ``url`` brought: the parsed target's hot flag, and
    with ``focus.learn_from_dead_links`` false for a target that is gone."""
    if not ctx.conf["focus.learn_from_dead_links"]:
        return judged
    dead = (ctx.pages.filter(F.col("status") == Status.GONE.value)
            .join(judged, on="url", how="left_anti").select("url", F.lit(False).alias("hot")))
    return judged.unionByName(dead)


def related_rate(seen: DataFrame, rel: DataFrame, k: float) -> float:
    """What a link carrying a fully related word (rel = 1) has brought so far: the hit rate
    of the judged links' related words, each weighted by its relatedness, shrunk towards 1
    (the untested belief that topic words lead to the topic) by k pseudo-links."""
    weighted = (seen.join(rel.filter(F.col("rel") > 0), on="word", how="inner")
                .agg(F.sum(F.col("rel") * F.col("pos")).alias("pos"), F.sum(F.col("rel") * F.col("tot")).alias("tot"))
                .first())
    return ((weighted["pos"] or 0.0) + k) / ((weighted["tot"] or 0.0) + k)


def feature_rates(features: DataFrame, judged: DataFrame, rel: DataFrame, p0: float, k: float,
                  calibrate: bool = False) -> DataFrame:
    """word, rate for every feature seen on a link (see module doc)."""
    seen = (features.join(judged.select(F.col("url").alias("dst"), "hot"), on="dst", how="inner")
            .select(F.explode("words").alias("word"), F.col("hot").cast("double").alias("h"))
            .groupBy("word").agg(F.sum("h").alias("pos"), F.count("*").alias("tot")))
    words = features.select(F.explode("words").alias("word")).distinct()
    if calibrate:
        seen = seen.localCheckpoint()   # read twice: for p_rel, then for the rates
        p_rel = related_rate(seen, rel, k)
        prior = F.least(F.greatest(F.lit(p0) + F.coalesce(F.col("rel"), F.lit(0.0)) * F.lit(p_rel - p0),
                                   F.lit(0.0)), F.lit(1.0))
    else:
        prior = F.greatest(F.coalesce(F.col("rel"), F.lit(p0)), F.lit(p0))
    return (words.join(seen, on="word", how="left").join(rel, on="word", how="left")
            .select("word", ((F.coalesce(F.col("pos"), F.lit(0.0)) + F.lit(k) * prior)
                             / (F.coalesce(F.col("tot"), F.lit(0)) + F.lit(k))).alias("rate")))


@register
class LearnedFocus(BaseScorer):
    name = "focus"
    needs_texts = True

    def score(self, ctx: ScoringContext) -> DataFrame:
        if ctx.focus is None:
            raise ValueError("scorer 'focus' needs focus.words (the driving query)")
        query = load_query(ctx.conf)
        rel = relatedness(ctx, query)
        judged = ctx.focus.filter(F.col("hot").isNotNull()).select("url", "hot")
        n = judged.agg(F.count("*").alias("n"), F.sum(F.col("hot").cast("int")).alias("h")).first()
        p0 = (n["h"] or 0) / n["n"] if n["n"] else 0.0
        features = link_features(ctx).localCheckpoint()
        rates = feature_rates(features, link_outcomes(ctx, judged), rel, p0, float(ctx.conf["focus.learn_prior"]),
                              calibrate=ctx.conf["focus.calibrate_prior"])
        best = (features.select("dst", F.explode("words").alias("word"))
                .join(rates, on="word", how="inner").groupBy("dst").agg(F.max("rate").alias("s")))
        return by_target(ctx, best)
