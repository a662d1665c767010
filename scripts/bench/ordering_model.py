"""A fast in-memory model of crawlkit's round loop, to study orderings and their spread.

The real experiment (``scripts/bench/orderings.py``) runs the crawler once per ordering
through the replay web: 20-50 Spark rounds per curve, tens of minutes each. This model runs
the same loop on the graph in memory, in seconds, so an ordering can be tried on many
tie-break hashes and its spread seen before a real crawl is spent on it. Each round, as
``generate`` does with ``generate.max_per_host = 0``: the known, unfetched URLs, sorted by
the ordering score (best first) and then by the tie break, the first ``--round`` share of
the web fetched; their out-links become known. Scores are those of the scorers:

* ``depth``     1 / (1 + link depth from the seed)                 (``crawlkit/scoring/depth.py``)
* ``backlinks`` distinct fetched pages linking to the page, IB'     (``backlinks.py``)
* ``pagerank``  PageRank (d = 0.85, dangling mass spread uniformly) of the crawled graph:
  fetched pages' links over every known URL, IR'                    (``pagerank/``)
* ``random``    one random score per URL, fixed for the whole crawl (a new draw per
  tie-break hash), as the seeded hash of ``random_baseline.py``
* ``interleave`` crawlkit's default (``generate.policy = "interleave"``): the PageRank and
  the backlinks lists take turns                                    (``stages/interleave.py``)

Links are what the crawler's parse and updatedb keep, with crawlkit's configuration (its
defaults, changed with ``--conf key=value``): each graph URL is normalised and filtered once
(``crawlkit.urls.UrlNormalizer`` and ``UrlFilter`` over the ``urls.*`` keys), and a link to a
URL that is invalid or filtered out (by default ``urls.exclude``: .pdf, .jpg, .gif, ...) is
dropped, so that page never becomes known and is never fetched. A page's links are its
distinct normalised URLs in page order, the first ``parser.max_outlinks`` of them, without
filtered ones and the page itself, the first ``db.max_outlinks_per_page`` of those. A URL
whose normalised form is not a page of the web (Hollins: 16 URLs written with backslashes)
is fetched as the crawler fetches it: it takes its place in the round's fetch list, but the
replay web answers 404, so it has no links and is not a crawled page.

P_ST is measured as ``crawlkit evaluate`` measures it, against the whole web: the hot pages
(in-degree > 10, top 1% by PageRank, both of the full graph) include the ones the crawler
cannot reach, and the share crawled is a share of all the web's pages. The header line
gives the ceiling: the share of each hot set that the filter leaves crawlable at all.

Tie break: ``url`` (alphabetical) or a hash of the URL: the model draws one random
permutation per ``--seeds`` value, as ``generate.tie_break = hash`` is one fixed hash.
What the model leaves out: robots.txt (the graph webs have none), the fetch order inside a
round (it does not change the crawled set), OPIC. Checked against the real crawler: on
Hollins with alphabetical ties, P_ST at 5% and 10% is the real crawl's for depth and
pagerank and within 0.003 for backlinks; on NotreDame with hashed ties, depth and pagerank
are within 0.004 of the real crawls at 5-30% (docs/orderings/README.md).

    .venv/bin/python scripts/bench/ordering_model.py /work/shared/data/hollins \\
        --seed http://www1.hollins.edu/ --upto 0.5 --seeds 6 [--ordering backlinks ...] \\
        [--conf urls.exclude=...]
"""
from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from crawlkit.conf import Conf, make_conf, parse_assignments
from crawlkit.replay.urls import key_variants, url_key
from crawlkit.urls import UrlFilter, UrlNormalizer

FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.5)


class Graph:
    """The web and the crawler's view of it.

    The web: graph ids ``0..n-1`` with deduplicated links without self-links, in-degree and
    PageRank (what P_ST measures against). The crawler's view: URL ids ``0..N-1``, one per
    distinct normalised URL that passes the filter (numbered in graph order, so a graph that
    needs no normalising keeps its ids), ``page`` (the graph page the replay web serves for a
    URL, -1: a 404), and the links the crawler keeps from each page (``out_links``)."""

    def __init__(self, links: Path, conf: Conf):
        ids: dict[str, int] = {}
        src, dst = [], []
        with gzip.open(links, "rt", encoding="utf-8") as lines:
            for line in lines:
                a, _, b = line.rstrip("\n").partition("\t")
                src.append(ids.setdefault(a, len(ids)))
                dst.append(ids.setdefault(b, len(ids)))
        self.n, self.graph_ids = len(ids), ids
        src, dst = np.array(src, np.int64), np.array(dst, np.int64)
        pairs = np.unique(np.column_stack([src, dst]), axis=0)
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        self.indegree = np.bincount(pairs[:, 1], minlength=self.n)
        self.pagerank = pagerank(self.n, pairs[:, 0], pairs[:, 1])
        self._crawler_view(list(ids), src, dst, conf)

    def _crawler_view(self, urls: list[str], src: np.ndarray, dst: np.ndarray, conf: Conf) -> None:
        settings = conf.section("urls")
        normalize, url_filter = UrlNormalizer(settings), UrlFilter(settings)
        served = {}                                  # the replay web's lookup (LinkGraph.find)
        for i, url in enumerate(urls):
            served.setdefault(url_key(url), i)
        norm_ids: dict[str, int] = {}                # every valid normalised URL, filtered or not
        norm_of = np.full(self.n, -1)                # graph id -> normalised URL id (-1: invalid)
        for i, url in enumerate(urls):
            normal = normalize(url)
            if normal is not None:
                norm_of[i] = norm_ids.setdefault(normal, len(norm_ids))
        url_of = np.full(len(norm_ids), -1)          # normalised URL id -> URL id (-1: filtered)
        names, page = [], []
        for normal, k in norm_ids.items():
            if url_filter.check(normal) is None:
                url_of[k] = len(names)
                names.append(normal)
                key = url_key(normal)
                found = served.get(key)
                if found is None:
                    found = next((served[v] for v in key_variants(key) if v in served), -1)
                page.append(found)
        self.N, self.urls, self.page = len(names), np.array(names, dtype=object), np.array(page)
        self.ids = dict(zip(names, range(self.N)))
        self.alphabetical = np.argsort(np.argsort(self.urls))
        hot = {"in-degree > 10": self.indegree > 10, "top 1% PageRank": self.top_pagerank()}
        crawlable = np.zeros(self.n, bool)
        crawlable[self.page[self.page >= 0]] = True
        self.ceiling = {name: (mask & crawlable).sum() / mask.sum() for name, mask in hot.items()}
        self.filtered = int((norm_of < 0).sum() + (url_of[norm_of[norm_of >= 0]] < 0).sum())

        # each page's links as parse and updatedb keep them: distinct normalised URLs in page
        # order (file order, duplicates kept, as the replay web renders them), the first
        # parser.max_outlinks; then without filtered URLs and the page itself; the first
        # db.max_outlinks_per_page
        order = np.argsort(src, kind="stable")
        src, dst = src[order], norm_of[dst[order]]
        keep = dst >= 0
        src, dst = src[keep], dst[keep]
        _, first = np.unique(src * len(norm_ids) + dst, return_index=True)   # first occurrences
        first.sort()
        src, dst = src[first], dst[first]

        def first_per_page(s: np.ndarray, cap: int) -> np.ndarray:
            starts = np.searchsorted(s, s, side="left")
            return np.arange(len(s)) - starts < cap

        cut = first_per_page(src, conf["parser.max_outlinks"])
        src, dst = src[cut], url_of[dst[cut]]
        keep = dst >= 0
        src, dst = src[keep], dst[keep]
        if conf["parser.ignore_same_page_links"]:
            own = norm_of[src]
            keep = (own < 0) | (url_of[np.maximum(own, 0)] != dst)
            src, dst = src[keep], dst[keep]
        cut = first_per_page(src, conf["db.max_outlinks_per_page"])
        self.src, self.dst = src[cut], dst[cut]      # graph page -> URL id, sorted by page
        self.starts = np.searchsorted(self.src, np.arange(self.n + 1))

    def top_pagerank(self) -> np.ndarray:
        top = np.zeros(self.n, bool)
        top[np.argsort(-self.pagerank)[:max(1, round(0.01 * self.n))]] = True
        return top

    def out_links(self, url: int) -> np.ndarray:
        """URL ids the crawler learns from fetching URL ``url`` (none for a 404)."""
        page = self.page[url]
        return self.dst[self.starts[page]:self.starts[page + 1]] if page >= 0 else self.dst[:0]


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
    """The crawl's state over URL ids: what is known, fetched, how deep, which links were seen;
    ``order`` is the graph pages crawled, in crawl order (404s are fetched but not pages)."""

    def __init__(self, graph: Graph, seed: int, draws: int):
        self.graph = graph
        self.known = np.zeros(graph.N, bool)
        self.fetched = np.zeros(graph.N, bool)
        self.depth = np.full(graph.N, np.iinfo(np.int64).max)
        self.known[seed], self.depth[seed] = True, 0
        self.seen_src: list[np.ndarray] = []
        self.seen_dst: list[np.ndarray] = []
        self.crawled = np.zeros(graph.n, bool)
        self.order: list[int] = []
        self.random = np.random.default_rng(draws).random(graph.N)   # random_baseline: fixed

    def fetch(self, url: int) -> None:
        targets = self.graph.out_links(url)
        self.fetched[url] = True
        page = self.graph.page[url]
        if page >= 0 and not self.crawled[page]:
            self.crawled[page] = True
            self.order.append(page)
        self.known[targets] = True
        self.depth[targets] = np.minimum(self.depth[targets], self.depth[url] + 1)
        self.seen_src.append(np.full(len(targets), url))
        self.seen_dst.append(targets)

    def links(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.seen_src:
            return np.zeros(0, int), np.zeros(0, int)
        return np.concatenate(self.seen_src), np.concatenate(self.seen_dst)


def score_depth(crawl: Crawl) -> np.ndarray:
    return 1.0 / (1.0 + np.minimum(crawl.depth, 10**9))


def score_backlinks(crawl: Crawl) -> np.ndarray:
    _, dst = crawl.links()
    return np.bincount(dst, minlength=crawl.graph.N).astype(float)


def score_pagerank(crawl: Crawl) -> np.ndarray:
    src, dst = crawl.links()
    nodes = np.flatnonzero(crawl.known)
    local = np.full(crawl.graph.N, -1)
    local[nodes] = np.arange(len(nodes))
    ranks = np.zeros(crawl.graph.N)
    ranks[nodes] = pagerank(len(nodes), local[src], local[dst])
    return ranks


def score_random(crawl: Crawl) -> np.ndarray:
    return crawl.random


ORDERINGS = {"depth": score_depth, "backlinks": score_backlinks, "pagerank": score_pagerank,
             "random": score_random}
INTERLEAVED = {"interleave": ("pagerank", "backlinks")}   # crawlkit's default (generate.policy)


def best_first(crawl: Crawl, ordering: str, candidates: np.ndarray, tie_rank: np.ndarray) -> np.ndarray:
    """Candidates in fetch-list order: one metric's, or the interleaved lists' (a URL's place is
    its best rank in any list, list order breaking a draw, as crawlkit/stages/interleave.py)."""
    if ordering not in INTERLEAVED:
        score = ORDERINGS[ordering](crawl)[candidates]
        return candidates[np.lexsort((tie_rank[candidates], -score))]
    place = np.full((len(candidates), 2), np.iinfo(np.int64).max)
    for index, name in enumerate(INTERLEAVED[ordering]):
        ranked = np.lexsort((tie_rank[candidates], -ORDERINGS[name](crawl)[candidates]))
        position = np.empty(len(candidates), np.int64)
        position[ranked] = np.arange(len(candidates))
        better = position < place[:, 0]
        place[better] = np.column_stack([position[better], np.full(better.sum(), index)])
    return candidates[np.lexsort((place[:, 1], place[:, 0]))]


def run(graph: Graph, seed: int, ordering: str, tie_rank: np.ndarray, per_round: int, limit: int,
        draws: int = 0) -> np.ndarray:
    """The crawl order (graph pages) of one crawl-and-stop crawl to ``limit`` pages; ``draws``
    seeds the random ordering's scores. A round fetches ``per_round`` URLs (404s included),
    or fewer when fewer pages are missing, as the crawl's ``crawl.max_pages`` top-up does."""
    crawl = Crawl(graph, seed, draws)
    while len(crawl.order) < limit:
        candidates = np.flatnonzero(crawl.known & ~crawl.fetched)
        if len(candidates) == 0:
            break
        for url in best_first(crawl, ordering, candidates, tie_rank)[:min(per_round, limit - len(crawl.order))]:
            crawl.fetch(url)
    return np.array(crawl.order, dtype=np.int64)


def p_st(graph: Graph, order: np.ndarray) -> dict[float, tuple[float, float]]:
    """P_ST at each crawled fraction of the whole web: hot = in-degree > 10, and top 1% by
    PageRank, both of the whole web, hot pages the crawler cannot reach included."""
    by_indegree, top = graph.indegree > 10, graph.top_pagerank()
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
    parser.add_argument("--conf", action="append", default=[],
                        help="key=value over crawlkit's defaults (urls.*, parser.max_outlinks, "
                             "parser.ignore_same_page_links, db.max_outlinks_per_page)")
    args = parser.parse_args()

    conf = make_conf().with_overrides(parse_assignments(args.conf), origin="--conf")
    graph = Graph(Path(args.source) / "links.tsv.gz", conf)
    seed = UrlNormalizer(conf.section("urls"))(args.seed)
    if seed not in graph.ids:
        parser.error(f"the seed {args.seed} is not a crawlable URL of the web")
    per_round, limit = max(1, round(args.round * graph.n)), round(args.upto * graph.n)
    ties = {"url": graph.alphabetical} | {
        f"hash{s}": np.random.default_rng(s).permutation(graph.N) for s in range(1, args.seeds + 1)}
    fractions = [f for f in FRACTIONS if f <= args.upto]
    print(f"# {Path(args.source).name}: {graph.n} pages, {graph.filtered} of them filtered out "
          f"({', '.join(args.conf) or 'default conf'}), {(graph.page < 0).sum()} crawlable URLs that "
          f"are 404s; rounds of {per_round}, up to {limit}")
    print("# ceiling (share of the hot pages the crawler can fetch at all): " + ", ".join(
        f"{name} {share:.3f}" for name, share in graph.ceiling.items()) + "\n")
    print("| ordering | tie break | " + " | ".join(f"P_ST@{f:.0%} indeg>10 / top1% PR" for f in fractions) + " |")
    print("|---|---|" + "---|" * len(fractions))
    for ordering in args.ordering or [*INTERLEAVED, *ORDERINGS]:
        rows = []
        for draws, (tie, rank) in enumerate(ties.items()):
            curve = p_st(graph, run(graph, graph.ids[seed], ordering, rank, per_round, limit, draws))
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
