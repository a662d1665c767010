"""A stage's "was this segment applied?" as the crawldb's history grows with the crawl's age.

Issue #12. Delta keeps 30 days of commits (``delta.logRetentionDuration``); a crawl with
hourly rounds makes ~3 crawldb commits a round, so ~2,000-3,000 commits stay in the log. A
full history read (``storage.history``) opens every commit file; a segment's question needs
only the commits since its ``generate:<segment>`` lock (``storage.was_applied(..., since=)``,
``storage.recent_history``). This builds a table with N commits tagged as rounds would tag
them (generate, updatedb, score), asks both ways whether the newest segment is applied (as
updatedb does before its commit: it is not, so the answer needs the search back to its
generate), and prints the times and their ratio, in one run.

The commits are made by copying one real append commit's file N times with its tag changed
(making 3,000 real commits takes ~15 minutes), then one real commit on top, at a version that
is a multiple of 10 so Delta writes its checkpoint as it would in a crawl; both ways load the
same snapshot.

    .venv/bin/python scripts/bench/history_reads.py --commits 100,1000,3000 --repeat 3
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

from crawlkit import storage
from crawlkit.conf import make_conf
from crawlkit.spark import get_spark

ROUND = ("generate", "updatedb", "score-opic")


def round_tag(version: int) -> str:
    """The tag a crawl's version-th commit would carry: three commits a round."""
    return f"{ROUND[version % 3]}:r{version // 3:06d}"


def build(spark, path: str, commits: int) -> str:
    """A table of ``commits`` tagged commits as a crawl leaves it when updatedb asks about its
    segment: the newest commit, a real one, is that segment's generate; returns the segment."""
    spark.range(1).write.format("delta").save(path)
    with storage.commit_tag(spark, round_tag(1)):
        spark.range(1).write.format("delta").mode("append").save(path)
    log = os.path.join(path, "_delta_log")
    with open(os.path.join(log, f"{1:020d}.json")) as f:
        template = [json.loads(line) for line in f]
    last = commits - commits % 10 if commits % 10 else commits  # the real one makes the checkpoint
    for version in range(2, last):
        with open(os.path.join(log, f"{version:020d}.json"), "w") as f:
            for action in template:
                if "commitInfo" in action:
                    action = {"commitInfo": {**action["commitInfo"], "userMetadata": round_tag(version)}}
                f.write(json.dumps(action) + "\n")
    segment = f"r{last // 3 + 1:06d}"
    with storage.commit_tag(spark, storage.generated_tag(segment)):
        spark.range(1).write.format("delta").mode("append").save(path)
    return segment


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", default="100,1000,3000", help="history lengths, comma-separated")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spark = get_spark(make_conf(spark__master="local[2]", spark__shuffle_partitions=2, spark__ui=False))
    spark.sparkContext.setLogLevel("ERROR")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(float(x)) for x in args.commits.split(",")]:
            path = os.path.join(tmp, f"t{n}")
            segment = build(spark, path, n)
            tag, since = f"updatedb:{segment}", storage.generated_tag(segment)
            full, applied_full = timed(lambda: storage.was_applied(spark, path, tag), args.repeat)
            bounded, applied_bounded = timed(lambda: storage.was_applied(spark, path, tag, since=since), args.repeat)
            assert applied_full == applied_bounded, (n, applied_full, applied_bounded)
            rows.append((n, full, bounded, applied_full))
    print(f"\nwas_applied('updatedb:<newest segment>') before its updatedb, median of {args.repeat}, warm session")
    print("| commits | whole history s | since its generate s | ratio | applied |")
    print("|---:|---:|---:|---:|---|")
    for n, full, bounded, applied in rows:
        print(f"| {n:,} | {full:.2f} | {bounded:.2f} | {full / bounded:.1f}x | {applied} |")


if __name__ == "__main__":
    main()
