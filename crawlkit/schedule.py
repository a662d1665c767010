"""Fetch schedules: how long until a page is fetched again, as Spark column expressions.

- ``fixed``: always ``schedule.default_interval``.
- ``adaptive`` (Nutch's AdaptiveFetchSchedule without its bugs): the interval grows by
  ``inc_rate`` when the page was unchanged and shrinks by ``dec_rate`` when it changed,
  clamped to [min_interval, max_interval].
- ``change_rate``: the interval is the inverse of the page's estimated change rate, using
  Cho & Garcia-Molina's estimator for a Poisson process observed at regular checks, which
  accounts for changes missed between visits: with n checks of which X found no change and
  interval I, rate = -ln((X + 0.5) / (n + 0.5)) / I. Bounded to [min_interval, max_interval].
"""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from crawlkit.conf import Conf


def estimated_change_rate(change_count: Column, check_count: Column, interval: Column) -> Column:
    """Changes per second (Cho & Garcia-Molina's bias-reduced estimator)."""
    unchanged = check_count - change_count
    return -F.log((unchanged + F.lit(0.5)) / (check_count + F.lit(0.5))) / interval


def next_interval(interval: Column, changed: Column, unchanged: Column,
                  change_count: Column, check_count: Column, conf: Conf) -> Column:
    """New fetch interval (seconds, int) after a fetch whose outcome set changed/unchanged."""
    kind = conf["schedule.kind"]
    low, high = float(conf["schedule.min_interval"]), float(conf["schedule.max_interval"])
    current = interval.cast("double")
    if kind == "fixed":
        return F.lit(conf["schedule.default_interval"]).cast("int")
    if kind == "adaptive":
        new = (F.when(changed, current * (1.0 - conf["schedule.dec_rate"]))
               .when(unchanged, current * (1.0 + conf["schedule.inc_rate"]))
               .otherwise(current))
    elif kind == "change_rate":
        rate = estimated_change_rate(change_count, check_count, current)
        new = F.when(check_count > 0, F.lit(1.0) / F.greatest(rate, F.lit(1.0 / high))).otherwise(current)
    else:
        raise ValueError(f"schedule.kind must be fixed, adaptive or change_rate, not {kind!r}")
    return F.least(F.greatest(new, F.lit(low)), F.lit(high)).cast("int")
