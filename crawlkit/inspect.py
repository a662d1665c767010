"""Reading a crawl directory for people: counts by status, top pages, per-round timings.

All functions read the Delta tables (at any version) and return small Python structures;
the CLI and the demo format them.
"""
from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from crawlkit import storage
from crawlkit.stages.generate import VIRTUAL_PREFIX


def crawldb(spark: SparkSession, crawl_dir: str, version: int | None = None):
    db = storage.read_table(spark, storage.crawldb_path(crawl_dir), "crawldb", version)
    return db.filter(~F.col("url").startswith(VIRTUAL_PREFIX))


def counts_by_status(spark: SparkSession, crawl_dir: str, version: int | None = None) -> dict[str, int]:
    rows = crawldb(spark, crawl_dir, version).groupBy("status").count().collect()
    return dict(sorted((r["status"], r["count"]) for r in rows))


def top_pages(spark: SparkSession, crawl_dir: str, n: int = 10, version: int | None = None) -> list[dict]:
    rows = (crawldb(spark, crawl_dir, version).orderBy(F.col("score").desc(), "url").limit(n)
            .select("url", "status", "score", "scores").collect())
    return [r.asDict() for r in rows]


def format_summary(status_counts: dict[str, int], top: list[dict], stage_seconds: list[dict]) -> str:
    lines = ["pages by status:"]
    lines += [f"  {status:<14} {count:>8}" for status, count in status_counts.items()]
    lines.append("top pages by score:")
    lines += [f"  {p['score']:.6f}  {p['status']:<10} {p['url']}" for p in top]
    if stage_seconds:
        stages = list(stage_seconds[0])
        lines.append("seconds per stage:  round  " + "  ".join(f"{s:>8}" for s in stages))
        for i, seconds in enumerate(stage_seconds, start=1):
            lines.append(f"                    {i:>5}  " + "  ".join(f"{seconds.get(s, 0):8.1f}" for s in stages))
    return "\n".join(lines)
