"""Builders for inline crawldb rows and segment outcomes (declared schemas, few columns given)."""
from __future__ import annotations

from datetime import datetime

from crawlkit import schemas

NOW = datetime(2024, 1, 1, 12, 0, 0)


def host_of(url: str) -> str:
    return url.split("/")[2]


def crawldb_dicts(rows):
    """Complete crawldb records (dicts) from partial ones (url required)."""
    out = []
    for r in rows:
        base = dict(url=r["url"], host=host_of(r["url"]), domain=host_of(r["url"]), status="unfetched",
                    fetch_time=NOW, retries=0, fetch_interval=3600, score=0.0, scores={},
                    opic_cash=0.0, opic_history=0.0, change_count=0, check_count=0, depth=1,
                    schema_version=schemas.version("crawldb"), metadata={})
        base.update(r)
        out.append(base)
    return out


def to_crawldb(spark, records):
    return schemas.frame(spark, "crawldb", records)


OUTCOME_SCHEMA = ("url string, fetch_status string, http_status int, fetched_at timestamp, "
                  "headers map<string,string>, redirect_url string, retry_after int, error string, "
                  "signature string, digest string, parse_status string, parse_error string")


def outcome_rows(spark, rows):
    """Outcome rows (what updatedb.outcomes() gives): dicts with url, fetch_status, signature, ..."""
    names = [c.split()[0] for c in OUTCOME_SCHEMA.split(", ")]
    data = []
    for r in rows:
        base = dict(http_status=200 if r["fetch_status"] == "success" else 304, headers={},
                    parse_status="success" if r["fetch_status"] == "success" else None)
        base.update(r)
        data.append(tuple(base.get(n) for n in names))
    return spark.createDataFrame(data, OUTCOME_SCHEMA)
