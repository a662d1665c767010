"""The README's demo: a real crawl, in local mode, of a web the replay web makes up.

Starts the replay web on a generated web (many hosts, power-law in-degree), crawls it for a
few rounds through the replay web as an HTTP proxy (robots.txt and per-host delays apply),
then prints pages by status, the top pages by score and the time of each stage.

    python -m crawlkit.demo [--pages 2000] [--rounds 3] [--topN 300] [--dir demo-crawl]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from crawlkit.cli import utc_now
from crawlkit.conf import load_conf
from crawlkit.crawl import run_crawl
from crawlkit.inspect import counts_by_status, format_summary, top_pages
from crawlkit.replay import ReplayServer
from crawlkit.spark import get_spark


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--topN", type=int, default=300)
    parser.add_argument("--dir", default="demo-crawl")
    parser.add_argument("--scorer", default="pagerank")
    args = parser.parse_args(argv)

    workdir = Path(args.dir).resolve()
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    source = f"gen:{args.pages},seed=1,hosts={args.hosts},robots=0.1"
    with ReplayServer([source], workdir=workdir / "replay") as web:
        seeds = workdir / "seeds.txt"
        seeds.write_text("http://s0.gen.test/\n")
        conf = load_conf(overrides={
            "crawl.dir": str(workdir / "crawl"), "crawl.topN": args.topN,
            "fetcher.proxy": web.proxy_url, "fetcher.server_delay": 0.2, "fetcher.threads": 16,
            "generate.max_per_host": 50, "scoring.scorer": args.scorer, "spark.master": "local[2]",
            "spark.shuffle_partitions": 4})
        spark = get_spark(conf)
        started = time.perf_counter()
        reports = run_crawl(spark, conf, str(seeds), args.rounds, utc_now, log=lambda m: print(m, file=sys.stderr))
        elapsed = time.perf_counter() - started
        print(format_summary(counts_by_status(spark, conf["crawl.dir"]), top_pages(spark, conf["crawl.dir"]),
                             [r.seconds for r in reports]))
        fetched = sum(r.counters["fetch"]["pages"] for r in reports)
        requests = len(web.access_log())
        print(f"{fetched} pages fetched in {len(reports)} rounds, {elapsed:.0f}s; "
              f"the replay web logged {requests} requests (robots.txt included)")
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
