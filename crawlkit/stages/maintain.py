"""maintain: compact the crawl directory's Delta tables and delete the files no kept version needs.

Every round writes the crawldb and the linkdb: updatedb and scoring mark rows deleted in
deletion vectors and add small files, and every version's replaced files stay on disk for
time travel. Delta reclaims neither by itself, so a crawl that runs for months slows down
(each read opens every small file and applies every deletion vector) and grows by a copy of
its changed rows each round. This stage does what Delta asks of such a table, for the
crawldb, the linkdb and the hostdb:

1. ``OPTIMIZE``: small files and files with many deleted rows are rewritten into
   large ones (a commit that changes no row, tagged ``maintain:<now>``);
2. ``VACUUM`` with ``maintain.retain_hours``: the files no version of the last that many
   hours reads are deleted. Time travel to older versions ends there: ``export
   --since-version`` and ``evaluate``'s per-round figures of those versions, ``--version``
   of the inspection commands. Below Delta's 168-hour safety check the check is turned off
   for this command only (the crawl directory's lock keeps crawlkit's own writers out; a
   reader of an old version elsewhere may fail).

3. with ``maintain.keep_segments`` N > 0, the settled segments beyond the N newest are
   deleted, or cut down to the parse rows pages still need (segment_pruning.py).

``crawlkit maintain`` runs it; ``maintain.every_rounds`` runs it after every N-th round of
``round`` and ``crawl`` (counted from the newest segment the last run saw, kept in
``<crawl>/_stats/last-maintain.json``). Counters per table (files compacted and written,
bytes on disk before and after) and the pruning's go to ``<crawl>/_stats/maintain-<now>.json``.
"""
from __future__ import annotations

import json
from datetime import datetime

from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from crawlkit import segment_names, storage
from crawlkit.conf import Conf
from crawlkit.stages.segment_pruning import plan_pruning, prune

DELTA_SAFE_HOURS = 168   # spark.databricks.delta.retentionDurationCheck's threshold (7 days)
LAST_RUN = "last-maintain.json"   # in <crawl>/_stats, beside each run's maintain-<now>.json
TABLES = {"crawldb": storage.crawldb_path, "linkdb": storage.linkdb_path, "hostdb": storage.hostdb_path}


def bytes_on_disk(spark: SparkSession, path: str) -> int:
    """Bytes of every file under ``path`` (data files of all versions, the log)."""
    fs, hpath = storage.hadoop_fs(spark, path)
    return int(fs.getContentSummary(hpath).getLength())


def maintain_table(spark: SparkSession, path: str, retain_hours: float, tag: str) -> dict:
    """OPTIMIZE then VACUUM one Delta table; its counters."""
    before = bytes_on_disk(spark, path)
    check = "true" if retain_hours >= DELTA_SAFE_HOURS else "false"
    with storage.commit_tag(spark, tag):   # OPTIMIZE's commit and VACUUM's start and end commits
        metrics = DeltaTable.forPath(spark, path).optimize().executeCompaction().first()["metrics"]
        # VACUUM lists the table in spark.sql.sources.parallelPartitionDiscovery.parallelism
        # tasks (10,000 by default: 86 s for a 10-file table on 2 cores, 7.6 s with the cores'
        # count) and pulls each task's files to the driver as a job of its own
        listing = str(spark.sparkContext.defaultParallelism)
        with storage.session_setting(spark, "spark.databricks.delta.retentionDurationCheck.enabled", check), \
                storage.session_setting(spark, "spark.sql.sources.parallelPartitionDiscovery.parallelism", listing):
            DeltaTable.forPath(spark, path).vacuum(float(retain_hours))
    return {"files_compacted": int(metrics["numFilesRemoved"]), "files_written": int(metrics["numFilesAdded"]),
            "bytes_before": before, "bytes_after": bytes_on_disk(spark, path)}


def run_maintain(spark: SparkSession, conf: Conf, now: datetime) -> dict:
    """Maintain every Delta table of the crawl directory that exists, then prune its segments
    (``maintain.keep_segments``); the counters by table."""
    crawl_dir, tag = conf["crawl.dir"], f"maintain:{now.isoformat()}"
    segments = storage.list_segments(spark, crawl_dir)
    newest = segments[-1] if segments else None
    result: dict = {"retain_hours": conf["maintain.retain_hours"], "newest_segment": newest}
    for name, path_of in TABLES.items():
        path = path_of(crawl_dir)
        if storage.is_delta(spark, path):
            result[name] = maintain_table(spark, path, conf["maintain.retain_hours"], tag)
    plan = plan_pruning(spark, crawl_dir, conf["maintain.keep_segments"]) if conf["maintain.keep_segments"] else None
    if plan is not None and (plan.removable or plan.slim):
        # recorded before a segment goes: an export running or of an older crawldb version learns of it
        last = last_run(spark, crawl_dir) or {}
        _record(spark, crawl_dir, last, prunings=last.get("prunings", 0) + 1,
                pruned_version=max(plan.crawldb_version, last.get("pruned_version") or -1))
    if plan is not None:
        result["segments"] = prune(spark, crawl_dir, plan)
    # only now: a run killed before this is due again after the next round
    _record(spark, crawl_dir, last_run(spark, crawl_dir) or {}, newest_segment=newest)
    storage.write_json_file(spark, storage.join(crawl_dir, "_stats"),
                            f"maintain-{now.strftime('%Y%m%d%H%M%S')}.json", result)
    return result


def last_run(spark: SparkSession, crawl_dir: str) -> dict | None:
    """``<crawl>/_stats/last-maintain.json``: ``newest_segment`` when maintain last ran to
    its end; ``prunings``, how many prunings began (that deleted anything); ``pruned_version``,
    the newest crawldb version one was planned against. None before the first run wrote it."""
    text = storage.read_text(spark, storage.join(crawl_dir, "_stats", LAST_RUN))
    return None if text is None else json.loads(text)


def _record(spark: SparkSession, crawl_dir: str, previous: dict, **values) -> None:
    """``previous`` (the record as read) with ``values`` changed, as the new record."""
    record = {"newest_segment": None, "prunings": 0, "pruned_version": None} | previous | values
    storage.write_json_file(spark, storage.join(crawl_dir, "_stats"), LAST_RUN, record)


def maintenance_due(spark: SparkSession, conf: Conf) -> bool:
    """After a round: whether ``maintain.every_rounds`` rounds (segments) were made after the
    newest segment the last run saw (0: never). Counted by names, not by the number of
    segments, which pruning lowers; before any run recorded it, every N-th segment (as
    before the record, and for a crawl never maintained the same)."""
    every = conf["maintain.every_rounds"]
    if every <= 0:
        return False
    crawl_dir = conf["crawl.dir"]
    segments = storage.list_segments(spark, crawl_dir)
    last = last_run(spark, crawl_dir)
    if last is None:
        return len(segments) % every == 0
    after = segment_names.order_key(last["newest_segment"] or "")
    return sum(segment_names.order_key(s) > after for s in segments) >= every
