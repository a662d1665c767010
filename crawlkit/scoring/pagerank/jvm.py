"""The JVM engines: GraphX's PageRank through crawlkit's bridge, and GraphFrames'.

Both run GraphX's algorithm, which lets dangling pages leak their rank and rescales at the
end; normalized to sum 1, the answer is crawlkit's when no page is dangling (docs/scoring.md).
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from crawlkit.scoring.pagerank.common import PageRankResult, node_set
from crawlkit.scoring.pagerank.graph import numbered_pages


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

    Pages get dense ids as in the distributed engine after a clash (``numbered_pages``:
    ``monotonically_increasing_id``, frozen by a local checkpoint, joined to the links),
    the edges go to the JVM as a DataFrame and crawlkit's bridge
    (scripts/jars/graphx-bridge) builds the GraphX graph and runs ``PageRank.runUntilConvergenceWithOptions(graph, tol, 1 - d, source)``, or
    ``runWithOptions`` for ``max_iter`` iterations when ``tol <= 0``.
    """
    from crawlkit.spark import GRAPHX_BRIDGE, has_graphx_bridge
    if not has_graphx_bridge(spark):
        raise RuntimeError(f"scoring.engine=graphx needs {GRAPHX_BRIDGE} "
                           "(.jars/crawlkit-graphx-bridge.jar: run scripts/setup.sh)")
    ids, numbered = numbered_pages(nodes, edges)
    pairs = numbered.select(F.col("s").alias("src"), F.col("t").alias("dst"))
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
