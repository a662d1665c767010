"""Incremental export: what changed in the index since an export of an older crawldb version.

The older version's records are rebuilt from the crawldb at that version (Delta time travel,
``versionAsOf``, which needs no change data feed) with the same rules and settings, so they
are what the index holds if it was loaded from that export. Documents are compared by id
(``url``): a record is re-exported when it is new, its content or source page changed, or
its boost moved by more than ``export.min_change`` (a fraction of the old boost: scores shift a
little every round, and re-sending every page for that would defeat the increment). URLs
exported then and not now (gone, noindex, duplicate, canonical moved) become deletions.

Example::

    upserts, deletes = changes(current, previous, min_change=0.05)
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def changes(current: DataFrame, previous: DataFrame, min_change: float) -> tuple[DataFrame, DataFrame]:
    """(records to (re)index, one-column ``url`` DataFrame of documents to delete)."""
    old = previous.select("url", F.col("source_url").alias("_old_source"),
                          F.col("digest").alias("_old_digest"), F.col("boost").alias("_old_boost"))
    joined = current.join(old, on="url", how="left")
    changed = (F.col("_old_boost").isNull()
               | (F.col("source_url") != F.col("_old_source"))
               | ~F.col("digest").eqNullSafe(F.col("_old_digest"))
               | (F.abs(F.col("boost") - F.col("_old_boost")) > F.lit(min_change) * F.col("_old_boost")))
    upserts = joined.filter(changed).select(*current.columns)
    deletes = previous.select("url").join(current.select("url"), on="url", how="left_anti")
    return upserts, deletes
