"""Tables brought up to their declaration: derived columns, and the columns Delta keeps
statistics for."""
import glob
import json
from datetime import datetime

from delta.tables import DeltaTable
from pyspark.sql import functions as F

from crawlkit import schemas, storage
from crawlkit.conf import make_conf
from crawlkit.crawldb import new_entries

NOW = datetime(2026, 1, 1, 12, 0, 0)


def _rows(spark):
    return new_entries(spark.createDataFrame(
        [("http://a.test/", "a.test", 0), ("http://b.test/x?y=1", "b.test", 2), ("https://c.test/é", "c.test", 1)],
        "url string, host string, depth int"), make_conf(), NOW)


def test_conform_and_frame_compute_the_url_fingerprint_a_row_lacks(spark):
    """url_hash is derived (xxhash64 of the URL, Spark's function with its seed 42): rows
    built without it get it, rows that carry it keep it."""
    rows = _rows(spark)
    got = {r.url: r.url_hash for r in rows.collect()}
    expected = {r.url: r.h for r in rows.select("url", F.xxhash64("url").alias("h")).collect()}
    assert got == expected and len(set(got.values())) == 3
    built = schemas.frame(spark, "crawldb", [r.asDict() | {"url_hash": None} for r in rows.collect()])
    assert {r.url: r.url_hash for r in built.collect()} == expected
    carried = schemas.conform(rows.withColumn("url_hash", F.lit(7).cast("long")), "crawldb")
    assert {r.url_hash for r in carried.collect()} == {7}


def test_a_crawldb_written_before_url_hash_gets_it_in_one_commit_once(spark, tmp_path):
    """A crawldb of schema v1 (no url_hash column) is rewritten once, in one tagged overwrite,
    when a stage opens it: every row keeps its values and gains its fingerprint, and the
    table records the declaration it now follows; opening it again changes nothing."""
    path = str(tmp_path / "crawldb")
    old = _rows(spark).drop("url_hash", "digest").withColumn("schema_version", F.lit(1))
    old.write.format("delta").save(path)
    assert "url_hash" not in spark.read.format("delta").load(path).columns

    storage.ensure_table(spark, path, "crawldb")
    history = DeltaTable.forPath(spark, path).history().orderBy("version").collect()
    assert [(h.operation, h.userMetadata) for h in history] == [
        ("WRITE", None), ("ADD COLUMNS", None), ("SET TBLPROPERTIES", None), ("WRITE", "migrate:crawldb:v3"),
        ("SET TBLPROPERTIES", None)]
    assert DeltaTable.forPath(spark, path).detail().first().properties[storage.SCHEMA_PROPERTY] == "crawldb:v3"
    migrated = spark.read.format("delta").load(path)
    assert {r.url: r.asDict() for r in migrated.drop("url_hash", "digest").collect()} == \
        {r.url: r.asDict() for r in old.collect()}
    assert migrated.filter(F.col("url_hash") != F.xxhash64("url")).count() == 0
    assert migrated.filter(F.col("url_hash").isNull()).count() == 0

    storage.ensure_table(spark, path, "crawldb")
    assert DeltaTable.forPath(spark, path).history(1).first().version == history[-1].version


def test_a_crawldb_written_before_digest_gets_the_column_without_a_rewrite(spark, tmp_path):
    """A nullable column declared later (crawldb v3's digest) is added by one ADD COLUMNS
    commit, no file rewritten: old rows read null, and the stages' writes (an overwrite of
    some rows, a MERGE) write it."""
    path = str(tmp_path / "crawldb")
    _rows(spark).drop("digest").write.format("delta").save(path)
    files = set(spark.read.format("delta").load(path).inputFiles())
    table = storage.ensure_table(spark, path, "crawldb")
    operations = [h.operation for h in table.history().orderBy("version").collect()]
    assert operations[:2] == ["WRITE", "ADD COLUMNS"] and "WRITE" not in operations[1:]
    assert set(spark.read.format("delta").load(path).inputFiles()) == files
    assert storage.read_table(spark, path, "crawldb").filter(F.col("digest").isNotNull()).count() == 0

    a = storage.read_table(spark, path, "crawldb").filter(F.col("host") == "a.test").withColumn("digest", F.lit("D1"))
    a.localCheckpoint().write.format("delta").mode("overwrite").option("replaceWhere", "host = 'a.test'").save(path)
    b = (storage.read_table(spark, path, "crawldb").filter(F.col("host") == "b.test")
         .withColumn("digest", F.lit("D2")).localCheckpoint())
    table.alias("t").merge(b.alias("s"), "t.url = s.url").whenMatchedUpdateAll().execute()
    got = {r.host: r.digest for r in storage.read_table(spark, path, "crawldb").collect()}
    assert got == {"a.test": "D1", "b.test": "D2", "c.test": None}


def _stats_columns(path: str) -> set[str]:
    """Columns with a null count in the statistics of the table's data files."""
    seen = set()
    for name in glob.glob(f"{path}/_delta_log/*.json"):
        for line in open(name):
            add = json.loads(line).get("add")
            if add and add.get("stats"):
                seen.update(json.loads(add["stats"]).get("nullCount", {}))
    return seen


def test_delta_keeps_statistics_for_the_declared_columns_only(spark, tmp_path):
    """Statistics on every column made each crawldb write ~1.5x slower; the declared ones
    are those stages filter on. A table created before the declaration gets it when opened."""
    path = str(tmp_path / "crawldb")
    storage.ensure_table(spark, path, "crawldb")
    _rows(spark).write.format("delta").mode("append").save(path)
    declared = {"url", "status", "fetch_time", "score", "generated_segment"}
    assert schemas.data_skipping_columns("crawldb") == ["url", "status", "fetch_time", "score", "generated_segment"]
    assert _stats_columns(path) == declared

    older = str(tmp_path / "older")
    _rows(spark).write.format("delta").save(older)
    assert len(_stats_columns(older)) > len(declared)
    storage.ensure_table(spark, older, "crawldb")
    props = DeltaTable.forPath(spark, older).detail().first().properties
    assert props["delta.dataSkippingStatsColumns"] == "url,status,fetch_time,score,generated_segment"


def test_a_table_written_by_a_newer_crawlkit_is_refused_before_anything_is_written(spark, tmp_path):
    """Rolling crawlkit back over a crawldb a newer version wrote would drop the newer
    version's columns from every row a stage rewrites; the stage refuses instead."""
    import pytest

    path = str(tmp_path / "crawldb")
    storage.ensure_table(spark, path, "crawldb")
    newer = f"crawldb:v{schemas.version('crawldb') + 1}"
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('{storage.SCHEMA_PROPERTY}' = '{newer}')")
    before = DeltaTable.forPath(spark, path).history(1).first().version
    with pytest.raises(storage.NewerTableError, match=f"written by a newer crawlkit .*v{schemas.version('crawldb')}"):
        storage.ensure_table(spark, path, "crawldb")
    assert DeltaTable.forPath(spark, path).history(1).first().version == before
    assert DeltaTable.forPath(spark, path).detail().first().properties[storage.SCHEMA_PROPERTY] == newer
