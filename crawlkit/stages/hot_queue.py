"""The two-queue fetch-list policy of Cho et al.'s similarity crawlers (``generate.policy =
"hot_queue"``), and what it learns from dead links.

A due URL is in the hot queue when its URL or the anchor text of a link to it holds a
topic word (``scores['hot_link']``, kept by the scoring run's focus step) or, for the
modified crawler, when it lies within ``focus.hot_queue_distance`` links of a hot page
(``hot_distance`` < that; 0 = the original crawler). Generate takes the hot queue first and
the rest after, each by the ordering score; per-host caps and top-N apply to that order.
In the batch model a round is one dequeue2 of topN URLs instead of one.

**Dead-link evidence** (``focus.dead_link_confidence``). The paper's crawler never leaves its
hot queue: when the topical links it holds lead to pages that no longer exist, it fetches
404s round after round while live pages wait in the other queue (on WebKB 2,009 of the 2,236
URLs the hot-queue test picked were dead, and the modified crawler reached 365 pages of the
web in 2,200 fetches). So the crawl's own outcomes are used: the URLs already fetched from a
URL's directory (its URL up to the last ``/`` of the path) are d dead (``gone``: 404, 410,
robots-denied, failing past the retries) and l live (fetched, unchanged, redirected,
duplicate, evicted). With a uniform prior on the share of dead URLs in the directory, its
posterior is Beta(d + 1, l + 1); a hot-queue URL moves to the other queue when the
posterior probability that the directory is mostly dead, P(share > 1/2), exceeds the
confidence (0.9: three dead and no live sibling; five dead and one live). Without evidence a
URL is never moved, and a directory that turns out live keeps its place. The rule names no
site, pattern or tuned threshold: 1/2 is "dead is the likelier outcome", 0.9 a plain
confidence level (0.8 and 0.95 gave the same recall in the WebKB screen, docs/focused.md).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from crawlkit.conf import Conf
from crawlkit.status import Status

QUEUE = "_queue"
LIVE = tuple(s.value for s in (Status.FETCHED, Status.NOT_MODIFIED, Status.REDIRECT_TEMP,
                               Status.REDIRECT_PERM, Status.DUPLICATE, Status.EVICTED))  # it answered
DEAD = (Status.GONE.value,)


def in_hot_queue(conf: Conf) -> Column:
    """Boolean column: the row belongs to the hot queue (before dead-link evidence)."""
    by_link = F.coalesce(F.col("scores").getItem("hot_link"), F.lit(0.0)) > 0
    near = F.coalesce(F.col("hot_distance") < F.lit(int(conf["focus.hot_queue_distance"])), F.lit(False))
    return by_link | near


def directory(url: Column) -> Column:
    """The URL up to the last ``/`` of its path (query and fragment dropped)."""
    return F.regexp_extract(url, r"^[^?#]*/", 0)


def dead_probability(dead: np.ndarray, live: np.ndarray) -> np.ndarray:
    """P(share of dead URLs > 1/2) under Beta(dead + 1, live + 1), the uniform prior's posterior."""
    from scipy.special import betainc
    return 1.0 - betainc(dead + 1.0, live + 1.0, 0.5)


def dead_directories(crawldb: DataFrame, confidence: float) -> DataFrame:
    """_dir: the directories whose fetched URLs make a new URL there dead with posterior
    probability above ``confidence``. Only directories with more dead than live URLs can
    qualify (for a confidence of at least 1/2), so the Arrow step sees few rows."""
    judged = (crawldb.filter(F.col("status").isin(*LIVE, *DEAD))
              .select(directory(F.col("url")).alias("_dir"), F.col("status").isin(*DEAD).cast("long").alias("_d"))
              .groupBy("_dir").agg(F.sum("_d").alias("dead"), F.count("*").alias("judged"))
              .select("_dir", "dead", (F.col("judged") - F.col("dead")).alias("live"))
              .filter(F.col("dead") > F.col("live")))

    def keep(batches):
        for batch in batches:
            p = dead_probability(batch.column("dead").to_numpy(), batch.column("live").to_numpy())
            yield pa.RecordBatch.from_arrays([batch.column("_dir").filter(pa.array(p > confidence))], ["_dir"])

    return judged.mapInArrow(keep, "_dir string")


def with_queue(candidates: DataFrame, conf: Conf, crawldb: DataFrame | None = None) -> DataFrame:
    """Adds ``_queue``: 0 for the hot queue, 1 for the rest (sorts first when ascending). With
    ``crawldb`` and ``focus.dead_link_confidence`` > 0, hot-queue URLs in directories that the
    crawl has found mostly dead join the rest (module doc)."""
    hot = in_hot_queue(conf)
    confidence = float(conf["focus.dead_link_confidence"])
    if crawldb is not None and confidence > 0:
        dead = dead_directories(crawldb, confidence).withColumn("_dead", F.lit(True))
        candidates = (candidates.withColumn("_dir", directory(F.col("url")))
                      .join(dead, on="_dir", how="left").drop("_dir"))
        hot = hot & ~F.coalesce(F.col("_dead"), F.lit(False))
    return candidates.withColumn(QUEUE, F.when(hot, 0).otherwise(1)).drop("_dead")   # no-op without it
