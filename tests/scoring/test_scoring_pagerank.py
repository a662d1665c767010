"""PageRank engines against an exact dense solve on a small graph with every awkward case."""
from __future__ import annotations

import os

import networkx as nx
import pytest
from pyspark.sql import functions as F

from crawlkit.conf import make_conf
from crawlkit.scoring.links import prepare_links
from crawlkit.scoring import pagerank as pagerank_module
from crawlkit.scoring.pagerank import driver as driver_module
from crawlkit.scoring.pagerank import graph as graph_module
from crawlkit.scoring.pagerank.graph import LinkHashes
from crawlkit.scoring.pagerank import graphx_raw, host_pagerank, pagerank
from crawlkit.spark import has_graphframes, has_graphx_bridge

A, B, C, D, E, F_, G, H = (f"http://{h}.test/" for h in "abcdefgh")
LINKS = [
    (A, B), (A, B),   # a: duplicate link to b (one vote)
    (A, C), (A, A),   # a: self-link (dropped)
    (B, C),           # b -> c
    (C, A),           # c -> a
    (D, C), (D, E),   # d has no in-links
    # e has no out-links (dangling)
    # f is in the crawldb only: isolated, dangling
    (G, H),           # g -> h: a disconnected part; h dangling
]
PAGES = [A, B, C, D, E, F_, G, H]
CLEAN = sorted({(s, d) for s, d in LINKS if s != d})


@pytest.fixture
def graph(make_crawldb, make_links):
    conf = make_conf()
    crawldb = make_crawldb([{"url": u} for u in PAGES])
    edges = prepare_links(make_links(LINKS), conf, crawldb=crawldb).select("src", "dst")
    return crawldb.select("url"), edges


def as_dict(df):
    return {r.url: r.rank for r in df.collect()}


def l1(x, y):
    return sum(abs(x[k] - y.get(k, 0.0)) for k in x) + sum(abs(v) for k, v in y.items() if k not in x)


# Each Spark iteration costs a few jobs, so the distributed engine is tested with a smaller
# damping factor (fewer iterations to the same accuracy); the driver engine with 0.85.
CASES = [("driver", 0.85), ("distributed", 0.5)]


@pytest.mark.parametrize("engine,damping", CASES)
def test_engine_matches_exact_solution(spark, graph, ref_pagerank, engine, damping):
    nodes, edges = graph
    folder = spark.sparkContext._jsc.sc().getCheckpointDir().get().replace("file:", "")
    before = set(os.listdir(folder)) if os.path.isdir(folder) else set()
    result = pagerank(spark, nodes, edges, damping=damping, tol=1e-12, max_iter=300,
                      engine=engine, checkpoint_every=4)
    ranks = as_dict(result.ranks)
    after = set(os.listdir(folder)) if os.path.isdir(folder) else set()
    assert after <= before   # reliable checkpoints are deleted once superseded
    assert set(ranks) == set(PAGES)
    assert sum(ranks.values()) == pytest.approx(1.0, abs=1e-12)
    assert l1(ranks, ref_pagerank(PAGES, CLEAN, damping=damping)) < 1e-9
    assert result.engine == engine and result.delta < 1e-12


def test_distributed_copartitioned_layout_matches_exact_solution(spark, graph, ref_pagerank,
                                                                 monkeypatch):
    # Above scoring.broadcast_max_pages the ranks are not broadcast: edges and ranks are both
    # partitioned by source id and the per-destination sums shuffle. Forced here by conf.
    nodes, edges = graph
    seen = {}
    engine = pagerank_module.pagerank_distributed

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return engine(*args, **kwargs)
    monkeypatch.setattr(pagerank_module, "pagerank_distributed", spy)
    conf = make_conf(scoring__engine="distributed", scoring__broadcast_max_pages=0,
                     scoring__damping=0.5, scoring__tolerance=1e-12, scoring__max_iterations=300)
    result = pagerank(spark, nodes, edges, **pagerank_module.options_from(conf))
    assert seen["broadcast_max_pages"] == 0
    assert l1(as_dict(result.ranks), ref_pagerank(PAGES, CLEAN, damping=0.5)) < 1e-9


# The distributed engine iterates over the pages with out-links only and computes the
# dangling pages' ranks once at the end (pagerank._Lumped): its iterates must still be the
# power iteration's, and its stopping test must not stop before the power iteration would.
@pytest.mark.parametrize("steps,teleport,start", [
    (1, None, None), (2, None, None), (7, None, None),
    # e is dangling and in the teleport vector; the start knows a-e only
    (3, {D: 1.0, E: 2.0}, {A: 0.3, B: 0.1, C: 0.4, D: 0.05, E: 0.15})])
def test_distributed_iterates_are_the_power_iterations(spark, graph, ref_power_iterates,
                                                       steps, teleport, start):
    nodes, edges = graph
    kwargs = {}
    if teleport:
        kwargs["personalization"] = spark.createDataFrame(list(teleport.items()), "url string, weight double")
    if start:
        kwargs["start"] = spark.createDataFrame(list(start.items()), "url string, rank double")
    result = pagerank(spark, nodes, edges, damping=0.85, tol=0.0, max_iter=steps,
                      engine="distributed", **kwargs)
    expected = ref_power_iterates(PAGES, CLEAN, 0.85, steps, teleport=teleport, start=start)[-1]
    assert result.iterations == steps
    assert l1(as_dict(result.ranks), expected) < 1e-12


def test_distributed_stops_where_the_power_iteration_does(spark, graph, ref_power_iterates):
    nodes, edges = graph
    tol = 1e-4
    result = pagerank(spark, nodes, edges, damping=0.85, tol=tol, max_iter=300, engine="distributed")
    xs = ref_power_iterates(PAGES, CLEAN, 0.85, 300)
    changes = [l1(xs[k], xs[k - 1]) for k in range(1, len(xs))]
    first = next(k for k, change in enumerate(changes, start=1) if change < tol)
    assert result.iterations == first
    # the reported change bounds the true one (the dangling pages' part is not in the loop)
    assert changes[first - 1] <= result.delta < tol


def test_distributed_without_dangling_pages_reports_the_exact_change(spark, make_links,
                                                                     ref_power_iterates, ref_pagerank):
    pages = [A, B, C, D]
    links = [(A, B), (B, C), (C, A), (C, D), (D, A)]
    edges = make_links(links).select("src", "dst")
    nodes = spark.createDataFrame([(u,) for u in pages], "url string")
    result = pagerank(spark, nodes, edges, damping=0.85, tol=0.0, max_iter=4, engine="distributed")
    xs = ref_power_iterates(pages, links, 0.85, 4)
    assert result.delta == pytest.approx(l1(xs[4], xs[3]), rel=1e-9)
    # From the exact answer it stops after one iteration (no bound to wait for).
    exact = ref_pagerank(pages, links)
    start = spark.createDataFrame([(u, float(r)) for u, r in exact.items()], "url string, rank double")
    warm = pagerank(spark, nodes, edges, damping=0.85, tol=1e-12, max_iter=50,
                    engine="distributed", start=start)
    assert warm.iterations == 1 and l1(as_dict(warm.ranks), exact) < 1e-12


def test_distributed_with_no_links_gives_the_teleport_vector(spark, make_links):
    nodes = spark.createDataFrame([(A,), (B,), (C,)], "url string")
    edges = make_links([]).select("src", "dst")
    result = pagerank(spark, nodes, edges, damping=0.85, tol=1e-12, max_iter=50, engine="distributed")
    assert as_dict(result.ranks) == pytest.approx({A: 1 / 3, B: 1 / 3, C: 1 / 3}, abs=1e-15)
    assert result.iterations == 2   # the first iteration's change is not bounded


def test_reference_agrees_with_networkx(ref_pagerank):
    g = nx.DiGraph()
    g.add_nodes_from(PAGES)
    g.add_edges_from(CLEAN)
    expected = nx.pagerank(g, alpha=0.85, tol=1e-15, max_iter=1000)
    assert l1(ref_pagerank(PAGES, CLEAN), expected) < 1e-9


@pytest.mark.parametrize("engine,damping", CASES)
def test_personalized_matches_exact_solution(spark, graph, ref_pagerank, engine, damping):
    nodes, edges = graph
    teleport = spark.createDataFrame([(D, 1.0), (G, 1.0)], "url string, weight double")
    result = pagerank(spark, nodes, edges, damping=damping, tol=1e-12, max_iter=300,
                      engine=engine, personalization=teleport, checkpoint_every=4)
    expected = ref_pagerank(PAGES, CLEAN, damping=damping, teleport={D: 1.0, G: 1.0})
    assert l1(as_dict(result.ranks), expected) < 1e-9


@pytest.mark.parametrize("engine,damping", [("driver", 0.85), ("distributed", 0.3)])
def test_warm_start_converges_in_fewer_iterations(spark, graph, ref_pagerank, engine, damping):
    nodes, edges = graph
    # A nearby solution: last round's exact ranks of pages a-f (g, h were not known then).
    exact = ref_pagerank(PAGES, CLEAN, damping=damping)
    previous = spark.createDataFrame([(u, float(exact[u])) for u in PAGES[:6]], "url string, rank double")
    options = dict(damping=damping, tol=1e-9, max_iter=300, engine=engine, checkpoint_every=4)
    cold = pagerank(spark, nodes, edges, **options)
    warm = pagerank(spark, nodes, edges, start=previous, **options)
    assert warm.iterations < cold.iterations
    assert l1(as_dict(warm.ranks), exact) < 1e-8


def test_graphframes_engine(spark, graph, ref_pagerank):
    if not has_graphframes(spark):
        pytest.skip("GraphFrames JVM jar (io.graphframes:graphframes-spark4_2.13) is not on "
                    "the classpath: Maven Central on this machine does not serve it")
    nodes, edges = graph
    result = pagerank(spark, nodes, edges, tol=1e-12, engine="graphframes")
    # GraphFrames leaks dangling rank and rescales at the end: normalized, it is ours.
    assert l1(as_dict(result.ranks), ref_pagerank(PAGES, CLEAN)) < 1e-9


def test_host_pagerank(spark, make_links, ref_pagerank):
    links = make_links([
        ("http://a.test/1", "http://b.test/1"),   # a -> b
        ("http://a.test/2", "http://b.test/2"),   # a -> b again: one host edge
        ("http://a.test/1", "http://a.test/2"),   # within a: dropped
        ("http://b.test/1", "http://c.test/1"),   # b -> c; c has no out-links
    ])
    hosts = spark.createDataFrame([("a.test",), ("d.test",)], "host string")  # d: no links
    result = host_pagerank(spark, links, hosts, tol=1e-13, max_iter=300, engine="driver")
    expected = ref_pagerank(["a.test", "b.test", "c.test", "d.test"],
                            [("a.test", "b.test"), ("b.test", "c.test")])
    assert l1(as_dict(result.ranks), expected) < 1e-9


def test_driver_falls_back_to_strings_when_two_urls_share_an_id(spark, graph, ref_pagerank,
                                                                monkeypatch, caplog):
    # Page ids are xxhash64 of the URL; force clashes (two ids for eight pages) to check
    # that the Murmur3 check catches them and the URL-string path still gives the answer.
    # (the nodes' ids are taken in the driver module, the links' in the graph module)
    for module in (driver_module, graph_module):
        monkeypatch.setattr(module, "page_id", lambda col: F.xxhash64(F.col(col)) % 2)
    nodes, edges = graph
    with caplog.at_level("WARNING", logger=driver_module.log.name):
        result = pagerank(spark, nodes, edges, tol=1e-12, max_iter=300, engine="driver")
    assert "share an xxhash64 id" in caplog.text
    assert l1(as_dict(result.ranks), ref_pagerank(PAGES, CLEAN)) < 1e-9


def test_driver_ships_the_links_urls_only_for_pages_missing_from_the_nodes(spark, graph, ref_pagerank):
    nodes, edges = graph
    occurrences = driver_module._Occurrences.collect(nodes, LinkHashes(edges))
    assert not occurrences.link_urls and len(occurrences.urls) == len(PAGES)   # the nodes' only
    # pages met only as link endpoints (all but a and f) get their URL from a second job
    few = nodes.filter(F.col("url").isin(A, F_))
    for some in (few, nodes.limit(0)):
        result = pagerank(spark, some, edges, tol=1e-12, max_iter=300, engine="driver")
        ranks = as_dict(result.ranks)
        expected = ref_pagerank(PAGES if some is few else sorted({u for link in CLEAN for u in link}), CLEAN)
        assert result.ranks.count() == len(expected) and l1(ranks, expected) < 1e-9


def test_distributed_numbers_the_pages_when_two_urls_share_an_id(spark, graph, ref_pagerank,
                                                                monkeypatch, caplog):
    # As for the driver: ids forced to clash (three ids for eight pages); the Murmur3 check
    # must catch it and the numbered pages give the same answer, warm start included.
    monkeypatch.setattr(graph_module, "page_id", lambda col: F.xxhash64(F.col(col)) % 2)
    nodes, edges = graph
    exact = ref_pagerank(PAGES, CLEAN, damping=0.5)
    start = spark.createDataFrame([(u, float(exact[u])) for u in PAGES[:6]], "url string, rank double")
    with caplog.at_level("WARNING", logger=graph_module.log.name):
        result = pagerank(spark, nodes, edges, damping=0.5, tol=1e-12, max_iter=300,
                          engine="distributed", start=start)
    assert "share an xxhash64 id" in caplog.text
    assert l1(as_dict(result.ranks), exact) < 1e-9


def test_distributed_names_the_pages_met_only_as_link_ends(spark, graph, ref_pagerank):
    nodes, edges = graph
    few = nodes.filter(F.col("url").isin(A, F_))
    for some, pages in ((few, PAGES), (nodes.limit(0), sorted({u for link in CLEAN for u in link}))):
        result = pagerank(spark, some, edges, damping=0.5, tol=1e-12, max_iter=300,
                          engine="distributed")
        ranks = result.ranks.collect()
        assert len(ranks) == len(pages)    # every page once
        assert l1({r.url: r.rank for r in ranks}, ref_pagerank(pages, CLEAN, damping=0.5)) < 1e-9


def tapped_links(spark, edges):
    """``edges`` whose sources pass through a Python UDF counting the rows it sees, and that
    counter: how many times the links were read."""
    seen = spark.sparkContext.accumulator(0)

    def counted(url):
        seen.add(1)
        return url
    return edges.select(F.udf(counted, "string")("src").alias("src"), "dst"), seen


def test_distributed_reads_the_prepared_links_once(spark, graph, ref_pagerank):
    # engine=auto above the driver bound counts the edges and runs on the table it counted
    nodes, edges = graph
    tapped, seen = tapped_links(spark, edges)
    teleport = spark.createDataFrame([(D, 1.0), ("http://elsewhere.test/", 5.0)],
                                     "url string, weight double")
    result = pagerank(spark, nodes, tapped, damping=0.5, tol=1e-12, max_iter=300, engine="auto",
                      driver_max_edges=1, personalization=teleport)
    assert result.engine == "distributed"
    assert seen.value == len(CLEAN)
    expected = ref_pagerank(PAGES, CLEAN, damping=0.5, teleport={D: 1.0})
    assert l1(as_dict(result.ranks), expected) < 1e-9


def test_driver_collects_the_links_auto_counted_without_reading_them_again(spark, graph, ref_pagerank):
    # engine=auto with a link table above the driver bound counts the prepared edges; they
    # fit, and the driver engine collects the table it counted
    nodes, edges = graph
    tapped, seen = tapped_links(spark, edges)
    result = pagerank(spark, nodes, tapped, damping=0.5, tol=1e-12, max_iter=300, engine="auto",
                      driver_max_edges=len(CLEAN), edges_at_most=10 * len(CLEAN))
    assert result.engine == "driver"
    assert seen.value == len(CLEAN)
    assert l1(as_dict(result.ranks), ref_pagerank(PAGES, CLEAN, damping=0.5)) < 1e-9


def test_driver_ignores_teleport_urls_that_are_not_pages(spark, graph, ref_pagerank):
    nodes, edges = graph
    teleport = spark.createDataFrame([(D, 1.0), ("http://elsewhere.test/", 5.0)],
                                     "url string, weight double")
    result = pagerank(spark, nodes, edges, tol=1e-12, max_iter=300, engine="driver",
                      personalization=teleport)
    ranks = result.ranks.collect()
    assert len(ranks) == len(PAGES)        # every page once, from nodes or from a link
    assert l1({r.url: r.rank for r in ranks}, ref_pagerank(PAGES, CLEAN, teleport={D: 1.0})) < 1e-9


# --------------------------------------------------------------------------- GraphX engine
# GraphX's Pregel loop adds a step to the RDD lineage per iteration and nothing cuts it, so
# each iteration costs more than the last: these tests use d = 0.5 and a per-vertex tolerance
# of 1e-11 (about 35 iterations; 1e-13 at d = 0.85 took minutes per test on 2 cores).
D2, TOL = 0.5, 1e-11

# A graph in which every page has an out-link (e has no in-links).
NO_DANGLING = [(A, B), (B, C), (C, A), (C, D), (D, A), (E, A)]
NO_DANGLING_PAGES = [A, B, C, D, E]


@pytest.fixture
def graphx(spark):
    if not has_graphx_bridge(spark):
        pytest.skip("GraphX bridge jar missing: run scripts/setup.sh (needs javac)")
    return spark


def test_graphx_without_dangling_pages_is_n_times_the_reference(graphx, ref_pagerank, ref_leaky_pagerank):
    spark = graphx
    edges = spark.createDataFrame(NO_DANGLING, "src string, dst string")
    nodes = spark.createDataFrame([(u,) for u in NO_DANGLING_PAGES], "url string")
    raw = as_dict(graphx_raw(spark, nodes, edges, damping=D2, tol=TOL, max_iter=0))
    expected = ref_pagerank(NO_DANGLING_PAGES, NO_DANGLING, damping=D2)
    n = len(NO_DANGLING_PAGES)
    # The paper's form: R' = N * R, and it sums to N without any rescaling.
    assert l1(raw, {u: n * r for u, r in expected.items()}) < 1e-9
    assert l1(raw, ref_leaky_pagerank(NO_DANGLING_PAGES, NO_DANGLING, damping=D2)) < 1e-9
    result = pagerank(spark, nodes, edges, damping=D2, tol=TOL, engine="graphx")
    assert result.engine == "graphx" and result.iterations == -1
    assert l1(as_dict(result.ranks), expected) < 1e-9


def test_graphx_with_dangling_pages_leaks_then_rescales_to_n(graphx, graph, ref_pagerank, ref_leaky_pagerank):
    spark = graphx
    nodes, edges = graph
    n = len(PAGES)
    raw = as_dict(graphx_raw(spark, nodes, edges, damping=D2, tol=TOL, max_iter=0))
    leaky = ref_leaky_pagerank(PAGES, CLEAN, damping=D2)
    # Dangling pages (e, f, h) send nothing: the unnormalized recurrence loses rank ...
    assert sum(leaky.values()) < 0.9 * n
    # ... and GraphX rescales it to sum N at the end (not 1, not the leaky sum).
    assert sum(raw.values()) == pytest.approx(n, abs=1e-9)
    assert l1(raw, {u: r * n / sum(leaky.values()) for u, r in leaky.items()}) < 1e-9
    # The leaky solution is proportional to ours (dangling mass and teleport both follow v),
    # so after the rescale it is N * R, and the engine's ranks (divided by the sum) are R.
    expected = ref_pagerank(PAGES, CLEAN, damping=D2)
    assert l1(raw, {u: n * r for u, r in expected.items()}) < 1e-8
    result = pagerank(spark, nodes, edges, damping=D2, tol=TOL, engine="graphx")
    assert l1(as_dict(result.ranks), expected) < 1e-9


def test_graphx_personalized_on_one_source(graphx, graph, ref_pagerank):
    spark = graphx
    nodes, edges = graph
    one = spark.createDataFrame([(D, 1.0)], "url string, weight double")
    raw = as_dict(graphx_raw(spark, nodes, edges, damping=D2, tol=TOL, max_iter=0, source=D))
    assert sum(raw.values()) == pytest.approx(1.0, abs=1e-9)   # personalized: sums to 1
    result = pagerank(spark, nodes, edges, damping=D2, tol=TOL, engine="graphx", personalization=one)
    assert l1(as_dict(result.ranks), ref_pagerank(PAGES, CLEAN, damping=D2, teleport={D: 1.0})) < 1e-9
    two = spark.createDataFrame([(D, 1.0), (G, 1.0)], "url string, weight double")
    with pytest.raises(ValueError, match="one source page"):
        pagerank(spark, nodes, edges, damping=D2, tol=TOL, engine="graphx", personalization=two)


def test_scorer_picks_the_engine_from_the_stored_link_rows_without_counting_the_links(
        spark, make_crawldb, make_links, ref_pagerank):
    """The scoring job passes the link table's stored row count (Delta's statistics): under
    the driver bound, the scorer never counts the current links (a shuffle of the table)."""
    from datetime import datetime

    from crawlkit.scoring.base import ScoringContext
    from crawlkit.scoring.pagerank import PageRankScorer

    links = make_links(LINKS)

    def counted():
        raise AssertionError("the current links were counted")
    links.count = counted
    conf = make_conf(scoring__tolerance=1e-12, scoring__max_iterations=300)
    ctx = ScoringContext(spark, conf, datetime(2026, 1, 1), crawldb=make_crawldb([{"url": u} for u in PAGES]),
                         links=links, links_at_most=len(LINKS))
    scorer = PageRankScorer()
    got = {r.url: r.score for r in scorer.score(ctx).collect()}
    assert scorer.last_result.engine == "driver"
    assert l1(got, ref_pagerank(PAGES, CLEAN)) < 1e-9
