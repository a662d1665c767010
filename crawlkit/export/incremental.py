"""Incremental export: what changed in the index since an earlier export was loaded.

The baseline is what the index holds after loading that export (its ``state/`` part,
baseline.py), not a rebuild of an older crawldb version: a rebuild reads today's segments
(a page turned noindex under an unchanged signature would look noindex then too), loses pages
whose segments were deleted, and lets a boost drift without limit when every increment
compares two versions against ``export.min_change``. Documents are compared by id (``url``):
a record is re-exported when it is new, its content, title or source page changed, or its
boost moved by more than ``export.min_change`` of the boost the index holds (scores shift a
little every round, and re-sending every page for that would defeat the increment). URLs the
index holds and the export no longer has (gone, noindex, duplicate, canonical moved) become
deletions. The new state is the old one less the deletions, with the upserts replacing theirs.

Example::

    upserts, deletes = changes(current, previous, min_change=0.05)
    state = new_state(previous, upserts, deletes)
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def changes(current: DataFrame, previous: DataFrame, min_change: float) -> tuple[DataFrame, DataFrame]:
    """(records to (re)index, one-column ``url`` DataFrame of documents to delete)."""
    old = previous.select("url", F.col("source_url").alias("_old_source"), F.col("title").alias("_old_title"),
                          F.col("digest").alias("_old_digest"), F.col("boost").alias("_old_boost"))
    joined = current.join(old, on="url", how="left")
    changed = (F.col("_old_boost").isNull()
               | (F.col("source_url") != F.col("_old_source"))
               | ~F.col("title").eqNullSafe(F.col("_old_title"))
               | ~F.col("digest").eqNullSafe(F.col("_old_digest"))
               | (F.abs(F.col("boost") - F.col("_old_boost")) > F.lit(min_change) * F.col("_old_boost")))
    upserts = joined.filter(changed).select(*current.columns)
    deletes = previous.select("url").join(current.select("url"), on="url", how="left_anti")
    return upserts, deletes


def new_state(previous: DataFrame, upserts: DataFrame, deletes: DataFrame) -> DataFrame:
    """What the index holds after loading the increment: a page whose boost moved less than
    ``min_change`` keeps the boost it was sent with, so the next increment compares with that
    and small moves add up until they are sent."""
    replaced = upserts.select("url").unionByName(deletes.select("url"))
    kept = previous.join(replaced, on="url", how="left_anti").select(*previous.columns)
    return kept.unionByName(upserts.select(*previous.columns))
