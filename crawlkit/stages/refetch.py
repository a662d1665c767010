"""The change-rate schedule's fetch budget: refetch where importance x expected staleness is highest.

Under ``schedule.kind = change_rate`` a round's fetch list is built in two parts:

1. **refetches**: pages the crawler holds a copy of (status fetched or not_modified), not
   locked by another segment and fetched at least ``schedule.min_interval`` ago, ranked by

       priority = score x (1 - exp(-rate x age))

   where ``age = now - fetched_at`` and ``rate`` is the page's estimated change rate
   (:func:`crawlkit.schedule.estimated_change_rate`, Cho & Garcia-Molina; a page with no
   compared fetch yet is assumed to change once per ``fetch_interval``; the rate is floored
   at ``1 / max_interval`` as in the schedule). ``1 - exp(-rate x age)`` is the probability
   that a Poisson process of that rate changed the page since the crawler's copy was taken:
   the expected staleness. The top ``schedule.budget`` of them (0 = ``crawl.topN``) are
   taken, at most ``generate.max_per_host`` per host (best priority first). Their own
   ``fetch_time`` is not consulted: the budget decides when a page is worth refetching.
2. **the rest of topN**: every other due candidate of generate's ordinary rule (unfetched
   pages, retries, gone rechecks, ...), best ordering score first.

The fetch list keeps the fetch-list schema; its ``score`` column is the page's ordering
score, so fetch and the reports see what they always see.
"""
from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from crawlkit import schemas
from crawlkit.conf import Conf
from crawlkit.schedule import estimated_change_rate
from crawlkit.status import Status

REFETCHABLE = (Status.FETCHED.value, Status.NOT_MODIFIED.value)


def change_rate(conf: Conf) -> Column:
    """Estimated changes per second of a crawldb row (prior 1/fetch_interval before any check)."""
    high = float(conf["schedule.max_interval"])
    interval = F.greatest(F.col("fetch_interval").cast("double"), F.lit(1.0))
    estimated = estimated_change_rate(F.col("change_count"), F.col("check_count"), interval)
    rate = F.when(F.col("check_count") > 0, estimated).otherwise(F.lit(1.0) / interval)
    return F.greatest(rate, F.lit(1.0 / high))


def expected_staleness(rate: Column, now: datetime) -> Column:
    """P(the page changed since fetched_at) for a Poisson process of ``rate``."""
    age = F.greatest(F.lit(now).cast("timestamp").cast("long") - F.col("fetched_at").cast("long"), F.lit(0))
    return F.lit(1.0) - F.exp(-rate * age.cast("double"))


def refetch_priority(conf: Conf, now: datetime) -> Column:
    return F.col("score") * expected_staleness(change_rate(conf), now)


def refetch_candidates(crawldb: DataFrame, conf: Conf, now: datetime) -> DataFrame:
    """Held pages that may be refetched at ``now``, with their ``priority``."""
    lock_expired = F.col("generate_time") + F.make_dt_interval(secs=F.lit(conf["generate.lock_timeout"])) <= F.lit(now)
    oldest = F.lit(now) - F.make_dt_interval(secs=F.lit(float(conf["schedule.min_interval"])))
    from crawlkit.stages.generate import VIRTUAL_PREFIX
    return (crawldb.filter(
        F.col("status").isin(*REFETCHABLE)
        & F.col("fetched_at").isNotNull()
        & (F.col("fetched_at") <= oldest)
        & ~F.col("url").startswith(VIRTUAL_PREFIX)
        & (F.col("score") >= F.lit(conf["generate.min_score"]))
        & (F.col("generated_segment").isNull() | lock_expired))
        .withColumn("priority", refetch_priority(conf, now)))


def _cap(df: DataFrame, column: str, cap: int) -> DataFrame:
    if cap <= 0:
        return df
    rank = Window.partitionBy(column).orderBy(F.col("priority").desc(), F.col("url"))
    return df.withColumn("_rank", F.row_number().over(rank)).filter(F.col("_rank") <= cap).drop("_rank")


def generate_change_rate(crawldb: DataFrame, conf: Conf, now: datetime, segment: str) -> DataFrame:
    """The fetch list under the change-rate budget (see the module docstring)."""
    from crawlkit.stages.generate import cap_per_group, due_candidates, order_key

    top_n = conf["crawl.topN"]
    budget = conf["schedule.budget"] or top_n
    if top_n > 0 and budget > 0:
        budget = min(budget, top_n)
    refetch = refetch_candidates(crawldb, conf, now)
    refetch = _cap(_cap(refetch, "host", conf["generate.max_per_host"]), "domain", conf["generate.max_per_domain"])
    refetch = refetch.orderBy(F.col("priority").desc(), F.col("url"))
    if budget > 0:
        refetch = refetch.limit(budget)
    refetch = refetch.drop("priority").localCheckpoint(eager=True)
    taken = refetch.count()

    others = due_candidates(crawldb, conf, now).filter(~F.col("status").isin(*REFETCHABLE))
    others = others.join(refetch.select("url"), on="url", how="left_anti")
    others = cap_per_group(others, "host", conf["generate.max_per_host"])
    others = cap_per_group(others, "domain", conf["generate.max_per_domain"])
    others = others.orderBy(*order_key(conf))
    if top_n > 0:
        others = others.limit(max(0, top_n - taken))
    fetchlist = refetch.unionByName(others, allowMissingColumns=True)
    return schemas.conform(fetchlist.withColumn("segment", F.lit(segment)), "fetchlist")
