"""The distributed engine: power iteration in Spark DataFrames, no Python in the loop.

For link tables too large for the driver. Pages get integer ids (the xxhash64 of the URL),
only the pages with out-links are iterated (the dangling pages' ranks follow once, at the
end), the ranks are broadcast to the edges or co-partitioned with them, and the lineage is
cut every iteration.
"""
from __future__ import annotations

import logging

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from crawlkit.scoring.pagerank.common import PageRankResult, empty_ranks
from crawlkit.scoring.pagerank.graph import LinkHashes, integer_graph

log = logging.getLogger(__name__)

# Largest rank vector the distributed engine broadcasts by default (16 bytes a page as
# (id, rank): 64 MB; every executor holds a copy); ``scoring.broadcast_max_pages`` sets it.
# Edges partitioned by source (co-partitioned with the ranks) put nearly every destination
# in every partition, so the partial sums hardly shrink: on web-NotreDame the partial
# aggregate was 37% of the JVM's samples (JFR) and ~7 MB of partial sums crossed the shuffle each
# iteration. With the ranks broadcast, edges partitioned by destination sum locally.
BROADCAST_MAX_PAGES = 4_000_000


def pagerank_distributed(spark: SparkSession, nodes: DataFrame, edges: DataFrame, *,
                         damping: float, tol: float, max_iter: int,
                         personalization: DataFrame | None = None, start: DataFrame | None = None,
                         checkpoint_every: int = 10,
                         broadcast_max_pages: int = BROADCAST_MAX_PAGES,
                         hashes: LinkHashes | None = None) -> PageRankResult:
    """DataFrame-only power iteration, with no shuffle of the edges in the loop.

    Pages are numbered by the xxhash64 of their URL (see :mod:`.graph`), so the links
    become integer pairs without a join on URL strings, and the prepared links are read
    once (``hashes``: the same links as hashes, already cached when ``engine = auto``
    counted them). The edges (src, dst, w = 1/outdeg, whether dst has out-links) are cached
    once. Only the pages with out-links and the links between them are iterated; the dangling pages' ranks are computed once at
    the end (:class:`_Lumped`). The rank vector (id, v, a, rank) is hash-partitioned by
    page id. Up to ``broadcast_max_pages`` pages it is broadcast to the
    edges, which are hash-partitioned by destination, so the per-destination sums are local;
    above it the edges are partitioned by source like the ranks, so the join needs no shuffle
    and only the partial sums shuffle. Either way the sums come out partitioned by page id
    and meet the old ranks (and v, and a) in a join without a shuffle.

    The L1 change and the sums that give the next dangling mass are observed
    (``DataFrame.observe``) while the new ranks are written: no job of their own. The
    teleport scalar that follows from that mass enters the next iteration as a broadcast
    one-row table, not a literal (see :func:`_scalar`). So an iteration is one job, plus
    the broadcasts of the ranks and of the scalar. The rank vector is local-checkpointed
    every iteration (see :class:`_Checkpoints`), reliably every ``checkpoint_every``, so
    100 iterations run in bounded memory and constant plan size. Adaptive execution is off
    while the loop runs: re-planning every small job costs more than it saves on a fixed
    plan, and coalescing shuffle partitions would break the partitioning the loop relies on.
    """
    key = "spark.sql.adaptive.enabled"
    saved = spark.conf.get(key, None)
    spark.conf.set(key, "false")
    hashes = hashes if hashes is not None else LinkHashes(edges)
    try:
        return _distributed(spark, nodes, edges, damping=damping, tol=tol, max_iter=max_iter,
                            personalization=personalization, start=start,
                            checkpoint_every=checkpoint_every,
                            broadcast_max_pages=broadcast_max_pages,
                            hashes=hashes)
    finally:
        hashes.release()
        if saved is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, saved)


def _distributed(spark: SparkSession, nodes: DataFrame, edges: DataFrame, *, damping: float,
                 tol: float, max_iter: int, personalization: DataFrame | None,
                 start: DataFrame | None, checkpoint_every: int,
                 broadcast_max_pages: int, hashes: LinkHashes) -> PageRankResult:
    parts = int(spark.conf.get("spark.sql.shuffle.partitions"))
    graph = integer_graph(nodes, hashes, parts)
    pairs, n = graph.pairs, graph.n
    if n == 0:
        return PageRankResult(empty_ranks(spark), 0, 0.0, "distributed")
    outdeg = pairs.groupBy("s").agg(F.count(F.lit(1)).alias("deg"))
    broadcast = n <= broadcast_max_pages
    # Each link with its share of the source's vote and whether its target has out-links.
    # Up to the broadcast bound the out-degrees join the links as broadcasts (two sort-merge
    # joins of every link fewer). Broadcast ranks: edges by destination (the sum is local);
    # else by source (co-partitioned with the ranks for the join; the partial sums shuffle).
    degrees, has_out = outdeg, outdeg.select(F.col("s").alias("t"), F.lit(True).alias("live"))
    if broadcast:
        degrees, has_out = F.broadcast(degrees), F.broadcast(has_out)
    links = (pairs.join(degrees, on="s", how="inner").join(has_out, on="t", how="left")
             .select(F.col("s").alias("src"), F.col("t").alias("dst"),
                     (F.lit(1.0) / F.col("deg")).alias("w"),
                     F.col("live").isNotNull().alias("live"))
             .repartition(parts, "dst" if broadcast else "src").cache())
    links.count()
    hashes.release()   # the links' one pass is in the cached edges now
    # Per source, from the cached links: the out-degree and a, the share of its vote that
    # goes to dangling pages (null when none does).
    sources = links.groupBy(F.col("src").alias("id")).agg(
        F.count(F.lit(1)).alias("deg"), F.sum(F.when(~F.col("live"), F.col("w"))).alias("a"))

    state = graph.pages.join(sources, on="id", how="left")
    v_col = F.lit(1.0 / n)
    if personalization is not None:
        pw = graph.by_id(personalization.select("url", F.col("weight").alias("pw")), "pw")
        total = pw.agg(F.sum("pw")).first()[0] or 0.0
        if total > 0:
            state = state.join(pw, on="id", how="left")
            v_col = F.coalesce(F.col("pw"), F.lit(0.0)) / F.lit(float(total))
    x_col = F.lit(1.0 / n)
    if start is not None:
        prev = graph.by_id(start.select("url", F.col("rank").alias("prev")), "prev")
        known = prev.agg(F.count(F.lit(1)), F.sum("prev")).first()
        if known[0] and (known[1] or 0) > 0:
            state = state.join(prev, on="id", how="left")
            scale = (known[0] / n) / known[1]
            x_col = F.coalesce(F.col("prev") * F.lit(scale), F.lit(1.0 / n))
    # Every page, hash-partitioned by page id: the per-destination sums (partitioned the same
    # way) join it without a shuffle, and every checkpoint keeps that partitioning.
    dangling = F.col("dangling")
    first = Observation()   # a name of its own: engines may run side by side
    pages = (state.select("id", v_col.alias("v"), F.col("deg").isNull().alias("dangling"),
                          F.coalesce(F.col("a"), F.lit(0.0)).alias("a"), x_col.alias("rank"))
             .repartition(parts, "id")
             .observe(first, F.sum(F.when(dangling, 1).otherwise(0)).alias("dangling_pages"),
                      F.sum(F.when(dangling, F.col("rank")).otherwise(0.0)).alias("lost"),
                      F.sum(F.when(dangling, F.col("v")).otherwise(0.0)).alias("v_dangling"),
                      F.sum(F.col("a") * F.col("rank")).alias("ax"))   # a = 0 when dangling
             .localCheckpoint(eager=True))
    seen = first.get
    lumped = _Lumped(damping, int(seen["dangling_pages"] or 0) > 0,
                     float(seen["v_dangling"] or 0.0), float(seen["lost"] or 0.0),
                     float(seen["ax"] or 0.0))
    # The iterated vector: pages with out-links only (see _Lumped).
    ranks = pages.filter(~dangling).select("id", "v", "a", "rank")
    live_links = links.filter(F.col("live"))

    it, delta = 0, float("inf")
    checkpoints = _Checkpoints(spark, checkpoint_every)
    while it < max_iter:
        it += 1
        sums = (live_links.join(_rank_side(ranks, broadcast), on="src", how="inner")
                .groupBy("dst").agg(F.sum(F.col("w") * F.col("src_rank")).alias("c")))
        new_rank = F.col("base") * F.col("v") + F.lit(damping) * F.coalesce(F.col("c"), F.lit(0.0))
        cur = ranks.select("id", "v", "a", "rank")
        nxt = (cur.join(sums.hint("shuffle_hash"), cur["id"] == sums["dst"], "left")
               .crossJoin(F.broadcast(_scalar(spark, "base", lumped.base)))
               .select("id", "v", "a", new_rank.alias("rank"), F.col("rank").alias("prev"),
                       F.abs(new_rank - F.col("rank")).alias("change")))
        if it == 1 and log.isEnabledFor(logging.DEBUG):
            log.debug("iteration plan:\n%s", nxt._jdf.queryExecution().executedPlan().toString())
        totals = Observation()
        nxt = nxt.observe(totals, F.sum("change").alias("change"),
                          F.sum(F.col("a") * F.col("change")).alias("a_change"),
                          F.sum(F.col("a") * F.col("rank")).alias("ax"))
        ranks = checkpoints.cut(nxt.drop("change"), it)   # observed, not stored
        seen = totals.get
        delta = lumped.step(float(seen["change"] or 0.0), float(seen["a_change"] or 0.0),
                            float(seen["ax"] or 0.0))
        log.debug("pagerank iteration %d: L1 change at most %.3g", it, delta)
        if delta < tol:
            break
    if it == 0:
        final = pages.select("id", "rank")
    else:
        final = ranks.select("id", "rank")
        if lumped.any_dangling:
            final = final.union(_dangling_ranks(pages, links, ranks, damping, lumped.before,
                                                 broadcast))
    out = (final.join(graph.names, on="id", how="inner").select("url", "rank")
           .localCheckpoint(eager=True))
    checkpoints.release()
    links.unpersist()
    return PageRankResult(out, it, delta, "distributed")


class _Lumped:
    """The scalars that let the loop iterate over pages with out-links only.

    A dangling page p (no out-links) passes nothing along its links; it enters the next
    iteration only through the mass it holds, which every page gets back by the teleport
    vector. Its rank at iteration k is fixed by the ranks of iteration k-1 of the pages that
    link to it, x_k(p) = base_{k-1} v_p + d sum_{q->p} x_{k-1}(q)/deg(q), so the dangling
    mass is a weighted sum over the other pages:

        lost_k = sum_{p dangling} x_k(p) = base_{k-1} V_D + d sum_q a_q x_{k-1}(q)
        base_k = d lost_k + 1 - d

    with a_q the share of q's vote that goes to dangling pages and V_D the teleport mass on
    them. The iterates of the other pages are the power iteration's exactly, the dangling
    pages' ranks are computed once at the end (:func:`_dangling_ranks`), and the links into
    dangling pages drop out of the loop: on web-NotreDame 58% of the pages and 20% of the
    links (Lee, Golub and Zenios 2003; Ipsen and Selee 2007, "PageRank computation, with
    special attention to dangling nodes").

    The L1 change of the dangling pages, which the loop no longer sees, is bounded from the
    same scalars: sum_p |x_k(p) - x_{k-1}(p)| <= |base_{k-1} - base_{k-2}| V_D
    + d sum_q a_q |x_{k-1}(q) - x_{k-2}(q)|. :meth:`step` returns the loop's own change plus
    that bound, an upper bound of the power iteration's change (so it stops at the same
    iteration or later). Without it at iteration 1 (the start's dangling ranks are not in
    the loop), a graph with dangling pages runs at least two iterations.
    """

    def __init__(self, damping: float, any_dangling: bool, v_dangling: float, lost: float,
                 ax: float):
        self.d, self.any_dangling, self.v_dangling = damping, any_dangling, v_dangling
        self.base = damping * lost + 1.0 - damping   # base_{k-1} for the next iteration k
        self.ax = ax                                 # sum_q a_q x_{k-1}(q)
        self.a_change: float | None = None           # sum_q a_q |x_{k-1}(q) - x_{k-2}(q)|
        self.before: float | None = None             # base_{k-2}; after step k, base_{k-1}

    def step(self, change: float, a_change: float, ax: float) -> float:
        """After iteration k: the bound on its L1 change; moves base on to base_k."""
        if not self.any_dangling:
            bound = change
        elif self.a_change is None:
            bound = float("inf")
        else:
            bound = (change + abs(self.base - self.before) * self.v_dangling
                     + self.d * self.a_change)
        lost = self.base * self.v_dangling + self.d * self.ax
        self.before = self.base
        self.base = self.d * lost + 1.0 - self.d
        self.ax, self.a_change = ax, a_change
        return bound


def _dangling_ranks(pages: DataFrame, links: DataFrame, ranks: DataFrame, damping: float,
                    base: float, broadcast: bool) -> DataFrame:
    """x_k of the dangling pages (id, rank) from x_{k-1} of the others (``prev``)."""
    sums = (links.filter(~F.col("live"))
            .join(_rank_side(ranks, broadcast, "prev"), on="src", how="inner")
            .groupBy("dst").agg(F.sum(F.col("w") * F.col("src_rank")).alias("c")))
    dangling = pages.filter(F.col("dangling"))
    return (dangling.join(sums, dangling["id"] == sums["dst"], "left")
            .select("id", (F.lit(base) * F.col("v")
                           + F.lit(damping) * F.coalesce(F.col("c"), F.lit(0.0))).alias("rank")))


def _rank_side(ranks: DataFrame, broadcast: bool, column: str = "rank") -> DataFrame:
    """The ranks as the edges' join sees them (src, src_rank): broadcast, or co-partitioned
    with the edges (both hash-partitioned by page id: a hash join per partition, no shuffle)."""
    side = ranks.select(F.col("id").alias("src"), F.col(column).alias("src_rank"))
    return F.broadcast(side) if broadcast else side.hint("shuffle_hash")


def _scalar(spark: SparkSession, name: str, value: float) -> DataFrame:
    """A one-row DataFrame holding ``value``: the iteration's scalar enters the plan as data.

    As ``F.lit(value)`` in the iteration's expressions it would be inlined into the generated
    Java code of the whole stage, which then differs in every iteration: Spark compiles it
    again and the JVM runs the new class interpreted until it warms up. Here only this
    one-row side is compiled anew. It is a one-partition ``range``, not a
    ``createDataFrame`` of a Python list: that one is a Python RDD, a two-task job through
    Python workers (150-430 ms an iteration on web-NotreDame, competing for the cores with
    the broadcast of the ranks).
    """
    return spark.range(0, 1, 1, 1).select(F.lit(float(value)).alias(name))


class _Checkpoints:
    """Materialize each iteration's ranks and cut the lineage.

    Every iteration is local-checkpointed: a chain of cached DataFrames keeps growing the
    query plan, and Spark's cache lookup re-canonicalizes it against every cached entry, so
    iteration k costs O(k^2) on the driver (measured: 10 cached iterations took 20x longer
    than 10 checkpointed ones). A local checkpoint costs what a cache costs. Every
    ``every`` iterations the checkpoint is a reliable one (files in the checkpoint
    directory) so a lost executor costs at most that many iterations; the files of a
    reliable checkpoint are deleted once a newer one (or the result) supersedes them.
    """

    def __init__(self, spark: SparkSession, every: int):
        self.spark, self.every = spark, every
        self.files: list[str] = []

    def _fs_dir(self):
        jsc = self.spark.sparkContext._jsc
        folder = jsc.sc().getCheckpointDir()
        if folder.isEmpty():
            return None, None
        path = self.spark.sparkContext._jvm.org.apache.hadoop.fs.Path(folder.get())
        return path.getFileSystem(jsc.hadoopConfiguration()), path

    def _listing(self, fs, path) -> set[str]:
        if not fs.exists(path):
            return set()
        return {str(st.getPath().toString()) for st in fs.listStatus(path)}

    def cut(self, df: DataFrame, iteration: int) -> DataFrame:
        if not (self.every > 0 and iteration % self.every == 0):
            return df.localCheckpoint(eager=True)
        fs, path = self._fs_dir()
        if fs is None:
            return df.localCheckpoint(eager=True)
        before = self._listing(fs, path)
        out = df.checkpoint(eager=True)
        new = sorted(self._listing(fs, path) - before)
        self.release()
        self.files = new
        return out

    def release(self) -> None:
        """Delete the files of the last reliable checkpoint (the next one replaces it)."""
        if self.files:
            fs, _ = self._fs_dir()
            jvm = self.spark.sparkContext._jvm
            for name in self.files:
                fs.delete(jvm.org.apache.hadoop.fs.Path(name), True)
        self.files = []
