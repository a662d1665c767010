"""The crawl report: one static, self-contained HTML page for a crawl directory.

Timeline of rounds (fetch outcomes and stage durations per segment), score distributions,
top pages, hosts with errors, and the ordering-evaluation curves when ``crawlkit evaluate``
has written them. The data is gathered by :mod:`crawlkit.report.data` and drawn by
:mod:`crawlkit.report.page`, so the page can be rendered from a saved dict without Spark.

Example::

    path = write_report(spark, "crawl", conf, now)          # crawl/report.html
"""
from __future__ import annotations

from datetime import datetime

from pyspark.sql import SparkSession

from crawlkit import storage
from crawlkit.conf import Conf
from crawlkit.report.data import collect
from crawlkit.report.page import render

__all__ = ["collect", "render", "write_report"]


def write_report(spark: SparkSession, crawl_dir: str, conf: Conf, now: datetime, out: str | None = None,
                 version: int | None = None) -> dict:
    """Write the report (default ``<crawl_dir>/report.html``; any Hadoop path or URI) and
    return where, how big, and the versions it shows."""
    data = collect(spark, crawl_dir, conf, now, version)
    html = render(data)
    out = out or storage.join(crawl_dir, "report.html")
    storage.write_text(spark, out, html)
    return {"report": out, "bytes": len(html.encode()), "rounds": len(data["rounds"]),
            "crawldb_version": data["crawldb_version"], "linkdb_version": data["linkdb_version"]}
