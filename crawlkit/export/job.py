"""The export job: crawldb + parse output -> boosted records -> files for a bulk loader.

An export directory holds::

    records/        export.partitions files in export.format (formats.py); none when empty
    deletes/        incremental exports only: documents to delete, same format; none when empty
    state/          Parquet records: what the index holds after loading this export (baseline.py)
    schema/         solr: solr-schema.xml, solr-schema-api.json; elasticsearch: index-template.json
    _export.json    the counters run_export returns, written last: it marks a complete export

The crawldb is read at one pinned Delta version (the newest at start, ``crawl_version`` in
every record), so a concurrent updatedb cannot mix two versions into one export. The export
is written into a hidden sibling directory and swapped in at the end, so a failure leaves an
earlier export in the same directory as it was.
"""
from __future__ import annotations

import json
import uuid

from pyspark.sql import SparkSession

from crawlkit import storage
from crawlkit.conf import Conf, ConfError
from crawlkit.export import baseline
from crawlkit.export.boost import with_boost
from crawlkit.export.formats import FORMATS, schema_files, write_deletes, write_records, write_state
from crawlkit.export.incremental import changes, new_state
from crawlkit.export.pages import candidates, parse_rows, records

MANIFEST = baseline.MANIFEST
PARTS = ("records", "deletes", baseline.STATE, "schema", MANIFEST)


def default_out(crawl_dir: str, fmt: str, version: int, since_version: int | None) -> str:
    since = "" if since_version is None else f"-since-v{since_version}"
    return storage.join(crawl_dir, "exports", f"{fmt}-v{version}{since}")


def _check_out(spark: SparkSession, out: str) -> None:
    """Refuse an ``out`` holding anything but an earlier (or interrupted) export, so a
    mistyped --out never replaces someone's files."""
    fs, path = storage.hadoop_fs(spark, out)
    if not fs.exists(path):
        return
    names = {status.getPath().getName() for status in fs.listStatus(path)}
    if not fs.getFileStatus(path).isDirectory() or not names <= set(PARTS):
        raise ValueError(f"{out} is not an export directory (it holds {sorted(names - set(PARTS))}); "
                         f"choose another --out")


def _sibling(out: str, kind: str) -> str:
    """A hidden directory next to ``out`` (same file system, so renames are cheap)."""
    parent, _, name = out.rstrip("/").rpartition("/")
    hidden = f".{name}.{kind}-{uuid.uuid4().hex[:12]}"
    return f"{parent}/{hidden}" if parent else hidden


def _swap(spark: SparkSession, staging: str, out: str) -> None:
    """Put the finished ``staging`` at ``out``: the old export is renamed aside first, put
    back if the second rename fails, and deleted only once the new one is in place."""
    fs, target = storage.hadoop_fs(spark, out)
    _, new = storage.hadoop_fs(spark, staging)
    _, aside = storage.hadoop_fs(spark, _sibling(out, "old"))
    had_old = fs.exists(target)
    if had_old and not fs.rename(target, aside):
        raise OSError(f"could not move the earlier export {out} aside; the new one is in {staging}")
    if not fs.rename(new, target):
        if had_old:
            fs.rename(aside, target)
        raise OSError(f"could not move the new export {staging} to {out}")
    if had_old:
        fs.delete(aside, True)


def _part_files(spark: SparkSession, directory: str) -> int:
    fs, path = storage.hadoop_fs(spark, directory)
    if not fs.exists(path):
        return 0
    return sum(1 for status in fs.listStatus(path) if status.getPath().getName().startswith("part-"))


def _boosted(spark: SparkSession, conf: Conf, version: int, parses, cached: list):
    """(candidate pages, boosted records, distribution) of one crawldb version; the frames
    read more than once are cached and appended to ``cached``."""
    crawldb = storage.read_table(spark, storage.crawldb_path(conf["crawl.dir"]), "crawldb", version)
    pages = candidates(crawldb, parses, conf).cache()
    unboosted = records(pages, version).cache()
    boosted, dist = with_boost(unboosted, conf, conf["spark.shuffle_partitions"])
    boosted = boosted.cache()
    cached += [pages, unboosted, boosted]
    return pages, boosted, dist


def _check_score_key(spark: SparkSession, conf: Conf, db_path: str, version: int) -> None:
    """``export.score`` must name a metric some page has: a mistyped name would give every
    page a score of 0, every record the same minimal boost, and the index no ranking."""
    from pyspark.sql import functions as F
    key = conf["export.score"]
    if not key:
        return
    metrics = (storage.read_table(spark, db_path, "crawldb", version)
               .select(F.explode(F.map_keys("scores")).alias("k")).distinct().limit(100))
    names = sorted(r.k for r in metrics.collect())
    if names and key not in names:
        raise ConfError(f"export.score = {key!r}: no page has that score; the crawldb's scores "
                        f"are {', '.join(names)} (or leave it empty for the ordering score)")


def run_export(spark: SparkSession, conf: Conf, out: str | None = None,
               since_version: int | None = None, since_export: str | None = None) -> dict:
    """Export the newest crawldb version into ``out`` (default
    ``<crawl>/exports/<format>-v<version>[-since-v<V>]``): everything, or only what changed
    since the export ``since_export`` or the newest export of crawldb version
    ``since_version`` (baseline.py); returns the counters, also in ``<out>/_export.json``."""
    fmt = conf["export.format"]
    if fmt not in FORMATS:
        raise ConfError(f"export.format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    crawl_dir = conf["crawl.dir"]
    db_path = storage.crawldb_path(crawl_dir)
    if not storage.is_delta(spark, db_path):
        raise ValueError(f"no crawldb under {crawl_dir}")
    version = storage.table_version(spark, db_path)
    prunings = _prunings(spark, crawl_dir)   # with the version: a pruning after it refuses the export
    if since_version is not None and since_export is not None:
        raise ValueError("give --since-version or --since-export, not both")
    if since_version is not None and not 0 <= since_version <= version:
        raise ValueError(f"--since-version must be between 0 and the crawldb version {version}")
    _check_score_key(spark, conf, db_path, version)
    if out is not None:   # a wrong --out fails before the baseline is read
        _check_out(spark, out)
    cached: list = []
    base = None
    if since_version is not None or since_export is not None:
        # before anything is written: an unreadable baseline fails here
        base = baseline.resolve(spark, crawl_dir, fmt, version, since_version, since_export,
                                lambda v, parses: _boosted(spark, conf, v, parses, cached)[1])
    if out is None:
        out = default_out(crawl_dir, fmt, version, None if base is None else base.since_version)
        _check_out(spark, out)
    staging = _sibling(out, "writing")
    try:
        counters = _write(spark, conf, staging, version, base, cached)
        _check_not_pruned(spark, crawl_dir, version, prunings)
        counters["out"] = out
        storage.write_text(spark, storage.join(staging, MANIFEST), json.dumps(counters, sort_keys=True, indent=1))
        _swap(spark, staging, out)
    except BaseException:
        fs, path = storage.hadoop_fs(spark, staging)
        fs.delete(path, True)
        raise
    finally:
        for frame in cached:
            frame.unpersist()
    return counters


def _prunings(spark: SparkSession, crawl_dir: str) -> tuple[int, int | None]:
    """(prunings begun, the newest crawldb version one was planned against): maintain's record."""
    from crawlkit.stages.maintain import last_run
    last = last_run(spark, crawl_dir) or {}
    return last.get("prunings", 0), last.get("pruned_version")


def _check_not_pruned(spark: SparkSession, crawl_dir: str, version: int, at_start: tuple[int, int | None]) -> None:
    """Refuse an export that ``maintain`` pruned segments under (segment_pruning.py): one began
    while it ran, is under way or was killed, or was planned against a crawldb version newer
    than the export's. A page's parse as the export's version describes it may be gone: the
    page would be left out, and an increment would delete it from the index."""
    from crawlkit.stages.segment_pruning import interrupted
    prunings, pruned_version = _prunings(spark, crawl_dir)
    if (interrupted(spark, crawl_dir) or prunings != at_start[0]
            or (pruned_version is not None and pruned_version > version)):
        raise storage.SegmentStateError(
            f"crawlkit maintain deleted segment data while this export read crawldb version {version} "
            "(or is doing so, or was killed doing so): a page's parse may have gone with it; run the "
            "export again (after `crawlkit maintain` if one was killed)")


def _write(spark: SparkSession, conf: Conf, staging: str, version: int, base: baseline.Baseline | None,
           cached: list) -> dict:
    """Write the records (or the changes since ``base``), the state and the schema files into
    ``staging``; returns the counters (all but ``out``)."""
    pages, boosted, dist = _boosted(spark, conf, version, parse_rows(spark, conf["crawl.dir"]), cached)
    skipped = {r["skip"]: r["count"] for r in pages.groupBy("skip").count().collect()}
    counters = {"format": conf["export.format"], "boost": conf["export.boost"], "crawl_version": version,
                "since_version": None, "distribution": dist.as_dict(),
                "skipped": {"no_parse": skipped.get("no_parse", 0), "noindex": skipped.get("noindex", 0),
                            "same_canonical": skipped.get(None, 0) - dist.count}}
    path = lambda part: storage.join(staging, part)  # noqa: E731
    if base is None:
        upserts, deletes, state, counters["records"] = boosted, None, boosted, dist.count
    else:
        upserts, deletes = changes(boosted, base.records, conf["export.min_change"])
        upserts, deletes = upserts.cache(), deletes.cache()
        cached += [upserts, deletes]
        state = new_state(base.records, upserts, deletes)
        counters.update(records=upserts.count(), deletes=deletes.count(),
                        since_version=base.since_version, baseline=base.source)
    # an empty set gets no files: Elasticsearch refuses an empty _bulk body
    if counters["records"]:
        write_records(upserts, conf, path("records"))
    if deletes is not None and counters["deletes"]:
        write_deletes(deletes, conf, path("deletes"))
    write_state(state, conf, path(baseline.STATE))
    counters["files"] = {part: _part_files(spark, path(part)) for part in ("records", "deletes")
                         if part == "records" or deletes is not None}
    counters["indexed"] = spark.read.parquet(path(baseline.STATE)).count()
    for name, text in schema_files(conf).items():
        storage.write_text(spark, storage.join(staging, "schema", name), text)
    return counters
