"""The exact top N of the due URLs after the per-host and per-domain caps, without ranking
every due URL within its host.

The caps are a window by host (and domain): a shuffle and a sort of every due row, though
only the top N can be kept. At 10^7 due rows that window was ~13 s of a 23 s generate
(docs/scale.md, 2026-12-05). But the candidates whose metric is at least some value t form
a prefix S of the fetch-list order (metric descending first), and a row of S has all its
host's (and domain's) better rows in S too, so capping S keeps exactly the rows of S that
capping every candidate keeps. If N rows of S survive the caps, they are the answer.

So t is taken from an approximate quantile of the metric (one aggregation over the
candidates) so that S holds about ``MARGIN`` x N rows, and the window runs over S only. When
the caps leave fewer than N rows of S (a few hosts hold most of the best URLs) a lower t,
with ``GROWTH`` times the share, is tried, and after that every candidate: the result is the
same in every case, only the cost differs.
"""
from __future__ import annotations

from typing import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

MARGIN = 2                  # S is sized for this many times N rows
GROWTH = 8                  # a retry's S is sized for this many times the previous one
TRIES = 2                   # prefixes tried before the window runs over every candidate
TAIL = [0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.998, 0.999, 0.9995, 0.9998, 0.9999]
ACCURACY = 10_000           # percentile_approx's accuracy: rank error about 1/ACCURACY of the rows


def capped_top(candidates: DataFrame, metric: Column, order: list, top_n: int,
               capped: Callable[[DataFrame, list], DataFrame] | None) -> DataFrame:
    """The first ``top_n`` rows by ``order`` of ``capped(candidates, order)``, exactly.
    ``order``'s first key must be ``metric`` descending (its later keys break ties), and
    ``capped`` must keep a row by comparing it only with better rows of its group (a
    window ranking by ``order``), which is what makes a prefix enough; None: no caps, a
    plain top N. When a prefix answered, the result is materialized (a local checkpoint: it
    was computed to count it)."""
    if capped is None:
        return candidates.orderBy(*order).limit(top_n)
    for threshold in thresholds(candidates, metric, top_n):
        prefix = candidates.filter(metric >= F.lit(threshold))
        best = capped(prefix, order).orderBy(*order).limit(top_n).localCheckpoint(eager=True)
        if best.count() == top_n:
            return best
    return capped(candidates, order).orderBy(*order).limit(top_n)


def thresholds(candidates: DataFrame, metric: Column, top_n: int) -> list[float]:
    """Values of ``metric`` to cut the candidates at, highest first: each leaves an estimated
    ``MARGIN`` x ``top_n`` rows or more at or above it, and ``GROWTH`` times more than the one
    before. None of them when the cut would keep every candidate anyway (the lowest value)."""
    stats = candidates.agg(F.count(F.lit(1)).alias("n"), F.min(metric).alias("low"),
                           F.percentile_approx(metric, TAIL, ACCURACY).alias("q")).first()
    rows, low, quantiles = stats["n"], stats["low"], stats["q"] or []
    cuts, share = [], MARGIN * top_n
    for p, value in sorted(zip(TAIL, quantiles), reverse=True):
        if (1 - p) * rows >= share and value is not None and value > low and value not in cuts:
            cuts.append(value)
            share *= GROWTH
        if len(cuts) == TRIES:
            break
    return cuts
