"""The link table: append-only, one version of a page's links per fetch.

updatedb appends the links a segment found instead of merging them into the table. A MERGE
that replaces refetched pages' links must first find their old links, and with K refetched
pages spread over every file that is a read of the whole table each round: updatedb cost
48x the append of its rows at 10^7 pages, nearly all of it the link table (docs/scale.md).

So each append stamps its rows with ``commit_version`` (the table version it commits as),
and readers see the **current** links through :func:`current`: for each source page, its
rows of the highest version, with ``first_seen`` the earliest over all its versions. A
refetched page that now links nowhere gets one marker row (``dst`` = :data:`NO_LINKS`) that
hides its older links. Rows written before the column existed count as the oldest version.

Superseded rows stay on disk until :func:`compact` rewrites the table with the current links
only. updatedb compacts when the rows appended since the last compaction reach
``db.links_compact_ratio`` of the rows that compaction kept (the first load of the table
counts as one), so a link row is rewritten about 1/ratio times over the crawl: the round's
cost follows the segment, and the table stays within (1 + ratio) of its live size. Each
append's commit carries that count beside its tag (``SINCE_COMPACTION``), so the next
append reads the latest commits only, not the history back to the last compaction.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, Observation, SparkSession, Window
from pyspark.sql import functions as F

from crawlkit import schemas, storage

NO_LINKS = ""                     # dst of the marker row of a page refetched without links
COMPACT_TAG = "linkdb-compact"    # commit tag prefix of a compaction
# An append's commit also carries ``since_compaction`` as it stood before it (a token
# ``links-since-compaction=<appended>/<kept>``), so the next one need not read back to the
# last compaction, which in a growing crawl comes every 1.5x as many rounds.
SINCE_COMPACTION = "links-since-compaction="
# A segment's link commit follows its crawldb lock's; this much earlier is searched too, for
# the two tables' commit times coming from different clocks (storage servers, drivers).
CLOCK_MARGIN = timedelta(hours=1)


def current(links: DataFrame) -> DataFrame:
    """The live links of a link table read raw: each source's rows of its latest version,
    markers dropped, first_seen the earliest over the source's versions of that link.

    One shuffle by ``src``; when nothing downstream reads ``first_seen`` Spark prunes its
    window, and the one by ``src`` is what PageRank's grouping by source reuses."""
    version = F.coalesce(F.col("commit_version"), F.lit(-1))
    return (links.withColumn("_version", version)
            .withColumn("_latest", F.max("_version").over(Window.partitionBy("src")))
            .withColumn("_first", F.min("first_seen").over(Window.partitionBy("src", "dst")))
            .filter((F.col("_version") == F.col("_latest")) & (F.col("dst") != F.lit(NO_LINKS)))
            .withColumn("first_seen", F.col("_first"))
            .drop("_version", "_latest", "_first"))


def read_current(spark: SparkSession, crawl_dir: str, version: int | None = None) -> DataFrame:
    """The crawl's current links (at link-table ``version``; empty when there is no table)."""
    path = storage.linkdb_path(crawl_dir)
    if not storage.is_delta(spark, path):
        return schemas.empty(spark, "links")
    return current(storage.read_table(spark, path, "links", version))


def stored_rows(spark: SparkSession, path: str) -> int:
    """Rows of the link table at ``path`` as stored, superseded versions and markers
    included: an upper bound on the current links that Delta answers from its file
    statistics, without reading the table (0 when there is no table)."""
    return storage.stored_rows(spark, path)


def no_links_markers(refreshed_srcs: DataFrame, links: DataFrame, now: datetime) -> DataFrame:
    """One marker row per refreshed page that has no link in ``links``: it hides the page's
    older links (a page now 404, or parsed without links)."""
    from crawlkit.stages.updatedb import host_expr
    bare = refreshed_srcs.select("src").distinct().join(links.select("src"), on="src", how="left_anti")
    return schemas.conform(bare.select(
        "src", F.lit(NO_LINKS).alias("dst"), host_expr("src").alias("src_host"),
        F.lit("").alias("dst_host"), F.lit(False).alias("nofollow"),
        F.lit(now).alias("first_seen"), F.lit(now).alias("last_seen")), "links")


def append_segment(spark: SparkSession, path: str, links: DataFrame, refreshed_srcs: DataFrame,
                   now: datetime, tag: str, locked_at: datetime | None = None) -> dict:
    """Append a segment's links (each (src, dst) once) as the new version of their sources'
    links, with a marker for each refreshed page that has none, in one commit tagged ``tag``.
    The links are counted as they are written (an ``Observation``), so ``links`` may be a
    plan over the segment's files rather than a materialized table.

    A rerun of an applied segment (a crash between this commit and the crawldb's) appends
    nothing: the tag is in the table's history. The history is read once: it answers that,
    the version this commit will have, and (with this commit's rows) ``since_compaction``:
    (rows appended since the last compaction, rows it kept), for ``compaction_due``, which
    this commit carries in turn (``SINCE_COMPACTION``). It is read back to the newest commit
    that carries it (or a compaction) and, unless ``tag`` turns up first, to ``locked_at``
    (the time of the segment's lock in the crawldb, which its link commit follows:
    ``history_answers``), rather than all of its 30 days."""
    storage.ensure_table(spark, path, "links")
    not_before = locked_at - CLOCK_MARGIN if locked_at is not None else None
    commits = storage.recent_history(spark, path, lambda commits: history_answers(commits, tag, not_before))
    if storage.applied_in(commits, tag):
        return {"appended": 0, "pages_without_links": 0, "skipped": "already applied",
                "since_compaction": appended_since_compaction(commits)}
    version = commits[-1]["version"] + 1
    counted = Observation(f"links:{tag}")
    marked = Observation(f"markers:{tag}")
    rows = (links.observe(counted, F.count(F.lit(1)).alias("n"))
            .unionByName(no_links_markers(refreshed_srcs, links, now).observe(marked, F.count(F.lit(1)).alias("n")))
            .withColumn("commit_version", F.lit(version).cast("long")))
    tags = carrying(tag, appended_since_compaction(commits))
    with storage.commit_tag(spark, tags):
        (schemas.conform(rows, "links").write.format("delta").mode("append")
         .option("mergeSchema", "true").save(path))
    appended, markers = counted.get["n"], marked.get["n"]
    this = {"version": version, "operation": "WRITE", "userMetadata": tags,
            "operationMetrics": {"numOutputRows": str(appended + markers)}}
    return {"appended": appended, "pages_without_links": markers, "version": version,
            "since_compaction": appended_since_compaction(commits + [this])}


def carrying(tag: str, since_compaction: tuple[int, int]) -> str:
    """An append's commit tags: ``tag`` and the (appended, kept) pair before it (``SINCE_COMPACTION``)."""
    appended, kept = since_compaction
    return f"{tag} {SINCE_COMPACTION}{appended}/{kept}"


def history_answers(commits: list[dict], tag: str, not_before: datetime | None) -> bool:
    """Whether the latest ``commits`` (oldest first) answer ``append_segment``: they reach a
    compaction or an append that carries ``since_compaction``, and either hold ``tag`` or
    reach a commit older than ``not_before`` (None: only ``tag`` answers).

    The link table has no commit that a segment's commits must follow (the crawldb's
    ``generate:<segment>`` lock), and a crashed segment's rerun may find its ``tag`` behind
    a later segment's compaction, so the bound is a time: the lock commit's less a margin
    for clocks (``CLOCK_MARGIN``). Delta's commit timestamps never decrease with the
    version, so every commit from that time on is in the window."""
    tags = storage.tags_in(commits)
    if not any(t.startswith((COMPACT_TAG, SINCE_COMPACTION)) for t in tags):
        return False
    return tag in tags or (not_before is not None and commits[0]["timestamp"] < not_before)


def last_metrics(spark: SparkSession, path: str) -> dict:
    """Delta's operation metrics of the table's last commit (numOutputRows, ...)."""
    return DeltaTable.forPath(spark, path).history(1).collect()[0]["operationMetrics"] or {}


def appended_since_compaction(commits: list[dict]) -> tuple[int, int]:
    """(rows appended since the last compaction, rows it kept) in a history (``storage.history``,
    oldest first), from the newest compaction or the newest append that carries the pair as
    it stood before it (``SINCE_COMPACTION``), whichever comes first. Without a compaction, the
    first append that wrote rows (the table's first load) stands for one."""
    writes = []                      # rows of each append since the last compaction, newest first
    for row in reversed(commits):
        rows = int((row["operationMetrics"] or {}).get("numOutputRows", 0))
        tags = storage.tags_of(row["userMetadata"])
        if any(t.startswith(COMPACT_TAG) for t in tags):
            return sum(writes), rows
        if row["operation"] == "WRITE" and rows:
            writes.append(rows)
        carried = next((t[len(SINCE_COMPACTION):] for t in tags if t.startswith(SINCE_COMPACTION)), None)
        if carried is not None:
            appended, kept = (int(n) for n in carried.split("/"))
            if kept:
                return appended + sum(writes), kept
            break                    # no load before it: the oldest write since is the first
    if not writes:
        return 0, 0
    first_load = writes.pop()        # the oldest write
    return sum(writes), first_load


def compaction_due(since_compaction: tuple[int, int], ratio: float) -> bool:
    """Whether the rows appended since the last compaction reach ``ratio`` of what it kept,
    given both (``appended_since_compaction``); ``ratio`` <= 0: never."""
    appended, base = since_compaction
    return ratio > 0 and appended > 0 and appended >= ratio * base


def compact(spark: SparkSession, path: str, tag: str) -> dict:
    """Rewrite the table with its current links only (each keeps its version and earliest
    first_seen), in one overwrite commit tagged ``tag``: readers see the same links before
    and after, and time travel to older versions still works until VACUUM."""
    raw = storage.read_table(spark, path, "links")
    with storage.commit_tag(spark, tag):
        (current(raw).write.format("delta").mode("overwrite")
         .option("mergeSchema", "true").save(path))
    metrics = last_metrics(spark, path)
    return {"kept": int(metrics.get("numOutputRows", 0)), "removed_files": int(metrics.get("numRemovedFiles", 0))}
