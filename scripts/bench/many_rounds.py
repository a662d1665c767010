"""Round after round on one crawldb: does a round's cost grow with the rounds already run?

scripts/bench/scale.py times one round at each crawldb size N. A crawl runs hundreds of
rounds on the same tables, and every round's MERGEs (generate's lock, updatedb's update and
inserts) leave small files and deletion vectors behind in the crawldb. This script builds
one synthetic crawldb and link table (scale.py's ``build_tables``), then runs R rounds of
generate (K URLs) -> a synthetic fetch of them (scale.py's ``write_segment``: every URL
fetched, half its outlinks to known URLs, half to new ones) -> updatedb, and prints per
round: the stage times, a full scan of the crawldb (what generate reads), and the crawldb's
files and bytes on disk.

    .venv/bin/python scripts/bench/many_rounds.py --n 1e5 --segment 1e4 --rounds 30 \
        [--conf db.deletion_vectors=false] [--json out.jsonl]

Each ``--conf`` is a crawlkit conf key=value (repeatable), so the same run can be made with
other settings.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(__file__))

from scale import NOW, build_tables, du, slope, write_segment  # noqa: E402

from crawlkit import storage  # noqa: E402
from crawlkit.conf import make_conf, parse_assignments  # noqa: E402
from crawlkit.spark import get_spark  # noqa: E402
from crawlkit.stages.generate import run_generate  # noqa: E402
from crawlkit.stages.updatedb import run_updatedb  # noqa: E402


def table_state(spark, path: str) -> dict:
    """Files and bytes of the crawldb's current snapshot (from the log, not the data)."""
    from delta.tables import DeltaTable
    detail = DeltaTable.forPath(spark, path).detail().collect()[0]
    return {"files": detail["numFiles"], "bytes": detail["sizeInBytes"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=float, default=1e5, help="crawldb rows built at the start")
    ap.add_argument("--segment", type=float, default=1e4, help="K, URLs a round (topN)")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--links-per-page", type=int, default=5)
    ap.add_argument("--pages-per-host", type=int, default=100)
    ap.add_argument("--shuffle-partitions", type=int, default=8)
    ap.add_argument("--conf", action="append", default=[], help="crawlkit conf key=value (repeatable)")
    ap.add_argument("--workdir", default="/tmp/crawlkit-many-rounds")
    ap.add_argument("--json", default="", help="append one JSON line per round to this file")
    args = ap.parse_args(argv)
    n, k = int(args.n), int(args.segment)
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    uri = "file://" + args.workdir + "/crawl"
    overrides = {"crawl.dir": uri, "crawl.topN": k, "generate.policy": "score",
                 "spark.shuffle_partitions": args.shuffle_partitions, "spark.ui": False,
                 **parse_assignments(args.conf)}
    conf = make_conf(**{key.replace(".", "__"): value for key, value in overrides.items()})
    spark = get_spark(conf)
    spark.sparkContext.setCheckpointDir(uri + "/_checkpoints")
    db_path = storage.crawldb_path(uri)
    t = time.perf_counter()
    build_tables(spark, uri, n, args, conf)
    print(f"built {n:,} rows in {time.perf_counter() - t:.0f} s; conf {args.conf or 'defaults'}; "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    print("| round | generate s | updatedb s | scan s | crawldb rows | files | MB on disk | load |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for r in range(1, args.rounds + 1):
        now = NOW + timedelta(hours=r)
        segment = now.strftime("%Y%m%d%H%M%S")
        t0 = time.perf_counter()
        run_generate(spark, conf, now, segment)
        t1 = time.perf_counter()
        write_segment(spark, uri, segment, n, args)
        t2 = time.perf_counter()
        run_updatedb(spark, conf, now, segment)
        t3 = time.perf_counter()
        live = storage.read_table(spark, db_path, "crawldb").groupBy("status").count().collect()
        t4 = time.perf_counter()
        state = table_state(spark, db_path)
        row = {"round": r, "generate": t1 - t0, "updatedb": t3 - t2, "scan": t4 - t3,
               "rows": sum(x["count"] for x in live), **state,
               "disk": du(os.path.join(args.workdir, "crawl", "crawldb")), "load": os.getloadavg()[0],
               "conf": args.conf}
        rows.append(row)
        print(f"| {r} | {row['generate']:.1f} | {row['updatedb']:.1f} | {row['scan']:.2f} | {row['rows']:,} | "
              f"{row['files']} | {row['disk'] / 2**20:.0f} | {row['load']:.1f} |", flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(row) + "\n")
    for stage in ("generate", "updatedb", "scan"):
        s = slope([(x["round"], x[stage]) for x in rows[len(rows) // 3:]])
        first, last = rows[:5], rows[-5:]
        print(f"{stage}: mean of rounds 1-5 {sum(x[stage] for x in first) / len(first):.2f} s, "
              f"of the last 5 {sum(x[stage] for x in last) / len(last):.2f} s"
              + (f"; log-log slope over the last two thirds {s:.2f}" if s is not None else ""))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
