"""One crawl round with a fixed clock, for the crash tests (tests/reliability/test_crash.py).

    python scripts/crash_round.py --crawl-dir DIR --proxy URL --now ISO [--seeds FILE] [--resume]

Runs, under the crawl directory's lock, inject (with --seeds), then the stages of the round
of segment ``segment_names.base_name(now)``: generate -> fetch -> parse -> updatedb -> score, through the
library (as ``crawlkit round`` does). Before each stage it prints ``STAGE <name>`` on stderr
(flushed), so a test can kill the process group at a chosen stage.

``--resume`` finishes a round a killed process left: it breaks the stale lock (as
``--break-lock``), skips generate when the segment's fetch list exists (a second generate at
the same time would find the URLs locked by the segment and generate nothing), and reruns the
other stages, which are resumable (fetch: only URLs without a spilled result) or idempotent
(updatedb and OPIC scoring: skipped when their Delta commit tag is in the history).
"""
from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timedelta


def stage(name: str) -> None:
    print(f"STAGE {name}", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--crawl-dir", required=True)
    parser.add_argument("--proxy", required=True)
    parser.add_argument("--now", required=True, type=datetime.fromisoformat)
    parser.add_argument("--seeds")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--topN", type=int, default=20)
    parser.add_argument("--scorer", default="opic")
    args = parser.parse_args(argv)

    from crawlkit import storage
    from crawlkit.conf import make_conf
    from crawlkit.lock import round_lock
    from crawlkit.scoring import run_scoring
    from crawlkit.spark import get_spark
    from crawlkit.stages.fetch import run_fetch
    from crawlkit.segment_names import base_name as segment_name
    from crawlkit.stages.generate import run_generate
    from crawlkit.stages.inject import run_inject
    from crawlkit.stages.parse import run_parse
    from crawlkit.stages.updatedb import run_updatedb

    options = dict(crawl__dir=args.crawl_dir, crawl__topN=args.topN, scoring__scorer=args.scorer,
                   generate__partitions=2, spark__master="local[2]", spark__shuffle_partitions=2,
                   spark__driver_memory="1g", spark__ui=False,
                   fetcher__proxy=args.proxy, fetcher__server_delay=0.0, fetcher__threads=4,
                   fetcher__read_timeout=3.0, fetcher__page_deadline=5.0)
    conf = make_conf(**options)
    stage("start")
    spark = get_spark(conf)
    now, segment = args.now, segment_name(args.now)
    counters = {}
    with round_lock(spark, args.crawl_dir, "crash_round", break_lock=args.resume):
        if args.seeds and not args.resume:
            stage("inject")
            counters["inject"] = run_inject(spark, args.seeds, conf, now - timedelta(hours=1))
        fetchlist = storage.segment_path(args.crawl_dir, segment, "fetchlist")
        if not (args.resume and storage.path_exists(spark, fetchlist)):
            stage("generate")
            counters["generate"] = run_generate(spark, conf, now, segment)
        stage("fetch")
        counters["fetch"] = run_fetch(spark, conf, now, segment)
        stage("parse")
        counters["parse"] = run_parse(spark, conf, segment, counters["fetch"])
        stage("updatedb")
        counters["updatedb"] = run_updatedb(spark, conf, now, segment)
        stage("score")
        counters["score"] = run_scoring(spark, args.crawl_dir, conf, now, segment)
        stage("done")
    print(json.dumps({"segment": segment, "counters": counters}, default=str, sort_keys=True))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
