"""What the dedup stage costs as the crawldb grows: its first run (marking the duplicates)
and a rerun (nothing to change), against a scan of the same crawldb in the same run.

Every synthetic page is fetched and has a digest; one in 20 shares its text with another
page (``--share``). Prints a table and the growth exponent of each timing.

    .venv/bin/python scripts/bench/dedup.py --sizes 1e4,1e5,1e6
"""
from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pyspark.sql import functions as F  # noqa: E402

from crawlkit import storage  # noqa: E402
from crawlkit.conf import make_conf  # noqa: E402
from crawlkit.crawldb import new_entries  # noqa: E402
from crawlkit.spark import get_spark  # noqa: E402
from crawlkit.stages.dedup import run_dedup  # noqa: E402

NOW = datetime(2026, 12, 7)


def build(spark, crawl_dir: str, n: int, share: float, conf) -> None:
    ids = spark.range(0, n, numPartitions=max(4, n // 250_000))
    host = F.concat(F.lit("h"), (F.col("id") / 100).cast("long").cast("string"), F.lit(".bench.test"))
    rows = ids.select(F.concat(F.lit("http://"), host, F.lit("/p"), F.col("id").cast("string")).alias("url"),
                      host.alias("host"), host.alias("domain"), F.lit(1).alias("depth"),
                      F.rand(seed=1).alias("score"))
    originals = max(1, int(n * (1 - share)))      # pages from it on repeat an earlier page's text
    page = F.regexp_extract("url", r"/p(\d+)$", 1).cast("long")
    text_of = F.when(page < originals, page).otherwise(F.pmod(page * 7919, F.lit(originals)))
    crawldb = (new_entries(rows, conf, NOW).withColumn("status", F.lit("fetched"))
               .withColumn("digest", F.md5(text_of.cast("string"))))
    db_path = storage.crawldb_path(crawl_dir)
    storage.ensure_table(spark, db_path, "crawldb")
    crawldb.write.format("delta").mode("append").save(db_path)


def timed(fn):
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1e4,1e5,1e6")
    ap.add_argument("--share", type=float, default=0.05, help="share of pages that copy another's text")
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    rows = []
    for n in sizes:
        crawl_dir = tempfile.mkdtemp(prefix="dedup-bench-")
        conf = make_conf(crawl__dir=crawl_dir, spark__shuffle_partitions=max(4, n // 250_000))
        spark = get_spark(conf)
        build(spark, crawl_dir, n, args.share, conf)
        scan, _ = timed(lambda: storage.read_table(spark, storage.crawldb_path(crawl_dir), "crawldb")
                        .agg(F.countDistinct("digest")).first())
        first, marked = timed(lambda: run_dedup(spark, conf, "20261207000000"))
        again, unchanged = timed(lambda: run_dedup(spark, conf, "20261207000000"))
        rows.append((n, scan, first, marked["marked"], again, unchanged["marked"]))
        print(f"N={n:,}: scan {scan:.1f} s, dedup {first:.1f} s ({marked['marked']:,} marked), "
              f"rerun {again:.1f} s", flush=True)
        shutil.rmtree(crawl_dir, ignore_errors=True)
    print("\n| N | scan + distinct digests s | dedup s | marked | dedup / scan | rerun s |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, scan, first, marked, again, _ in rows:
        print(f"| {n:,} | {scan:.1f} | {first:.1f} | {marked:,} | {first / scan:.2f}× | {again:.1f} |")
    if len(rows) > 1:
        (n0, s0, f0, _, a0, _), (n1, s1, f1, _, a1, _) = rows[0], rows[-1]
        slope = lambda a, b: math.log(b / a) / math.log(n1 / n0)  # noqa: E731
        print(f"\ngrowth exponents ({n0:,}..{n1:,}): scan {slope(s0, s1):.2f}, dedup {slope(f0, f1):.2f}, "
              f"rerun {slope(a0, a1):.2f}")


if __name__ == "__main__":
    main()
