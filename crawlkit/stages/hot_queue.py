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

**Explored directories wait** (``focus.explored_directory_pages``). A directory from which
the crawl has already fetched that many live pages has shown what it holds; its other
hot-queue URLs are most often more of the same (a course's homework, lecture and exam pages
behind its home page), and in a batch round they crowd out hot-queue URLs of directories
not seen yet. So they form a second tier of the hot queue, behind the unexplored ones and
ahead of the other queue: the round spreads over more sections of the topic. A diversity
rule, like generate's per-host cap at a finer grain; it moves nothing out of the hot queue.
(3 = the dead-link evidence's three siblings; 2 to 5 gave the same recall on WebKB.)
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


def directory_marks(crawldb: DataFrame, confidence: float, explored_pages: int) -> DataFrame:
    """_dir, _dead, _explored: the directories whose fetched URLs make a new URL there dead
    with posterior probability above ``confidence`` (0: none), and those with at least
    ``explored_pages`` live URLs (0: none); only directories with a mark. Only directories
    with more dead than live URLs can be dead (for a confidence of at least 1/2), so the
    Arrow step sees few rows besides the explored ones."""
    judged = (crawldb.filter(F.col("status").isin(*LIVE, *DEAD))
              .select(directory(F.col("url")).alias("_dir"), F.col("status").isin(*DEAD).cast("long").alias("_d"))
              .groupBy("_dir").agg(F.sum("_d").alias("dead"), F.count("*").alias("judged"))
              .select("_dir", "dead", (F.col("judged") - F.col("dead")).alias("live")))
    may_be_dead = (F.col("dead") > F.col("live")) if confidence > 0 else F.lit(False)
    explored = (F.col("live") >= explored_pages) if explored_pages > 0 else F.lit(False)
    judged = judged.filter(may_be_dead | explored).select("_dir", "dead", "live", explored.alias("_explored"))

    def mark(batches):
        for batch in batches:
            dead, live = batch.column("dead").to_numpy(), batch.column("live").to_numpy()
            is_dead = (dead > live) & (dead_probability(dead, live) > confidence) if confidence > 0 \
                else np.zeros(len(dead), dtype=bool)
            yield pa.RecordBatch.from_arrays([batch.column("_dir"), pa.array(is_dead), batch.column("_explored")],
                                             ["_dir", "_dead", "_explored"])

    return judged.mapInArrow(mark, "_dir string, _dead boolean, _explored boolean")


def with_queue(candidates: DataFrame, conf: Conf, crawldb: DataFrame | None = None) -> DataFrame:
    """Adds ``_queue`` (sorts first when ascending): 0 for the hot queue, 1 for its URLs in
    explored directories, 2 for the rest. With ``crawldb``, hot-queue URLs in directories the
    crawl has found mostly dead join the rest (``focus.dead_link_confidence`` > 0) and those
    in directories it has explored wait behind the others (``focus.explored_directory_pages``
    > 0); module doc."""
    hot = in_hot_queue(conf)
    explored = F.lit(False)
    confidence = float(conf["focus.dead_link_confidence"])
    explored_pages = int(conf["focus.explored_directory_pages"])
    if crawldb is not None and (confidence > 0 or explored_pages > 0):
        marks = directory_marks(crawldb, confidence, explored_pages)
        candidates = (candidates.withColumn("_dir", directory(F.col("url")))
                      .join(marks, on="_dir", how="left").drop("_dir"))
        hot = hot & ~F.coalesce(F.col("_dead"), F.lit(False))
        explored = F.coalesce(F.col("_explored"), F.lit(False))
    queue = F.when(hot & ~explored, 0).when(hot, 1).otherwise(2)
    return candidates.withColumn(QUEUE, queue).drop("_dead", "_explored")   # no-ops without them
