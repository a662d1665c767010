"""PageRank (IR' in Cho et al.), in probability form: the ranks of all pages sum to 1.

R = d * (M^T R + D * v) + (1 - d) * v, where M is the row-normalized link matrix (a page
splits its vote equally among its distinct out-links), D the rank held by pages without
out-links (dangling pages) and v the teleport vector (uniform, or the personalization). A
dangling page thus "links to every page" (of v), as the paper assumes, and no rank leaks
away: Nutch's LinkRank loses it, GraphX rescales at the end (see docs/scoring.md).

The paper's form R'(p) = (1 - d) + d * sum R'(q)/c(q) has R' = N * R when no page is
dangling. Iteration stops when the L1 change of R falls below ``scoring.tolerance`` or after
``scoring.max_iterations``. The engines give the same answer (tested to 1e-9 L1):

* ``driver``: the links and their integer page ids (xxhash64 of the URL, checked for
  clashes) collected as Arrow in one job, ids made dense by a hash table, a scipy CSR
  matrix, power iteration in numpy, (url, rank) back to Spark as Arrow. The fastest below
  tens of millions of edges (``scoring.driver_max_edges``).
* ``distributed``: Spark DataFrames only, no Python in the loop; integer ids (xxhash64 of
  the URL, checked for clashes); the loop iterates over the pages with out-links only (the
  dangling pages' ranks follow from them, once, at the end: the same iterates); the ranks
  broadcast to edges partitioned by destination (no shuffle at all), or above
  ``BROADCAST_MAX_PAGES`` edges and ranks co-partitioned by source (no shuffle on the
  join); |delta| and the dangling mass observed as the ranks are written, lineage cut every
  iteration (reliably every ``scoring.checkpoint_every``).
* ``graphx``: GraphX's PageRank (``PageRank.runUntilConvergenceWithOptions``, what
  GraphFrames runs) through crawlkit's bridge class, normalized to sum 1.
* ``graphframes``: GraphFrames' pageRank (needs its JVM jar), normalized to sum 1.

Example::

    result = pagerank(spark, nodes, edges, damping=0.85, tol=1e-9)
    result.ranks       # url, rank
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from crawlkit import storage
from crawlkit.conf import Conf
from crawlkit.scoring.base import BaseScorer, ScoringContext, register
from crawlkit.scoring.links import prepare_links

log = logging.getLogger(__name__)

ENGINES = ("auto", "driver", "distributed", "graphx", "graphframes")


@dataclass
class PageRankResult:
    ranks: DataFrame      # url, rank (probability form, sums to 1)
    iterations: int       # power iterations run
    delta: float          # L1 change of the last iteration (distributed: an upper bound of
                          # it; nan when the engine hides it)
    engine: str


# --------------------------------------------------------------------------- shared helpers
def node_set(nodes: DataFrame, edges: DataFrame) -> DataFrame:
    """All pages: the given nodes plus every link endpoint (url)."""
    return (nodes.select("url")
            .union(edges.select(F.col("src").alias("url")))
            .union(edges.select(F.col("dst").alias("url")))
            .distinct())


def _pick_engine(engine: str, edges: DataFrame, driver_max_edges: int,
                 edges_at_most: int | None = None) -> str:
    """``auto``: the driver engine up to ``driver_max_edges`` edges. ``edges_at_most`` (an
    upper bound the caller knows for free, e.g. the link table's row count from Delta's
    statistics) spares counting the edges, a full pass over their preparation."""
    if engine not in ENGINES:
        raise ValueError(f"scoring.engine must be one of {ENGINES}, got {engine!r}")
    if engine != "auto":
        return engine
    if edges_at_most is not None and edges_at_most <= driver_max_edges:
        return "driver"
    return "driver" if edges.count() <= driver_max_edges else "distributed"


def pagerank(spark: SparkSession, nodes: DataFrame, edges: DataFrame, *, damping: float = 0.85,
             tol: float = 1e-9, max_iter: int = 100, engine: str = "auto",
             personalization: DataFrame | None = None, start: DataFrame | None = None,
             checkpoint_every: int = 10, driver_max_edges: int = 20_000_000,
             edges_at_most: int | None = None,
             broadcast_max_pages: int | None = None) -> PageRankResult:
    """PageRank over ``nodes`` (url) and ``edges`` (src, dst: distinct, no self-links).

    ``personalization`` (url, weight) replaces the uniform teleport vector (normalized here;
    dangling pages spread their rank by it too); ``start`` (url, rank) is the warm start:
    renormalized so the pages it knows keep their share of N_known / N and every other page
    starts at 1/N. ``edges_at_most``: a known upper bound on the edges (see _pick_engine).
    ``broadcast_max_pages``: the distributed engine's layout bound (``BROADCAST_MAX_PAGES``
    when None).
    """
    chosen = _pick_engine(engine, edges, driver_max_edges, edges_at_most)
    if chosen == "driver":
        return pagerank_driver(spark, nodes, edges, damping=damping, tol=tol, max_iter=max_iter,
                               personalization=personalization, start=start)
    if chosen == "distributed":
        return pagerank_distributed(spark, nodes, edges, damping=damping, tol=tol,
                                    max_iter=max_iter, personalization=personalization,
                                    start=start, checkpoint_every=checkpoint_every,
                                    broadcast_max_pages=(BROADCAST_MAX_PAGES if broadcast_max_pages is None
                                                         else broadcast_max_pages))
    if chosen == "graphx":
        return pagerank_graphx(spark, nodes, edges, damping=damping, tol=tol,
                               max_iter=max_iter, personalization=personalization)
    return pagerank_graphframes(spark, nodes, edges, damping=damping, tol=tol,
                                max_iter=max_iter, personalization=personalization)


# --------------------------------------------------------------------------- driver engine
def _arrow(df: DataFrame) -> pa.Table:
    """Collect as Arrow (pyspark 4: toArrow; older: _collect_as_arrow)."""
    if hasattr(df, "toArrow"):
        return df.toArrow()
    return pa.Table.from_batches(df._collect_as_arrow())  # pragma: no cover


def _from_arrow(spark: SparkSession, table: pa.Table) -> DataFrame:
    """``createDataFrame`` from Arrow as a distributed relation in about as many partitions
    as there are cores.

    Below ``arrow.localRelationThreshold`` (48 MB) pyspark 4.1 makes a LocalRelation, whose
    rows travel inside every task: counting 325k (id, rank) rows took 4-5 s that way and
    1 s as an RDD of Arrow batches. One partition per batch of ``arrow.maxRecordsPerBatch``
    (10,000) rows would be 33 tasks for 325k ranks.
    """
    cores = max(1, spark.sparkContext.defaultParallelism)
    batch_rows = str(max(10_000, -(-table.num_rows // cores)))
    with storage.session_setting(spark, "spark.sql.execution.arrow.localRelationThreshold", "0"), \
            storage.session_setting(spark, "spark.sql.execution.arrow.maxRecordsPerBatch", batch_rows):
        return spark.createDataFrame(table)


def _h1(col: str):
    """Page id: xxhash64 of the URL (a projection in Spark, no shuffle, no join)."""
    return F.xxhash64(F.col(col))


def _h2(col: str):
    """Check hash: Murmur3 (32 bit, an unrelated function) of the URL. Two URLs that share
    an id are caught unless they also share this hash (a 96-bit fingerprint collision:
    probability below n^2 / 2^97, 1e-15 at 10M pages)."""
    return F.hash(F.col(col))


class _Clash(Exception):
    """Two different URLs share an xxhash64 id."""


@dataclass
class _Occurrences:
    """Every page occurrence collected from Spark in one job: [nodes.url; src; dst].

    The URL strings come along with the hashes because a page's URL is needed anyway for the
    result: taking the 325k first occurrences here costs less than a second Spark pass that
    hashes the 2.9M link endpoints again and broadcast-joins the ranks back to them
    (measured on web-NotreDame: 3.4-4.7 s for that join at load 13).
    """
    urls: pa.ChunkedArray  # URL of each occurrence
    h1: np.ndarray         # its xxhash64 (the page id)
    h2: np.ndarray         # its Murmur3 hash (the clash check)
    k: int                 # occurrences from nodes
    m: int                 # links

    @classmethod
    def collect(cls, nodes: DataFrame, edges: DataFrame) -> "_Occurrences":
        nt = _arrow(nodes.select("url", _h1("url").alias("h1"), _h2("url").alias("h2")))
        et = _arrow(edges.select("src", "dst", _h1("src").alias("s1"), _h2("src").alias("s2"),
                                 _h1("dst").alias("d1"), _h2("dst").alias("d2")))
        urls = pa.chunked_array(nt.column("url").chunks + et.column("src").chunks
                                + et.column("dst").chunks, type=pa.string())
        h1 = np.concatenate([_ints(nt, "h1"), _ints(et, "s1"), _ints(et, "d1")])
        h2 = np.concatenate([_ints(nt, "h2"), _ints(et, "s2"), _ints(et, "d2")])
        return cls(urls, h1, h2, nt.num_rows, et.num_rows)


def _ints(table: pa.Table, name: str) -> np.ndarray:
    """One integer column as numpy (one copy when Arrow gives several batches)."""
    return table.column(name).to_numpy()


@dataclass
class _HashPages:
    """Pages numbered by a hash table over their xxhash64 ids, in order of first occurrence."""
    hashes: np.ndarray     # distinct xxhash64 of the pages
    checks: np.ndarray     # the Murmur3 hash of page k
    first: np.ndarray      # position of page k's first occurrence in [nodes; src; dst]

    def positions(self, df: DataFrame) -> tuple[pa.Table, np.ndarray]:
        """(url, value) rows collected as hashes: page index of each, -1 for URLs that
        are not pages."""
        t = _arrow(df.select(_h1("url").alias("h1"), _h2("url").alias("h2"),
                             F.col(df.columns[1]).cast("double").alias("value")))
        if not t.num_rows or not len(self.hashes):
            return t, np.full(t.num_rows, -1, dtype=np.int64)
        h1, h2 = _ints(t, "h1"), _ints(t, "h2")
        pos = pd.Index(self.hashes).get_indexer(h1)
        found = (pos >= 0) & (self.checks[np.maximum(pos, 0)] == h2)
        return t, np.where(found, pos, -1).astype(np.int64)


@dataclass
class _StringPages:
    """Pages numbered by a dictionary encoding of their URLs (the fallback on a clash)."""
    urls: pa.Array         # URL of page k

    def positions(self, df: DataFrame) -> tuple[pa.Table, np.ndarray]:
        t = _arrow(df.select("url", F.col(df.columns[1]).cast("double").alias("value")))
        pos = pc.index_in(t.column("url"), value_set=self.urls).fill_null(-1)
        return t, pos.to_numpy(zero_copy_only=False).astype(np.int64)


def _first_occurrences(codes: np.ndarray) -> np.ndarray:
    """Position of each code's first occurrence, for codes numbered in order of first
    occurrence (what ``pd.factorize`` returns): code k first appears where the running
    maximum of the codes reaches k. One pass, no sort."""
    if not len(codes):
        return np.zeros(0, dtype=np.int64)
    top = np.maximum.accumulate(codes)
    rises = np.empty(len(codes), dtype=bool)
    rises[0] = True
    np.greater(top[1:], top[:-1], out=rises[1:])
    return np.flatnonzero(rises)


def _take_sorted(values: pa.ChunkedArray, positions: np.ndarray) -> pa.Array:
    """``values.take(positions)`` for increasing positions, chunk by chunk: a take over a
    chunked string array first concatenates every chunk (2.9M URLs of web-NotreDame copied
    to keep 325k of them)."""
    bounds = np.cumsum([0] + [len(chunk) for chunk in values.chunks])
    cuts = np.searchsorted(positions, bounds)
    parts = [chunk.take(pa.array(positions[lo:hi] - start))
             for chunk, start, lo, hi in zip(values.chunks, bounds, cuts[:-1], cuts[1:]) if hi > lo]
    return pa.concat_arrays(parts) if parts else pa.array([], type=values.type)


def _hash_ids(occ: _Occurrences) -> tuple[_HashPages, np.ndarray]:
    """Distinct pages and the page index of each occurrence; raises _Clash when two
    occurrences share h1 but not h2 (two URLs, one xxhash64).

    ``pd.factorize`` is one hash table pass; ``np.unique`` sorted the 2.9M occurrences of
    web-NotreDame (1.5-5.8 s under load against 0.4-0.5 s). Pages are numbered in order of
    first occurrence, so the first occurrences follow from the codes without a lookup.
    """
    codes, hashes = pd.factorize(occ.h1, sort=False)
    codes = codes.astype(np.int64, copy=False)
    first = _first_occurrences(codes)
    checks = occ.h2[first]
    if not np.array_equal(checks[codes], occ.h2):
        raise _Clash()
    return _HashPages(np.asarray(hashes), checks, first), codes


def _string_ids(occ: _Occurrences) -> tuple[_StringPages, np.ndarray]:
    """Distinct pages by URL string (exact, slower: used only when two URLs share an id)."""
    encoded = occ.urls.combine_chunks().dictionary_encode()
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return _StringPages(encoded.dictionary), codes


def _weights(df: DataFrame, pages: _HashPages | _StringPages, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense vector from a (url, value) DataFrame by page index (URLs not pages are
    ignored, repeated URLs add up) and the mask of pages it names."""
    t, pos = pages.positions(df)
    out, have = np.zeros(n), np.zeros(n, dtype=bool)
    if t.num_rows:
        vals = t.column("value").to_numpy(zero_copy_only=False)
        keep = (pos >= 0) & ~np.isnan(vals)
        np.add.at(out, pos[keep], vals[keep])
        have[pos[keep]] = True
    return out, have


def power_iteration(matrix: sp.csr_matrix, dangling: np.ndarray, v: np.ndarray, x: np.ndarray,
                    damping: float, tol: float, max_iter: int) -> tuple[np.ndarray, int, float]:
    """x <- d (M^T x + D v) + (1 - d) v until the L1 change < tol; ``matrix`` is M^T (CSR)."""
    delta = float("inf")
    it = 0
    while it < max_iter:
        it += 1
        lost = x[dangling].sum()
        new = damping * (matrix @ x) + (damping * lost + 1.0 - damping) * v
        delta = float(np.abs(new - x).sum())
        x = new
        if delta < tol:
            break
    return x, it, delta


def transition_matrix(src: np.ndarray, dst: np.ndarray, n: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """M^T as CSR (column q holds 1/outdeg(q) at each out-link) and the dangling mask."""
    outdeg = np.bincount(src, minlength=n).astype(float)
    weights = 1.0 / outdeg[src]
    matrix = sp.csr_matrix((weights, (dst, src)), shape=(n, n))
    return matrix, outdeg == 0


def start_vector(known: np.ndarray, have: np.ndarray) -> np.ndarray:
    """Warm start: previous ranks (``have`` marks pages that had one) renormalized to a share
    of N_known / N; new pages start at 1/N."""
    n = len(known)
    x = np.full(n, 1.0 / n)
    total = known[have].sum()
    if have.any() and total > 0:
        x[have] = known[have] / total * (have.sum() / n)
    return x


def _solve(n: int, src: np.ndarray, dst: np.ndarray, damping: float, tol: float, max_iter: int,
           teleport: tuple[np.ndarray, np.ndarray] | None,
           previous: tuple[np.ndarray, np.ndarray] | None) -> tuple[np.ndarray, int, float]:
    matrix, dangling = transition_matrix(src, dst, n)
    v = np.full(n, 1.0 / n)
    if teleport is not None and teleport[0].sum() > 0:
        v = teleport[0] / teleport[0].sum()
    x = np.full(n, 1.0 / n)
    if previous is not None:
        x = start_vector(*previous)
    return power_iteration(matrix, dangling, v, x, damping, tol, max_iter)


def pagerank_driver(spark: SparkSession, nodes: DataFrame, edges: DataFrame, *, damping: float,
                    tol: float, max_iter: int, personalization: DataFrame | None = None,
                    start: DataFrame | None = None) -> PageRankResult:
    """Collect the links once via Arrow, solve with scipy on the driver, hand the ranks back
    to Spark as Arrow.

    One Spark job projects each URL occurrence to its xxhash64 (the page id) and its
    Murmur3 hash (a collision check) and ships them with the URL strings. A pandas hash
    table makes the ids dense (numbered by first occurrence) and checks that no two URLs
    share an id (else the URLs themselves are dictionary-encoded: exact, slower). The CSR
    matrix is built once, the power iteration runs in numpy, and each page's URL is its first
    occurrence's string, so the (url, rank) table goes back to Spark from Arrow with no
    second pass over the links, no join and no shuffle.
    """
    occ = _Occurrences.collect(nodes, edges)
    try:
        pages, codes = _hash_ids(occ)
        urls = _take_sorted(occ.urls, pages.first)
    except _Clash:
        log.warning("pagerank driver: two URLs share an xxhash64 id; encoding the URL strings")
        pages, codes = _string_ids(occ)
        urls = pages.urls
    n = len(urls)
    if n == 0:
        return PageRankResult(_empty_ranks(spark), 0, 0.0, "driver")
    teleport = _weights(personalization.select("url", "weight"), pages, n) if personalization is not None else None
    previous = _weights(start.select("url", "rank"), pages, n) if start is not None else None
    k, m = occ.k, occ.m
    x, it, delta = _solve(n, codes[k:k + m], codes[k + m:], damping, tol, max_iter, teleport, previous)
    ranks = _from_arrow(spark, pa.table({"url": urls, "rank": pa.array(x)}))
    return PageRankResult(ranks, it, delta, "driver")


def _empty_ranks(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([], "url string, rank double")


# --------------------------------------------------------------------------- distributed engine
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
                         broadcast_max_pages: int = BROADCAST_MAX_PAGES) -> PageRankResult:
    """DataFrame-only power iteration, with no shuffle of the edges in the loop.

    Pages are numbered by the xxhash64 of their URL (see :func:`_integer_graph`), so the
    links become integer pairs without a join on URL strings. The edges (src, dst,
    w = 1/outdeg, whether dst has out-links) are cached once. Only the pages with out-links
    and the links between them are iterated; the dangling pages' ranks are computed once at
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
    try:
        return _distributed(spark, nodes, edges, damping=damping, tol=tol, max_iter=max_iter,
                            personalization=personalization, start=start,
                            checkpoint_every=checkpoint_every,
                            broadcast_max_pages=broadcast_max_pages)
    finally:
        if saved is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, saved)


def _integer_graph(nodes: DataFrame, edges: DataFrame,
                   parts: int) -> tuple[DataFrame, DataFrame, int]:
    """Pages (url, id), links (s, t) as integer ids, and the page count.

    The id is the URL's xxhash64, so the links become integers by a projection: no join of
    1.5M links with the page table on URL strings (two shuffles of the strings, most of the
    engine's setup). One shuffle of the 64-bit ids checks that no two pages share one; on a
    clash the ids are numbered instead (``monotonically_increasing_id``, frozen by a local
    checkpoint) and joined to the links by URL.
    """
    ids = (node_set(nodes, edges).select("url", _h1("url").alias("id"))
           .repartition(parts, "id")
           .localCheckpoint(eager=True))   # by id, as the rank vector: joined to it once
    n = ids.count()
    if ids.select("id").distinct().count() == n:
        return ids, edges.select(_h1("src").alias("s"), _h1("dst").alias("t")), n
    log.warning("pagerank distributed: two URLs share an xxhash64 id; numbering the pages")
    ids = (ids.select("url").withColumn("id", F.monotonically_increasing_id())
           .localCheckpoint(eager=True))   # freeze the ids: the function is not deterministic
    src_id = ids.select(F.col("url").alias("src"), F.col("id").alias("s"))
    dst_id = ids.select(F.col("url").alias("dst"), F.col("id").alias("t"))
    pairs = (edges.select("src", "dst").join(src_id, on="src", how="inner")
             .join(dst_id, on="dst", how="inner").select("s", "t"))
    return ids, pairs, n


def _distributed(spark: SparkSession, nodes: DataFrame, edges: DataFrame, *, damping: float,
                 tol: float, max_iter: int, personalization: DataFrame | None,
                 start: DataFrame | None, checkpoint_every: int,
                 broadcast_max_pages: int) -> PageRankResult:
    parts = int(spark.conf.get("spark.sql.shuffle.partitions"))
    ids, pairs, n = _integer_graph(nodes, edges, parts)
    if n == 0:
        return PageRankResult(_empty_ranks(spark), 0, 0.0, "distributed")
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
    # Per source, from the cached links: the out-degree and a, the share of its vote that
    # goes to dangling pages (null when none does).
    sources = links.groupBy(F.col("src").alias("id")).agg(
        F.count(F.lit(1)).alias("deg"), F.sum(F.when(~F.col("live"), F.col("w"))).alias("a"))

    state = ids.join(sources, on="id", how="left")
    v_col = F.lit(1.0 / n)
    if personalization is not None:
        pw = personalization.groupBy("url").agg(F.sum("weight").alias("pw"))
        total = pw.join(ids, on="url", how="inner").agg(F.sum("pw")).first()[0] or 0.0
        if total > 0:
            state = state.join(pw, on="url", how="left")
            v_col = F.coalesce(F.col("pw"), F.lit(0.0)) / F.lit(float(total))
    x_col = F.lit(1.0 / n)
    if start is not None:
        prev = start.groupBy("url").agg(F.sum("rank").alias("prev"))
        known = prev.join(ids, on="url", how="inner").agg(F.count(F.lit(1)), F.sum("prev")).first()
        if known[0] and (known[1] or 0) > 0:
            state = state.join(prev, on="url", how="left")
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
    out = (final.join(ids, on="id", how="inner").select("url", "rank")
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


# --------------------------------------------------------------------------- graphx engine
def _single_source(personalization: DataFrame | None, engine: str) -> str | None:
    if personalization is None:
        return None
    sources = [r.url for r in personalization.filter(F.col("weight") > 0)
               .select("url").distinct().limit(2).collect()]
    if len(sources) != 1:
        raise ValueError(f"the {engine} engine personalizes on one source page only; "
                         "use engine=driver or distributed")
    return sources[0]


def graphx_raw(spark: SparkSession, nodes: DataFrame, edges: DataFrame, *, damping: float,
               tol: float, max_iter: int, source: str | None = None) -> DataFrame:
    """GraphX's own answer, unnormalized: url, rank (sums to N; to 1 with a source page).

    Pages get dense ids as in the distributed engine (``monotonically_increasing_id``,
    frozen by a local checkpoint, joined to the links), the edges go to the JVM as a
    DataFrame and crawlkit's bridge (scripts/jars/graphx-bridge) builds the GraphX graph
    and runs ``PageRank.runUntilConvergenceWithOptions(graph, tol, 1 - d, source)``, or
    ``runWithOptions`` for ``max_iter`` iterations when ``tol <= 0``.
    """
    from crawlkit.spark import GRAPHX_BRIDGE, has_graphx_bridge
    if not has_graphx_bridge(spark):
        raise RuntimeError(f"scoring.engine=graphx needs {GRAPHX_BRIDGE} "
                           "(.jars/crawlkit-graphx-bridge.jar: run scripts/setup.sh)")
    ids = (node_set(nodes, edges).withColumn("id", F.monotonically_increasing_id())
           .localCheckpoint(eager=True))
    pairs = (edges.select("src", "dst")
             .join(ids.select(F.col("url").alias("src"), F.col("id").alias("s")), on="src")
             .join(ids.select(F.col("url").alias("dst"), F.col("id").alias("d")), on="dst")
             .select(F.col("s").alias("src"), F.col("d").alias("dst")))
    source_id = -1
    if source is not None:
        row = ids.filter(F.col("url") == source).select("id").first()
        if row is None:
            raise ValueError(f"personalization source {source!r} is not a page")
        source_id = int(row[0])
    bridge = spark._jvm.io.crawlkit.graphx.PageRankBridge
    jdf = bridge.pageRank(ids.select("id")._jdf, pairs._jdf, float(tol), 1.0 - damping,
                          int(max_iter), source_id)
    ranks = DataFrame(jdf, spark)
    return (ranks.join(ids, on="id", how="inner").select("url", "rank")
            .localCheckpoint(eager=True))


def pagerank_graphx(spark: SparkSession, nodes: DataFrame, edges: DataFrame, *,
                    damping: float, tol: float, max_iter: int,
                    personalization: DataFrame | None = None) -> PageRankResult:
    """GraphX's PageRank divided by its sum (the same semantics as the graphframes engine:
    see :func:`pagerank_graphframes` and docs/scoring.md). ``tol`` goes to GraphX as is: a
    per-vertex change on the N scale, at which a vertex stops sending; GraphX then runs
    without an iteration cap (``max_iter`` is used only when ``tol <= 0``) and does not report
    the iterations it ran (-1).
    """
    raw = graphx_raw(spark, nodes, edges, damping=damping, tol=tol, max_iter=max_iter,
                     source=_single_source(personalization, "graphx"))
    total = raw.agg(F.sum("rank")).first()[0] or 1.0
    out = raw.select("url", (F.col("rank") / F.lit(float(total))).alias("rank"))
    return PageRankResult(out, -1, float("nan"), "graphx")


# --------------------------------------------------------------------------- graphframes engine
def pagerank_graphframes(spark: SparkSession, nodes: DataFrame, edges: DataFrame, *,
                         damping: float, tol: float, max_iter: int,
                         personalization: DataFrame | None = None) -> PageRankResult:
    """GraphFrames' pageRank, divided by its sum so it is comparable with the other engines.

    GraphFrames 0.12 runs GraphX's PageRank: R = (1 - d) + d * sum R(q)/c(q), starting
    from 1.0 (N-scaled), and dangling pages *leak* their rank instead of spreading it; at
    the end GraphX rescales the ranks to sum N (SPARK-18847), or 1 when personalized. With a
    uniform teleport (or a single source) the leaky solution is proportional to ours, so
    R_ours = R_graphframes / sum(R_graphframes) once converged. Its ``tol`` is a per-vertex
    change on the N scale (not an L1 bound), and it takes no warm start; the iterations it
    ran are not reported (iterations = -1).
    """
    from crawlkit.spark import has_graphframes
    if not has_graphframes(spark):
        raise RuntimeError("scoring.engine=graphframes needs the GraphFrames JVM jar "
                           "(io.graphframes:graphframes-spark4_2.13) on the Spark classpath")
    from graphframes import GraphFrame

    vertices = node_set(nodes, edges).select(F.col("url").alias("id"))
    graph = GraphFrame(vertices, edges.select("src", "dst"))
    source = _single_source(personalization, "graphframes")
    result = graph.pageRank(resetProbability=1.0 - damping, sourceId=source, tol=tol)
    ranks = result.vertices.select(F.col("id").alias("url"), F.col("pagerank").alias("rank"))
    total = ranks.agg(F.sum("rank")).first()[0] or 1.0
    out = ranks.select("url", (F.col("rank") / F.lit(float(total))).alias("rank"))
    return PageRankResult(out, -1, float("nan"), "graphframes")


# --------------------------------------------------------------------------- host graph
def host_pagerank(spark: SparkSession, links: DataFrame, hosts: DataFrame | None = None,
                  **options) -> PageRankResult:
    """PageRank of the host graph: one node per host, one edge per linked host pair.

    ``links`` are prepared links (src_host, dst_host); links within a host are dropped (a
    host cannot vote for itself). ``hosts`` (host) adds hosts without links. The result's
    ``ranks`` has columns url (= the host name) and rank.
    """
    edges = (links.filter(F.col("src_host") != F.col("dst_host"))
             .select(F.col("src_host").alias("src"), F.col("dst_host").alias("dst")).distinct())
    nodes = (hosts.select(F.col("host").alias("url")) if hosts is not None
             else edges.select(F.col("src").alias("url")).limit(0))
    return pagerank(spark, nodes, edges, **options)


# --------------------------------------------------------------------------- scorers
def teleport(ctx: ScoringContext) -> DataFrame | None:
    """The personalization vector (url, weight) named by ``scoring.personalization``.

    "" = uniform (None); "seeds" = the injected seeds; "hosts:a.com,b.org" = the pages of
    those hosts. An empty set falls back to uniform (and is logged).
    """
    spec = ctx.conf["scoring.personalization"].strip()
    if not spec:
        return None
    if spec == "seeds":
        chosen = ctx.seeds
    elif spec.startswith("hosts:"):
        hosts = [h.strip().lower() for h in spec[len("hosts:"):].split(",") if h.strip()]
        chosen = ctx.pages.filter(F.col("host").isin(hosts)).select("url")
    else:
        raise ValueError(f"scoring.personalization: expected '', 'seeds' or 'hosts:...', got {spec!r}")
    chosen = chosen.select("url", F.lit(1.0).alias("weight"))
    if chosen.limit(1).count() == 0:
        log.warning("personalization %r matches no page: uniform teleport", spec)
        return None
    return chosen


def options_from(conf: Conf) -> dict:
    return dict(damping=conf["scoring.damping"], tol=conf["scoring.tolerance"],
                max_iter=conf["scoring.max_iterations"], engine=conf["scoring.engine"],
                checkpoint_every=conf["scoring.checkpoint_every"],
                driver_max_edges=conf["scoring.driver_max_edges"],
                broadcast_max_pages=conf["scoring.broadcast_max_pages"])


@register
class PageRankScorer(BaseScorer):
    """Page-level PageRank over the prepared link table; warm-started from scores['pagerank']."""

    name = "pagerank"

    def __init__(self) -> None:
        self.last_result: PageRankResult | None = None

    def score(self, ctx: ScoringContext) -> DataFrame:
        pages = ctx.pages
        edges = prepare_links(ctx.links, ctx.conf, crawldb=pages).select("src", "dst")
        start = None
        if ctx.conf["scoring.warm_start"]:
            start = (pages.select("url", F.col("scores").getItem(self.name).alias("rank"))
                     .filter(F.col("rank").isNotNull()))
        # prepared links are a subset of the link table, whose row count Delta answers from
        # its statistics: below the driver bound, engine=auto need not count the edges
        bound = ctx.links.count() if ctx.conf["scoring.engine"] == "auto" else None
        result = pagerank(ctx.spark, pages.select("url"), edges, personalization=teleport(ctx),
                          start=start, edges_at_most=bound, **options_from(ctx.conf))
        self.last_result = result
        return result.ranks.select("url", F.col("rank").alias("score"))


@register
class HostPageRankScorer(BaseScorer):
    """Each page scores its host's PageRank on the host graph (site-level importance)."""

    name = "host_pagerank"

    def score(self, ctx: ScoringContext) -> DataFrame:
        pages = ctx.pages
        edges = prepare_links(ctx.links, ctx.conf, crawldb=pages)
        options = options_from(ctx.conf)
        result = host_pagerank(ctx.spark, edges, pages.select("host").distinct(), **options)
        hosts = result.ranks.select(F.col("url").alias("host"), F.col("rank").alias("score"))
        return pages.select("url", "host").join(hosts, on="host", how="inner").select("url", "score")
