"""A small crawl directory built from inline tables (no fetching): three hosts, two rounds.

crawldb versions (each Delta commit tagged as the stages tag theirs):
  0  created (empty)                                              (linkdb version 0: empty)
  1  inject: 6 pages unfetched, and OPIC's virtual page
  2  generate:20260301100000: locks the 4 pages of round 1
  3  updatedb:20260301100000: statuses, scores, schedules        (linkdb version 1 just before)
  4  generate:20260301110000: locks http://c.test/
"""
from __future__ import annotations

from datetime import datetime, timedelta

from crawlkit import schemas, storage

from sparkhelpers import crawldb_rows

NOW = datetime(2026, 3, 1, 12, 0, 0)
SEG1, SEG2 = "20260301100000", "20260301110000"
DAY = 86400

# url -> crawldb columns after round 1 (version 3); the comment says why each row is there.
PAGES = {
    "http://a.test/": dict(status="fetched", score=0.4, scores={"pagerank": 0.4, "backlinks": 3.0},
                           fetch_interval=30 * DAY, fetch_time=NOW + timedelta(days=30), http_status=200),
    "http://a.test/x": dict(status="fetched", score=0.2, scores={"pagerank": 0.2, "backlinks": 1.0},
                            fetch_interval=2 * DAY, fetch_time=NOW - timedelta(hours=1), http_status=200),  # due
    "http://a.test/y": dict(status="unfetched", score=0.05, fetch_time=NOW - timedelta(days=1)),   # due
    "http://b.test/": dict(status="gone", score=0.1, scores={"pagerank": 0.1, "backlinks": 1.0},
                           fetch_interval=30 * DAY, fetch_time=NOW + timedelta(days=60), http_status=404),
    "http://b.test/z": dict(status="retry", score=0.0, retries=1, fetch_time=NOW - timedelta(days=1),
                            fetch_interval=3 * 3600, http_status=500),                     # due, score <= 0
    "http://c.test/": dict(status="unfetched", score=0.25, fetch_time=NOW - timedelta(hours=1)),  # locked later
}
VIRTUAL = {"url": "crawlkit:virtual", "host": "crawlkit", "status": "fetched", "score": 5.0}

# (src, dst, anchor): the link table after round 1
LINKS = [
    ("http://a.test/", "http://a.test/x", "About X"),
    ("http://a.test/", "http://a.test/y", None),
    ("http://a.test/", "http://b.test/", "Bee"),
    ("http://a.test/x", "http://a.test/", "home"),
    ("http://b.test/", "http://a.test/", "A site"),
    ("http://c.test/", "http://a.test/", "see A"),
    ("crawlkit:virtual", "http://a.test/", None),   # pseudo-URL: never shown
]

# segment -> (url, fetch_status, http_status, error, bytes)
FETCHES = {
    SEG1: [("http://a.test/", "success", 200, None, 1200), ("http://a.test/x", "success", 200, None, 800),
           ("http://b.test/", "not_found", 404, None, None), ("http://b.test/z", "retry", 500, "HTTP 500", None)],
    SEG2: [("http://a.test/x", "not_modified", 304, None, None), ("http://b.test/z", "retry", None, "read timeout", None)],
}
FETCHED_IN_SEG1 = {fetch[0] for fetch in FETCHES[SEG1]}
STATS = {
    SEG1: {"generate": {"segment": SEG1, "generated": 4, "hosts": 2, "partitions": 2},
           "fetch": {"segment": SEG1, "pages": 4, "bytes": 2000, "by_status": {"success": 2, "not_found": 1, "retry": 1}},
           "parse": {"segment": SEG1, "pages": 2, "failed": 0, "outlinks": 5},
           "updatedb": {"segment": SEG1, "by_status": {"fetched": 2, "gone": 1, "retry": 1}, "links": 6,
                        "new_urls": 2, "version": 3},
           "round": {"segment": SEG1, "seconds": {"generate": 1.5, "fetch": 12.25, "parse": 2.0,
                                                  "updatedb": 3.5, "score": 4.0},
                     "options": {"crawl.topN": 4}}},
    SEG2: {"generate": {"segment": SEG2, "generated": 2, "hosts": 2, "partitions": 2},
           "fetch": {"segment": SEG2, "pages": 2, "bytes": 0, "by_status": {"not_modified": 1, "retry": 1}}},
}
EVALUATION_CSV = """ordering,metric,hot_definition,pages_crawled,fraction_crawled,value
pagerank,P_ST,top 10%,1,0.25,0.5
pagerank,P_ST,top 10%,2,0.5,0.75
pagerank,P_ST,top 10%,4,1.0,1.0
ideal,P_ST,top 10%,1,0.25,1.0
ideal,P_ST,top 10%,4,1.0,1.0
random,P_ST,top 10%,1,0.25,0.25
random,P_ST,top 10%,4,1.0,1.0
pagerank,harvest,hot,2,0.5,0.4
pagerank,harvest,hot,4,1.0,0.6
"""


def _commit(spark, path, df, tag, mode="overwrite"):
    """One tagged Delta commit (a whole-table write: cheaper than MERGE, same history)."""
    with storage.commit_tag(spark, tag):
        df.write.format("delta").mode(mode).save(path)


def _content(spark, segment):
    rows = [dict(url=url, host=url.split("/")[2], fetch_status=status, http_status=http,
                 fetched_at=datetime.strptime(segment, "%Y%m%d%H%M%S"), elapsed_ms=100 * (i + 1),
                 content_type="text/html", headers={}, content=b"x" * size if size else None, truncated=False,
                 redirect_url=None, retry_after=None, error=error, segment=segment)
            for i, (url, status, http, error, size) in enumerate(FETCHES[segment])]
    return spark.createDataFrame(rows, schemas.struct("content"))


def build_crawl(spark, crawl_dir: str) -> None:
    db_path, link_path = storage.crawldb_path(crawl_dir), storage.linkdb_path(crawl_dir)
    storage.ensure_table(spark, db_path, "crawldb")                                          # v0
    storage.ensure_table(spark, link_path, "links")                                          # linkdb v0
    injected = [{"url": u, "host": u.split("/")[2], "fetch_time": NOW - timedelta(days=2)} for u in PAGES]
    _commit(spark, db_path, crawldb_rows(spark, injected + [VIRTUAL], NOW - timedelta(days=2)), "inject", "append")  # v1
    locked = [{**r, "generated_segment": SEG1} if r["url"] in FETCHED_IN_SEG1 else r for r in injected]
    _commit(spark, db_path, crawldb_rows(spark, locked + [VIRTUAL], NOW - timedelta(days=2)), f"generate:{SEG1}")  # v2
    links = spark.createDataFrame(
        [dict(src=s, dst=d, src_host=s.split("/")[2] if "//" in s else "crawlkit", dst_host=d.split("/")[2],
              anchor=a, meta=None, nofollow=False, first_seen=NOW, last_seen=NOW) for s, d, a in LINKS],
        schemas.struct("links"))
    _commit(spark, link_path, links, f"linkdb:{SEG1}", "append")                             # linkdb v1
    rows = [{"url": u, "host": u.split("/")[2], "domain": u.split("/")[2], **cols} for u, cols in PAGES.items()]
    _commit(spark, db_path, crawldb_rows(spark, rows + [VIRTUAL], NOW), f"updatedb:{SEG1}")  # v3
    rows[-1] = {**rows[-1], "generated_segment": SEG2, "generate_time": NOW - timedelta(minutes=10)}
    _commit(spark, db_path, crawldb_rows(spark, rows + [VIRTUAL], NOW), f"generate:{SEG2}")  # v4
    for segment in (SEG1, SEG2):
        storage.write_segment_part(_content(spark, segment), crawl_dir, segment, "content", "content")
        for stage, counters in STATS[segment].items():
            storage.write_stats(spark, crawl_dir, segment, stage, counters)
    storage.write_text(spark, storage.join(crawl_dir, "evaluation", "pagerank.csv"), EVALUATION_CSV)
