"""The foundation in a real session: Delta with the declared schema, GraphFrames' jar."""
from datetime import datetime

import pytest
from delta.tables import DeltaTable

from crawlkit import schemas, storage
from crawlkit.conf import make_conf
from crawlkit.crawldb import new_entries
from crawlkit.spark import has_graphframes

NOW = datetime(2026, 1, 1, 12, 0, 0)


def test_crawldb_roundtrip_with_declared_schema_and_history(spark, tmp_path):
    path = str(tmp_path / "crawldb")
    table = storage.ensure_table(spark, path, "crawldb")
    rows = spark.createDataFrame(
        [("http://a.test/", "a.test", "a.test", 0), ("http://b.test/x", "b.test", "b.test", 1)],
        "url string, host string, domain string, depth int")
    with storage.commit_tag(spark, "inject:test"):
        table.alias("db").merge(new_entries(rows, make_conf(), NOW).alias("s"), "db.url = s.url") \
            .whenNotMatchedInsertAll().execute()
    back = storage.read_table(spark, path, "crawldb")
    declared = [(f.name, f.dataType, f.nullable) for f in schemas.struct("crawldb").fields]
    stored = spark.read.format("delta").load(path).schema
    assert [(f.name, f.dataType, f.nullable) for f in stored.fields] == declared
    assert sorted(r.url for r in back.collect()) == ["http://a.test/", "http://b.test/x"]
    assert {r.status for r in back.collect()} == {"unfetched"}
    history = DeltaTable.forPath(spark, path).history().orderBy("version").collect()
    assert [h.operation for h in history] == ["CREATE TABLE", "MERGE"]
    assert history[-1].userMetadata == "inject:test"
    assert storage.was_applied(spark, path, "inject:test")
    assert not storage.was_applied(spark, path, "inject:other")
    props = DeltaTable.forPath(spark, path).detail().first().properties
    assert props["delta.enableDeletionVectors"] == "true"


def test_conform_rejects_missing_required_column(spark):
    df = spark.createDataFrame([("http://a.test/",)], "url string")
    with pytest.raises(ValueError, match="host"):
        schemas.conform(df, "crawldb")


@pytest.mark.skipif("not __import__('crawlkit.spark', fromlist=['x']).local_jars()")
def test_graphframes_pagerank_on_five_nodes(spark):
    """Proves the GraphFrames jar loads; ranks checked against values solved by hand."""
    if not has_graphframes(spark):
        pytest.skip("GraphFrames jar not on the classpath: Maven Central here does not serve "
                    "io.graphframes:graphframes-spark4_2.13 (see README, 'Known limits')")
    from graphframes import GraphFrame
    v = spark.createDataFrame([(i,) for i in "abcde"], "id string")
    # a -> b, b -> c, c -> a, d -> a, e -> a: a cycle of three fed by two leaves' sources
    e = spark.createDataFrame([("a", "b"), ("b", "c"), ("c", "a"), ("d", "a"), ("e", "a")], "src string, dst string")
    ranks = {r.id: r.pagerank for r in GraphFrame(v, e).pageRank(resetProbability=0.15, tol=1e-10).vertices.collect()}
    # GraphX form (sums to N=5): d, e get 0.15 (no in-links); a = 0.15 + 0.85*(c + d + e) ...
    d_rank = 0.15
    # solve a = 0.15 + 0.85*(c + 2*0.15), b = 0.15 + 0.85*a, c = 0.15 + 0.85*b
    k = 0.85
    a = (0.15 + k * 0.3 + k * (0.15 + k * 0.15)) / (1 - k ** 3)
    b = 0.15 + k * a
    c = 0.15 + k * b
    expected = {"a": a, "b": b, "c": c, "d": d_rank, "e": d_rank}
    for node, value in expected.items():
        assert ranks[node] == pytest.approx(value, rel=1e-6)


def test_a_segment_part_counts_its_rows_as_it_is_written(spark, tmp_path):
    from crawlkit.stages.fetch import _tally, by_status

    rows = [(f"http://a.test/{i}", "a.test", status, NOW, False, "s1", body)
            for i, (status, body) in enumerate([("success", b"abc"), ("success", b"de"),
                                                ("not_found", b"x"), ("retry", None),
                                                ("from_a_later_version", None)])]
    content = spark.createDataFrame(
        rows, "url string, host string, fetch_status string, fetched_at timestamp, "
              "truncated boolean, segment string, content binary")
    tally = storage.write_segment_part(content, str(tmp_path), "s1", "content", "content", *_tally())
    assert tally["pages"] == 5 and tally["bytes"] == 6
    assert by_status(tally) == {"success": 2, "not_found": 1, "retry": 1, "other": 1}
    written = storage.read_segment_part(spark, str(tmp_path), "s1", "content", "content")
    assert written.count() == 5
    assert storage.write_segment_part(content.limit(0), str(tmp_path), "s2", "content", "content",
                                      *_tally())["pages"] == 0
    assert storage.write_segment_part(content, str(tmp_path), "s3", "content", "content") == {}


def test_known_warnings_are_quiet_at_warn_and_logged_below_it(spark):
    from crawlkit.spark import KNOWN_WARNINGS, quiet_known_warnings
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j

    def levels():
        return {str(log4j.LogManager.getLogger(name).getLevel()) for name in KNOWN_WARNINGS}

    assert levels() == {"ERROR"}           # the session came from get_spark at the default WARN
    try:
        quiet_known_warnings(spark, "INFO")
        assert levels() == {"INFO"}
    finally:
        quiet_known_warnings(spark, "WARN")
    assert levels() == {"ERROR"}


def test_times_reach_spark_and_come_back_as_utc_whatever_the_machine_zone(spark, monkeypatch):
    """A naive datetime is UTC in crawlkit; PySpark converts it with the process's time zone,
    so on a machine set to New York 12:00 reached Spark as 17:00."""
    import time

    from pyspark.sql import functions as F

    from crawlkit.spark import get_spark
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        session = get_spark(make_conf(spark__master="local[2]"), checkpoints=False)
        row = session.range(1).select(F.lit(NOW).cast("string").alias("text"), F.lit(NOW).alias("t")).first()
        assert (row.text, row.t) == ("2026-01-01 12:00:00", NOW)
    finally:
        monkeypatch.undo()
        time.tzset()
