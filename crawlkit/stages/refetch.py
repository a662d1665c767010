"""The change-rate schedule's fetch budget: refetch where the expected freshness gain is highest.

Under ``schedule.kind = change_rate`` a round's fetch list is built in two parts:

1. **refetches**: pages the crawler holds a copy of (status fetched or not_modified), not
   locked by another segment and fetched at least ``schedule.min_interval`` ago, ranked by

       priority = score x (1 - exp(-rate x age)) x (1 - exp(-rate x T)) / (rate x T)

   ``age`` is the time since the copy was taken (the logical fetch time, see
   :func:`last_fetch_time`), ``rate`` the page's estimated change rate
   (:func:`crawlkit.schedule.estimated_change_rate`, Cho & Garcia-Molina; a page with no
   compared fetch yet is assumed to change once per ``fetch_interval``; one never seen
   changing gets the Jeffreys posterior mean, see :func:`change_rate`) and ``T`` the revisit horizon
   (:func:`revisit_horizon`): how long a copy taken now must serve before the page comes up
   again. The product is the expected freshness *gained* over the next ``T`` by refetching
   now rather than not (docs/recrawl.md derives it): the probability that the copy is stale
   (``1 - exp(-rate x age)``) times the expected share of ``T`` that a new copy stays fresh.
   The second factor is what keeps the budget off pages that change faster than they can be
   revisited: their new copy is stale again long before the next visit (Cho &
   Garcia-Molina, *Synchronizing a database to improve freshness*: the freshness-optimal
   policy visits such pages less, not more). The top ``schedule.budget`` (0 =
   ``crawl.topN``) are taken, at most ``generate.max_per_host`` per host (best priority
   first); the rest of topN then fills each host only up to what its refetches left of that
   cap (and of ``generate.max_per_domain``). Their own ``fetch_time`` is not consulted: the
   budget decides when a page is worth refetching.
2. **the rest of topN**: every other due candidate of generate's ordinary rule (unfetched
   pages, retries, gone rechecks, ...), best ordering score first.

The fetch list keeps the fetch-list schema; its ``score`` column is the page's ordering
score, so fetch and the reports see what they always see.
"""
from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from crawlkit import schemas
from crawlkit.conf import Conf
from crawlkit.schedule import estimated_change_rate
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


def last_fetch_time() -> Column:
    """When the crawler took its copy, on the crawl's logical clock: ``fetch_time - fetch_interval``.

    updatedb sets ``fetch_time = now + fetch_interval`` for every page it holds, with the
    round's ``now``. ``fetched_at`` is the wall-clock time of the response instead, which is
    off the crawl's time line whenever ``now`` is given (``--now``, the replay web's clock):
    an age measured from it would be wrong by however far the logical clock is from the wall.
    """
    return F.col("fetch_time") - F.make_dt_interval(secs=F.col("fetch_interval").cast("double"))


def _seconds_since(t: Column, now: datetime) -> Column:
    return F.greatest(F.lit(now).cast("timestamp").cast("double") - t.cast("double"), F.lit(0.0))


def expected_staleness(rate: Column, now: datetime) -> Column:
    """P(the page changed since the copy was taken) for a Poisson process of ``rate``."""
    return F.lit(1.0) - F.exp(-rate * _seconds_since(last_fetch_time(), now))


def expected_fresh_share(rate: Column, horizon: float) -> Column:
    """Expected share of the next ``horizon`` seconds that a copy taken now stays fresh:
    (1 - exp(-rate T)) / (rate T), the mean of exp(-rate t) over t in [0, T]."""
    x = rate * F.lit(float(horizon))
    return F.when(x < 1e-9, F.lit(1.0)).otherwise((F.lit(1.0) - F.exp(-x)) / x)


def refetch_priority(conf: Conf, now: datetime, horizon: float) -> Column:
    """Expected importance-weighted freshness gained over ``horizon`` by refetching now."""
    rate = change_rate(conf)
    return F.col("score") * expected_staleness(rate, now) * expected_fresh_share(rate, horizon)


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
                   F.min(_seconds_since(last_fetch_time(), now)).alias("since_newest")).first()
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


def _with_taken(others: DataFrame, refetch: DataFrame, column: str) -> DataFrame:
    """``others`` with ``_taken``: how many refetches its host (or domain) already has, so the
    per-host cap holds for the whole fetch list, not for each of its two parts."""
    taken = refetch.groupBy(column).agg(F.count(F.lit(1)).alias("_taken"))
    return (others.join(F.broadcast(taken), on=column, how="left")
            .withColumn("_taken", F.coalesce(F.col("_taken"), F.lit(0))))


def generate_change_rate(crawldb: DataFrame, conf: Conf, now: datetime, segment: str) -> DataFrame:
    """The fetch list under the change-rate budget (see the module docstring)."""
    from crawlkit.stages.generate import cap_per_group, due_candidates, order_key

    top_n = conf["crawl.topN"]
    budget = conf["schedule.budget"] or top_n
    if top_n > 0 and budget > 0:
        budget = min(budget, top_n)
    refetch = refetch_candidates(crawldb, conf, now, revisit_horizon(crawldb, conf, now, budget))
    caps = (("host", conf["generate.max_per_host"]), ("domain", conf["generate.max_per_domain"]))
    best = [F.col("priority").desc(), F.col("url")]
    for column, cap in caps:
        refetch = cap_per_group(refetch, column, cap, order=best)
    refetch = refetch.orderBy(*best)
    if budget > 0:
        refetch = refetch.limit(budget)
    refetch = refetch.drop("priority").localCheckpoint(eager=True)
    taken = refetch.count()

    others = due_candidates(crawldb, conf, now).filter(~F.col("status").isin(*REFETCHABLE))
    others = others.join(refetch.select("url"), on="url", how="left_anti")
    for column, cap in caps:
        if cap > 0:
            others = cap_per_group(_with_taken(others, refetch, column), column, cap,
                                   taken="_taken").drop("_taken")
    others = others.orderBy(*order_key(conf))
    if top_n > 0:
        others = others.limit(max(0, top_n - taken))
    fetchlist = refetch.unionByName(others, allowMissingColumns=True)
    return schemas.conform(fetchlist.withColumn("segment", F.lit(segment)), "fetchlist")
