"""The distributed engine's graph: pages and links as 64-bit integers, built from one pass
over the prepared links (whose hashes, :class:`LinkHashes`, the driver engine collects too).

A page's id is the xxhash64 of its URL, so a link becomes a pair of integers by a
projection. The prepared links (a shuffle of URL strings: the deduplication of (src, dst))
are read once, as their ends' hashes (:class:`LinkHashes`), and that cached table also
answers ``engine = auto``'s count. Everything after works on integers: the page set, the
clash check, the out-degrees. URLs come back at the end, from the nodes (in a crawl, the
crawldb: every page) and, for the few pages met only as link ends, from one filtered pass
over the links.

At 10^7 crawldb pages and 5x10^7 links the engine used to prepare the links three times
(the count that picked it, the node set, the edges) and to shuffle 1.1x10^8 URL strings
for the node set: 530 of the scoring job's 937 s (docs/scale.md).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from crawlkit.scoring.pagerank.common import check_hash, node_set, page_id

log = logging.getLogger(__name__)

# Pages met only as link ends, up to this many, are broadcast to the pass that finds their
# URLs (8 bytes each); above it the pass joins them by a shuffle.
BROADCAST_LINK_ONLY = 1_000_000


class LinkHashes:
    """The prepared links as the hashes of their ends: s, t (xxhash64, the page ids) and
    cs, ct (Murmur3, the clash check); 24 bytes a link, cached the first time it is used.

    Built lazily so that ``engine = auto`` can count it (:meth:`count`) and hand the same
    cached table to the engine it picks: the distributed engine starts from it, the driver
    engine collects it (:meth:`plan`).
    """

    def __init__(self, edges: DataFrame):
        self.edges = edges
        self._frame: DataFrame | None = None
        self._count: int | None = None

    def _projection(self, urls: bool = False) -> DataFrame:
        return self.edges.select(*(["src", "dst"] if urls else []),
                                 page_id("src").alias("s"), page_id("dst").alias("t"),
                                 check_hash("src").alias("cs"), check_hash("dst").alias("ct"))

    def frame(self) -> DataFrame:
        """The cached table (built by the first action on it)."""
        if self._frame is None:
            self._frame = self._projection().cache()
        return self._frame

    def plan(self, urls: bool = False) -> DataFrame:
        """The hashes for one read: the cached table when something built it already, else
        the projection of the links (caching a table read once would only copy it). With
        ``urls`` the links' src and dst come along (a projection of the links, never cached)."""
        if self._frame is not None and not urls:
            return self._frame
        return self._projection(urls)

    def count(self) -> int:
        if self._count is None:
            self._count = self.frame().count()
        return self._count

    def release(self) -> None:
        if self._frame is not None:
            self._frame.unpersist()
        self._frame = None


@dataclass
class IntegerGraph:
    """Pages and links as integers. ``pages`` (id) and ``names`` (url, id) are
    hash-partitioned by id, like the rank vector; ``names`` is lazy (read once, to name the
    result)."""
    pages: DataFrame      # id (and chk, the Murmur3 of the URL, when ids are hashes)
    names: DataFrame      # url, id
    pairs: DataFrame      # s, t
    n: int
    hashed: bool          # ids are the URLs' xxhash64; else numbered after a clash

    def by_id(self, df: DataFrame, value: str) -> DataFrame:
        """(url, value) rows as (id, value): summed by page, rows naming no page dropped."""
        if self.hashed:
            keyed = df.select(page_id("url").alias("id"), check_hash("url").alias("chk"), value)
            keyed = keyed.join(self.pages, on=["id", "chk"], how="inner")
        else:
            keyed = df.join(self.names, on="url", how="inner")
        return keyed.groupBy("id").agg(F.sum(value).alias(value))


def integer_graph(nodes: DataFrame, links: LinkHashes, parts: int) -> IntegerGraph:
    """Every page (the nodes and every link end) by id, from the links' hashes.

    One aggregate of the ends' (id, check) pairs by id gives the page set, the clash check
    (two URLs, one xxhash64: their Murmur3 hashes differ) and the pages not among the nodes,
    in one job over 12-byte rows. Two URLs that share both hashes (a 96-bit collision,
    below n^2 / 2^97) would count as one page, as in the driver engine. On a clash the pages
    are numbered instead (:func:`_numbered_graph`).
    """
    hashes = links.frame()
    named = nodes.select("url", page_id("url").alias("id"), check_hash("url").alias("chk"))
    ends = (named.select("id", "chk", F.lit(True).alias("node"))
            .unionByName(hashes.select(F.col("s").alias("id"), F.col("cs").alias("chk"),
                                       F.lit(False).alias("node")))
            .unionByName(hashes.select(F.col("t").alias("id"), F.col("ct").alias("chk"),
                                       F.lit(False).alias("node"))))
    seen = Observation()
    # Adaptive execution is off in the engine: the aggregate's output is hash-partitioned by
    # id into ``parts``, as the rank vector, and the checkpoint keeps that partitioning.
    keys = (ends.groupBy("id").agg(F.min("chk").alias("chk"), F.max("chk").alias("chk_max"),
                                   F.max("node").alias("node"))
            .observe(seen, F.count(F.lit(1)).alias("n"),
                     F.sum(F.when(F.col("chk") != F.col("chk_max"), 1).otherwise(0)).alias("clashes"),
                     F.sum(F.when(F.col("node"), 0).otherwise(1)).alias("link_only"))
            .localCheckpoint(eager=True))
    n, clashes, link_only = (int(seen.get[k] or 0) for k in ("n", "clashes", "link_only"))
    if clashes:
        log.warning("pagerank distributed: two URLs share an xxhash64 id; numbering the pages")
        return _numbered_graph(nodes, links.edges, parts)
    names = named.select("url", "id")
    if link_only:
        names = names.unionByName(_link_only_names(links.edges, keys, link_only))
    names = names.dropDuplicates(["id"])   # a URL repeated among the nodes, or also a link end
    return IntegerGraph(keys.select("id", "chk"), names, hashes.select("s", "t"), n, hashed=True)


def _link_only_names(edges: DataFrame, keys: DataFrame, count: int) -> DataFrame:
    """(url, id) of the pages met only as link ends: one more pass over the links, filtered
    by those ids, now. In a crawl they are few (the crawldb holds every link target
    updatedb kept) or none, and the pass does not run."""
    wanted = keys.filter(~F.col("node")).select("id")
    if count <= BROADCAST_LINK_ONLY:
        wanted = F.broadcast(wanted)
    ends = edges.select(F.col("src").alias("url")).union(edges.select(F.col("dst").alias("url")))
    # checkpointed: joined at the end with ranks that descend from the same links, Spark's
    # analyzer fails to tell the two lineages' columns apart (INTERNAL_ERROR in the join)
    return (ends.select("url", page_id("url").alias("id")).join(wanted, on="id", how="left_semi")
            .dropDuplicates(["id"]).localCheckpoint(eager=True))


def numbered_pages(nodes: DataFrame, edges: DataFrame, parts: int | None = None) -> tuple[DataFrame, DataFrame]:
    """Pages numbered by ``monotonically_increasing_id`` over the URL set (frozen by a local
    checkpoint: the function is not deterministic; hash-partitioned by id into ``parts`` if
    given) and the links joined to them by URL: (url, id) and (s, t). Exact, slower than
    hashing (two shuffles of the links' URL strings): the distributed engine's path after a
    clash, and the graphx engine's numbering."""
    names = node_set(nodes, edges).withColumn("id", F.monotonically_increasing_id())
    if parts is not None:
        names = names.repartition(parts, "id")
    names = names.localCheckpoint(eager=True)
    src_id = names.select(F.col("url").alias("src"), F.col("id").alias("s"))
    dst_id = names.select(F.col("url").alias("dst"), F.col("id").alias("t"))
    pairs = (edges.select("src", "dst").join(src_id, on="src", how="inner")
             .join(dst_id, on="dst", how="inner").select("s", "t"))
    return names, pairs


def _numbered_graph(nodes: DataFrame, edges: DataFrame, parts: int) -> IntegerGraph:
    """The graph with numbered pages (:func:`numbered_pages`): only after a clash."""
    names, pairs = numbered_pages(nodes, edges, parts)
    return IntegerGraph(names.select("id"), names, pairs, names.count(), hashed=False)
