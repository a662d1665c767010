"""The export job: crawldb + parse output -> boosted records -> files for a bulk loader.

An export directory holds::

    records/        export.partitions files in export.format (formats.py)
    deletes/        incremental exports only: documents to delete, same format
    schema/         solr: solr-schema.xml, solr-schema-api.json; elasticsearch: index-template.json
    _export.json    the counters run_export returns, written last: it marks a complete export

The crawldb is read at one pinned Delta version (the newest at start, ``crawl_version`` in
every record), so a concurrent updatedb cannot mix two versions into one export.
"""
from __future__ import annotations

import json

from pyspark.sql import SparkSession

from crawlkit import storage
from crawlkit.conf import Conf, ConfError
from crawlkit.export.boost import with_boost
from crawlkit.export.formats import FORMATS, schema_files, write_deletes, write_records
from crawlkit.export.incremental import changes
from crawlkit.export.pages import candidates, parse_rows, records

MANIFEST = "_export.json"
PARTS = ("records", "deletes", "schema", MANIFEST)


def default_out(crawl_dir: str, fmt: str, version: int, since_version: int | None) -> str:
    since = "" if since_version is None else f"-since-v{since_version}"
    return storage.join(crawl_dir, "exports", f"{fmt}-v{version}{since}")


def _clear(spark: SparkSession, out: str) -> None:
    """Remove an earlier (or interrupted) export in ``out``; refuse any other directory, so a
    mistyped --out never deletes someone's files."""
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(out)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(path):
        return
    names = {status.getPath().getName() for status in fs.listStatus(path)}
    if not names <= set(PARTS):
        raise ValueError(f"{out} is not an export directory (it holds {sorted(names - set(PARTS))}); "
                         f"choose another --out")
    fs.delete(path, True)


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
               since_version: int | None = None) -> dict:
    """Export the newest crawldb version (only what changed since ``since_version`` when
    given) into ``out`` (default ``<crawl>/exports/<format>-v<version>[-since-v<V>]``);
    returns the counters, also written to ``<out>/_export.json``."""
    fmt = conf["export.format"]
    if fmt not in FORMATS:
        raise ConfError(f"export.format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    crawl_dir = conf["crawl.dir"]
    db_path = storage.crawldb_path(crawl_dir)
    if not storage.is_delta(spark, db_path):
        raise ValueError(f"no crawldb under {crawl_dir}")
    version = storage.table_version(spark, db_path)
    if since_version is not None and not 0 <= since_version <= version:
        raise ValueError(f"--since-version must be between 0 and the crawldb version {version}")
    _check_score_key(spark, conf, db_path, version)
    out = out or default_out(crawl_dir, fmt, version, since_version)
    _clear(spark, out)

    parses = parse_rows(spark, crawl_dir)
    cached: list = []
    pages, boosted, dist = _boosted(spark, conf, version, parses, cached)
    skipped = {r["skip"]: r["count"] for r in pages.groupBy("skip").count().collect()}
    counters = {"format": fmt, "boost": conf["export.boost"], "crawl_version": version,
                "since_version": since_version, "out": out, "distribution": dist.as_dict(),
                "skipped": {"no_parse": skipped.get("no_parse", 0), "noindex": skipped.get("noindex", 0),
                            "same_canonical": skipped.get(None, 0) - dist.count}}
    if since_version is None:
        write_records(boosted, conf, storage.join(out, "records"))
        counters["records"] = dist.count
    else:
        _, old, _ = _boosted(spark, conf, since_version, parses, cached)
        upserts, deletes = changes(boosted, old, conf["export.min_change"])
        upserts, deletes = upserts.cache(), deletes.cache()
        cached += [upserts, deletes]
        write_records(upserts, conf, storage.join(out, "records"))
        write_deletes(deletes, conf, storage.join(out, "deletes"))
        counters.update(records=upserts.count(), deletes=deletes.count())
    for name, text in schema_files(conf).items():
        storage.write_text(spark, storage.join(out, "schema", name), text)
    storage.write_text(spark, storage.join(out, MANIFEST), json.dumps(counters, sort_keys=True, indent=1))
    for frame in cached:
        frame.unpersist()
    return counters
