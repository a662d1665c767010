"""Small builders for inline crawldb tables."""
from datetime import datetime

from crawlkit import schemas
from crawlkit.conf import make_conf
from crawlkit.crawldb import new_entries


def crawldb_rows(spark, rows, now: datetime, **overrides):
    """rows: dicts with url, host and any crawldb column; the rest take new-URL defaults."""
    base = spark.createDataFrame([(r["url"], r["host"]) for r in rows], "url string, host string")
    df = new_entries(base, make_conf(), now)
    records = {r["url"]: r for r in rows}
    out = []
    for row in df.collect():
        record = row.asDict()
        record.update({k: v for k, v in records[row.url].items()})
        out.append(record)
    return schemas.frame(spark, "crawldb", out)
