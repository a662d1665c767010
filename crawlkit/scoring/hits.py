"""HITS (Kleinberg): hubs point to good authorities, authorities are pointed to by good hubs.

a <- L^T h, h <- L a, each L2-normalized every iteration, until the L1 change of both
vectors is below ``scoring.tolerance`` (or ``scoring.max_iterations``). The score is the
authority by default, the hub with ``scoring.hits_score = "hub"``. It runs over the prepared
link table; for a focused subgraph (Kleinberg's root set plus its neighbours) pass
:func:`hits` a restricted link DataFrame. Solved on the driver (scipy, edges via Arrow), like
PageRank's driver engine: HITS is a per-topic or per-crawl diagnostic, not a web-scale job.

Example::

    hubs, auths, iterations = hits_vectors(spark, nodes, edges, tol=1e-9, max_iter=100)
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from crawlkit.scoring.base import BaseScorer, ScoringContext, register
from crawlkit.scoring.links import prepare_links
from crawlkit.scoring.pagerank.common import node_set, to_arrow


def hits(spark: SparkSession, nodes: DataFrame, edges: DataFrame, *, tol: float = 1e-9,
         max_iter: int = 100) -> tuple[DataFrame, int]:
    """(url, hub, authority) for every node and link endpoint, and the iterations run."""
    urls = to_arrow(node_set(nodes, edges)).column("url").combine_chunks()
    n = len(urls)
    if n == 0:
        return spark.createDataFrame([], "url string, hub double, authority double"), 0
    e = to_arrow(edges.select("src", "dst"))
    src = pc.index_in(e.column("src"), value_set=urls).to_numpy(zero_copy_only=False)
    dst = pc.index_in(e.column("dst"), value_set=urls).to_numpy(zero_copy_only=False)
    adj = sp.csr_matrix((np.ones(len(src)), (src.astype(np.int64), dst.astype(np.int64))),
                        shape=(n, n))
    adj.data[:] = 1.0          # duplicates count once
    adj_t = adj.T.tocsr()
    hub = np.full(n, 1.0 / np.sqrt(n))
    auth = np.zeros(n)
    it = 0
    while it < max_iter:
        it += 1
        new_auth = _unit(adj_t @ hub)
        new_hub = _unit(adj @ new_auth)
        change = np.abs(new_auth - auth).sum() + np.abs(new_hub - hub).sum()
        hub, auth = new_hub, new_auth
        if change < tol:
            break
    table = pa.table({"url": urls, "hub": pa.array(hub), "authority": pa.array(auth)})
    return spark.createDataFrame(table.to_pandas()), it


def _unit(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x)
    return x / norm if norm > 0 else x


@register
class HitsScorer(BaseScorer):
    """HITS authority (or hub) of every page over the prepared link table."""

    name = "hits"

    def score(self, ctx: ScoringContext) -> DataFrame:
        which = ctx.conf["scoring.hits_score"]
        if which not in ("authority", "hub"):
            raise ValueError(f"scoring.hits_score must be authority or hub, got {which!r}")
        pages = ctx.pages
        edges = prepare_links(ctx.links, ctx.conf, crawldb=pages)
        table, _ = hits(ctx.spark, pages.select("url"), edges, tol=ctx.conf["scoring.tolerance"],
                        max_iter=ctx.conf["scoring.max_iterations"])
        return table.select("url", F.col(which).alias("score"))
