"""The change-rate schedule's fetch budget: refetch where the expected freshness gain is highest.

Under ``schedule.kind = change_rate`` every candidate of a round's fetch list is ranked by
the freshness it is expected to gain, on one scale:

1. **refetches**: pages the crawler holds a copy of (status fetched or not_modified), not
   locked by another segment and fetched at least ``schedule.min_interval`` ago, by

       priority = score x (1 - exp(-rate x age)) x (1 - exp(-rate x T)) / (rate x T)

   ``age`` is the time since the copy was taken (the logical fetch time, see
   :func:`last_fetch_time`), ``rate`` the page's estimated change rate
   (:func:`crawlkit.schedule.estimated_change_rate`, Cho & Garcia-Molina, with the mean gap
   between the page's checks; a page with no compared fetch yet is assumed to change once per
   ``fetch_interval``; one never seen changing gets the Jeffreys posterior mean, see
   :func:`change_rate`) and ``T`` the revisit horizon (:func:`revisit_horizon`): how long a
   copy taken now must serve before the page comes up again. The product is the expected
   freshness *gained* over the next ``T`` by refetching now rather than not (docs/recrawl.md
   derives it): the probability that the copy is stale (``1 - exp(-rate x age)``) times the
   expected share of ``T`` that a new copy stays fresh. The second factor is what keeps the
   budget off pages that change faster than they can be revisited: their new copy is stale
   again long before the next visit (Cho & Garcia-Molina, *Synchronizing a database to
   improve freshness*: the freshness-optimal policy visits such pages less, not more). Their
   own ``fetch_time`` is not consulted: the gain decides when a page is worth refetching.
   ``schedule.budget`` > 0 caps the refetches of a round (best priority first).
2. **every other due candidate** of generate's ordinary rule (unfetched pages, retries, gone
   rechecks, ...): no current copy, so it is stale for sure and ``priority = score x (1 -
   exp(-rate x T)) / (rate x T)`` (:func:`new_copy_priority`). A held page therefore never
   outbids an equally important page the crawl lacks; when refetches had their own share of
   topN (the old default budget) a crawl whose held pages filled topN stopped discovering.

The best ``crawl.topN`` of both are taken, at most ``generate.max_per_host`` per host and
``generate.max_per_domain`` per domain. ``generate.policy`` interleave is not applied (the
gain is the order); hot_queue is refused.

The fetch list keeps the fetch-list schema; its ``score`` column is the page's ordering
score, so fetch and the reports see what they always see.
"""
from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from crawlkit import schemas
from crawlkit.conf import Conf
from crawlkit.schedule import estimated_change_rate, last_fetch_time, seconds_since
from crawlkit.status import Status

REFETCHABLE = (Status.FETCHED.value, Status.NOT_MODIFIED.value)


def change_rate(conf: Conf) -> Column:
    """Estimated changes per second of a crawldb row (prior 1/fetch_interval before any check).

    A page never seen changing gets ``0.5 / (checks x interval)``, the posterior mean of its
    rate after that many unchanged intervals under Jeffreys' prior, instead of the estimator's
    0: it falls as the evidence grows, so pages that never change fade from the budget but are
    still rechecked now and then. (A fixed floor of one change per ``max_interval`` kept 38% of
    the budget on never-changing pages in the month benchmark, docs/recrawl.md.)
    """
    interval = F.greatest(F.col("fetch_interval").cast("double"), F.lit(1.0))
    checks = F.col("check_count")
    estimated = estimated_change_rate(F.col("change_count"), checks, interval)
    unseen = F.lit(0.5) / (checks.cast("double") * interval)
    return F.when(checks > 0, F.greatest(estimated, unseen)).otherwise(F.lit(1.0) / interval)


def expected_staleness(rate: Column, now: datetime) -> Column:
    """P(the page changed since the copy was taken) for a Poisson process of ``rate``."""
    return F.lit(1.0) - F.exp(-rate * seconds_since(last_fetch_time(), now))


def expected_fresh_share(rate: Column, horizon: float) -> Column:
    """Expected share of the next ``horizon`` seconds that a copy taken now stays fresh:
    (1 - exp(-rate T)) / (rate T), the mean of exp(-rate t) over t in [0, T]."""
    x = rate * F.lit(float(horizon))
    return F.when(x < 1e-9, F.lit(1.0)).otherwise((F.lit(1.0) - F.exp(-x)) / x)


def refetch_priority(conf: Conf, now: datetime, horizon: float) -> Column:
    """Expected importance-weighted freshness gained over ``horizon`` by refetching now."""
    rate = change_rate(conf)
    return F.col("score") * expected_staleness(rate, now) * expected_fresh_share(rate, horizon)


def new_copy_priority(conf: Conf, horizon: float) -> Column:
    """The same gain for a page without a current copy (new, retried, gone): it is stale for
    sure, so the gain is its importance times the share of ``horizon`` a copy stays fresh."""
    return F.col("score") * expected_fresh_share(change_rate(conf), horizon)


def revisit_horizon(crawldb: DataFrame, conf: Conf, now: datetime, budget: int) -> float:
    """T, seconds until a page refetched now is likely to come up again: one pass of the
    budget over the held pages, ``(held pages / budget) x round length``.

    ``schedule.horizon`` > 0 fixes it. Otherwise the round length is taken from the crawldb:
    the time since the newest copy was taken (the previous round), at least
    ``schedule.min_interval`` (no page is refetched sooner); at least one round.
    """
    if conf["schedule.horizon"] > 0:
        return float(conf["schedule.horizon"])
    from crawlkit.stages.generate import VIRTUAL_PREFIX
    held = crawldb.filter(F.col("status").isin(*REFETCHABLE) & ~F.col("url").startswith(VIRTUAL_PREFIX))
    row = held.agg(F.count(F.lit(1)).alias("n"),
                   F.min(seconds_since(last_fetch_time(), now)).alias("since_newest")).first()
    low = float(conf["schedule.min_interval"])
    if not row or not row["n"] or row["since_newest"] is None:
        return low
    round_length = max(float(row["since_newest"]), low)
    passes = max(1.0, row["n"] / budget) if budget > 0 else 1.0
    return passes * round_length


def refetch_candidates(crawldb: DataFrame, conf: Conf, now: datetime, horizon: float | None = None) -> DataFrame:
    """Held pages that may be refetched at ``now``, with their ``priority`` (over ``horizon``
    seconds; default ``schedule.min_interval``)."""
    lock_expired = F.col("generate_time") + F.make_dt_interval(secs=F.lit(conf["generate.lock_timeout"])) <= F.lit(now)
    oldest = F.lit(now) - F.make_dt_interval(secs=F.lit(float(conf["schedule.min_interval"])))
    from crawlkit.stages.generate import VIRTUAL_PREFIX
    horizon = float(conf["schedule.min_interval"]) if horizon is None else horizon
    return (crawldb.filter(
        F.col("status").isin(*REFETCHABLE)
        & F.col("fetch_time").isNotNull()
        & (last_fetch_time() <= oldest)
        & ~F.col("url").startswith(VIRTUAL_PREFIX)
        & (F.col("score") >= F.lit(conf["generate.min_score"]))
        & (F.col("generated_segment").isNull() | lock_expired))
        .withColumn("priority", refetch_priority(conf, now, horizon)))


def generate_change_rate(crawldb: DataFrame, conf: Conf, now: datetime, segment: str) -> DataFrame:
    """The fetch list under the change-rate budget (see the module docstring)."""
    from crawlkit.stages.generate import cap_per_group, due_candidates

    top_n, budget = conf["crawl.topN"], conf["schedule.budget"]
    horizon = revisit_horizon(crawldb, conf, now, budget or top_n)
    best = [F.col("priority").desc(), F.col("url")]
    refetch = refetch_candidates(crawldb, conf, now, horizon)
    if budget > 0:
        refetch = cap_per_group(refetch, "host", conf["generate.max_per_host"], order=best)
        refetch = refetch.orderBy(*best).limit(budget)
    others = (due_candidates(crawldb, conf, now).filter(~F.col("status").isin(*REFETCHABLE))
              .withColumn("priority", new_copy_priority(conf, horizon)))
    fetchlist = refetch.unionByName(others)
    for column, cap in (("host", conf["generate.max_per_host"]), ("domain", conf["generate.max_per_domain"])):
        fetchlist = cap_per_group(fetchlist, column, cap, order=best)
    fetchlist = fetchlist.orderBy(*best)
    if top_n > 0:
        fetchlist = fetchlist.limit(top_n)
    return schemas.conform(fetchlist.drop("priority").withColumn("segment", F.lit(segment)), "fetchlist")
