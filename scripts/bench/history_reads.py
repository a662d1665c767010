"""A stage's history questions as the crawldb's and the link table's histories grow with the crawl's age.

Issue #12. Delta keeps 30 days of commits (``delta.logRetentionDuration``); a crawl with
hourly rounds makes ~3 crawldb commits a round, so ~2,000-3,000 commits stay in the log. A
full history read (``storage.history``) opens every commit file; a segment's question needs
only the commits since its ``generate:<segment>`` lock (``storage.was_applied(..., since=)``,
``storage.recent_history``). This builds a table with N commits tagged as rounds would tag
them (generate, updatedb, score), asks both ways whether the newest segment is applied (as
updatedb does before its commit: it is not, so the answer needs the search back to its
generate), and prints the times and their ratio, in one run.

The link table is asked, before each segment's append (``linkdb.append_segment``), whether
that segment's links are there and how many rows were appended since the last compaction. A
second table of N commits, as hourly rounds of a growing crawl leave it (one append a round,
compactions by the ``db.links_compact_ratio`` = 0.5 rule: every 1.5x as many rounds), is asked
both ways: its whole history (as before 2026-12-06), and its newest commits back to one that
carries the count and to the segment's lock time less ``linkdb.CLOCK_MARGIN``.

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

from crawlkit import linkdb, storage
from crawlkit.conf import make_conf
from crawlkit.spark import get_spark

ROUND = ("generate", "updatedb", "score-opic")


def round_tag(version: int) -> str:
    """The tag a crawl's version-th commit would carry: three commits a round."""
    return f"{ROUND[version % 3]}:r{version // 3:06d}"


def build(spark, path: str, commits: int) -> str:
    """A table of ``commits`` tagged commits as a crawl leaves it when updatedb asks about its
    segment: the newest commit, a real one, is that segment's generate; returns the segment."""
    last = copied_history(spark, path, commits, lambda version: (round_tag(version), 1))
    segment = f"r{last // 3 + 1:06d}"
    with storage.commit_tag(spark, storage.generated_tag(segment)):
        spark.range(1).write.format("delta").mode("append").save(path)
    return segment


def link_commits(commits: int) -> list[tuple[str, int]]:
    """(tag, rows written) of a link table's commits 1 .. ``commits`` - 1 in a growing crawl:
    each round appends as many links as the first load (1 unit) and refetches nothing, and
    updatedb compacts (keeping every row) when the rows appended since the last compaction
    reach ``db.links_compact_ratio`` = 0.5 of what it kept (``linkdb.compaction_due``), so
    compactions come every 1.5x as many rounds as the crawl ages: the worst case for a read
    back to the last one."""
    made, rows = [(link_append(1, []), 1)], 1
    for version in range(2, commits):
        if linkdb.compaction_due(linkdb.appended_since_compaction(as_history(made)), 0.5):
            made.append((f"{linkdb.COMPACT_TAG}:r{version:06d}", rows))
        else:
            made.append((link_append(version, made), 1))
            rows += 1
    return made


def as_history(made: list[tuple[str, int]]) -> list[dict]:
    return [{"operation": "WRITE", "userMetadata": tag, "operationMetrics": {"numOutputRows": str(n)}}
            for tag, n in made]


def link_append(version: int, made: list[tuple[str, int]]) -> str:
    """The tags of an append after the commits ``made``, as ``linkdb.append_segment`` writes them."""
    return linkdb.carrying(f"linkdb:r{version:06d}", linkdb.appended_since_compaction(as_history(made)))


def build_links(spark, path: str, commits: int) -> str:
    """A link table of ``commits`` commits as hourly rounds leave it (``link_commits``; each
    commit file's time an hour after the one before, Delta's commit timestamp), the newest a
    real one; returns the next segment, whose link append asks the question."""
    made = link_commits(commits)
    last = copied_history(spark, path, commits, lambda version: made[version - 1])
    with storage.commit_tag(spark, link_append(last, made[:last - 1])):
        spark.range(1).write.format("delta").mode("append").save(path)
    log, now = os.path.join(path, "_delta_log"), time.time()
    for version in range(last + 1):
        at = now - (last - version) * 3600
        os.utime(os.path.join(log, f"{version:020d}.json"), (at, at))
    return f"r{last + 1:06d}"


def copied_history(spark, path: str, commits: int, commit_of) -> int:
    """Versions 0 .. v - 1 of a table whose commits from 2 on are copies of a real append's
    file, tagged and sized by ``commit_of(version)`` -> (tag, numOutputRows); returns v, the
    version of the caller's real commit on top: a multiple of 10, so that Delta writes its
    checkpoint there as it would in a crawl."""
    spark.range(1).write.format("delta").save(path)
    tag, _ = commit_of(1)
    with storage.commit_tag(spark, tag):
        spark.range(1).write.format("delta").mode("append").save(path)
    log = os.path.join(path, "_delta_log")
    with open(os.path.join(log, f"{1:020d}.json")) as f:
        template = [json.loads(line) for line in f]
    last = commits - commits % 10 if commits % 10 else commits  # the real one makes the checkpoint
    for version in range(2, last):
        tag, rows = commit_of(version)
        with open(os.path.join(log, f"{version:020d}.json"), "w") as f:
            for action in template:
                if "commitInfo" in action:
                    info = action["commitInfo"]
                    metrics = {**info.get("operationMetrics", {}), "numOutputRows": str(rows)}
                    action = {"commitInfo": {**info, "userMetadata": tag, "operationMetrics": metrics}}
                f.write(json.dumps(action) + "\n")
    return last


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
    rows, link_rows = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(float(x)) for x in args.commits.split(",")]:
            path = os.path.join(tmp, f"t{n}")
            segment = build(spark, path, n)
            tag, since = f"updatedb:{segment}", storage.generated_tag(segment)
            full, applied_full = timed(lambda: storage.was_applied(spark, path, tag), args.repeat)
            bounded, applied_bounded = timed(lambda: storage.was_applied(spark, path, tag, since=since), args.repeat)
            assert applied_full == applied_bounded, (n, applied_full, applied_bounded)
            rows.append((n, full, bounded, applied_full))

            path = os.path.join(tmp, f"links{n}")
            tag = f"linkdb:{build_links(spark, path, n)}"
            not_before = storage.history(spark, path)[-1]["timestamp"] - linkdb.CLOCK_MARGIN
            full, every = timed(lambda: storage.history(spark, path), args.repeat)
            bounded, recent = timed(lambda: storage.recent_history(
                spark, path, lambda commits: linkdb.history_answers(commits, tag, not_before)), args.repeat)
            assert linkdb.appended_since_compaction(every) == linkdb.appended_since_compaction(recent)
            assert storage.applied_in(every, tag) == storage.applied_in(recent, tag)
            link_rows.append((n, full, bounded, len(recent), linkdb.appended_since_compaction(recent)))
    print(f"\nwas_applied('updatedb:<newest segment>') before its updatedb, median of {args.repeat}, warm session")
    print("| commits | whole history s | since its generate s | ratio | applied |")
    print("|---:|---:|---:|---:|---|")
    for n, full, bounded, applied in rows:
        print(f"| {n:,} | {full:.2f} | {bounded:.2f} | {full / bounded:.1f}x | {applied} |")
    print(f"\nThe link table's history before the next segment's append (linkdb.append_segment), hourly "
          f"rounds, median of {args.repeat}")
    print("| commits | whole history s | to a carried count and the lock time s | ratio | commits read | "
          "(appended since compaction, kept) |")
    print("|---:|---:|---:|---:|---:|---|")
    for n, full, bounded, read, since in link_rows:
        print(f"| {n:,} | {full:.2f} | {bounded:.2f} | {full / bounded:.1f}x | {read:,} | {since} |")


if __name__ == "__main__":
    main()
