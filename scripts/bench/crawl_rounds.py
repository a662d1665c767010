"""Crawl a replay-web source for N rounds and report the time of each stage.

Used for the round figures in docs/performance.md, e.g. the Hollins site::

    .venv/bin/python scripts/bench/crawl_rounds.py /work/shared/data/hollins \
        --seed http://www1.hollins.edu/ --rounds 10 --topN 500

Prints one line per round (seconds per stage, pages fetched), the Spark jobs each stage
started per round, and the fetch+parse throughput.
Politeness is on (the configured delay per host) unless --no-delay.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from crawlkit.cli import utc_now
from crawlkit.conf import load_conf, parse_assignments
from crawlkit.crawl import run_crawl
from crawlkit.replay import ReplayServer
from crawlkit.spark import get_spark


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="replay-web source (folder, links.tsv.gz, WARC, gen:N...)")
    parser.add_argument("--seed", action="append", required=True)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--topN", type=int, default=500)
    parser.add_argument("--no-delay", action="store_true", help="politeness off (server_delay 0, 8 connections per host)")
    parser.add_argument("--conf", action="append", default=[])
    parser.add_argument("--keep", help="keep the crawl in this directory")
    args = parser.parse_args()

    workdir = Path(args.keep or tempfile.mkdtemp(prefix="crawl-rounds-"))
    shutil.rmtree(workdir / "crawl", ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "seeds.txt").write_text("\n".join(args.seed) + "\n")
    with ReplayServer([args.source], workdir=workdir / "replay") as web:
        overrides = {"crawl.dir": str(workdir / "crawl"), "crawl.topN": args.topN,
                     "fetcher.proxy": web.proxy_url, "generate.max_per_host": 0}
        if args.no_delay:
            overrides.update({"fetcher.server_delay": 0.0, "fetcher.threads_per_host": 8})
        overrides.update(parse_assignments(args.conf))
        conf = load_conf(overrides=overrides)
        # keep every job's record, for the count of Spark jobs per stage below
        conf = conf.with_overrides({"spark.extra": {"spark.ui.retainedJobs": "1000000", **conf["spark.extra"]}})
        spark = get_spark(conf)
        started = time.perf_counter()
        reports = run_crawl(spark, conf, str(workdir / "seeds.txt"), args.rounds, utc_now,
                            log=lambda m: print(m, file=sys.stderr))
        total = time.perf_counter() - started
    stages = ["generate", "fetch", "parse", "updatedb", "score"]
    print("| round | pages | " + " | ".join(f"{s} s" for s in stages) + " |")
    print("|---|---|" + "---|" * len(stages))
    pages = fetch_parse = 0.0
    for i, r in enumerate(reports, 1):
        n = r.counters["fetch"]["pages"]
        pages += n
        fetch_parse += r.seconds["fetch"] + r.seconds["parse"]
        print(f"| {i} | {n} | " + " | ".join(f"{r.seconds.get(s, 0):.1f}" for s in stages) + " |")
    # Spark jobs per stage and round (crawl.py tags each stage's jobs, Delta's own included):
    # the fixed cost of a round on small segments is mostly this count times a job's overhead.
    tracker = spark.sparkContext.statusTracker()
    jobs = {s: round(len(tracker.getJobIdsForGroup(f"crawlkit-{s}")) / max(1, len(reports)), 1) for s in stages}
    print("Spark jobs per round: " + ", ".join(f"{s} {n}" for s, n in jobs.items()))
    print(json.dumps({"rounds": len(reports), "pages": pages, "total_s": round(total, 1), "jobs_per_round": jobs,
                      "fetch_parse_pages_per_s": round(pages / fetch_parse, 1) if fetch_parse else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
