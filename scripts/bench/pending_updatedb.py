"""updatedb as an append to a pending table, against today's updatedb and a plain append, in one run.

Issue #12's updatedb target (10^7-row crawldb, 10^5-URL segment, within 2x of writing the
segment's rows) is missed, and the commit that applies a segment is already ~1.8-2x the
append of its rows (``scale.py``'s ``overwrite_floor``). This measures the design that drops
that commit: updatedb appends the segment's new crawldb rows (the locked rows transitioned)
and its link targets with their depth, unchecked against the crawldb, to a *pending* table,
and a later MERGE folds them in (the new-URL check, the per-host cap and the domains move
there). A crawl would fold them in its scoring job's MERGE, which rewrites every row anyway,
and its readers would see the crawldb with the pending rows laid over it. Neither is built:
this times the pending append (with the link append as updatedb makes it, timed apart) and
the fold as a MERGE of its own, and is an experiment, not a stage of the crawler.

On one synthetic crawl (``scale.py``'s tables and segments), rounds alternate: generate a
``--segment`` of K URLs, write its content and parse, then ``run_updatedb`` (even rounds) or
the pending append and its fold (odd rounds); after either, the segment's crawldb rows and
link rows, computed beforehand, are appended to two tables of their own (the baselines). One
JSON line per round, then the medians.

    .venv/bin/python scripts/bench/pending_updatedb.py --size 1e7 --segment 1e5 --pairs 3
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from datetime import timedelta
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(__file__))

from delta.tables import DeltaTable  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from crawlkit import linkdb, schemas, storage  # noqa: E402
from crawlkit.conf import make_conf  # noqa: E402
from crawlkit.spark import get_spark  # noqa: E402
from crawlkit.stages.generate import locked_by, run_generate  # noqa: E402
from crawlkit.stages.transition import outcomes  # noqa: E402
from crawlkit.stages.updatedb import (_entries, _unknown, link_targets, refreshed_sources,  # noqa: E402
                                      replaced_rows, run_updatedb, segment_links, small)
from scale import NOW, bench_conf, build_tables, segment_rows, timed, write_segment  # noqa: E402


def pending_updatedb(spark, conf, now, segment: str, pending_path: str) -> dict:
    """The link append as updatedb makes it, then the segment's transitioned rows and its link
    targets (url, depth) appended to ``pending_path`` in one commit tagged ``updatedb:<segment>``.
    Returns the seconds of each part."""
    uri, k, bound = conf["crawl.dir"], conf["crawl.topN"], conf["db.broadcast_rows"]
    content = storage.read_segment_part(spark, uri, segment, "content", "content")
    parsed = storage.read_segment_part(spark, uri, segment, "parse", "parse")
    links = segment_links(content, parsed, conf, now, redirects=False, redirected_pages=False)
    link_s, _ = timed(lambda: linkdb.append_segment(spark, storage.linkdb_path(uri), links,
                                                    refreshed_sources(content), now, f"linkdb:{segment}"))

    def append_pending():
        crawldb = DeltaTable.forPath(spark, storage.crawldb_path(uri)).toDF()
        locked = crawldb.filter(locked_by(segment)).localCheckpoint(eager=True)
        updated = replaced_rows(locked, outcomes(content, parsed), k, bound, conf, now)
        targets = link_targets(links, locked, content.select("url"), k, bound)
        rows = (updated.withColumn("pending", F.lit("update"))
                .unionByName(targets.select("url", F.col("depth").alias("link_depth"),
                                            F.lit("target").alias("pending")), allowMissingColumns=True)
                .withColumn("pending_segment", F.lit(segment)))
        with storage.commit_tag(spark, f"updatedb:{segment}"):
            rows.write.format("delta").mode("append").option("mergeSchema", "true").save(pending_path)
    pending_s, _ = timed(append_pending)
    return {"links_s": link_s, "pending_s": pending_s}


def fold(spark, conf, now, segment: str, pending_path: str) -> dict:
    """``segment``'s pending rows into the crawldb in one MERGE: its rows updated by URL, its
    link targets that the crawldb lacks inserted (updatedb's new-URL check, host cap, domains).
    Returns the rows updated and inserted, to set beside updatedb's counts."""
    uri, bound = conf["crawl.dir"], conf["db.broadcast_rows"]
    db_path = storage.crawldb_path(uri)
    pending = spark.read.format("delta").load(pending_path).filter(F.col("pending_segment") == segment)
    crawldb = DeltaTable.forPath(spark, db_path).toDF()
    targets = pending.filter("pending = 'target'").select("url", F.col("link_depth").alias("depth")) \
        .localCheckpoint(eager=True)
    fresh = _entries(_unknown(targets, crawldb, targets.count(), bound), crawldb, conf, now)
    source = schemas.conform(pending.filter("pending = 'update'"), "crawldb").unionByName(fresh) \
        .localCheckpoint(eager=True)
    with storage.merge_source_materialized(spark):
        merged = (DeltaTable.forPath(spark, db_path).alias("db")
                  .merge(small(source, source.count(), bound).alias("s"), "db.url = s.url")
                  .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute().first())
    return {"updated": merged["num_updated_rows"], "new_urls": merged["num_inserted_rows"]}


def one_round(spark, conf, args, i: int, uri: str) -> dict:
    """Round ``i``: generate a segment and write its content and parse; apply it by updatedb
    (even ``i``) or by the pending append and its fold (odd); then the two baseline appends."""
    now = NOW + timedelta(days=i)
    segment = now.strftime("%Y%m%d%H%M%S")
    generate_s, _ = timed(lambda: run_generate(spark, conf, now, segment))
    write_segment(spark, uri, segment, args.size, args)
    rows, count, link_rows, link_count = segment_rows(spark, conf, now, segment)
    row = {"round": i, "generate_s": generate_s, "crawldb_rows": count, "link_rows": link_count}
    if i % 2 == 0:
        row["way"] = "updatedb"
        row["updatedb_s"], counters = timed(lambda: run_updatedb(spark, conf, now, segment))
        row.update(updated=sum(counters["by_status"].values()), new_urls=counters["new_urls"])
    else:
        row["way"] = "pending"
        pending_path = uri + "/pending"
        row.update(pending_updatedb(spark, conf, now, segment, pending_path))
        row["updatedb_s"] = row["links_s"] + row["pending_s"]
        row["fold_s"], merged = timed(lambda: fold(spark, conf, now, segment, pending_path))
        row.update(merged)
    row["append_s"], _ = timed(lambda: rows.write.format("delta").mode("append").save(uri + "/baseline_rows"))
    row["append_links_s"], _ = timed(
        lambda: link_rows.write.format("delta").mode("append").save(uri + "/baseline_links"))
    rows.unpersist()
    link_rows.unpersist()
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}


def summary(rows: list[dict]) -> str:
    """Medians per way: updatedb over the crawldb rows' append and over both appends; for the
    pending way also its crawldb part alone (as if the links were written by the parse job)."""
    out = ["| way | rounds | updatedb s | / rows appended | / rows + links appended | crawldb part / rows appended | fold s |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for way in ("updatedb", "pending"):
        rs = [r for r in rows if r["way"] == way]
        if not rs:
            continue
        med = lambda f: statistics.median(f(r) for r in rs)  # noqa: E731
        part = f"{med(lambda r: r['pending_s'] / r['append_s']):.2f}x" if way == "pending" else "-"
        fold_s = f"{med(lambda r: r['fold_s']):.1f}" if way == "pending" else "-"
        out.append(f"| {way} | {len(rs)} | {med(lambda r: r['updatedb_s']):.1f} | "
                   f"{med(lambda r: r['updatedb_s'] / r['append_s']):.2f}x | "
                   f"{med(lambda r: r['updatedb_s'] / (r['append_s'] + r['append_links_s'])):.2f}x | "
                   f"{part} | {fold_s} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=float, default=1e7, help="N, crawldb rows")
    ap.add_argument("--segment", type=float, default=1e5, help="K, URLs in each segment")
    ap.add_argument("--pairs", type=int, default=3, help="rounds of each way, alternating")
    ap.add_argument("--driver-memory", default="6g")
    ap.add_argument("--workdir", default="/tmp/crawlkit-pending")
    a = ap.parse_args(argv)
    args = SimpleNamespace(size=int(a.size), pages_per_host=100, links_per_page=5, policy="score",
                           shuffle_partitions=8, broadcast_rows=None)
    uri = "file://" + a.workdir
    shutil.rmtree(a.workdir, ignore_errors=True)
    spark = get_spark(make_conf(spark__driver_memory=a.driver_memory, spark__shuffle_partitions=8, crawl__dir=uri))
    conf = bench_conf(uri, int(a.segment), args)
    build_s, _ = timed(lambda: build_tables(spark, uri, args.size, args, conf))
    print(f"built N={args.size:,} in {build_s:.0f} s", flush=True)
    rows = []
    for i in range(2 * a.pairs):
        rows.append(one_round(spark, conf, args, i, uri))
        print(json.dumps(rows[-1]), flush=True)
    print(summary(rows))
    spark.stop()
    shutil.rmtree(a.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    start = time.perf_counter()
    code = main()
    print(f"wall {time.perf_counter() - start:.0f} s")
    sys.exit(code)
