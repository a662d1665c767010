"""Importance metrics on the full web graph: the yardstick a crawl ordering is judged by.

These are Cho et al.'s *importance* metrics, I(P), computed once on the whole web after the
fact. They are kept apart from the crawler's *ordering* scorers (crawlkit.scoring), which
only estimate importance from the pages seen so far; sharing code would let a scorer bug
hide itself in its own evaluation.

Links vote as in crawlkit.scoring.links: self-links are dropped and duplicate (src, dst)
pairs count once, so the in-degree is the number of distinct *other* pages linking in.

Example::

    src, dst = distinct_links(src, dst, n)
    backlinks = in_degree(dst, n)
    ranks = pagerank(src, dst, n)          # sums to 1
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

DAMPING = 0.85
TOLERANCE = 1e-10
MAX_ITERATIONS = 10_000
TIE_TOLERANCE = 1e-9


def distinct_links(src: np.ndarray, dst: np.ndarray, pages: int) -> tuple[np.ndarray, np.ndarray]:
    """The voting links: no self-links, each (src, dst) pair once (sorted by src, dst)."""
    keep = src != dst
    pairs = np.unique(src[keep].astype(np.int64) * pages + dst[keep])
    return pairs // pages, pairs % pages


def in_degree(dst: np.ndarray, pages: int) -> np.ndarray:
    """Backlink count IB(P) of every page (``dst`` from :func:`distinct_links`)."""
    return np.bincount(dst, minlength=pages)


def pagerank(src: np.ndarray, dst: np.ndarray, pages: int, damping: float = DAMPING,
             tolerance: float = TOLERANCE) -> np.ndarray:
    """PageRank IR(P) in probability form (sums to 1) by power iteration.

    A page without out-links links to every page (its mass is spread uniformly, as the paper
    assumes), so no rank leaks. Stops when the L1 change falls below ``tolerance``.
    """
    out_degree = np.bincount(src, minlength=pages).astype(np.float64)
    weights = 1.0 / out_degree[src]
    transition = sp.csr_matrix((weights, (dst, src)), shape=(pages, pages))
    dangling = out_degree == 0
    ranks = np.full(pages, 1.0 / pages)
    for _ in range(MAX_ITERATIONS):
        spread = ranks[dangling].sum() / pages
        updated = damping * (transition @ ranks + spread) + (1.0 - damping) / pages
        change = np.abs(updated - ranks).sum()
        ranks = updated
        if change < tolerance:
            return ranks
    raise RuntimeError(f"PageRank did not converge to {tolerance} in {MAX_ITERATIONS} iterations")


def tie_groups(values: np.ndarray, rel_tol: float = TIE_TOLERANCE) -> np.ndarray:
    """Integer keys ordered like ``values`` where values within ``rel_tol`` share a key.

    PageRank values of pages in the same position of the graph differ only by rounding
    (far below the solver's tolerance); ranking them by those digits would be arbitrary.
    Consecutive sorted values closer than ``rel_tol`` (relative) are one tie group.
    """
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    new_group = np.diff(ordered) > rel_tol * np.abs(ordered[1:])
    keys = np.empty(len(values), dtype=np.int64)
    keys[order] = np.concatenate([[0], np.cumsum(new_group)])
    return keys
