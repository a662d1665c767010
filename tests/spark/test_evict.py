"""The limited buffer: the top B pages by score keep their content, the rest are evicted, an
evicted page whose estimate rises into the top B is made due again; one idempotent commit."""
from datetime import datetime, timedelta

from chispa import assert_df_equality
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from crawlkit import storage
from crawlkit.conf import make_conf
from crawlkit.stages.evict import buffer_changes, run_evict
from crawlkit.stages.generate import generate

from sparkhelpers import crawldb_rows

NOW = datetime(2026, 3, 1, 12, 0, 0)
EARLIER = NOW - timedelta(days=1)
LATER = NOW + timedelta(days=30)


def db(spark):
    page = lambda n, status, score, **kw: {"url": f"http://a.test/{n}", "host": "a.test",  # noqa: E731
                                           "domain": "a.test", "status": status, "score": score,
                                           "fetch_time": LATER, **kw}
    return crawldb_rows(spark, [
        page(1, "fetched", 0.9),
        page(2, "not_modified", 0.5),                  # stored, loses its place to 4
        page(3, "fetched", 0.1),                       # stored, lowest: evicted
        page(4, "evicted", 0.7, metadata={"evicted_at": "2026-02-01T00:00:00Z"}),  # rose: readmitted
        page(5, "unfetched", 1.0, fetch_time=EARLIER),  # no content, takes no place
        page(6, "gone", 0.95),
        {"url": "crawlkit:virtual", "host": "", "domain": None, "score": 5.0, "status": "fetched"},
    ], NOW)


def test_lowest_scored_stored_pages_are_evicted_and_a_risen_one_readmitted(spark):
    got = buffer_changes(db(spark), 2, NOW).orderBy("url")
    want = spark.createDataFrame([
        ("http://a.test/2", "evicted", LATER, {"evicted_at": "2026-03-01T12:00:00Z"}),
        ("http://a.test/3", "evicted", LATER, {"evicted_at": "2026-03-01T12:00:00Z"}),
        ("http://a.test/4", "unfetched", NOW, {"readmitted_at": "2026-03-01T12:00:00Z"}),
    ], got.schema)   # (chispa's ignore_nullable does not reach inside a map's nullability)
    assert_df_equality(got, want)


def apply(db, changes):
    """The crawldb with the changed rows' status, fetch_time and metadata (evict's MERGE)."""
    new = changes.select("url", *[F.col(c).alias(f"_{c}") for c in ("status", "fetch_time", "metadata")])
    joined = db.join(new, on="url", how="left")
    return joined.select(*[F.coalesce(F.col(f"_{c}"), F.col(c)).alias(c) if c in ("status", "fetch_time", "metadata")
                           else F.col(c) for c in db.columns])


def test_a_readmitted_page_holds_its_place_until_it_is_refetched(spark):
    """Readmitted but not refetched yet (a time limit, a retry, the round's caps): the next
    evict must not readmit another page into the same place."""
    after = apply(db(spark), buffer_changes(db(spark), 2, NOW))
    assert buffer_changes(after, 2, NOW + timedelta(days=1)).count() == 0
    # its estimate falls below a stored page's before the refetch: out again, nothing fetched
    fallen = after.withColumn("score", F.when(F.col("url") == "http://a.test/4", 0.01).otherwise(F.col("score")))
    out = {r.url: (r.status, sorted(r.metadata)) for r in buffer_changes(fallen, 2, NOW).collect()}
    assert out == {"http://a.test/4": ("evicted", ["evicted_at"]), "http://a.test/2": ("unfetched", ["readmitted_at"])}
    # refetched and stored: the mark goes, the page keeps its place
    stored = after.withColumn("status", F.when(F.col("url") == "http://a.test/4", "fetched").otherwise(F.col("status")))
    assert [(r.url, r.status, r.metadata) for r in buffer_changes(stored, 2, NOW).collect()] == [
        ("http://a.test/4", "fetched", {})]


def test_a_buffer_larger_than_the_stored_pages_changes_nothing(spark):
    assert buffer_changes(db(spark), 10, NOW).filter(F.col("status") == "evicted").count() == 0


def test_run_evict_keeps_at_most_b_pages_and_a_rerun_is_a_no_op(spark, tmp_path):
    conf = make_conf(crawl__dir=str(tmp_path), crawl__buffer_pages=2, generate__min_score=0.0)
    db(spark).write.format("delta").save(storage.crawldb_path(str(tmp_path)))
    counters = run_evict(spark, conf, NOW, "s1")
    assert (counters["evicted"], counters["readmitted"]) == (2, 1)
    table = DeltaTable.forPath(spark, storage.crawldb_path(str(tmp_path)))
    version = table.history(1).collect()[0]["version"]
    stored = table.toDF().filter(F.col("status").isin("fetched", "not_modified")
                                 & F.col("url").startswith("http")).select("url")
    assert sorted(r.url for r in stored.collect()) == ["http://a.test/1"]
    assert run_evict(spark, conf, NOW, "s1")["skipped"] == "already applied"
    assert table.history(1).collect()[0]["version"] == version
    # generate skips the evicted pages and offers the readmitted one with the never-fetched one
    listed = generate(table.toDF(), conf, NOW, "s2").select("url").collect()
    assert sorted(r.url for r in listed) == ["http://a.test/4", "http://a.test/5"]


def test_no_buffer_is_a_no_op(spark, tmp_path):
    conf = make_conf(crawl__dir=str(tmp_path))
    assert run_evict(spark, conf, NOW, "s1") == {"segment": "s1", "skipped": "no buffer"}


def test_the_evict_command_applies_the_buffer_to_a_crawl_directory(spark, tmp_path, capsys):
    import json

    from crawlkit import cli
    db(spark).write.format("delta").save(storage.crawldb_path(str(tmp_path)))
    code = cli.main(["evict", "--crawl-dir", str(tmp_path), "--segment", "s1", "--quiet",
                     "--now", NOW.isoformat(), "--conf", "crawl.buffer_pages=1"])
    assert code == 0
    counters = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (counters["evicted"], counters["readmitted"]) == (2, 0)   # 0.7 stays evicted below 0.9
