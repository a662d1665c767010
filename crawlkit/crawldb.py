"""Building crawldb rows: the one place that knows a new URL's starting state."""
from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from crawlkit import schemas
from crawlkit.conf import Conf
from crawlkit.status import Status



def new_entries(df: DataFrame, conf: Conf, now: datetime) -> DataFrame:
    """Turn rows of (url, host, domain, depth[, score, metadata, opic_cash, fetch_interval])
    into complete crawldb rows for never-seen URLs: unfetched, due now, the default fetch
    interval unless the row brings its own (a sitemap's changefreq)."""
    def have(name: str, default: Column) -> Column:
        return F.col(name) if name in df.columns else default

    return schemas.conform(df.select(
        "url", "host", have("domain", F.lit(None).cast("string")).alias("domain"),
        F.lit(Status.UNFETCHED.value).alias("status"),
        F.lit(now).cast("timestamp").alias("fetch_time"),
        F.lit(0).alias("retries"),
        have("fetch_interval", F.lit(conf["schedule.default_interval"])).cast("int").alias("fetch_interval"),
        have("score", F.lit(0.0)).cast("double").alias("score"),
        F.create_map().cast("map<string,double>").alias("scores"),
        have("opic_cash", F.lit(0.0)).cast("double").alias("opic_cash"),
        F.lit(0.0).alias("opic_history"),
        F.lit(0).alias("change_count"),
        F.lit(0).alias("check_count"),
        have("depth", F.lit(0)).cast("int").alias("depth"),
        have("metadata", F.create_map().cast("map<string,string>")).alias("metadata"),
        F.lit(schemas.version("crawldb")).alias("schema_version"),
    ), "crawldb")
