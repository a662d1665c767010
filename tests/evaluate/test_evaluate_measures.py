"""Cho et al.'s measures on the tiny web (see evaluate_tinyweb.py), every value traced by hand.

Crawl order a, b, e, c, f, d; K = 1..6; T = 8.
"""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from numpy.testing import assert_allclose

from crawlkit.evaluate import evaluate_order, measures
from crawlkit.evaluate.hot import hot_set, parse_hot, top_pages
from crawlkit.evaluate.importance import tie_groups
from evaluate_tinyweb import CRAWL, ESTIMATES, LINKS, NAMES, ids

K = np.arange(1, 7)
ORDER = ids(CRAWL)


def test_importance_of_the_tiny_web(tiny_web):
    assert tiny_web.size == 8
    assert tiny_web.in_degree.tolist() == [2, 1, 4, 3, 0, 0, 0, 1]
    graph = nx.DiGraph()
    graph.add_nodes_from(range(8))
    graph.add_edges_from((NAMES.index(a), NAMES.index(b)) for a, b in LINKS if a != b)
    reference = nx.pagerank(graph, alpha=0.85, tol=1e-14)
    assert_allclose(tiny_web.pagerank, [reference[i] for i in range(8)], atol=1e-9)
    assert tiny_web.pagerank.sum() == pytest.approx(1.0)
    # c > d > a > b > h > e = f = g: the three pages nobody links to tie exactly
    keys = tie_groups(tiny_web.pagerank)
    assert [NAMES[i] for i in np.argsort(-keys, kind="stable")] == list("cdabhefg")
    assert keys[4] == keys[5] == keys[6] < keys[7]


def test_hot_sets(tiny_web):
    assert parse_hot("indegree:1, pagerank:2") == ["indegree:1", "pagerank:2"]
    for bad in ("outdegree:3", "pagerank:2.5", "indegree:", "pagerank:x%"):
        with pytest.raises(ValueError, match=bad):
            parse_hot(bad)
    assert np.flatnonzero(hot_set("indegree:1", tiny_web).mask).tolist() == ids("acd").tolist()
    assert hot_set("indegree:2", tiny_web).name == "indegree>2"
    # the paper's I(P) >= G: c d (in-degree 4, 3) and a (2), where "more than 2" is c d
    assert np.flatnonzero(hot_set("indegree>=:2", tiny_web).mask).tolist() == ids("acd").tolist()
    assert hot_set("indegree>=:2", tiny_web).name == "indegree>=2"
    assert np.flatnonzero(hot_set("pagerank:2", tiny_web).mask).tolist() == ids("cd").tolist()
    assert hot_set("pagerank:25%", tiny_web).size == 2
    # the top 6 end inside the e = f = g tie: all three are hot, 8 pages in all
    assert top_pages(tiny_web.pagerank, 6).sum() == 8


def test_crawl_and_stop_threshold(tiny_web):
    # indegree>1: a c d hot (H = 3); hot flags along the crawl a1 b0 e0 c1 f0 d1
    curve = measures.crawl_and_stop_threshold(ORDER, hot_set("indegree:1", tiny_web))
    assert_allclose(curve.crawler, [1/3, 1/3, 1/3, 2/3, 2/3, 1])
    assert_allclose(curve.ideal, [1/3, 2/3, 1, 1, 1, 1])      # min(1, K/H)
    assert_allclose(curve.random, K / 8)                       # K/T
    # indegree>2: c d hot (H = 2)
    curve = measures.crawl_and_stop_threshold(ORDER, hot_set("indegree:2", tiny_web))
    assert_allclose(curve.crawler, [0, 0, 0, 0.5, 0.5, 1])
    assert_allclose(curve.ideal, [0.5, 1, 1, 1, 1, 1])


def test_crawl_and_stop_counts_ties_with_the_kth_page():
    # importance = in-degree: c4 d3 a2 b1 h1 e0 f0 g0 (b ties h, e f g tie)
    importance = np.array([2, 1, 4, 3, 0, 0, 0, 1], dtype=float)
    curve = measures.crawl_and_stop(ORDER, importance)
    # K=1: top is c; a is not.          K=2: c d; a b are not.
    # K=3: c d a; a counts (1/3).       K=4: the 4th is b or h (1): a b c count (3/4).
    # K=5: 5th is h (1): a b c (3/5).   K=6: the 6th is e f g (0): all six count.
    assert_allclose(curve.crawler, [0, 0, 1/3, 3/4, 3/5, 1])
    assert_allclose(curve.ideal, np.ones(6))
    # random: pages at least as important as the K-th, over T: 1 2 3 5 5 8
    assert_allclose(curve.random, np.array([1, 2, 3, 5, 5, 8]) / 8)


def test_buffer_eviction_sequence():
    # B = 2, estimates a.5 b.2 e.1 c.4 f.4 d.9:
    # K=3 e(.1) arrives to {a .5, b .2}: e itself goes.    K=4 c(.4): b(.2) goes -> {a, c}
    # K=5 f(.4) ties c(.4): the later one, f, goes.         K=6 d(.9): c(.4) goes -> {a, d}
    estimates = np.array([ESTIMATES[n] for n in CRAWL])
    evicted = measures.buffer_evictions(estimates, 2)
    assert evicted.tolist() == [-1, -1, 2, 1, 4, 3]
    assert [CRAWL[i] for i in evicted if i >= 0] == list("ebfc")
    with pytest.raises(ValueError, match="estimate"):
        measures.buffer_evictions(np.array([0.1, np.nan]), 1)


def test_the_buffer_is_rekeyed_with_each_rounds_estimates():
    # B = 2. Round 1 fetches a b; round 2 fetches c; round 3 fetches d.
    # Round 1 (a .5, b .2): both fit.
    # Round 2 re-keys the buffer: a .1, b .3 (a's score shrank as the graph grew), then
    #   c .2 arrives: a (.1) goes. Keyed by fetch-time scores (a .5 b .2), c would tie b
    #   and go itself.
    # Round 3: a, evicted, needs no estimate; b .3, c .25 stay and d .1 goes at once.
    rounds = [np.array([.5, .2]), np.array([.1, .3, .2]), np.array([np.nan, .3, .25, .1])]
    assert measures.buffer_evictions(rounds, 2).tolist() == [-1, -1, 0, 3]
    assert measures.buffer_evictions(np.array([.5, .2, .2, .1]), 2).tolist() == [-1, -1, 2, 3]
    with pytest.raises(ValueError, match="round 3: every page in the buffer"):
        measures.buffer_evictions([rounds[0], rounds[1], np.array([.1, np.nan, .2, .3])], 2)
    with pytest.raises(ValueError, match="must cover the pages crawled before"):
        measures.buffer_evictions([rounds[1], rounds[0]], 2)


def test_limited_buffer(tiny_web):
    evicted = measures.buffer_evictions(np.array([ESTIMATES[n] for n in CRAWL]), 2)
    # buffer per K: {a} {a b} {a b} {a c} {a c} {a d}; indegree>1 hot: a c d
    curve = measures.limited_buffer(ORDER, evicted, 2, hot_set("indegree:1", tiny_web))
    assert curve.metric == "P_BC(B=2)"
    assert_allclose(curve.crawler, [0.5, 0.5, 0.5, 1, 1, 1])
    assert_allclose(curve.ideal, [0.5, 1, 1, 1, 1, 1])        # min(K, H, B)/B
    assert_allclose(curve.random, [3/16, 6/16, 6/16, 6/16, 6/16, 6/16])  # min(K,B)·H/(T·B)
    # indegree>2 hot: c d; c is evicted when d arrives
    curve = measures.limited_buffer(ORDER, evicted, 2, hot_set("indegree:2", tiny_web))
    assert_allclose(curve.crawler, [0, 0, 0, 0.5, 0.5, 0.5])


def test_kept_buffer_from_the_crawlers_own_evictions(tiny_web):
    kept = np.isin(ORDER, ids("ad"))          # b e f c evicted by the crawler
    curve = measures.kept_buffer(ORDER, kept, hot_set("indegree:2", tiny_web))
    assert curve.metric == "P_BC(evicted, B=2)"
    assert curve.pages_crawled.tolist() == [6]
    assert_allclose([curve.crawler[0], curve.ideal[0], curve.random[0]], [0.5, 1.0, 2 / 8])


def test_harvest_and_recall(tiny_web):
    on_topic = tiny_web.on_topic("course")    # a c g, R = 3; along the crawl a1 b0 e0 c1 f0 d0
    harvest = measures.harvest_rate(ORDER, on_topic, "course")
    assert_allclose(harvest.crawler, [1, 1/2, 1/3, 2/4, 2/5, 2/6])
    assert_allclose(harvest.ideal, [1, 1, 1, 3/4, 3/5, 3/6])  # min(K, R)/K
    assert_allclose(harvest.random, np.full(6, 3/8))          # R/T
    recall = measures.target_recall(ORDER, on_topic, "course")
    assert_allclose(recall.crawler, [1/3, 1/3, 1/3, 2/3, 2/3, 2/3])
    assert_allclose(recall.ideal, [1/3, 2/3, 1, 1, 1, 1])
    assert_allclose(recall.random, K / 8)


def test_evaluate_order_long_table(tiny_web):
    estimates = np.array([ESTIMATES[n] for n in CRAWL])
    result = evaluate_order("bfs", ORDER, tiny_web, hot="indegree:1,indegree:2,indegree:100",
                            buffer=2, estimates=estimates, topic="course")
    assert result.hot_pages == {"indegree>1": 3, "indegree>2": 2, "indegree>100": 0,
                                "topic:course": 3}
    assert result.notes == ["no page is indegree>100: its measures are left out"]
    curves = result.curves
    assert set(curves["ordering"]) == {"bfs", "ideal", "random"}
    cs = curves[(curves.metric == "P_CS") & (curves.ordering == "bfs")]
    # PageRank order c d a b h (e f g tie), as in-degree without the b = h tie: same crawler
    # curve, and at K=6 the tie makes all 8 pages "at least as important as the 6th"
    assert_allclose(cs["value"], [0, 0, 1/3, 3/4, 3/5, 1])
    cs_random = curves[(curves.metric == "P_CS") & (curves.ordering == "random")]
    assert_allclose(cs_random["value"], np.array([1, 2, 3, 4, 5, 8]) / 8)
    bc = curves[(curves.metric == "P_BC(B=2)") & (curves.hot_definition == "indegree>1")
                & (curves.ordering == "bfs")]
    assert_allclose(bc["value"], [0.5, 0.5, 0.5, 1, 1, 1])
    assert_allclose(bc["fraction_crawled"], K / 8)
    # K = round(f·T) at 5 10 20 30 50 %: 0 (none) 1 2 2 4; the crawl ends at K/T = 6/8
    table = result.table()
    assert "| P_ST | indegree>1 | bfs | – | 0.333 | 0.333 | 0.333 | 0.667 | 1.000 @ 0.750 |" in table
    assert "| P_ST | indegree>1 | ideal | – | 0.333 | 0.667 | 0.667 | 1.000 |  |" in table
