"""Boost transforms: a page's score turned into a static index boost that keeps its scale.

Raw link-analysis scores drift from round to round though a page's standing does not:
PageRank sums to 1 over the crawldb, so every page's value shrinks as the crawldb grows, and
OPIC's cash history only grows. Each transform is therefore computed against the current
score distribution of the exported pages, and the boosts of a page whose standing is
unchanged stay put. With ``s`` the score (``export.score``, clamped to >= 0), ``m`` the
median of the positive scores (1 when there are none), ``p = export.power`` and
``[lo, hi] = [export.range_min, export.range_max]``:

==========  ===========================================  ===========================
transform   boost                                        scale
==========  ===========================================  ===========================
raw         s                                            drifts with the scorer
power       (s / m) ** p                                 median page 1
log         log2(1 + s / m)                              median page 1, score 0 -> 0
percentile  lo + (hi - lo) * percent_rank(s)             [lo, hi], exact ranks
minmax      lo + (hi - lo) * (s - min) / (max - min)     [lo, hi] (lo if max = min)
==========  ===========================================  ===========================

``power`` is Nutch's ``indexer.score.power`` applied to the median-normalised score.
Every boost is then clamped to [:data:`MIN_BOOST`, :data:`MAX_BOOST`]: Lucene's FeatureField,
behind Elasticsearch's ``rank_feature`` and Solr's ``RankField``, takes only positive, finite
float values (a huge score ratio overflows ``power`` and ``log`` to infinity).

Example::

    boosted, dist = with_boost(records, conf)
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from crawlkit.conf import Conf, ConfError

TRANSFORMS = ("raw", "power", "log", "percentile", "minmax")
MIN_BOOST = 1e-12
# Java's Float.MAX_VALUE (printed 3.4028235E38): FeatureField stores a float, and a larger
# double would become Infinity there, which it refuses.
MAX_BOOST = 3.4028234663852886e38
# percentile_approx accuracy for the median: rank error at most 1/10000 of the page count.
MEDIAN_ACCURACY = 10000


@dataclass(frozen=True)
class Distribution:
    """The score distribution a boost is computed against (written to the export manifest)."""
    count: int
    min: float
    max: float
    median: float

    def as_dict(self) -> dict:
        return asdict(self)


def distribution(records: DataFrame) -> Distribution:
    """Count, min and max of the scores and the median of the positive ones, in one pass."""
    row = records.agg(
        F.count("*").alias("count"), F.min("score").alias("min"), F.max("score").alias("max"),
        F.percentile_approx(F.when(F.col("score") > 0, F.col("score")), 0.5, MEDIAN_ACCURACY).alias("median"),
    ).first()
    return Distribution(count=row["count"], min=row["min"] or 0.0, max=row["max"] or 0.0,
                        median=row["median"] or 1.0)


def with_percent_rank(df: DataFrame, column: str, name: str, count: int, buckets: int) -> DataFrame:
    """Add ``name``: the exact ``percent_rank`` of ``column`` over all ``count`` rows of ``df``.

    ``F.percent_rank().over(Window.orderBy(column))`` sorts every row in one task. Here rows
    go to value-range buckets cut at approximate quantiles (equal values share a bucket, so
    every row of a lower bucket has a smaller value), each bucket ranks its rows in parallel,
    and the sizes of the lower buckets are added: the same ``(rank - 1) / (count - 1)``.

    Example::

        with_percent_rank(records, "score", "pr", records.count(), buckets=8)
    """
    if count <= 1:
        return df.withColumn(name, F.lit(0.0))
    quantiles = [i / buckets for i in range(1, buckets)]
    cuts = sorted(set(df.approxQuantile(column, quantiles, 1 / (4 * buckets)))) if quantiles else []
    bucket = (F.size(F.filter(F.array(*[F.lit(c) for c in cuts]), lambda cut: cut < F.col(column)))
              if cuts else F.lit(0))
    df = df.withColumn("_bucket", bucket)
    sizes = {r["_bucket"]: r["count"] for r in df.groupBy("_bucket").count().collect()}
    below, total = [], 0
    for b in range(len(cuts) + 1):
        below.append(total)
        total += sizes.get(b, 0)
    smaller = F.element_at(F.array(*[F.lit(n) for n in below]), F.col("_bucket") + 1) \
        + F.rank().over(Window.partitionBy("_bucket").orderBy(column)) - 1
    return df.withColumn(name, smaller / F.lit(count - 1)).drop("_bucket")


def with_boost(records: DataFrame, conf: Conf, buckets: int = 8) -> tuple[DataFrame, Distribution]:
    """The records with a ``boost`` column, and the distribution it was computed against.
    ``buckets``: parallelism of the exact percentile (about the shuffle partitions)."""
    kind = conf["export.boost"]
    if kind not in TRANSFORMS:
        raise ConfError(f"export.boost must be one of {', '.join(TRANSFORMS)}, got {kind!r}")
    dist = distribution(records)
    s, normalised = F.col("score"), F.col("score") / F.lit(dist.median)
    if kind == "raw":
        boost = s
    elif kind == "power":
        boost = F.pow(normalised, F.lit(conf["export.power"]))
    elif kind == "log":
        boost = F.log2(F.lit(1.0) + normalised)
    else:
        if kind == "percentile":
            records = with_percent_rank(records, "score", "_fraction", dist.count, buckets)
            fraction = F.col("_fraction")
        else:
            span = dist.max - dist.min
            fraction = (s - F.lit(dist.min)) / F.lit(span) if span > 0 else F.lit(0.0)
        lo, hi = conf["export.range_min"], conf["export.range_max"]
        boost = F.lit(lo) + F.lit(hi - lo) * fraction
    boosted = records.withColumn("boost", clamped(boost))
    return boosted.drop("_fraction"), dist


def clamped(boost: Column) -> Column:
    """The boost within [MIN_BOOST, MAX_BOOST]; NaN (Spark orders it above every number,
    so ``least`` would make it the maximum) becomes MIN_BOOST."""
    bounded = F.least(F.greatest(boost, F.lit(MIN_BOOST)), F.lit(MAX_BOOST))
    return F.when(F.isnan(boost), F.lit(MIN_BOOST)).otherwise(bounded)
