"""The scoring job: one tagged MERGE into the Delta crawldb; OPIC applies a segment once."""
from __future__ import annotations

from datetime import datetime

import pytest

from crawlkit import storage
from crawlkit.scoring import VIRTUAL_URL, run_scoring
from crawlkit.scoring.opic import opic_inject

NOW = datetime(2024, 1, 1, 12, 0, 0)
A, B, C, D = (f"http://{h}.test/" for h in "abcd")
LINKS = [(A, B), (A, C), (B, C), (C, A)]   # d has no links at all


@pytest.fixture
def crawl(spark, make_test_conf, make_crawldb, make_links):
    """A crawl directory: crawldb (seed a injected under OPIC), linkdb, one fetched segment."""
    conf = make_test_conf(scoring__engine="driver")
    crawl_dir = conf["crawl.dir"]
    seeds = opic_inject(make_crawldb([{"url": A, "depth": 0}]))
    crawldb = seeds.unionByName(make_crawldb([{"url": u} for u in (B, C, D)]))
    crawldb.write.format("delta").save(storage.crawldb_path(crawl_dir))
    make_links(LINKS).write.format("delta").save(storage.linkdb_path(crawl_dir))
    content = spark.createDataFrame(
        [(A, "a.test", "success", NOW, False, "s1"), (D, "d.test", "retry", NOW, False, "s1")],
        "url string, host string, fetch_status string, fetched_at timestamp, truncated boolean, "
        "segment string")   # d failed: not processed
    storage.write_segment_part(content, crawl_dir, "s1", "content", "content")
    return conf, crawl_dir


def crawldb_rows(spark, crawl_dir):
    return {r.url: r for r in storage.read_table(spark, storage.crawldb_path(crawl_dir), "crawldb").collect()}


def test_pagerank_job_writes_scores_and_ordering_score(spark, crawl, ref_pagerank):
    conf, crawl_dir = crawl
    counters = run_scoring(spark, crawl_dir, conf, NOW, segment="s1", scorer="pagerank")
    assert counters["tag"] == "score-pagerank:s1" and counters["engine"] == "driver"
    rows = crawldb_rows(spark, crawl_dir)
    expected = ref_pagerank([A, B, C, D], LINKS)
    for url in (A, B, C, D):
        assert rows[url].scores["pagerank"] == pytest.approx(expected[url], abs=1e-9)
        assert rows[url].score == pytest.approx(expected[url], abs=1e-9)   # combine: pagerank alone
    assert "pagerank" not in (rows[VIRTUAL_URL].scores or {})             # virtual page untouched
    assert storage.was_applied(spark, storage.crawldb_path(crawl_dir), "score-pagerank:s1")


def test_opic_job_applies_a_segment_once(spark, crawl):
    conf, crawl_dir = crawl
    first = run_scoring(spark, crawl_dir, conf, NOW, segment="s1", scorer="opic")
    rows = crawldb_rows(spark, crawl_dir)
    assert first["skipped"] == 0
    assert sum(r.opic_cash for r in rows.values()) == pytest.approx(1.0, abs=1e-12)
    assert rows[A].opic_history == pytest.approx(1.0) and rows[A].last_processed == NOW
    assert rows[D].last_processed is None              # failed fetch: not processed
    # The pagerank score is kept next to opic's; the ordering score follows scoring.scorer.
    second = run_scoring(spark, crawl_dir, conf, NOW, segment="s1", scorer="opic")
    assert second["skipped"] == 1
    again = crawldb_rows(spark, crawl_dir)
    assert {u: r.opic_cash for u, r in again.items()} == {u: r.opic_cash for u, r in rows.items()}


def test_opic_needs_a_segment(spark, make_test_conf):
    conf = make_test_conf()
    with pytest.raises(ValueError, match="segment"):
        run_scoring(spark, conf["crawl.dir"], conf, NOW, scorer="opic")


def test_round_scoring_also_computes_the_metrics_the_fetch_list_interleaves(spark, crawl, ref_pagerank):
    from crawlkit.scoring.job import run_round_scoring

    conf, crawl_dir = crawl
    conf = conf.with_overrides({"scoring.scorer": "pagerank", "generate.policy": "interleave",
                                "generate.interleave": ["score", "backlinks"]})
    counters = run_round_scoring(spark, crawl_dir, conf, NOW, segment="s1")
    assert counters["scorer"] == "pagerank" and set(counters["also"]) == {"backlinks"}
    db_path = storage.crawldb_path(crawl_dir)
    last = storage.commit_tags(spark, db_path)[-1]     # both metrics in one commit
    assert storage.tags_of(last) == ["score-pagerank:s1", "score-backlinks:s1"]
    assert storage.was_applied(spark, db_path, "score-backlinks:s1")
    assert not storage.was_applied(spark, db_path, "score-backlinks")
    rows = crawldb_rows(spark, crawl_dir)
    expected = ref_pagerank([A, B, C, D], LINKS)
    assert {u: rows[u].scores["backlinks"] for u in (A, B, C, D)} == {A: 1.0, B: 1.0, C: 2.0, D: 0.0}
    for url in (A, B, C, D):   # the ordering score stays the scorer's
        assert rows[url].score == pytest.approx(expected[url], abs=1e-9)
    plain = conf.with_overrides({"generate.policy": "score"})
    assert "also" not in run_round_scoring(spark, crawl_dir, plain, NOW, segment="s1")


def test_opic_on_a_crawl_begun_under_pagerank_inserts_the_virtual_page_in_its_merge(
        spark, make_test_conf, make_crawldb, make_links):
    """A crawldb without OPIC's virtual page (the crawl began under another scorer): the
    scoring MERGE that first runs OPIC inserts the page, updates the others, in one commit."""
    conf = make_test_conf(scoring__engine="driver")
    crawl_dir = conf["crawl.dir"]
    db_path = storage.crawldb_path(crawl_dir)
    make_crawldb([{"url": A, "depth": 0, "scores": {"pagerank": 0.5}}, {"url": B}, {"url": C}]) \
        .write.format("delta").save(db_path)
    make_links(LINKS).write.format("delta").save(storage.linkdb_path(crawl_dir))
    content = spark.createDataFrame([(A, "a.test", "success", NOW, False, "s1")],
                                    "url string, host string, fetch_status string, fetched_at timestamp, "
                                    "truncated boolean, segment string")
    storage.write_segment_part(content, crawl_dir, "s1", "content", "content")
    storage.ensure_table(spark, db_path, "crawldb")   # as the stages before scoring leave it
    before = storage.table_version(spark, db_path)

    counters = run_scoring(spark, crawl_dir, conf, NOW, segment="s1", scorer="opic")

    assert storage.table_version(spark, db_path) == before + 1
    rows = crawldb_rows(spark, crawl_dir)
    assert set(rows) == {A, B, C, VIRTUAL_URL} and counters["pages"] == 4
    virtual = rows[VIRTUAL_URL]
    assert virtual.metadata == {"virtual": "true"} and virtual.status == "gone" and virtual.score == 0.0
    assert "opic" in virtual.scores
    assert sum(r.opic_cash for r in rows.values()) == pytest.approx(1.0, abs=1e-12)
    assert rows[A].last_processed == NOW and rows[A].scores["pagerank"] == 0.5   # other metrics kept
    assert rows[A].score == 0.5          # the ordering score follows scoring.scorer (pagerank)


def test_a_merge_of_most_rows_rewrites_files_and_a_sparse_one_keeps_deletion_vectors(
        spark, make_test_conf, make_crawldb):
    """The scoring MERGE rewrites the files it touches when it updates at least
    DENSE_SHARE of the rows (deletion vectors would cost a second join for nothing), and
    marks the few rows it changes in deletion vectors otherwise."""
    from crawlkit.scoring.base import get_scorer
    from crawlkit.scoring.job import DENSE_SHARE, merge_scores

    conf = make_test_conf()
    db_path = storage.crawldb_path(conf["crawl.dir"])
    storage.ensure_table(spark, db_path, "crawldb")
    urls = [f"http://h{i}.test/" for i in range(20)]
    make_crawldb([{"url": u} for u in urls]).coalesce(1).write.format("delta").mode("append").save(db_path)
    pagerank = get_scorer("pagerank")

    def merge(scored: list[str], value: float) -> dict:
        result = spark.createDataFrame([(u, value) for u in scored], "url string, score double")
        crawldb = storage.read_table(spark, db_path, "crawldb")
        assert merge_scores(spark, db_path, crawldb, [(pagerank, result)], conf, "t") == len(scored)
        return spark.sql(f"DESCRIBE HISTORY delta.`{db_path}` LIMIT 1").first()["operationMetrics"]

    dense = urls[:12]
    assert len(dense) >= DENSE_SHARE * len(urls)
    metrics = merge(dense, 0.5)
    assert metrics["numTargetDeletionVectorsAdded"] == "0" and metrics["numTargetRowsCopied"] == "8"
    metrics = merge(urls[:2], 0.25)
    assert metrics["numTargetDeletionVectorsAdded"] == "1" and metrics["numTargetRowsCopied"] == "0"
    scores = {r.url: r.scores.get("pagerank") for r in storage.read_table(spark, db_path, "crawldb").collect()}
    assert scores == {u: 0.25 if u in urls[:2] else 0.5 if u in dense else None for u in urls}
