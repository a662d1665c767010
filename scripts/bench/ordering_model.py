"""A fast in-memory model of crawlkit's round loop, to study orderings and their spread.

The real experiment (``scripts/bench/orderings.py``) runs the crawler once per ordering
through the replay web: 20-50 Spark rounds per curve, tens of minutes each. This model runs
the same loop on the graph in memory, in seconds, so an ordering can be tried on many
tie-break hashes and its spread seen before a real crawl is spent on it. Each round, as
``generate`` does with ``generate.max_per_host = 0``: the known, unfetched pages, sorted by
the ordering score (best first) and then by the tie break, the first ``--round`` share of
the web fetched; their out-links become known. Scores are those of the scorers:

* ``depth``     1 / (1 + link depth from the seed)                 (``crawlkit/scoring/depth.py``)
* ``backlinks`` distinct fetched pages linking to the page, IB'     (``backlinks.py``)
* ``pagerank``  PageRank (d = 0.85, dangling mass spread uniformly) of the crawled graph:
  fetched pages' links over every known page, IR'                   (``pagerank/``)
* ``random``    a random score each round
* ``interleave`` crawlkit's default (``generate.policy = "interleave"``): the PageRank and
  the backlinks lists take turns                                    (``stages/interleave.py``)

Tie break: ``url`` (alphabetical) or a hash of the URL: the model draws one random
permutation per ``--seeds`` value, as ``generate.tie_break = hash`` is one fixed hash.
What the model leaves out: URL normalisation and robots.txt (the graph webs have neither
to speak of), the fetch order inside a round (it does not change the crawled set), OPIC.
Checked against the real crawler: on Hollins at 10% crawled the model's P_ST (in-degree >
10) is within 0.02 of the real crawl's for depth, backlinks and pagerank.

    .venv/bin/python scripts/bench/ordering_model.py /work/shared/data/hollins \\
        --seed http://www1.hollins.edu/ --upto 0.5 --seeds 6 [--ordering backlinks ...]
"""
from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.5)


class Graph:
    """The web as integer ids: deduplicated links without self-links, in-degree, PageRank."""

    def __init__(self, links: Path):
        ids: dict[str, int] = {}
        src, dst = [], []
        with gzip.open(links, "rt", encoding="utf-8") as lines:
            for line in lines:
                a, _, b = line.rstrip("\n").partition("\t")
                src.append(ids.setdefault(a, len(ids)))
                dst.append(ids.setdefault(b, len(ids)))
        self.ids, self.n = ids, len(ids)
        pairs = np.unique(np.column_stack([src, dst]), axis=0)
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        self.src, self.dst = pairs[:, 0], pairs[:, 1]      # sorted by src: out-links are slices
        self.starts = np.searchsorted(self.src, np.arange(self.n + 1))
        urls = np.empty(self.n, dtype=object)
        for url, i in ids.items():
            urls[i] = url
        self.alphabetical = np.argsort(np.argsort(urls))
        self.indegree = np.bincount(self.dst, minlength=self.n)
        self.pagerank = pagerank(self.n, self.src, self.dst)

    def out_links(self, page: int) -> np.ndarray:
        return self.dst[self.starts[page]:self.starts[page + 1]]


def pagerank(n: int, src: np.ndarray, dst: np.ndarray, d: float = 0.85, tol: float = 1e-10) -> np.ndarray:
    """Probability-form PageRank; pages without out-links spread their rank uniformly."""
    out = np.bincount(src, minlength=n).astype(float)
    matrix = sp.csr_matrix((1.0 / out[src], (dst, src)), shape=(n, n))
    dangling = out == 0
    x = np.full(n, 1.0 / n)
    for _ in range(500):
        nxt = d * (matrix @ x) + (d * x[dangling].sum() + 1 - d) / n
        if np.abs(nxt - x).sum() < tol:
            return nxt
        x = nxt
    return x


class Crawl:
    """The crawl's state: what is known, fetched, how deep, which links were seen."""

    def __init__(self, graph: Graph, seed: int):
        self.graph = graph
        self.known = np.zeros(graph.n, bool)
        self.fetched = np.zeros(graph.n, bool)
        self.depth = np.full(graph.n, np.iinfo(np.int64).max)
        self.known[seed], self.depth[seed] = True, 0
        self.seen_src: list[np.ndarray] = []
        self.seen_dst: list[np.ndarray] = []
        self.order: list[int] = []

    def fetch(self, page: int) -> None:
        targets = self.graph.out_links(page)
        self.fetched[page] = True
        self.order.append(page)
        self.known[targets] = True
        self.depth[targets] = np.minimum(self.depth[targets], self.depth[page] + 1)
        self.seen_src.append(np.full(len(targets), page))
        self.seen_dst.append(targets)

    def links(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.seen_src:
            return np.zeros(0, int), np.zeros(0, int)
        return np.concatenate(self.seen_src), np.concatenate(self.seen_dst)


def score_depth(crawl: Crawl, rng) -> np.ndarray:
    return 1.0 / (1.0 + np.minimum(crawl.depth, 10**9))


def score_backlinks(crawl: Crawl, rng) -> np.ndarray:
    _, dst = crawl.links()
    return np.bincount(dst, minlength=crawl.graph.n).astype(float)


def score_pagerank(crawl: Crawl, rng) -> np.ndarray:
    src, dst = crawl.links()
    nodes = np.flatnonzero(crawl.known)
    local = np.full(crawl.graph.n, -1)
    local[nodes] = np.arange(len(nodes))
    ranks = np.zeros(crawl.graph.n)
    ranks[nodes] = pagerank(len(nodes), local[src], local[dst])
    return ranks


def score_random(crawl: Crawl, rng) -> np.ndarray:
    return rng.random(crawl.graph.n)


ORDERINGS = {"depth": score_depth, "backlinks": score_backlinks, "pagerank": score_pagerank,
             "random": score_random}
INTERLEAVED = {"interleave": ("pagerank", "backlinks")}   # crawlkit's default (generate.policy)


def best_first(crawl: Crawl, ordering: str, candidates: np.ndarray, tie_rank: np.ndarray, rng) -> np.ndarray:
    """Candidates in fetch-list order: one metric's, or the interleaved lists' (a URL's place is
    its best rank in any list, list order breaking a draw, as crawlkit/stages/interleave.py)."""
    if ordering not in INTERLEAVED:
        score = ORDERINGS[ordering](crawl, rng)[candidates]
        return candidates[np.lexsort((tie_rank[candidates], -score))]
    place = np.full((len(candidates), 2), np.iinfo(np.int64).max)
    for index, name in enumerate(INTERLEAVED[ordering]):
        ranked = np.lexsort((tie_rank[candidates], -ORDERINGS[name](crawl, rng)[candidates]))
        position = np.empty(len(candidates), np.int64)
        position[ranked] = np.arange(len(candidates))
        better = position < place[:, 0]
        place[better] = np.column_stack([position[better], np.full(better.sum(), index)])
    return candidates[np.lexsort((place[:, 1], place[:, 0]))]


def run(graph: Graph, seed: int, ordering: str, tie_rank: np.ndarray, per_round: int, limit: int,
        draws: int = 0) -> np.ndarray:
    """The fetch order of one crawl-and-stop crawl (``draws`` seeds the random ordering)."""
    crawl, rng = Crawl(graph, seed), np.random.default_rng(draws)
    while len(crawl.order) < limit:
        candidates = np.flatnonzero(crawl.known & ~crawl.fetched)
        if len(candidates) == 0:
            break
        for page in best_first(crawl, ordering, candidates, tie_rank, rng)[:min(per_round, limit - len(crawl.order))]:
            crawl.fetch(page)
    return np.array(crawl.order)


def p_st(graph: Graph, order: np.ndarray) -> dict[float, tuple[float, float]]:
    """P_ST at each crawled fraction: hot = in-degree > 10, and top 1% by PageRank."""
    by_indegree = graph.indegree > 10
    top = np.zeros(graph.n, bool)
    top[np.argsort(-graph.pagerank)[:max(1, round(0.01 * graph.n))]] = True
    result = {}
    for fraction in FRACTIONS:
        m = round(fraction * graph.n)
        if m <= len(order):
            got = order[:m]
            result[fraction] = (by_indegree[got].sum() / by_indegree.sum(), top[got].sum() / top.sum())
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="a graph web folder holding links.tsv.gz")
    parser.add_argument("--seed", required=True, help="the seed URL")
    parser.add_argument("--ordering", action="append", help=f"default: all of {[*INTERLEAVED, *ORDERINGS]}")
    parser.add_argument("--round", type=float, default=0.01, help="pages per round, a share of the web")
    parser.add_argument("--upto", type=float, default=0.5)
    parser.add_argument("--seeds", type=int, default=6, help="tie-break hashes tried per ordering")
    args = parser.parse_args()

    graph = Graph(Path(args.source) / "links.tsv.gz")
    per_round, limit = max(1, round(args.round * graph.n)), round(args.upto * graph.n)
    ties = {"url": graph.alphabetical} | {
        f"hash{s}": np.random.default_rng(s).permutation(graph.n) for s in range(1, args.seeds + 1)}
    fractions = [f for f in FRACTIONS if f <= args.upto]
    print(f"# {Path(args.source).name}: {graph.n} pages, rounds of {per_round}, up to {limit}\n")
    print("| ordering | tie break | " + " | ".join(f"P_ST@{f:.0%} indeg>10 / top1% PR" for f in fractions) + " |")
    print("|---|---|" + "---|" * len(fractions))
    for ordering in args.ordering or [*INTERLEAVED, *ORDERINGS]:
        rows = []
        for draws, (tie, rank) in enumerate(ties.items()):
            curve = p_st(graph, run(graph, graph.ids[args.seed], ordering, rank, per_round, limit, draws))
            rows.append([curve.get(f, (np.nan, np.nan)) for f in fractions])
            print(f"| {ordering} | {tie} | " + " | ".join(f"{a:.3f} / {b:.3f}" for a, b in rows[-1]) + " |",
                  flush=True)
        hashed = np.array(rows[1:])
        if len(hashed):
            print(f"| {ordering} | hash mean (min-max) | " + " | ".join(
                f"{hashed[:, i, 0].mean():.3f} ({hashed[:, i, 0].min():.3f}-{hashed[:, i, 0].max():.3f}) / "
                f"{hashed[:, i, 1].mean():.3f} ({hashed[:, i, 1].min():.3f}-{hashed[:, i, 1].max():.3f})"
                for i in range(len(fractions))) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
