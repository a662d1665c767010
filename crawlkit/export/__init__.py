"""Export: crawl scores as static search-index boosts (Parquet, JSON Lines, Solr, Elasticsearch).

One record per indexable page (pages.py), a boost that keeps its scale across rounds
(boost.py), optionally only what changed since what an earlier export sent (incremental.py,
baseline.py), written by Spark as files for a bulk loader with the target's schema (formats.py,
job.py).
docs/export.md has the formats, formulas and loading commands.

Example::

    from crawlkit.export import run_export
    counters = run_export(spark, make_conf(crawl__dir="crawl", export__format="solr"))
"""
from crawlkit.export.job import run_export

__all__ = ["run_export"]
