"""Scale of one round: generate, updatedb and PageRank at crawldb sizes N (synthetic tables).

For each N the script builds, directly as Delta tables with Spark (no fetching):

* a crawldb of N rows (``crawlkit.crawldb.new_entries``): URLs ``http://h<i>.scale.test/p<j>``
  on N/100 hosts (``--pages-per-host``), random scores, all due;
* a link table of ~``--links-per-page`` x N rows (src -> pseudo-random dst among the N URLs);
* a segment of K fetched URLs (``--segment``, default 10^4): the fetch list generate wrote,
  a content row per URL (success, 200) and a parse row with ``--links-per-page`` outlinks,
  half to known URLs and half to new ones, written with ``crawlkit.storage.write_segment_part``.

and times the stages on them:

* ``generate``: ``run_generate`` (scan + per-host cap + exact top-K, write the fetch list
  partitioned by host, and the MERGE that locks the K URLs in the crawldb);
* ``updatedb``: ``run_updatedb`` on the segment (link MERGE + crawldb MERGE with inserts);
* ``pagerank``: the PageRank engines (``crawlkit.scoring.pagerank``) over the link table and
  the crawldb URLs with a fixed iteration count (tol = 0), timed end to end (collect/ids,
  iterations, ranks materialized). The driver engine is skipped above ``--driver-max-edges``.

Building the synthetic tables is timed too (``build``) but is not part of a round. The table
is printed as markdown, with the log-log slope (growth exponent) of each stage between the
smallest and largest N measured; ``--json`` appends one JSON line per N (partial results
survive a timeout).

Usage::

    .venv/bin/python scripts/bench/scale.py --sizes 1e5,1e6,1e7 [--segment 1e4] [--iterations 10]
        [--engines driver,distributed] [--workdir /tmp/crawlkit-scale] [--json results.jsonl]
    .venv/bin/python scripts/bench/scale.py --table results.jsonl     # the table from saved lines
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
from datetime import datetime, timedelta

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from pyspark.sql import functions as F  # noqa: E402

from crawlkit import schemas, storage  # noqa: E402
from crawlkit.conf import make_conf  # noqa: E402
from crawlkit.crawldb import new_entries  # noqa: E402
from crawlkit.scoring.pagerank import pagerank  # noqa: E402
from crawlkit.spark import get_spark  # noqa: E402
from crawlkit.stages.generate import run_generate  # noqa: E402
from crawlkit.stages.updatedb import run_updatedb  # noqa: E402

T0 = datetime(2026, 1, 1, 0, 0, 0)      # crawldb rows were created (and are due) then
NOW = datetime(2026, 1, 2, 0, 0, 0)     # the round's logical time
STAGES = ("generate", "updatedb", "pagerank_driver", "pagerank_distributed")


def url_of(idx, pages_per_host: int):
    """URL of page number ``idx`` (a Column of longs)."""
    host = F.concat(F.lit("h"), (idx / pages_per_host).cast("long").cast("string"), F.lit(".scale.test"))
    return F.concat(F.lit("http://"), host, F.lit("/p"), idx.cast("string")), host


def build_tables(spark, crawl_dir: str, n: int, args, conf) -> dict:
    """The synthetic crawldb and link table as Delta tables under ``crawl_dir``."""
    parts = max(4, n // 250_000)          # ~250k rows (~20-30 MB) per crawldb file
    ids = spark.range(0, n, numPartitions=parts)
    url, host = url_of(F.col("id"), args.pages_per_host)
    rows = ids.select(url.alias("url"), host.alias("host"), host.alias("domain"),
                      (F.col("id") % 7).cast("int").alias("depth"),
                      F.rand(seed=1).alias("score"))
    crawldb = new_entries(rows, conf, T0)
    db_path = storage.crawldb_path(crawl_dir)
    storage.ensure_table(spark, db_path, "crawldb", deletion_vectors=conf["db.deletion_vectors"])
    crawldb.write.format("delta").mode("append").save(db_path)

    k = args.links_per_page
    src_idx = F.floor(F.col("id") / k).cast("long")
    # a pseudo-random destination, never the source itself
    dst_idx = F.pmod(src_idx + 1 + F.pmod(F.xxhash64(F.col("id"), F.lit(7)), F.lit(n - 1)), F.lit(n))
    src, src_host = url_of(src_idx, args.pages_per_host)
    dst, dst_host = url_of(dst_idx, args.pages_per_host)
    links = spark.range(0, n * k, numPartitions=parts * 2).select(
        src.alias("src"), dst.alias("dst"), src_host.alias("src_host"), dst_host.alias("dst_host"),
        F.lit("anchor").alias("anchor"), F.lit(False).alias("nofollow"),
        F.lit(T0).alias("first_seen"), F.lit(T0).alias("last_seen")).dropDuplicates(["src", "dst"])
    link_path = storage.linkdb_path(crawl_dir)
    storage.ensure_table(spark, link_path, "links")
    schemas.conform(links, "links").write.format("delta").mode("append").save(link_path)
    return {"links": spark.read.format("delta").load(link_path).count()}


def write_segment(spark, crawl_dir: str, segment: str, n: int, args) -> None:
    """Content and parse rows for every URL of the segment's fetch list (all fetched fine)."""
    fl = storage.read_segment_part(spark, crawl_dir, segment, "fetchlist", "fetchlist")
    content = fl.select(
        "url", "host", F.lit("success").alias("fetch_status"), F.lit(200).alias("http_status"),
        F.lit(NOW - timedelta(hours=1)).alias("fetched_at"), F.lit(120).alias("elapsed_ms"),
        F.lit("text/html").alias("content_type"),
        F.create_map(F.lit("etag"), F.md5("url")).alias("headers"),
        F.lit(False).alias("truncated"), F.lit(segment).alias("segment"))
    storage.write_segment_part(content, crawl_dir, segment, "content", "content")
    k = args.links_per_page
    h = F.xxhash64("url")
    link = lambda j: F.struct(  # noqa: E731  even j: a known URL; odd j: a new one
        (url_of(F.pmod(h + j * 7919, F.lit(n)), args.pages_per_host)[0] if j % 2 == 0 else
         F.concat(F.col("url"), F.lit(f"/new{j}"))).alias("url"),
        F.lit(f"a{j}").alias("anchor"), F.lit(False).alias("nofollow"),
        F.create_map().cast("map<string,string>").alias("meta"))
    parse = fl.select(
        "url", F.lit("success").alias("parse_status"), F.lit("title").alias("title"),
        F.lit("text").alias("text"), F.md5(F.concat("url", F.lit("v2"))).alias("signature"),
        F.array(*[link(j) for j in range(k)]).alias("outlinks"),
        F.lit(False).alias("noindex"), F.lit(False).alias("nofollow"), F.lit(segment).alias("segment"))
    storage.write_segment_part(parse, crawl_dir, segment, "parse", "parse")


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def run_size(spark, n: int, args) -> dict:
    crawl_dir = os.path.join(args.workdir, f"n{n}")
    shutil.rmtree(crawl_dir, ignore_errors=True)
    conf = make_conf(crawl__dir="file://" + crawl_dir, crawl__topN=args.segment,
                     spark__shuffle_partitions=args.shuffle_partitions)
    spark.sparkContext.setCheckpointDir("file://" + os.path.join(crawl_dir, "_checkpoints"))
    row = {"N": n, "K": args.segment, "iterations": args.iterations}
    row["build"], info = timed(lambda: build_tables(spark, "file://" + crawl_dir, n, args, conf))
    row["L"] = info["links"]
    print(f"N={n:,}: built crawldb and {row['L']:,} links in {row['build']:.0f} s", flush=True)

    segment = "20260102000000"
    row["generate"], gen = timed(lambda: run_generate(spark, conf, NOW, segment))
    row["generated"] = gen["generated"]
    print(f"N={n:,}: generate {row['generate']:.1f} s ({gen})", flush=True)
    write_segment(spark, "file://" + crawl_dir, segment, n, args)
    row["updatedb"], upd = timed(lambda: run_updatedb(spark, conf, NOW, segment))
    row["new_urls"] = upd.get("new_urls")
    print(f"N={n:,}: updatedb {row['updatedb']:.1f} s (new urls {upd.get('new_urls')})", flush=True)

    db = spark.read.format("delta").load(storage.crawldb_path("file://" + crawl_dir))
    links = spark.read.format("delta").load(storage.linkdb_path("file://" + crawl_dir))
    nodes, edges = db.select("url"), links.select("src", "dst")
    for engine in args.engines.split(","):
        if engine == "driver" and row["L"] > args.driver_max_edges:
            row[f"pagerank_{engine}"] = None
            continue
        def solve():
            res = pagerank(spark, nodes, edges, tol=0.0, max_iter=args.iterations, engine=engine)
            res.ranks.agg(F.sum("rank")).first()   # materialize the result
            return res
        try:
            row[f"pagerank_{engine}"], res = timed(solve)
            print(f"N={n:,}: pagerank {engine} {row[f'pagerank_{engine}']:.1f} s "
                  f"({res.iterations} iterations)", flush=True)
        except Exception as exc:  # out of memory and the like: record, go on
            row[f"pagerank_{engine}"] = None
            row[f"error_{engine}"] = repr(exc)[:300]
            print(f"N={n:,}: pagerank {engine} failed: {exc!r}"[:400], flush=True)
    row["crawldb_bytes"] = du(os.path.join(crawl_dir, "crawldb"))
    row["linkdb_bytes"] = du(os.path.join(crawl_dir, "linkdb"))
    if not args.keep:
        shutil.rmtree(crawl_dir, ignore_errors=True)
    return row


def du(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log t against log N."""
    pts = [(math.log(n), math.log(t)) for n, t in points if t]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx


def fmt(v) -> str:
    return "–" if v is None else f"{v:,.1f}"


def table(rows: list[dict]) -> str:
    rows = sorted(rows, key=lambda r: r["N"])
    out = ["| N (crawldb rows) | L (links) | K (segment) | build s | generate s | updatedb s "
           "| PageRank driver s | PageRank distributed s | crawldb MB | linkdb MB |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['N']:,} | {r['L']:,} | {r['K']:,} | {fmt(r.get('build'))} | {fmt(r.get('generate'))} "
                   f"| {fmt(r.get('updatedb'))} | {fmt(r.get('pagerank_driver'))} "
                   f"| {fmt(r.get('pagerank_distributed'))} | {r.get('crawldb_bytes', 0) / 2**20:,.0f} "
                   f"| {r.get('linkdb_bytes', 0) / 2**20:,.0f} |")
    out.append("")
    exps = []
    for stage in STAGES:
        s = slope([(r["N"], r.get(stage)) for r in rows])
        exps.append(f"{stage} {s:.2f}" if s is not None else f"{stage} –")
    out.append("Growth exponents (log-log slope of time against N): " + ", ".join(exps))
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e5,1e6,1e7")
    ap.add_argument("--segment", type=float, default=1e4, help="K, URLs in the segment (= topN)")
    ap.add_argument("--links-per-page", type=int, default=5)
    ap.add_argument("--pages-per-host", type=int, default=100)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--engines", default="driver,distributed")
    ap.add_argument("--driver-max-edges", type=int, default=20_000_000)
    ap.add_argument("--shuffle-partitions", type=int, default=8)
    ap.add_argument("--driver-memory", default="6g")
    ap.add_argument("--workdir", default="/tmp/crawlkit-scale")
    ap.add_argument("--json", default="", help="append one JSON line per size to this file")
    ap.add_argument("--table", default="", help="print the table of a --json file and exit")
    ap.add_argument("--keep", action="store_true", help="keep the synthetic tables")
    args = ap.parse_args(argv)
    if args.table:
        with open(args.table) as f:
            print(table([json.loads(line) for line in f if line.strip()]))
        return 0
    args.segment = int(args.segment)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    conf = make_conf(spark__driver_memory=args.driver_memory,
                     spark__shuffle_partitions=args.shuffle_partitions,
                     crawl__dir="file://" + args.workdir)
    os.makedirs(args.workdir, exist_ok=True)
    spark = get_spark(conf)
    rows = []
    for n in sizes:
        row = run_size(spark, n, args)
        rows.append(row)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(row) + "\n")
    print(table(rows))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
