"""The crawl directory: Delta tables for durable state, Parquet segments per round.

Layout under one crawl directory (a path or URI)::

    crawldb/                     Delta, one row per URL (schemas/crawldb.json)
    linkdb/                      Delta, append-only: a version of a page's links per fetch (schemas/links.json, crawlkit.linkdb)
    hostdb/                      Delta, one row per host whose sitemaps a run began (schemas/hostdb.json, crawlkit.stages.sitemaps)
    segments/<segment>/fetchlist Parquet, written by generate, one host per partition
    segments/<segment>/content   Parquet, written by fetch (nothing dropped)
    segments/<segment>/parse     Parquet, written by parse
    segments/<segment>/_stats/   JSON counters of each stage
    _checkpoints/                Spark checkpoints (lineage cuts)

Every Delta commit made by a stage carries ``userMetadata = "<stage>:<segment>"`` so a stage
can tell whether a segment was already applied and a rerun is a no-op (idempotent stages).
A commit that applies several stages at once (a round's scorers) carries their tags
space-separated (``tags_of``).
"""
from __future__ import annotations

import json
import logging
import re
from contextlib import contextmanager
from datetime import datetime
from typing import Callable, Iterator

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from crawlkit import schemas, segment_names
from crawlkit.paths import scheme_of

CRAWLDB = "crawldb"
LINKDB = "linkdb"
HOSTDB = "hostdb"
SCHEMA_PROPERTY = "crawlkit.schema"   # table property: "<table>:v<version>" of the declaration it follows
log = logging.getLogger(__name__)


def join(base: str, *parts: str) -> str:
    """Join URI path parts without collapsing ``scheme://`` (unlike os.path / pathlib)."""
    return "/".join([base.rstrip("/")] + [p.strip("/") for p in parts])


def absolute(spark: SparkSession, path: str) -> str:
    """``path`` as every process opens it, for the parts executors write with pyarrow.

    A path without a scheme is resolved as Spark and Delta resolve it, against Hadoop's
    ``fs.defaultFS`` and working directory: on a cluster whose default filesystem is HDFS,
    ``crawl`` is ``hdfs://nn:8020/user/u/crawl``, where pyarrow alone would take it for each
    executor's own disk (and the driver, reading through Hadoop, would find nothing there).
    A local result stays a plain path (``crawl`` -> ``/home/u/crawl``)."""
    if scheme_of(path):
        return path
    fs, hpath = hadoop_fs(spark, path)
    uri = fs.makeQualified(hpath).toUri()
    return uri.getPath() if uri.getScheme() == "file" else uri.toString()


def crawldb_path(crawl_dir: str) -> str:
    return join(crawl_dir, CRAWLDB)


def linkdb_path(crawl_dir: str) -> str:
    return join(crawl_dir, LINKDB)


def hostdb_path(crawl_dir: str) -> str:
    return join(crawl_dir, HOSTDB)


def segment_path(crawl_dir: str, segment: str, part: str | None = None) -> str:
    return join(crawl_dir, "segments", segment, *( [part] if part else []))


def hadoop_fs(spark: SparkSession, path: str):
    """Hadoop's FileSystem for ``path`` and the path as a Hadoop Path (any URI scheme)."""
    hpath = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(path)
    return hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hpath


def qualified(spark: SparkSession, path: str) -> str:
    """Hadoop's spelling of a path (``file:///x`` -> ``file:/x``): Delta compares locations
    as strings when it creates a table."""
    fs, hpath = hadoop_fs(spark, path)
    return fs.makeQualified(hpath).toString()


def is_delta(spark: SparkSession, path: str) -> bool:
    return DeltaTable.isDeltaTable(spark, path)


def ensure_table(spark: SparkSession, path: str, table: str, *, deletion_vectors: bool = True) -> DeltaTable:
    """Create an empty Delta table with the declared schema if it does not exist yet. An
    existing table is brought up to its declaration first: nullable columns declared after
    it was written (``_add_nullable_columns``: a metadata-only commit, old rows read null),
    the columns Delta keeps statistics for (``schemas.data_skipping_columns``), then
    derived columns declared after it was written (``add_derived_columns``), and its
    ``SCHEMA_PROPERTY`` set to the declaration it now follows. A table that follows a *later*
    declaration than this crawlkit's (written by a newer version) is refused: this version's
    writes would drop the columns it does not know."""
    if not is_delta(spark, path):
        builder = (DeltaTable.createIfNotExists(spark)
                   .location(qualified(spark, path))
                   .addColumns(schemas.struct(table))
                   .property("delta.enableDeletionVectors", str(deletion_vectors).lower())
                   .property(SCHEMA_PROPERTY, _schema_property(table)))
        for key, value in _layout(table, schemas.columns(table)).items():
            builder = builder.property(key, value)
        builder.execute()
        return DeltaTable.forPath(spark, path)
    delta = DeltaTable.forPath(spark, path)
    present = delta.toDF().columns
    have = delta.detail().first()["properties"]
    _check_not_newer(table, path, have.get(SCHEMA_PROPERTY))
    layout = {k: v for k, v in _layout(table, present).items() if have.get(k) != v}
    schema = _schema_property(table)
    declared = {} if have.get(SCHEMA_PROPERTY) == schema else {SCHEMA_PROPERTY: schema}
    added = _add_nullable_columns(spark, path, table, present)
    missing = [c for c in schemas.derived(table) if c not in present]
    if missing:
        # the layout before the rewrite (its files get the declared statistics), the
        # declaration after it (a crash in between leaves the old one recorded)
        _set_properties(spark, path, layout)
        add_derived_columns(spark, path, table, missing)
        _set_properties(spark, path, declared)
    else:
        _set_properties(spark, path, layout | declared)
    if layout or declared or missing or added:
        delta = DeltaTable.forPath(spark, path)
    return delta


class NewerTableError(RuntimeError):
    """A table written by a newer crawlkit (it follows a later declaration than this one's)."""


def _check_not_newer(table: str, path: str, recorded: str | None) -> None:
    match = re.fullmatch(rf"{re.escape(table)}:v(\d+)", recorded or "")
    ours = schemas.version(table)
    if match and int(match[1]) > ours:
        raise NewerTableError(
            f"{table} at {path} was written by a newer crawlkit (its declaration v{match[1]}, this "
            f"version knows v{ours}): its stages would drop the columns they do not know. Run the "
            "newer crawlkit, or RESTORE the table to a version this one wrote (Delta time travel)")


def _add_nullable_columns(spark: SparkSession, path: str, table: str, present: list[str]) -> bool:
    """Add the declared nullable columns the table lacks, in one ``ADD COLUMNS`` commit: no
    file is rewritten, the old rows read null. They go last, as the declaration puts them
    (writes match columns by name). True when there were any."""
    derived = schemas.derived(table)
    added = [f for f in schemas.struct(table).fields
             if f.name not in present and f.name not in derived and f.nullable]
    if added:
        log.warning("%s at %s predates column(s) %s: adding them", table, path, ", ".join(f.name for f in added))
        ddl = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in added)
        spark.sql(f"ALTER TABLE delta.`{qualified(spark, path)}` ADD COLUMNS ({ddl})")
    return bool(added)


def _set_properties(spark: SparkSession, path: str, properties: dict[str, str]) -> None:
    """Set table properties in one commit (none: no commit)."""
    if properties:
        settings = ", ".join(f"'{k}' = '{v}'" for k, v in properties.items())
        spark.sql(f"ALTER TABLE delta.`{qualified(spark, path)}` SET TBLPROPERTIES ({settings})")


def _schema_property(table: str) -> str:
    """The value of ``SCHEMA_PROPERTY`` for the current declaration of ``table``."""
    return f"{table}:v{schemas.version(table)}"


def _layout(table: str, present: list[str]) -> dict[str, str]:
    """Table properties that follow from the declaration: Delta's statistics columns, those
    of them the table has (a table written before a column was declared gets it later)."""
    columns = schemas.data_skipping_columns(table)
    if columns is None:
        return {}
    return {"delta.dataSkippingStatsColumns": ",".join(c for c in columns if c in present)}


def add_derived_columns(spark: SparkSession, path: str, table: str, names: list[str]) -> None:
    """Add derived columns (``schemas.derived``) to a table written before they were
    declared, computed from each row, in one overwrite commit tagged
    ``migrate:<table>:v<version>``: a crash leaves the table as it was, and the next stage
    to open it tries again. A rewrite of every row, once per table (the crawldb gets
    ``url_hash`` this way)."""
    log.warning("%s at %s predates column(s) %s: rewriting it once to add them", table, path, ", ".join(names))
    rows = spark.read.format("delta").load(path)
    expressions = schemas.derived(table)
    types = {f.name: f.dataType for f in schemas.struct(table).fields}
    for name in names:
        rows = rows.withColumn(name, F.expr(expressions[name]).cast(types[name]))
    with commit_tag(spark, f"migrate:{table}:v{schemas.version(table)}"):
        rows.write.format("delta").mode("overwrite").option("mergeSchema", "true").save(path)


def read_table(spark: SparkSession, path: str, table: str, version: int | None = None) -> DataFrame:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return schemas.conform(reader.load(path), table)


def unreadable_version(spark: SparkSession, path: str, table: str, version: int) -> str | None:
    """Why time travel to ``version`` would fail, in a few words (None when it would not):
    VACUUM removed its data files, or log cleanup its commit. Checked before a stage relies
    on an old version, so the caller can say what to do instead of a Py4J trace mid-way."""
    try:
        files = read_table(spark, path, table, version).inputFiles()
    except Exception as exc:  # Delta's errors come through Py4J: no narrower class to catch
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        return first or type(exc).__name__
    return "vacuumed" if any(not path_exists(spark, f) for f in files) else None


def table_version(spark: SparkSession, path: str) -> int:
    return DeltaTable.forPath(spark, path).history(1).collect()[0]["version"]


@contextmanager
def session_setting(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    """Set a Spark SQL setting for the block only, restoring what was there before."""
    previous = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, previous)


def commit_tag(spark: SparkSession, tag: str):
    """Tag the Delta commits made inside the block with ``userMetadata = tag``."""
    return session_setting(spark, "spark.databricks.delta.commitInfo.userMetadata", tag)


def merge_source_materialized(spark: SparkSession):
    """For a MERGE whose source is already checkpointed: Delta would otherwise copy the
    source once more (``merge.materializeSource = auto`` copies any source that is not a
    plain Delta scan), one more job and one more copy of the source per commit."""
    return session_setting(spark, "spark.databricks.delta.merge.materializeSource", "none")


def merge_without_deletion_vectors(spark: SparkSession):
    """For a MERGE that updates most of a table's rows: rewrite the touched files instead of
    marking their old rows in deletion vectors (a second read and join of those files)."""
    return session_setting(spark, "spark.databricks.delta.merge.deletionVectors.persistent", "false")


def stored_rows(spark: SparkSession, path: str) -> int:
    """Rows of the Delta table at ``path`` as stored, answered by Delta from its file
    statistics without reading the data (0 when there is no table)."""
    if not is_delta(spark, path):
        return 0
    return spark.read.format("delta").load(path).count()


def tags_of(user_metadata: str | None) -> list[str]:
    """The stage tags of one commit: a commit that applies several (a round's scorers in one
    MERGE) carries them space-separated."""
    return (user_metadata or "").split()


GENERATE_TAG = "generate:"


def generated_tag(segment: str) -> str:
    """The tag of generate's commit that locks ``segment``'s URLs, which every other commit
    for the segment follows."""
    return GENERATE_TAG + segment


def was_applied(spark: SparkSession, path: str, tag: str, since: str | None = None) -> bool:
    """Whether a commit tagged ``tag`` (alone or among others) is in the table's history
    (the stage already ran). ``since``, a tag that every ``tag`` commit follows (a segment's
    ``generate:<segment>`` lock: segment names are not reused), bounds the search to the
    commits from the newest ``since`` on (``history_since``)."""
    commits = history(spark, path) if since is None else history_since(spark, path, tag, since)
    return applied_in(commits, tag)


def history_since(spark: SparkSession, path: str, tag: str, since: str) -> list[dict]:
    """The latest commits back to the newest tagged ``tag`` or ``since`` (``was_applied``),
    or the whole history: a stage that also needs ``since``'s commit time reads it once."""
    return recent_history(spark, path, lambda commits: bool(tags_in(commits) & {tag, since}))


def applied_in(commits: list[dict], tag: str) -> bool:
    """``was_applied`` on a history already read (``history``)."""
    return any(tag in tags_of(commit["userMetadata"]) for commit in commits)


def applied_segments(commits: list[dict], version: int) -> set[str]:
    """The segments whose ``updatedb:<segment>`` commit is at or before ``version``."""
    return _segments_tagged(commits, version, "updatedb:")


def generated_segments(commits: list[dict], version: int) -> set[str]:
    """The segments whose ``generate:<segment>`` commit is at or before ``version``."""
    return _segments_tagged(commits, version, GENERATE_TAG)


def _segments_tagged(commits: list[dict], version: int, prefix: str) -> set[str]:
    return {tag.removeprefix(prefix) for commit in commits if commit["version"] <= version
            for tag in tags_of(commit["userMetadata"]) if tag.startswith(prefix)}


def tags_in(commits: list[dict]) -> set[str]:
    """Every stage tag the ``commits`` carry."""
    return {tag for commit in commits for tag in tags_of(commit["userMetadata"])}


def committed_at(commits: list[dict], tag: str) -> datetime | None:
    """The time of the newest commit tagged ``tag`` among ``commits`` (None if none is): Delta's
    commit timestamp, which never decreases with the version."""
    return next((c["timestamp"] for c in reversed(commits) if tag in tags_of(c["userMetadata"])), None)


def commit_tags(spark: SparkSession, path: str) -> list[str | None]:
    """``userMetadata`` of every commit in the table's history, oldest first (None where a
    commit was untagged); [] when there is no table. Delta prunes history after
    ``delta.logRetentionDuration``, so only recent stages can be told apart this way."""
    return [commit["userMetadata"] for commit in history(spark, path)]


HISTORY_COLUMNS = ["version", "timestamp", "operation", "userMetadata", "operationMetrics"]


def history(spark: SparkSession, path: str) -> list[dict]:
    """The table's commits, oldest first: ``version``, ``timestamp``, ``operation``,
    ``userMetadata``, ``operationMetrics`` of each ([] when there is no table). One read (a
    Spark job) serves every question a stage asks of the history."""
    if not is_delta(spark, path):
        return []
    return _commits(DeltaTable.forPath(spark, path).history())


def recent_history(spark: SparkSession, path: str, enough: Callable[[list[dict]], bool],
                   first: int = 32, growth: int = 8) -> list[dict]:
    """The table's latest commits, oldest first (as ``history``), back to where ``enough``
    holds of them, or the whole history.

    Delta keeps 30 days of commits (``delta.logRetentionDuration``) and a full history read
    opens every one of them (at 3,000 commits 0.68 s warm, against 0.17 s back to a
    segment's generate: docs/performance.md, ``scripts/bench/history_reads.py``), so a
    question whose answer lies in the last rounds reads the newest ``first`` commits, then
    ``growth`` times as many, until it is answered."""
    if not is_delta(spark, path):
        return []
    table, limit = DeltaTable.forPath(spark, path), first
    while True:
        commits = _commits(table.history(limit))
        if len(commits) < limit or enough(commits):
            return commits
        limit *= growth


def _commits(frame: DataFrame) -> list[dict]:
    rows = frame.select(*HISTORY_COLUMNS).collect()
    return [r.asDict() for r in sorted(rows, key=lambda r: r["version"])]


class SegmentStateError(RuntimeError):
    """A segment is not in the state a stage needs: a part missing or half written, a stage
    run out of order, a segment that cannot be resumed or abandoned as it is."""


def write_segment_part(df: DataFrame, crawl_dir: str, segment: str, part: str, table: str,
                       *counters: Column) -> dict:
    """Write one segment part in the declared schema, replacing an earlier one only once the
    new one is complete: it is written beside it (``.<part>.writing``) and renamed into
    place, so a stage that dies while rewriting a part leaves the old one (Spark's overwrite
    deletes it first).

    ``counters`` (named aggregates: ``F.count(F.lit(1)).alias("pages")``) are computed over
    the rows as they are written (Spark's ``Observation``) and returned, instead of a second
    job that reads the part back."""
    observation = Observation(f"{part}:{segment}") if counters else None
    if observation is not None:
        df = df.observe(observation, *counters)
    target = segment_path(crawl_dir, segment, part)
    staging = join(segment_path(crawl_dir, segment), f".{part}.writing")
    schemas.conform(df, table).write.mode("overwrite").parquet(staging)
    move_into_place(df.sparkSession, staging, target)
    return observation.get if observation is not None else {}


def move_into_place(spark: SparkSession, source: str, target: str) -> None:
    """Replace ``target`` (a file or folder, if there is one) by ``source``: a delete and a
    rename, so a reader finds the old one, none, or the new one complete; never a torn one."""
    fs, target_path = hadoop_fs(spark, target)
    _, source_path = hadoop_fs(spark, source)
    fs.delete(target_path, True)
    if not fs.rename(source_path, target_path):
        raise OSError(f"could not rename {source} to {target}")


def read_segment_part(spark: SparkSession, crawl_dir: str, segment: str, part: str, table: str) -> DataFrame:
    """A segment part in the declared schema. One without its ``_SUCCESS`` marker (its writer
    died, or it was never written) is refused: read as it is, it looks like a segment without
    pages, and updatedb would apply it as one (losing the pages' outcomes and links)."""
    if not segment_part_exists(spark, crawl_dir, segment, part):
        raise SegmentStateError(f"segment {segment}: {segment_path(crawl_dir, segment, part)} is missing "
                                "or incomplete (the stage writing it died, or has not run): rerun that stage")
    return spark.read.schema(schemas.struct(table)).parquet(segment_path(crawl_dir, segment, part))


def segment_part_exists(spark: SparkSession, crawl_dir: str, segment: str, part: str) -> bool:
    return path_exists(spark, join(segment_path(crawl_dir, segment, part), "_SUCCESS"))


def path_exists(spark: SparkSession, path: str) -> bool:
    fs, hpath = hadoop_fs(spark, path)
    return fs.exists(hpath)


def list_segments(spark: SparkSession, crawl_dir: str) -> list[str]:
    fs, hpath = hadoop_fs(spark, join(crawl_dir, "segments"))
    if not fs.exists(hpath):
        return []
    return sorted((s.getPath().getName() for s in fs.listStatus(hpath) if s.isDirectory()),
                  key=segment_names.order_key)


def write_text(spark: SparkSession, path: str, text: str, *, overwrite: bool = True) -> None:
    """Write a small text file through Hadoop's FileSystem (works for any URI scheme); with
    ``overwrite`` False, an existing file makes ``create`` raise FileAlreadyExistsException."""
    fs, hpath = hadoop_fs(spark, path)
    out = fs.create(hpath, overwrite)
    try:
        out.write(bytearray(text.encode("utf-8")))
    finally:
        out.close()


def read_text(spark: SparkSession, path: str) -> str | None:
    """A small text file through Hadoop's FileSystem (a Spark read would skip hidden files
    such as the round lock)."""
    data = read_bytes(spark, path)
    return None if data is None else data.decode("utf-8", errors="replace")


def read_bytes(spark: SparkSession, path: str) -> bytes | None:
    """A small file's bytes through Hadoop's FileSystem (any URI scheme); None if missing."""
    fs, hpath = hadoop_fs(spark, path)
    if not fs.exists(hpath):
        return None
    stream = fs.open(hpath)
    try:
        return bytes(spark.sparkContext._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
    finally:
        stream.close()


def write_stats(spark: SparkSession, crawl_dir: str, segment: str, stage: str, counters: dict) -> None:
    """A stage's counters in ``segments/<segment>/_stats/<stage>.json``."""
    write_json_file(spark, join(segment_path(crawl_dir, segment), "_stats"), f"{stage}.json", counters)


def has_stats(spark: SparkSession, crawl_dir: str, segment: str, stage: str) -> bool:
    """Whether ``segments/<segment>/_stats/<stage>.json`` is there (the stage ran to its end)."""
    return path_exists(spark, join(segment_path(crawl_dir, segment), "_stats", f"{stage}.json"))


def write_json_file(spark: SparkSession, folder: str, name: str, data: dict) -> None:
    """``data`` as ``folder/name``, written beside and renamed into place: a kill mid-write
    leaves the old file or none, never a torn one (a resumed fetch reads its own counters)."""
    staging = join(folder, f".{name}.writing")
    write_text(spark, staging, json.dumps(data, sort_keys=True, default=str))
    move_into_place(spark, staging, join(folder, name))
