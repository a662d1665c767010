"""Builders for small inline crawldb and link tables (the declared schemas, few columns given)."""
from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest

from crawlkit import schemas

NOW = datetime(2024, 1, 1, 12, 0, 0)


def host(url: str) -> str:
    return url.split("/")[2] if "://" in url else url.split("/")[0]


@pytest.fixture
def make_crawldb(spark):
    """crawldb rows from dicts (url required); the rest gets harmless defaults."""
    def build(rows):
        full = []
        for r in rows:
            base = dict(url=r["url"], host=host(r["url"]), status="unfetched", fetch_time=NOW,
                        retries=0, fetch_interval=2592000, score=0.0, scores={}, opic_cash=0.0,
                        opic_history=0.0, change_count=0, check_count=0, depth=1,
                        schema_version=1, metadata={})
            base.update(r)
            full.append(base)
        return schemas.frame(spark, "crawldb", full)
    return build


@pytest.fixture
def make_links(spark):
    """Link table rows from (src, dst) or (src, dst, extra-dict) tuples."""
    def build(pairs):
        cols = schemas.columns("links")
        data = []
        for p in pairs:
            src, dst = p[0], p[1]
            extra = p[2] if len(p) > 2 else {}
            row = dict(src=src, dst=dst, src_host=host(src), dst_host=host(dst), anchor=None,
                       meta=None, nofollow=False, first_seen=NOW, last_seen=NOW, commit_version=None)
            row.update(extra)
            data.append(tuple(row[c] for c in cols))
        return spark.createDataFrame(data, schemas.struct("links"))
    return build


def link_matrix(nodes, edges):
    """(M, out): M[dst, src] = 1 / out-degree(src) over distinct links; out: src -> targets."""
    index = {u: i for i, u in enumerate(nodes)}
    m = np.zeros((len(nodes), len(nodes)))
    out = {}
    for s, d in set(edges):
        out.setdefault(s, set()).add(d)
    for s, ds in out.items():
        for d in ds:
            m[index[d], index[s]] = 1.0 / len(ds)
    return m, out


def leaky_pagerank(nodes, edges, damping=0.85):
    """The paper's unnormalized recurrence R' = (1 - d) + d * sum R'(q)/c(q), solved exactly,
    with dangling pages sending nothing (what GraphX iterates before rescaling)."""
    m, _ = link_matrix(nodes, edges)
    x = np.linalg.solve(np.eye(len(nodes)) - damping * m, np.full(len(nodes), 1.0 - damping))
    return dict(zip(nodes, x))


def pagerank_parts(nodes, edges, teleport=None):
    """(M, v, dangling): the link matrix, the teleport vector (uniform, or ``teleport``
    normalized) and the mask of pages without out-links."""
    m, out = link_matrix(nodes, edges)
    v = np.full(len(nodes), 1.0 / len(nodes))
    if teleport:
        v = np.array([teleport.get(u, 0.0) for u in nodes], dtype=float)
        v /= v.sum()
    return m, v, np.array([u not in out for u in nodes])


def reference_pagerank(nodes, edges, damping=0.85, teleport=None):
    """Exact PageRank by a dense linear solve (dangling pages follow the teleport vector)."""
    m, v, dangling = pagerank_parts(nodes, edges, teleport)
    a = np.eye(len(nodes)) - damping * (m + np.outer(v, dangling.astype(float)))
    x = np.linalg.solve(a, (1 - damping) * v)
    return dict(zip(nodes, x))


def power_iterates(nodes, edges, damping=0.85, steps=1, teleport=None, start=None):
    """x_0 .. x_steps of the plain power iteration (dangling pages follow the teleport
    vector); ``start`` (url -> rank) is a warm start renormalized to N_known / N, the other
    pages at 1/N, as the engines take it."""
    n = len(nodes)
    m, v, dangling = pagerank_parts(nodes, edges, teleport)
    x = np.full(n, 1.0 / n)
    if start:
        known = np.array([u in start for u in nodes])
        given = np.array([start.get(u, 0.0) for u in nodes])
        x[known] = given[known] / given[known].sum() * (known.sum() / n)
    xs = [x]
    for _ in range(steps):
        x = damping * (m @ x + x[dangling].sum() * v) + (1 - damping) * v
        xs.append(x)
    return [dict(zip(nodes, it)) for it in xs]


@pytest.fixture
def ref_pagerank():
    return reference_pagerank


@pytest.fixture
def ref_power_iterates():
    return power_iterates


@pytest.fixture
def ref_leaky_pagerank():
    return leaky_pagerank
