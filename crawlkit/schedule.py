"""Fetch schedules: how long until a page is fetched again, as Spark column expressions.

- ``fixed``: always ``schedule.default_interval``.
- ``adaptive`` (Nutch's AdaptiveFetchSchedule without its bugs): the interval grows by
  ``inc_rate`` when the page was unchanged and shrinks by ``dec_rate`` when it changed,
  clamped to [min_interval, max_interval].
- ``change_rate``: the fetch budget (crawlkit.stages.refetch), not the interval, decides
  when a page is refetched; the interval is the mean time between the page's compared
  checks, as observed (the gap from the copy it held to the new fetch, averaged over
  ``check_count``), bounded to [min_interval, max_interval]. That is the I of Cho &
  Garcia-Molina's estimator for a Poisson process observed at regular checks, which accounts
  for changes missed between visits: with n checks of which X found no change,
  rate = -ln((X + 0.5) / (n + 0.5)) / I. (An interval derived from the previous one, 1/rate
  with I the current interval, fed back into itself: a page checked sooner than its interval
  once went to max_interval and stayed there, whatever its checks found.) An outcome that
  compares nothing (a redirect, a non-HTML answer) leaves the interval as it was.
"""
from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column
from pyspark.sql import functions as F

from crawlkit.conf import Conf


def estimated_change_rate(change_count: Column, check_count: Column, interval: Column) -> Column:
    """Changes per second (Cho & Garcia-Molina's bias-reduced estimator)."""
    unchanged = check_count - change_count
    return -F.log((unchanged + F.lit(0.5)) / (check_count + F.lit(0.5))) / interval


def last_fetch_time() -> Column:
    """When the crawler took its copy, on the crawl's logical clock: ``fetch_time - fetch_interval``.

    updatedb sets ``fetch_time = now + fetch_interval`` for every page it holds, with the
    round's ``now``. ``fetched_at`` is the wall-clock time of the response instead, which is
    off the crawl's time line whenever ``now`` is given (``--now``, the replay web's clock):
    an age measured from it would be wrong by however far the logical clock is from the wall.
    """
    return F.col("fetch_time") - F.make_dt_interval(secs=F.col("fetch_interval").cast("double"))


def seconds_since(t: Column, now: datetime) -> Column:
    return F.greatest(F.lit(now).cast("timestamp").cast("double") - t.cast("double"), F.lit(0.0))


def next_interval(interval: Column, changed: Column, unchanged: Column, compared: Column,
                  check_count: Column, gap: Column, conf: Conf) -> Column:
    """New fetch interval (seconds, int) after a fetch whose outcome set changed/unchanged.

    ``compared``: the fetch was compared with a stored copy, counted in ``check_count`` (the
    compared checks including this one); ``gap``: seconds since that copy was taken."""
    kind = conf["schedule.kind"]
    current = interval.cast("double")
    if kind == "fixed":
        return F.lit(conf["schedule.default_interval"]).cast("int")
    if kind == "adaptive":
        new = (F.when(changed, current * (1.0 - conf["schedule.dec_rate"]))
               .when(unchanged, current * (1.0 + conf["schedule.inc_rate"]))
               .otherwise(current))
    elif kind == "change_rate":
        checks = F.greatest(check_count, F.lit(1)).cast("double")   # >= 1 where compared
        mean_gap = current + (gap.cast("double") - current) / checks
        new = F.when(compared, mean_gap).otherwise(current)
    else:
        raise ValueError(f"schedule.kind must be fixed, adaptive or change_rate, not {kind!r}")
    return bounded_interval(new, conf)


def bounded_interval(seconds: Column, conf: Conf) -> Column:
    """``seconds`` clamped to [schedule.min_interval, schedule.max_interval], as an int."""
    low, high = float(conf["schedule.min_interval"]), float(conf["schedule.max_interval"])
    return F.least(F.greatest(seconds.cast("double"), F.lit(low)), F.lit(high)).cast("int")
