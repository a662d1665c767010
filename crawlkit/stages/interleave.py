"""The interleaved fetch list: several orderings take turns (``generate.policy = "interleave"``).

Each metric of ``generate.interleave`` ranks the due URLs on its own (best first, ties by
``generate.tie_break``, each list capped per host); the fetch list takes the first URL of
each list in turn, skipping URLs already taken. That is min-rank fusion: a URL's place is
its best rank in any list (list order breaks a draw).

Why: the orderings of the URL-ordering paper estimate importance from the crawled part of
the web, and each one's error is structured. PageRank on the crawled graph is exact about
the pages it can see and so keeps the crawl near the part already crawled; backlink counts
are coarse (most frontier pages have one in-link), so the hash tie break turns their large
ties into a sample spread over the whole frontier, which reaches dense clusters of
important pages that lie deep, but cannot tell one hub from another. Interleaving keeps
each list's best guesses. In the model of docs/orderings (crawlkit's URL filter applied,
mean over six tie-break hashes), from 10% of the web crawled on, it is never below PageRank
or breadth-first on Hollins and NotreDame (it ties PageRank once, on Hollins' top 1% at 10%)
and above both by 0.02-0.14 at 20%, and at most 0.004 below them on two generated webs; backlinks
alone beats it on NotreDame's in-degree measure (0.328 vs 0.213 at 20%, spread 0.205-0.514
over hashes) and on Hollins' top 1% by PageRank up to 30% (0.531 vs 0.472 at 20%), and
trails PageRank by 0.14 on the generated webs' top pages.

Only the top N of each list is ever ranked (Spark's TakeOrderedAndProject), and capped per
host among the best candidates only (crawlkit/stages/capped_top.py), so the cost is one
exact top-N per metric, not a global sort. A focused crawl (``focus.words`` set) interleaves
``focus.interleave`` instead, empty by default: its ordering is topical relevance, which a
topic-blind metric would dilute unless asked to.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from crawlkit.conf import Conf
from crawlkit.scoring.base import metric_value
from crawlkit.stages.capped_top import capped_top, cut_points

POSITION, LIST = "_position", "_list"


def metric(name: str) -> Column:
    """``score`` is the crawldb's ordering score; any other name is a key of ``scores``
    (a page the metric has not scored yet counts 0)."""
    return F.col("score") if name == "score" else metric_value(F.col("scores"), name)


def interleaved_metrics(conf: Conf) -> list[str]:
    """The metrics the fetch list interleaves; empty when it is not interleaved. A focused
    crawl reads ``focus.interleave`` instead, where empty means relevance alone."""
    if conf["generate.policy"] != "interleave":
        return []
    if conf["focus.words"]:
        return list(conf["focus.interleave"])
    return list(conf["generate.interleave"])   # not empty: the configuration checks it


def interleaved(candidates: DataFrame, names: list[str], top_n: int, tie_break: list, cap,
                population: int) -> DataFrame:
    """The first ``top_n`` URLs of the lists of metrics ``names`` interleaved (``cap(df,
    order)`` caps per host and domain; None: no caps), in fetch-list order, without the
    helper columns. ``population`` bounds the candidates (``cut_points``: one sample for
    every list's cuts)."""
    metrics = [metric(n) for n in names]
    cuts = cut_points(candidates, metrics, tie_break[0], top_n, population) if cap else [[] for _ in names]
    lists = []
    for index in range(len(names)):
        order = [metrics[index].desc(), *tie_break]
        best = capped_top(candidates, metrics[index], tie_break, top_n, cap, cuts[index])
        lists.append(best.withColumn(POSITION, F.row_number().over(Window.orderBy(*order)))
                     .withColumn(LIST, F.lit(index)))
    union = lists[0]
    for more in lists[1:]:
        union = union.unionByName(more)
    first_place = Window.partitionBy("url").orderBy(POSITION, LIST)
    fused = (union.withColumn("_place", F.row_number().over(first_place)).filter(F.col("_place") == 1)
             .drop("_place"))
    if cap is not None:
        fused = cap(fused, [F.col(POSITION), F.col(LIST)])
    return fused.orderBy(POSITION, LIST).limit(top_n).drop(POSITION, LIST)
