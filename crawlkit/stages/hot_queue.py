"""The two-queue fetch-list policy of Cho et al.'s similarity crawlers (``generate.policy =
"hot_queue"``).

A due URL is in the hot queue when its URL or the anchor text of a link to it holds a
topic word (``scores['hot_link']``, kept by the scoring run's focus step) or, for the
modified crawler, when it lies within ``focus.hot_queue_distance`` links of a hot page
(``hot_distance`` < that; 0 = the original crawler). Generate takes the hot queue first and
the rest after, each by the ordering score; per-host caps and top-N apply to that order.
In the batch model a round is one dequeue2 of topN URLs instead of one.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from crawlkit.conf import Conf

QUEUE = "_queue"


def in_hot_queue(conf: Conf):
    """Boolean column: the row belongs to the hot queue."""
    by_link = F.coalesce(F.col("scores").getItem("hot_link"), F.lit(0.0)) > 0
    near = F.coalesce(F.col("hot_distance") < F.lit(int(conf["focus.hot_queue_distance"])), F.lit(False))
    return by_link | near


def with_queue(candidates: DataFrame, conf: Conf) -> DataFrame:
    """Adds ``_queue``: 0 for the hot queue, 1 for the rest (sorts first when ascending)."""
    return candidates.withColumn(QUEUE, F.when(in_hot_queue(conf), 0).otherwise(1))
