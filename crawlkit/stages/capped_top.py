"""The exact top N of the due URLs after the per-host and per-domain caps, without ranking
every due URL within its host.

The caps are a window by host (and domain): a shuffle and a sort of every due row, though
only the top N can be kept. At 10^7 due rows that window was ~13 s of a 23 s generate
(docs/scale.md, 2026-12-05, later). But the candidates up to some candidate c in the
fetch-list order (metric descending, then the tie break) form a prefix S of it, and a row
of S has all its host's (and domain's) better rows in S too, so capping S keeps exactly
the rows of S that capping every candidate keeps. If N rows of S survive the caps, they
are the answer.

So c, a cut, is placed from a sample of the candidates so that S holds about ``MARGIN`` x N
rows, and the window runs over S only. A cut is a (metric, first tie-break key) pair, so it
falls inside a tie of the metric as well as between values (``cut_points``). When the caps
leave fewer than N rows of S (a few hosts hold most of the best URLs) a later cut, with
``GROWTH`` times the share, is tried, and after that every candidate: the result is the
same in every case, only the cost differs.
"""
from __future__ import annotations

import math
from typing import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

MARGIN = 2                  # the first prefix is sized for this many times N rows
GROWTH = 8                  # a retry's prefix is sized for this many times the previous one
TRIES = 2                   # prefixes tried before the window runs over every candidate
SAMPLE_ROWS = 200_000       # metric values sampled to place the cuts
MIN_POPULATION = 10_000     # fewer candidates: nothing to save (at 10^4 both ways took the
                            # same time, docs/scale.md, 2026-12-05, later), so no extra jobs
SEED = 17                   # of the sample: the same candidates give the same cuts

Cut = tuple  # (metric value, first tie-break key): the last candidate of a prefix


def capped_top(candidates: DataFrame, metric: Column, tie_break: list[Column], top_n: int,
               capped: Callable[[DataFrame, list], DataFrame] | None, cuts: list[Cut]) -> DataFrame:
    """The first ``top_n`` rows of ``capped(candidates, order)`` by ``order`` = ``metric``
    descending, then ``tie_break`` (ascending keys), exactly. ``capped`` must keep a row by
    comparing it only with better rows of its group (a window ranking by ``order``), which
    is what makes a prefix enough; None: no caps, a plain top N. ``cuts`` (``cut_points``)
    are the prefixes to try. When a prefix answered, the result is materialized (a local
    checkpoint: it was computed to count it)."""
    order = [metric.desc(), *tie_break]
    if capped is None:
        return candidates.orderBy(*order).limit(top_n)
    for cut in cuts:
        prefix = candidates.filter(up_to(cut, metric, tie_break[0]))
        best = capped(prefix, order).orderBy(*order).limit(top_n).localCheckpoint(eager=True)
        if best.count() == top_n:
            return best
    return capped(candidates, order).orderBy(*order).limit(top_n)


def up_to(cut: Cut, metric: Column, tie: Column) -> Column:
    """The candidates at or before ``cut`` in the order (``metric`` descending, then ``tie``
    ascending): a prefix of it, whatever keys break the ties after ``tie``."""
    value, key = cut
    return (metric > F.lit(value)) | ((metric == F.lit(value)) & (tie <= F.lit(key)))


def cut_points(candidates: DataFrame, metrics: list[Column], tie: Column, top_n: int,
               population: int) -> list[list[Cut]]:
    """For each of ``metrics``, the cuts to try (see the module docstring), placed on one
    Bernoulli sample of about ``SAMPLE_ROWS`` candidates ranked as the fetch list ranks them
    (the metric descending, then ``tie``, the first tie-break key): a cut is the sampled
    (metric, tie) at the rank ``cut_ranks`` gives, so it falls inside a tie as easily as
    between two values. Backlink counts are mostly tied early in a crawl (most frontier
    pages have one in-link), and a cut on the metric alone kept every tied row. One pass over
    the candidates, as cheap as counting them (an approximate quantile per metric cost 1.5 s
    more at 10^7, docs/scale.md). ``population``, an upper bound on the candidates (the
    crawldb's rows, which Delta counts from its log), sets the sampled fraction; below
    ``MIN_POPULATION`` there are no cuts, and no pass."""
    if population < MIN_POPULATION:
        return [[] for _ in metrics]
    fraction = min(1.0, SAMPLE_ROWS / max(population, 1))
    ranks = cut_ranks(fraction, top_n)
    names = [f"_metric{i}" for i in range(len(metrics))]
    # (-metric, tie) ascending is the fetch-list order; a null metric ranks last, never at a cut
    ranked = [F.when(m.isNotNull(), F.struct((-m).alias("value"), tie.alias("key"))) for m in metrics]
    sample = candidates.select(*[r.alias(n) for r, n in zip(ranked, names)]).sample(False, fraction, SEED)
    arrays = sample.agg(*[F.sort_array(F.collect_list(n)).alias(n) for n in names])
    row = arrays.select(*[c for n in names for c in
                          [F.size(n).alias(f"{n}_size"), *[F.get(n, r - 1).alias(f"{n}_{r}") for r in ranks]]]).first()
    return [[(-row[f"{n}_{r}"]["value"], row[f"{n}_{r}"]["key"]) for r in ranks if r < row[f"{n}_size"]]
            for n in names]


def cut_ranks(fraction: float, top_n: int) -> list[int]:
    """Ranks (1-based) in a sample of ``fraction`` of the candidates at which the prefixes end:
    the first holds an estimated ``MARGIN`` x ``top_n`` candidates, each later one ``GROWTH``
    times more, ``TRIES`` in all (fewer when two round to the same rank). A rank past the
    sample's size is not tried: that cut would keep about every candidate."""
    ranks: list[int] = []
    for attempt in range(TRIES):
        rank = max(1, math.ceil(MARGIN * top_n * GROWTH ** attempt * fraction))
        if not ranks or rank > ranks[-1]:
            ranks.append(rank)
    return ranks
