"""Duplicates: one page per visible text is kept (the one already kept, then the higher score,
then the shorter URL), the others marked with the page they copy; a duplicate comes back
when its text changes or the kept page leaves; one idempotent commit."""
from datetime import datetime, timedelta

from chispa import assert_df_equality
from pyspark.sql import functions as F

from crawlkit import storage
from crawlkit.conf import make_conf
from crawlkit.crawl import run_crawl
from crawlkit.replay.testing import replay_factory  # noqa: F401  (fixture)
from crawlkit.stages.dedup import duplicate_changes, run_dedup
from crawlkit.stages.transition import updated_entries

from sparkhelpers import crawldb_rows

NOW = datetime(2026, 3, 1, 12, 0, 0)
LATER = NOW + timedelta(days=30)


def page(path, status, score, digest, **kw):
    return {"url": f"http://a.test/{path}", "host": "a.test", "domain": "a.test", "status": status,
            "score": score, "digest": digest, "fetch_time": LATER, **kw}


def changes(spark, rows):
    got = duplicate_changes(crawldb_rows(spark, rows, NOW))
    return {r.url.rsplit("/", 1)[1]: (r.status, r.metadata.get("duplicate_of", "").rsplit("/", 1)[-1])
            for r in got.collect()}


def test_the_best_copy_is_kept_and_the_others_point_to_it(spark):
    assert changes(spark, [
        page("a", "fetched", 0.2, "T1"),
        page("b", "not_modified", 0.9, "T1"),      # best score: kept
        page("c", "fetched", 0.9, "T1"),           # same score, same length: b < c
        page("long-url", "fetched", 0.9, "T2"),
        page("s", "fetched", 0.9, "T2"),           # same score: the shorter URL
        page("alone", "fetched", 0.5, "T3"),
        page("notext", "fetched", 0.5, None),      # no text: never a duplicate
        page("notext2", "fetched", 0.5, None),
        page("gone", "gone", 0.9, "T3"),           # no content now: not in the group
        {"url": "crawlkit:virtual", "host": "", "status": "fetched", "score": 9.0, "digest": "T1"},
    ]) == {"a": ("duplicate", "b"), "c": ("duplicate", "b"), "long-url": ("duplicate", "s")}


def test_the_kept_page_keeps_its_place_against_a_better_scored_new_copy(spark):
    kept = {"duplicate_of": "http://a.test/k"}
    assert changes(spark, [
        page("k", "fetched", 0.1, "T"),
        page("old", "duplicate", 0.8, "T", metadata=kept),
        page("new", "fetched", 0.9, "T"),          # a copy found this round
    ]) == {"new": ("duplicate", "k")}


def test_a_duplicate_comes_back_when_the_kept_page_leaves_or_its_text_changes(spark):
    of = lambda url: {"duplicate_of": f"http://a.test/{url}"}  # noqa: E731
    assert changes(spark, [
        page("k", "gone", 0.9, "T"),               # the kept page went away
        page("d1", "duplicate", 0.5, "T", metadata=of("k")),
        page("d2", "duplicate", 0.4, "T", metadata=of("k")),
        page("k2", "fetched", 0.9, "U"),
        page("d3", "duplicate", 0.5, "V", metadata={**of("k2"), "spam": "false"}),  # its text changed
        page("d4", "duplicate", 0.5, None, metadata=of("k2")),                     # no text now
    ]) == {"d1": ("fetched", ""), "d2": ("duplicate", "d1"), "d3": ("fetched", ""), "d4": ("fetched", "")}


def test_a_refetched_duplicate_stays_one_and_a_changed_one_is_decided_again(spark):
    db = crawldb_rows(spark, [
        page("d", "duplicate", 0.5, "T", signature="S", metadata={"duplicate_of": "http://a.test/k"}),
        page("e", "duplicate", 0.5, "T", signature="S", metadata={"duplicate_of": "http://a.test/k"}),
    ], NOW)
    outcome = spark.createDataFrame(
        [("http://a.test/d", "success", "S", "T"), ("http://a.test/e", "success", "S2", "T2")],
        "url string, fetch_status string, signature string, digest string")
    for column, kind in [("parse_error", "string"), ("error", "string"), ("retry_after", "int"),
                         ("fetched_at", "timestamp"), ("headers", "map<string,string>"),
                         ("redirect_url", "string"), ("http_status", "int")]:
        outcome = outcome.withColumn(column, F.lit(None).cast(kind))
    rows = {r.url[-1]: r for r in updated_entries(db, outcome, make_conf(), NOW).collect()}
    assert (rows["d"].status, rows["d"].metadata) == ("duplicate", {"duplicate_of": "http://a.test/k"})
    assert (rows["e"].status, rows["e"].digest) == ("fetched", "T2")     # dedup decides its place again
    assert "duplicate_of" not in rows["e"].metadata


def test_run_dedup_marks_once_and_a_rerun_changes_nothing(spark, tmp_path):
    conf = make_conf(crawl__dir=str(tmp_path))
    path = storage.crawldb_path(str(tmp_path))
    crawldb_rows(spark, [page("a", "fetched", 0.2, "T"), page("b", "fetched", 0.9, "T")], NOW) \
        .write.format("delta").save(path)
    assert run_dedup(spark, conf, "s1") == {"segment": "s1", "marked": 1, "revived": 0}
    version = storage.table_version(spark, path)
    assert run_dedup(spark, conf, "s1") == {"segment": "s1", "marked": 0, "revived": 0}
    assert storage.table_version(spark, path) == version            # nothing to commit
    got = storage.read_table(spark, path, "crawldb").select("url", "status").orderBy("url")
    assert_df_equality(got, spark.createDataFrame(
        [("http://a.test/a", "duplicate"), ("http://a.test/b", "fetched")], got.schema))
    assert run_dedup(spark, make_conf(crawl__dir=str(tmp_path), db__dedup=False), "s2")["skipped"]


def test_a_round_marks_the_copy_served_on_another_host(spark, replay_factory, tmp_path):
    server = replay_factory(["gen:10,seed=1,hosts=1"])
    same, other = "/__trap/page/same", "/__trap/page/other"     # a trap page's text is its path
    seeds = [f"http://a.test{same}", f"http://mirror.test{same}", f"http://a.test{other}"]
    (tmp_path / "seeds.txt").write_text("\n".join(seeds) + "\n")
    conf = make_conf(crawl__dir=str(tmp_path / "crawl"), crawl__topN=10, fetcher__proxy=server.proxy_url,
                     fetcher__server_delay=0.0, spark__shuffle_partitions=2)
    report = run_crawl(spark, conf, str(tmp_path / "seeds.txt"), 1, lambda: NOW, log=lambda _m: None)[0]
    assert report.counters["dedup"]["marked"] == 1
    rows = {r.url: r for r in storage.read_table(spark, storage.crawldb_path(conf["crawl.dir"]), "crawldb")
            .filter(F.col("url").isin(*seeds)).collect()}
    # equal scores: the shorter URL is kept
    assert [rows[url].status for url in seeds] == ["fetched", "duplicate", "fetched"]
    assert rows[seeds[1]].metadata["duplicate_of"] == seeds[0]
    assert rows[seeds[0]].digest == rows[seeds[1]].digest != rows[seeds[2]].digest
