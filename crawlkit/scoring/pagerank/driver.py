"""The driver engine: the links collected through Arrow, solved with a scipy sparse matrix.

The fastest engine up to tens of millions of edges (``scoring.driver_max_edges``): one Spark
job ships the URL occurrences with their hashes, numpy and scipy do the rest, and the ranks
go back to Spark as Arrow.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from crawlkit.scoring.pagerank.common import (PageRankResult, check_hash, empty_ranks, from_arrow,
                                              page_id, to_arrow)
from crawlkit.scoring.pagerank.graph import LinkHashes

log = logging.getLogger(__name__)


class _Clash(Exception):
    """Two different URLs share an xxhash64 id."""


@dataclass
class _Occurrences:
    """Every page occurrence collected from Spark: [nodes.url; src; dst], as hashes.

    The nodes' URL strings come along with their hashes (a page's URL is needed for the
    result); the links' only with ``link_urls``: when there are no nodes (every page is
    known from links only) or to encode the URLs after a clash. Otherwise pages known only
    from links get their URL from a second, small job (:func:`_link_only_urls`). On
    web-NotreDame the links' 2.9M endpoint strings with their hashes took 1.4-3.3 s to ship,
    the hashes alone 0.55-0.87 s.
    """
    urls: pa.ChunkedArray  # URL of each occurrence shipped with one: nodes, then (link_urls) src, dst
    h1: np.ndarray         # its xxhash64 (the page id)
    h2: np.ndarray         # its Murmur3 hash (the clash check)
    k: int                 # occurrences from nodes
    m: int                 # links
    link_urls: bool        # whether urls holds the links' endpoints too

    @classmethod
    def collect(cls, nodes: DataFrame, links: LinkHashes, link_urls: bool | None = None) -> "_Occurrences":
        """``link_urls`` None: ship the links' URLs only when there are no nodes. Without
        them the links' hashes come from ``links`` (its cached table when ``engine = auto``
        counted it: the prepared links are then read once)."""
        nt = to_arrow(nodes.select("url", page_id("url").alias("h1"), check_hash("url").alias("h2")))
        if link_urls is None:
            link_urls = nt.num_rows == 0
        et = to_arrow(links.plan(urls=link_urls))
        chunks = nt.column("url").chunks
        if link_urls:
            chunks = chunks + et.column("src").chunks + et.column("dst").chunks
        urls = pa.chunked_array(chunks, type=pa.string())
        h1 = _concat([nt.column("h1"), et.column("s"), et.column("t")], np.int64)
        h2 = _concat([nt.column("h2"), et.column("cs"), et.column("ct")], np.int32)
        return cls(urls, h1, h2, nt.num_rows, et.num_rows, link_urls)


def _concat(columns: list[pa.ChunkedArray], dtype) -> np.ndarray:
    """Integer columns end to end in one numpy array, filled chunk by chunk from the Arrow
    buffers: converting each column first and concatenating held every value twice (at
    10^7 pages and 5x10^7 links, 1.3 GB more at the driver's peak)."""
    out = np.empty(sum(len(c) for c in columns), dtype=dtype)
    at = 0
    for column in columns:
        for chunk in column.chunks:
            out[at:at + len(chunk)] = chunk.to_numpy(zero_copy_only=False)
            at += len(chunk)
    return out


def _link_only_urls(spark: SparkSession, edges: DataFrame, ids: np.ndarray) -> pa.Array:
    """The URLs of the pages with xxhash64 ``ids`` (pages met only as link endpoints), in
    the order of ``ids``: one job over the endpoints, filtered by a broadcast of the ids.
    In a crawl they are few: the scoring job's nodes are the crawldb, which holds every
    link target updatedb kept."""
    wanted = F.broadcast(from_arrow(spark, pa.table({"h1": pa.array(ids, type=pa.int64())})))
    ends = edges.select(F.col("src").alias("url")).union(edges.select(F.col("dst").alias("url")))
    found = to_arrow(ends.withColumn("h1", page_id("url")).join(wanted, on="h1")
                     .dropDuplicates(["h1"]).select("h1", "url"))
    order = pd.Index(_ints(found, "h1")).get_indexer(ids)
    return found.column("url").combine_chunks().take(pa.array(order))


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
        t = to_arrow(df.select(page_id("url").alias("h1"), check_hash("url").alias("h2"),
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
        t = to_arrow(df.select("url", F.col(df.columns[1]).cast("double").alias("value")))
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


def _page_urls(spark: SparkSession, occ: _Occurrences, pages: _HashPages, edges: DataFrame) -> pa.Array:
    """Each page's URL, in page order. Pages are numbered in order of first occurrence and
    the nodes' occurrences come first, so the pages first met among the nodes are a prefix:
    their URLs are taken from the nodes' strings, the rest's from the links' (shipped, or
    fetched by :func:`_link_only_urls`)."""
    if occ.link_urls:
        return _take_sorted(occ.urls, pages.first)
    from_nodes = int(np.searchsorted(pages.first, occ.k))
    head = _take_sorted(occ.urls, pages.first[:from_nodes])
    if from_nodes == len(pages.first):
        return head
    return pa.concat_arrays([head, _link_only_urls(spark, edges, pages.hashes[from_nodes:])])


def _hash_ids(occ: _Occurrences) -> tuple[_HashPages, np.ndarray]:
    """Distinct pages and the page index of each occurrence; raises _Clash when two
    occurrences share h1 but not h2 (two URLs, one xxhash64).

    ``pd.factorize`` is one hash table pass; ``np.unique`` sorted the 2.9M occurrences of
    web-NotreDame (1.5-5.8 s under load against 0.4-0.5 s). Pages are numbered in order of
    first occurrence, so the first occurrences follow from the codes without a lookup.
    """
    codes, hashes = pd.factorize(occ.h1, sort=False)
    # 4-byte page indexes: half the memory of what follows (the matrix takes them as is)
    codes = codes.astype(np.int32 if len(hashes) < 2**31 else np.int64)
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
                    start: DataFrame | None = None, hashes: LinkHashes | None = None) -> PageRankResult:
    """Collect the links once via Arrow, solve with scipy on the driver, hand the ranks back
    to Spark as Arrow.

    One Spark job projects each URL occurrence to its xxhash64 (the page id) and its
    Murmur3 hash (a collision check) and ships them, with the nodes' URL strings (see
    :class:`_Occurrences` for the links' URLs). A pandas hash
    table makes the ids dense (numbered by first occurrence) and checks that no two URLs
    share an id (else the URLs themselves are dictionary-encoded: exact, slower). The CSR
    matrix is built once, the power iteration runs in numpy, and each page's URL is its first
    occurrence's string, so the (url, rank) table goes back to Spark from Arrow with no
    second pass over the links, no join and no shuffle. ``hashes``: the links' hashes
    ``engine = auto`` counted (cached), collected instead of reading the links again.
    """
    links = hashes if hashes is not None else LinkHashes(edges)
    occ = _Occurrences.collect(nodes, links)
    try:
        pages, codes = _hash_ids(occ)
        urls = _page_urls(spark, occ, pages, edges)
    except _Clash:
        log.warning("pagerank driver: two URLs share an xxhash64 id; encoding the URL strings")
        if not occ.link_urls:
            occ = _Occurrences.collect(nodes, links, link_urls=True)
        pages, codes = _string_ids(occ)
        urls = pages.urls
    n = len(urls)
    if n == 0:
        return PageRankResult(empty_ranks(spark), 0, 0.0, "driver")
    k, m = occ.k, occ.m
    del occ   # its hashes (12 bytes an occurrence) are in codes now: freed before the matrix
    teleport = _weights(personalization.select("url", "weight"), pages, n) if personalization is not None else None
    previous = _weights(start.select("url", "rank"), pages, n) if start is not None else None
    x, it, delta = _solve(n, codes[k:k + m], codes[k + m:], damping, tol, max_iter, teleport, previous)
    ranks = from_arrow(spark, pa.table({"url": urls, "rank": pa.array(x)}))
    return PageRankResult(ranks, it, delta, "driver")
