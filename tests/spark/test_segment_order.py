"""Segments are ordered as they were made, also past nine rounds at one logical time
(``crawl --now T`` names them T, T-1, ..., and ``T-10`` sorts before ``T-9`` as a string)."""
from datetime import datetime

from pyspark.sql import functions as F

from crawlkit import schemas, storage
from crawlkit.cli import _latest_segment
from crawlkit.conf import make_conf
from crawlkit.export.pages import candidates, parse_rows
from crawlkit.scoring.job import crawled_texts
from crawlkit.segment_names import next_name, order_column, order_key

NOW = datetime(2026, 3, 1, 12, 0, 0)
T = "20260301120000"
LEGACY = [T, f"{T}-9", f"{T}-10"]   # what older versions named the 1st, 10th and 11th round


def test_a_new_segment_sorts_after_every_segment_of_its_time():
    assert next_name(NOW, []) == T
    assert next_name(NOW, [T]) == f"{T}-000001"
    assert next_name(NOW, [T, f"{T}-000001", "20260228000000"]) == f"{T}-000002"
    assert next_name(NOW, LEGACY) == f"{T}-000011"
    made = [T]
    for _ in range(11):
        made.append(next_name(NOW, made))
    assert sorted(made) == made == sorted(made, key=order_key)


def test_the_order_reads_unpadded_suffixes_as_numbers(spark):
    names = [f"{T}-10", f"{T}-000011", f"{T}-9", T, "20260228000000-2", "seg-a"]
    expected = ["20260228000000-2", T, f"{T}-9", f"{T}-10", f"{T}-000011", "seg-a"]
    assert sorted(names, key=order_key) == expected
    keys = spark.createDataFrame([(n,) for n in names], "name string").select(
        "name", order_column(F.col("name")).alias("key")).collect()
    assert {r["name"]: r["key"] for r in keys} == {n: order_key(n) for n in names}


def _parse_part(spark, crawl_dir: str, segment: str, pages: dict[str, str]) -> None:
    rows = [dict(url=url, parse_status="success", title=title, text=title, signature=f"sig:{url}",
                 outlinks=[], noindex=False, nofollow=False, canonical=None, lang=None, error=None,
                 segment=segment) for url, title in pages.items()]
    df = spark.createDataFrame([tuple(r.get(c) for c in schemas.columns("parse")) for r in rows],
                               schemas.struct("parse"))
    storage.write_segment_part(df, crawl_dir, segment, "parse", "parse")


def test_the_latest_segment_and_the_newest_parse_follow_the_order(spark, tmp_path):
    crawl_dir = str(tmp_path / "crawl")
    _parse_part(spark, crawl_dir, T, {"http://a.test/only-first": "first"})
    _parse_part(spark, crawl_dir, f"{T}-9", {"http://a.test/": "old", "http://a.test/ninth": "ninth"})
    _parse_part(spark, crawl_dir, f"{T}-10", {"http://a.test/": "new"})
    conf = make_conf(crawl__dir=crawl_dir)

    assert storage.list_segments(spark, crawl_dir) == LEGACY
    assert _latest_segment(spark, conf) == f"{T}-10"
    texts = {r["url"]: r["title"] for r in crawled_texts(spark, crawl_dir, upto=f"{T}-10").collect()}
    assert texts == {"http://a.test/only-first": "first", "http://a.test/ninth": "ninth", "http://a.test/": "new"}
    assert {r["url"] for r in crawled_texts(spark, crawl_dir, upto=f"{T}-9").collect()} == {
        "http://a.test/only-first", "http://a.test/ninth", "http://a.test/"}

    crawldb = spark.createDataFrame([("http://a.test/", "a.test", "sig:http://a.test/", "fetched", 1.0, {})],
                                    "url string, domain string, signature string, status string, score double, "
                                    "scores map<string, double>")
    exported = candidates(crawldb, parse_rows(spark, crawl_dir), conf).collect()
    assert [(r["url"], r["title"]) for r in exported] == [("http://a.test/", "new")]
