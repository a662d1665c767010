"""``crawlkit stats``: what the crawldb holds, as one plain dict.

Scores are power-law distributed (PageRank, OPIC, backlinks), so the histogram has
logarithmic bins (``per_decade`` per power of ten) and a separate bin for scores <= 0;
fetch intervals are grouped into the bands an operator thinks in (hours, days, months).
"Due now" uses generate's own candidate filter, so it counts exactly the URLs the next
generate at that time could pick (before its per-host caps and top-N).

Cost: four small jobs over the crawldb (one grouped count by status, score bin and interval
band that every breakdown is summed from; distinct hosts and score quantiles; the top hosts;
the due URLs) and one over the linkdb: on small crawls job overhead, not the scan, dominates.
"""
from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from crawlkit.conf import Conf
from crawlkit.inspect.snapshot import Snapshot
from crawlkit.stages.generate import due_candidates
from crawlkit.status import Status

PER_DECADE = 4  # histogram bins per power of ten (the report draws finer ones)
QUANTILES = {"p10": 0.1, "p25": 0.25, "p50": 0.5, "p75": 0.75, "p90": 0.9, "p99": 0.99}
HOUR, DAY = 3600, 86400
INTERVAL_BANDS = [(0, "[0, 1h)"), (HOUR, "[1h, 6h)"), (6 * HOUR, "[6h, 1d)"), (DAY, "[1d, 7d)"),
                  (7 * DAY, "[7d, 30d)"), (30 * DAY, "[30d, 90d)"), (90 * DAY, "[90d, 365d)"),
                  (365 * DAY, "[365d, ...)")]
FETCHED = (Status.FETCHED.value, Status.NOT_MODIFIED.value)
FAILED = (Status.GONE.value, Status.RETRY.value)


def crawl_stats(snap: Snapshot, conf: Conf, now: datetime, top_hosts: int = 10,
                per_decade: int = PER_DECADE) -> dict:
    """Totals, counts by status, top hosts, score quantiles and histogram (also by status),
    fetch-interval bands and the URLs due at ``now``."""
    db = snap.crawldb
    cells = [r.asDict() for r in
             db.select("status", score_bin(F.col("score"), per_decade).alias("bin"), interval_band().alias("band"))
             .groupBy("status", "bin", "band").count().collect()]
    by_status = _sum(cells, "status")
    due = _counts(due_candidates(db, conf, now), "status")
    summary = db.agg(F.countDistinct("host").alias("hosts"), F.countDistinct("domain").alias("domains"),
                     F.min("score").alias("min"), F.max("score").alias("max"), F.mean("score").alias("mean"),
                     F.sum("score").alias("sum"),
                     F.percentile_approx("score", list(QUANTILES.values()), 10000).alias("q")).first()
    return {
        **snap.versions(),
        "totals": {"urls": sum(by_status.values()), "hosts": summary["hosts"], "domains": summary["domains"],
                   "fetched": sum(n for s, n in by_status.items() if s in FETCHED),
                   "links": snap.links.count(), "due": sum(due.values())},
        "by_status": by_status,
        "top_hosts": hosts(db, top_hosts),
        "score": {"min": summary["min"], **dict(zip(QUANTILES, summary["q"] or [None] * len(QUANTILES))),
                  "max": summary["max"], "mean": summary["mean"], "sum": summary["sum"]},
        "bins_per_decade": per_decade,
        "score_histogram": [{"bin": b, **bin_edges(b, per_decade), "count": n}
                            for b, n in _sum(cells, "bin", _bin_order).items()],
        "score_histogram_by_status": [{"bin": b, **bin_edges(b, per_decade), "status": s, "count": n} for (b, s), n in
                                      _sum(cells, ("bin", "status"), lambda k: (_bin_order(k[0]), k[1])).items()],
        "fetch_interval": [{"band": INTERVAL_BANDS[b][1], "min_seconds": INTERVAL_BANDS[b][0], "count": n}
                           for b, n in _sum(cells, "band").items()],
        "due": {"now": now, "by_status": due},
    }


def _sum(cells: list[dict], key: str | tuple[str, ...], order=None) -> dict:
    """Counts of the cells summed by one column (or a tuple of columns), in key order."""
    totals: dict = {}
    for c in cells:
        k = c[key] if isinstance(key, str) else tuple(c[k] for k in key)
        totals[k] = totals.get(k, 0) + c["count"]
    return dict(sorted(totals.items(), key=lambda kv: order(kv[0]) if order else kv[0]))


def _bin_order(index: int | None) -> float:
    return float("-inf") if index is None else index


def _counts(df: DataFrame, column: str) -> dict[str, int]:
    return dict(sorted((r[0], r[1]) for r in df.groupBy(column).count().collect()))


def hosts(db: DataFrame, n: int) -> list[dict]:
    """The ``n`` hosts with most URLs: URLs, fetched (incl. not modified), unfetched, failed
    (gone or retrying)."""
    rows = (db.groupBy("host")
            .agg(F.count("*").alias("urls"),
                 F.count(F.when(F.col("status").isin(*FETCHED), 1)).alias("fetched"),
                 F.count(F.when(F.col("status") == Status.UNFETCHED.value, 1)).alias("unfetched"),
                 F.count(F.when(F.col("status").isin(*FAILED), 1)).alias("failed"))
            .orderBy(F.desc("urls"), "host").limit(n)
            .select("host", "urls", "fetched", "unfetched", "failed").collect())
    return [r.asDict() for r in rows]


def score_bin(column: Column, per_decade: int) -> Column:
    """Log bin index of a score (the histograms' ``bin``): floor(log10(score) * per_decade);
    null for scores <= 0, and for infinite or NaN ones (which no stage should write, and whose
    bin would have no edges)."""
    finite = (column > 0) & (column < F.lit(float("inf"))) & ~F.isnan(column)
    return F.when(finite, F.floor(F.log10(column) * per_decade))


def bin_edges(index: int | None, per_decade: int) -> dict:
    """``{"low", "high"}`` of a bin; the bin of scores <= 0 is ``low`` None, ``high`` 0.0."""
    if index is None:
        return {"low": None, "high": 0.0}
    return {"low": 10 ** (index / per_decade), "high": 10 ** ((index + 1) / per_decade)}


def interval_band() -> Column:
    """Index into INTERVAL_BANDS of a row's fetch_interval."""
    band = F.lit(0)
    for i, (low, _) in enumerate(INTERVAL_BANDS[1:], start=1):
        band = F.when(F.col("fetch_interval") >= low, F.lit(i)).otherwise(band)
    return band
