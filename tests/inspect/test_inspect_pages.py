"""crawlkit top and crawlkit dump: whole outputs on the small crawl (conftest.py)."""
from datetime import timedelta

from pyspark.sql import functions as F
from smallcrawl import NOW

from crawlkit import schemas
from crawlkit.inspect import dump, snapshot, top_pages


def test_top_pages_by_the_active_score(spark, small_crawl):
    assert top_pages(spark, small_crawl, n=3) == [
        # crawlkit:virtual (score 5.0) is not a page; inlinks come from the linkdb
        {"rank": 1, "url": "http://a.test/", "host": "a.test", "status": "fetched", "score": 0.4,
         "scores": {"backlinks": 3.0, "pagerank": 0.4}, "depth": 0, "fetched_at": None, "inlinks": 3},
        {"rank": 2, "url": "http://c.test/", "host": "c.test", "status": "unfetched", "score": 0.25,
         "scores": {}, "depth": 0, "fetched_at": None, "inlinks": 0},
        {"rank": 3, "url": "http://a.test/x", "host": "a.test", "status": "fetched", "score": 0.2,
         "scores": {"backlinks": 1.0, "pagerank": 0.2}, "depth": 0, "fetched_at": None, "inlinks": 1},
    ]


def _link(other, url, anchor, status, score):
    return {other: url, "anchor": anchor, "nofollow": False, "meta": None, "first_seen": NOW, "last_seen": NOW,
            f"{other}_status": status, f"{other}_score": score}


def test_dump_shows_the_record_and_links_with_anchors(spark, small_crawl):
    snap = snapshot(spark, small_crawl)
    got = dump(snap, "http://a.test/", limit=2)
    assert got == {
        "url": "http://a.test/", "crawldb_version": 4, "linkdb_version": 1, "committed_at": snap.committed_at,
        "record": {
            "url": "http://a.test/", "host": "a.test", "domain": "a.test", "status": "fetched",
            "fetch_time": NOW + timedelta(days=30), "fetched_at": None, "retries": 0, "fetch_interval": 30 * 86400,
            "score": 0.4, "scores": {"pagerank": 0.4, "backlinks": 3.0}, "opic_cash": 0.0, "opic_history": 0.0,
            "last_processed": None, "signature": None, "modified_time": None, "etag": None, "last_modified": None,
            "http_status": 200, "change_count": 0, "check_count": 0, "depth": 0, "hot_distance": None,
            "generated_segment": None, "generate_time": None, "metadata": {},
            "schema_version": schemas.version("crawldb"),   # the row was written by updatedb
            "url_hash": spark.range(1).select(F.xxhash64(F.lit("http://a.test/"))).first()[0], "digest": None},
        # best-scored other end first; the virtual page's link is left out; 3 in all, 2 shown
        "inlinks": {"total": 3, "links": [_link("src", "http://c.test/", "see A", "unfetched", 0.25),
                                          _link("src", "http://a.test/x", "home", "fetched", 0.2)]},
        "outlinks": {"total": 3, "links": [_link("dst", "http://a.test/x", "About X", "fetched", 0.2),
                                           _link("dst", "http://b.test/", "Bee", "gone", 0.1)]},
    }


def test_dump_with_no_links_shown_still_counts_them(spark, small_crawl):
    got = dump(snapshot(spark, small_crawl), "http://a.test/", limit=0)
    assert (got["inlinks"], got["outlinks"]) == ({"total": 3, "links": []}, {"total": 3, "links": []})


def test_dump_of_an_old_version(spark, small_crawl):
    nothing = {"total": 0, "links": []}
    old = dump(snapshot(spark, small_crawl, 1), "http://a.test/")
    assert (old["record"]["status"], old["linkdb_version"], old["inlinks"], old["outlinks"]) == \
        ("unfetched", 0, nothing, nothing)
