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
  the URL, checked for clashes), the prepared links read once, as their ends' hashes; the
  loop iterates over the pages with out-links only (the dangling pages' ranks follow from
  them, once, at the end: the same iterates); the ranks
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

This module holds the entry point (``pagerank`` picks the engine), the host graph and the
scorers; each engine is a module of its own (``driver``, ``distributed``, ``jvm`` for
graphx and graphframes), and ``common`` what they share.
"""
from __future__ import annotations

import logging
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from crawlkit.conf import Conf
from crawlkit.scoring.base import BaseScorer, ScoringContext, register
from crawlkit.scoring.links import prepare_links
from crawlkit.scoring.pagerank.common import LINK_BYTES, PageRankResult, max_result_size, node_set
from crawlkit.scoring.pagerank.distributed import BROADCAST_MAX_PAGES, pagerank_distributed
from crawlkit.scoring.pagerank.driver import pagerank_driver
from crawlkit.scoring.pagerank.graph import LinkHashes
from crawlkit.scoring.pagerank.jvm import graphx_raw, pagerank_graphframes, pagerank_graphx

__all__ = ["ENGINES", "PageRankResult", "pagerank", "host_pagerank", "node_set", "graphx_raw",
           "PageRankScorer", "HostPageRankScorer"]

log = logging.getLogger(__name__)

ENGINES = ("auto", "driver", "distributed", "graphx", "graphframes")


def _pick_engine(engine: str, count_edges: Callable[[], int], driver_max_edges: int,
                 edges_at_most: int | None = None, result_limit: int = 0) -> str:
    """``auto``: the driver engine up to ``driver_max_edges`` edges whose hashes
    (``LINK_BYTES`` each) the driver may collect in one job (``result_limit``:
    ``spark.driver.maxResultSize``, 0 = no limit): past it that job would fail after the
    links were read. ``edges_at_most`` (an upper bound the caller knows for free, e.g. the
    link table's row count from Delta's statistics) spares counting the edges
    (``count_edges``), a full pass over their preparation."""
    if engine not in ENGINES:
        raise ValueError(f"scoring.engine must be one of {ENGINES}, got {engine!r}")
    if engine != "auto":
        return engine
    bound = min(driver_max_edges, result_limit // LINK_BYTES) if result_limit else driver_max_edges
    if edges_at_most is not None and edges_at_most <= bound:
        return "driver"
    edges = count_edges()
    if bound < edges <= driver_max_edges:
        log.warning("pagerank: %d edges are within scoring.driver_max_edges, but their hashes exceed "
                    "spark.driver.maxResultSize (%d bytes): the distributed engine runs", edges, result_limit)
    return "driver" if edges <= bound else "distributed"


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
    # auto counts the edges by reading them as the engines do, once: the engine it picks
    # then starts from the counted (cached) table
    hashes = LinkHashes(edges)
    chosen = _pick_engine(engine, hashes.count, driver_max_edges, edges_at_most, max_result_size(spark))
    if chosen == "driver":
        try:
            return pagerank_driver(spark, nodes, edges, damping=damping, tol=tol, max_iter=max_iter,
                                   personalization=personalization, start=start, hashes=hashes)
        finally:
            hashes.release()
    if chosen == "distributed":
        return pagerank_distributed(spark, nodes, edges, damping=damping, tol=tol,
                                    max_iter=max_iter, personalization=personalization,
                                    start=start, checkpoint_every=checkpoint_every,
                                    broadcast_max_pages=(BROADCAST_MAX_PAGES if broadcast_max_pages is None
                                                         else broadcast_max_pages),
                                    hashes=hashes)
    if chosen == "graphx":
        return pagerank_graphx(spark, nodes, edges, damping=damping, tol=tol,
                               max_iter=max_iter, personalization=personalization)
    return pagerank_graphframes(spark, nodes, edges, damping=damping, tol=tol,
                                max_iter=max_iter, personalization=personalization)


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
        # prepared links are a subset of the link table as stored, whose row count Delta
        # answers from its statistics: below the driver bound, engine=auto need not count
        # the edges. (The current links are a window over that table: counting them is a
        # shuffle of every stored link.)
        bound = None
        if ctx.conf["scoring.engine"] == "auto":
            bound = ctx.links_at_most if ctx.links_at_most is not None else ctx.links.count()
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
