"""The change-rate estimator converges to the true rate of a Poisson change process.

A page changes at the events of a Poisson process of rate lam; the crawler checks it every
I seconds and sees only *whether* it changed since the last check (several changes between
two checks look like one). Cho & Garcia-Molina's estimator
rate = -ln((X + 0.5) / (n + 0.5)) / I (X = checks that found no change, of n) accounts for the
missed changes; the naive changes/time does not and underestimates fast pages.
The simulation is numpy; the same numbers then go through the Spark expression
crawlkit.schedule.estimated_change_rate (what updatedb's change_rate schedule uses).
"""
from __future__ import annotations

import numpy as np
import pytest

TOLERANCE = 0.10   # relative error allowed after N_CHECKS checks
N_CHECKS = 2000
INTERVAL = 3600.0


def cho_estimate(changed_checks: int, checks: int, interval: float) -> float:
    unchanged = checks - changed_checks
    return -np.log((unchanged + 0.5) / (checks + 0.5)) / interval


def observe(rate: float, checks: int, interval: float, rng) -> int:
    """Simulate the Poisson process for checks*interval seconds; count checks that saw a change."""
    horizon = checks * interval
    times = np.cumsum(rng.exponential(1.0 / rate, size=int(rate * horizon * 1.5) + 50))
    while times[-1] < horizon:
        times = np.concatenate([times, times[-1] + np.cumsum(rng.exponential(1.0 / rate, size=100))])
    times = times[times < horizon]
    buckets = np.unique(np.floor(times / interval).astype(int))   # intervals with >= 1 change
    return len(buckets)


# true change intervals from 10 checks down to half a check interval
@pytest.mark.parametrize("mean_interval", [10 * INTERVAL, 3 * INTERVAL, INTERVAL, 0.5 * INTERVAL])
def test_estimate_converges_to_true_rate(mean_interval):
    rate = 1.0 / mean_interval
    rng = np.random.default_rng(int(mean_interval))
    changed = observe(rate, N_CHECKS, INTERVAL, rng)
    estimate = cho_estimate(changed, N_CHECKS, INTERVAL)
    assert estimate == pytest.approx(rate, rel=TOLERANCE)
    naive = changed / (N_CHECKS * INTERVAL)
    if rate * INTERVAL >= 1.0:   # the naive estimate misses changes between checks
        assert abs(naive - rate) > 2 * abs(estimate - rate)


def test_error_shrinks_with_more_checks():
    rate, rng = 1.0 / (2 * INTERVAL), np.random.default_rng(7)
    errors = {}
    for checks in (20, 200, 2000):
        runs = [cho_estimate(observe(rate, checks, INTERVAL, rng), checks, INTERVAL) for _ in range(40)]
        errors[checks] = float(np.sqrt(np.mean((np.array(runs) - rate) ** 2)) / rate)
    assert errors[2000] < errors[200] < errors[20]
    assert errors[2000] < 0.05


def test_never_changing_page_estimates_zero_and_always_changing_is_bounded():
    assert cho_estimate(0, 50, INTERVAL) == 0.0
    assert cho_estimate(50, 50, INTERVAL) == pytest.approx(np.log(101) / INTERVAL)


def test_spark_expression_matches(spark):
    from pyspark.sql import functions as F

    from crawlkit.schedule import estimated_change_rate
    rows = [(3, 10, 3600), (0, 10, 600), (10, 10, 7200), (731, 2000, 3600)]
    df = spark.createDataFrame(rows, "changes int, checks int, interval int")
    got = [r[0] for r in df.select(estimated_change_rate(
        F.col("changes"), F.col("checks"), F.col("interval").cast("double"))).collect()]
    assert got == pytest.approx([cho_estimate(c, n, float(i)) for c, n, i in rows])
