"""The exact top N of the due URLs after the per-host and per-domain caps, without ranking
every due URL within its host.

The caps are a window by host (and domain): a shuffle and a sort of every due row, though
only the top N can be kept. At 10^7 due rows that window was ~13 s of a 23 s generate
(docs/scale.md, 2026-12-05, later). But the candidates whose metric is at least some value t form
a prefix S of the fetch-list order (metric descending first), and a row of S has all its
host's (and domain's) better rows in S too, so capping S keeps exactly the rows of S that
capping every candidate keeps. If N rows of S survive the caps, they are the answer.

So t is placed, from a sample of the metric, so that S holds about ``MARGIN`` x N rows,
and the window runs over S only. When the caps leave fewer than N rows of S (a few hosts
hold most of the best URLs) a lower t, with ``GROWTH`` times the share, is tried, and after
that every candidate: the result is the same in every case, only the cost differs.
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


def capped_top(candidates: DataFrame, metric: Column, order: list, top_n: int,
               capped: Callable[[DataFrame, list], DataFrame] | None, cuts: list[float]) -> DataFrame:
    """The first ``top_n`` rows by ``order`` of ``capped(candidates, order)``, exactly.
    ``order``'s first key must be ``metric`` descending (its later keys break ties), and
    ``capped`` must keep a row by comparing it only with better rows of its group (a
    window ranking by ``order``), which is what makes a prefix enough; None: no caps, a
    plain top N. ``cuts`` (``cut_points``) are the values of ``metric`` to try the prefixes
    at. When a prefix answered, the result is materialized (a local checkpoint: it was
    computed to count it)."""
    if capped is None:
        return candidates.orderBy(*order).limit(top_n)
    for cut in cuts:
        prefix = candidates.filter(metric >= F.lit(cut))
        best = capped(prefix, order).orderBy(*order).limit(top_n).localCheckpoint(eager=True)
        if best.count() == top_n:
            return best
    return capped(candidates, order).orderBy(*order).limit(top_n)


def cut_points(candidates: DataFrame, metrics: list[Column], top_n: int, population: int) -> list[list[float]]:
    """For each of ``metrics``, the values to cut the candidates at (``prefix_cuts``), from one
    Bernoulli sample of about ``SAMPLE_ROWS`` of them: one pass over the candidates, as
    cheap as counting them (an approximate quantile per metric cost 1.5 s more at 10^7,
    docs/scale.md). ``population``, an upper bound on the candidates (the crawldb's rows,
    which Delta counts from its log), sets the sampled fraction; below ``MIN_POPULATION``
    there are no cuts, and no pass."""
    if population < MIN_POPULATION:
        return [[] for _ in metrics]
    fraction = min(1.0, SAMPLE_ROWS / max(population, 1))
    names = [f"_metric{i}" for i in range(len(metrics))]
    sample = candidates.select(*[m.alias(n) for m, n in zip(metrics, names)]).sample(False, fraction, SEED)
    row = sample.agg(*[F.sort_array(F.collect_list(n), asc=False).alias(n) for n in names]).first()
    return [prefix_cuts(row[n] or [], fraction, top_n) for n in names]


def prefix_cuts(sampled: list[float], fraction: float, top_n: int) -> list[float]:
    """Values of a metric, highest first, at or above which an estimated ``MARGIN`` x ``top_n``
    candidates lie, then ``GROWTH`` times more, up to ``TRIES`` of them, from ``sampled``
    (that metric's values in a sample of ``fraction`` of the candidates, highest first). None
    at the lowest sampled value: that cut would keep about every candidate."""
    cuts, share = [], MARGIN * top_n
    while len(cuts) < TRIES:
        rank = math.ceil(share * fraction)          # sampled values expected at or above the cut
        if rank >= len(sampled) or sampled[rank - 1] <= sampled[-1]:
            break
        if not cuts or sampled[rank - 1] < cuts[-1]:
            cuts.append(sampled[rank - 1])
        share *= GROWTH
    return cuts
