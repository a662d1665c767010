"""Unfinished segments: continue the round that died, or abandon it.

A round that dies (a killed driver, a lost cluster) leaves its segment *unfinished*:

* **not applied** -- generate locked the segment's URLs in the crawldb (``generated_segment``)
  but no ``updatedb:<segment>`` commit followed. A new generate would skip those URLs until
  ``generate.lock_timeout`` (7 days by default), so the next round continues the segment
  instead: fetch only the URLs without a result in ``content_parts/`` (see stages/fetch.py),
  then parse, updatedb and score;
* **not scored** -- after ``updatedb:<segment>`` not every scorer the round runs
  (``round_scorers``) has committed, and the round's ``_stats/round.json`` was never
  written: the next round only scores the segment (OPIC moves the segment's cash exactly
  once: its commit tag).

The locks in the crawldb rows, not Delta's history, say what was generated and not applied:
history is pruned after ``delta.logRetentionDuration``, the rows are not. A segment whose lock
has expired is not resumed (its URLs are due again and may be in a newer segment); it is only
reported. An operator who does not want a segment continued abandons it: its locks are
released in one commit tagged ``abandon:<segment>`` and its files are kept for inspection.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from crawlkit import storage
from crawlkit.storage import SegmentStateError
from crawlkit.conf import Conf
from crawlkit.scoring.job import round_scorers
from crawlkit.stages.generate import locked_by

ABANDONED = "abandoned"     # segments/<seg>/_stats/abandoned.json marks an abandoned segment


@dataclass(frozen=True)
class Unfinished:
    segment: str
    stage: str                       # the stage to continue from: "fetch" or "score"
    locked: int = 0                  # crawldb URLs still locked by the segment
    generated_at: datetime | None = None
    expired: bool = False            # lock older than generate.lock_timeout: not resumed


def _locks(spark: SparkSession, db_path: str) -> dict[str, tuple[int, datetime | None]]:
    """segment -> (URLs it locks, latest generate time), read from the crawldb rows."""
    rows = (storage.read_table(spark, db_path, "crawldb")
            .filter(F.col("generated_segment").isNotNull())
            .groupBy("generated_segment")
            .agg(F.count("*").alias("n"), F.max("generate_time").alias("at")).collect())
    return {r["generated_segment"]: (r["n"], r["at"]) for r in rows}


def find_unfinished(spark: SparkSession, conf: Conf, now: datetime) -> list[Unfinished]:
    """Every unfinished segment of the crawl directory, oldest first (expired ones included,
    flagged). Costs one filtered scan of the crawldb and a read of its recent history (back to
    the last updatedb and the open segments' generate commits)."""
    crawl_dir = conf["crawl.dir"]
    db_path = storage.crawldb_path(crawl_dir)
    if not storage.is_delta(spark, db_path):
        return []
    locks = _locks(spark, db_path)
    generated = {storage.generated_tag(segment) for segment in locks}

    def enough(commits: list[dict]) -> bool:   # the last updatedb, and every lock's generate
        found = storage.tags_in(commits)
        return generated <= found and any(t.startswith("updatedb:") for t in found)
    tags = [c["userMetadata"] or "" for c in storage.recent_history(spark, db_path, enough)]
    lock_timeout = timedelta(seconds=conf["generate.lock_timeout"])
    found = []
    for segment, (n, at) in locks.items():
        if f"updatedb:{segment}" in tags:    # cannot happen (updatedb clears the locks); be safe
            continue
        expired = at is not None and at + lock_timeout <= now
        # an expired segment is only reported, so its folder may be gone (an operator
        # cleaning up old segments): only a segment to continue needs its fetch list
        if not expired and not storage.segment_part_exists(spark, crawl_dir, segment, "fetchlist"):
            raise SegmentStateError(
                f"segment {segment} locks {n} URLs in the crawldb but its fetch list "
                f"{storage.segment_path(crawl_dir, segment, 'fetchlist')} is missing; "
                f"release them with --abandon-segment {segment}")
        found.append(Unfinished(segment, "fetch", n, at, expired))
    applied = [i for i, t in enumerate(tags) if t.startswith("updatedb:")]
    if applied:
        last = applied[-1]
        segment = tags[last].split(":", 1)[1]
        # scored: every scorer of the round committed (a kill between two of them resumes)
        later = {t for commit in tags[last + 1:] for t in storage.tags_of(commit)}
        scored = all(f"score-{name}:{segment}" in later for name in round_scorers(conf))
        finished = storage.has_stats(spark, crawl_dir, segment, "round")
        if not scored and not finished:
            found.append(Unfinished(segment, "score"))
    return sorted(found, key=lambda u: u.generated_at or datetime.max)


def resumable(spark: SparkSession, conf: Conf, now: datetime, log=print) -> Unfinished | None:
    """The segment a round should continue (the oldest unexpired one), or None; expired ones
    are reported through ``log``."""
    pending = find_unfinished(spark, conf, now)
    for u in pending:
        if u.expired:
            log(f"segment {u.segment} was generated at {u.generated_at} and never applied; its "
                f"lock has expired (generate.lock_timeout), so its {u.locked} URLs are due again "
                f"and it is not resumed (--abandon-segment {u.segment} releases it for good)")
    live = [u for u in pending if not u.expired]
    return live[0] if live else None


def is_abandoned(spark: SparkSession, crawl_dir: str, segment: str) -> bool:
    return storage.has_stats(spark, crawl_dir, segment, ABANDONED)


def abandon_segment(spark: SparkSession, conf: Conf, segment: str, now: datetime) -> dict:
    """Release the generate locks of an unapplied segment (one crawldb commit tagged
    ``abandon:<segment>``) so the next generate may pick its URLs again; its files stay.
    Refused for a segment already applied to the crawldb or never generated."""
    crawl_dir = conf["crawl.dir"]
    db_path = storage.crawldb_path(crawl_dir)
    if not storage.is_delta(spark, db_path):
        raise SegmentStateError(f"no crawldb under {crawl_dir}: nothing to abandon")
    tags = storage.commit_tags(spark, db_path)
    if f"updatedb:{segment}" in tags:
        raise SegmentStateError(f"segment {segment} is already applied to the crawldb; it cannot "
                                "be abandoned (the next round finishes its scoring if needed)")
    locked = _locks(spark, db_path).get(segment, (0, None))[0]
    exists = storage.path_exists(spark, storage.segment_path(crawl_dir, segment))
    # a folder without a commit: generate died between its fetch list and its lock commit;
    # abandoned, `maintain` may delete it (segment_pruning.py)
    if not locked and storage.generated_tag(segment) not in tags and not exists:
        raise SegmentStateError(f"segment {segment} was never generated in {crawl_dir} "
                                f"(no generate:{segment} commit, no URL locked by it, no folder)")
    if locked:
        with storage.commit_tag(spark, f"abandon:{segment}"):
            storage.ensure_table(spark, db_path, "crawldb").update(
                condition=locked_by(segment),
                set={"generated_segment": F.lit(None).cast("string"),
                     "generate_time": F.lit(None).cast("timestamp")})
    counters = {"segment": segment, "released": locked, "at": now.isoformat()}
    if exists:
        storage.write_stats(spark, crawl_dir, segment, ABANDONED, counters)
    return counters
