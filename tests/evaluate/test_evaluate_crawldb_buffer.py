"""Reading the crawler's own limited-buffer evictions from the Delta crawldb (Spark)."""
from __future__ import annotations

from datetime import datetime

import pytest

from crawlkit import storage
from crawlkit.evaluate import read_evicted
from sparkhelpers import crawldb_rows


@pytest.mark.slow  # Spark and Delta; every other evaluation test runs without Spark
def test_read_evicted(spark, tmp_path):
    statuses = {"a": "fetched", "b": "evicted", "c": "evicted", "d": "not_modified", "g": "unfetched"}
    rows = [{"url": f"http://t.test/{n}.html", "host": "t.test", "status": s} for n, s in statuses.items()]
    crawl = str(tmp_path / "crawl")
    crawldb_rows(spark, rows, datetime(2024, 1, 1)).write.format("delta").save(storage.crawldb_path(crawl))
    assert read_evicted(spark, crawl) == {"http://t.test/b.html", "http://t.test/c.html"}
