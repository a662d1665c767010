"""OPIC across real rounds: run_updatedb + run_scoring on small inline segments.

Total cash (virtual page included) is 1 after every step of a sequence of rounds, recrawls
(304 and changed content), failed fetches, newly discovered pages and a segment applied
twice; and a page that lost its in-links loses importance over time under the history
window (faster than without it).
"""
from __future__ import annotations

from datetime import timedelta

import pytest

from crawlkit import storage
from crawlkit.conf import make_conf
from crawlkit.scoring import VIRTUAL_URL, ScoringContext, get_scorer, run_scoring
from crawlkit.scoring.opic import STATE, opic_inject
from crawlkit.stages.updatedb import run_updatedb

from recrawlhelpers import NOW, crawldb_dicts, host_of, to_crawldb

pytestmark = pytest.mark.timeout(1500)

A, B, C, D, E = (f"http://{h}.test/" for h in "abcde")
OUTLINK = "struct<url:string,anchor:string,nofollow:boolean,meta:map<string,string>>"


def write_segment(spark, crawl_dir, segment, now, fetches):
    """fetches: (url, fetch_status, signature or None, [outlinks]) -> content and parse parts."""
    content = spark.createDataFrame(
        [(u, host_of(u), fs, 200 if fs == "success" else 304 if fs == "not_modified" else 503, now, False, segment)
         for u, fs, _, _ in fetches],
        "url string, host string, fetch_status string, http_status int, fetched_at timestamp, "
        "truncated boolean, segment string")
    storage.write_segment_part(content, crawl_dir, segment, "content", "content")
    parsed = spark.createDataFrame(
        [(u, "success", sig, [(dst, "x", False, {}) for dst in links], False, False, segment)
         for u, fs, sig, links in fetches if fs == "success"],
        f"url string, parse_status string, signature string, outlinks array<{OUTLINK}>, noindex boolean, "
        "nofollow boolean, segment string")
    storage.write_segment_part(parsed, crawl_dir, segment, "parse", "parse")


def total_cash(spark, crawl_dir):
    rows = storage.read_table(spark, storage.crawldb_path(crawl_dir), "crawldb").collect()
    return sum(r.opic_cash for r in rows), {r.url: r for r in rows}


def test_total_cash_stays_one_through_real_rounds(spark, tmp_path):
    conf = make_conf(crawl__dir=str(tmp_path / "crawl"), scoring__scorer="opic", scoring__engine="driver",
                     scoring__opic_window=2 * 86400, spark__shuffle_partitions=2)
    crawl_dir = conf["crawl.dir"]
    seeds = opic_inject(to_crawldb(spark, crawldb_dicts([{"url": A, "depth": 0}, {"url": D, "depth": 0}])))
    seeds.write.format("delta").save(storage.crawldb_path(crawl_dir))
    steps = [
        # first fetches: a links b, c; d fails
        ("s1", [(A, "success", "a0", [B, C]), (D, "retry", None, [])]),
        # recrawl: a unchanged (304, no parse), b and c fetched, c discovers e; d fails again
        ("s2", [(A, "not_modified", None, []), (B, "success", "b0", [C]), (C, "success", "c0", [A, E]),
                (D, "retry", None, [])]),
        ("s2", None),     # the same segment applied again: no cash moves
    ]
    now = NOW
    rows = {}
    for segment, fetches in steps:
        now += timedelta(days=1)
        if fetches is not None:
            write_segment(spark, crawl_dir, segment, now, fetches)
        before = rows
        updated = run_updatedb(spark, conf, now, segment)
        counters = run_scoring(spark, crawl_dir, conf, now, segment=segment)
        assert counters["skipped"] == (1 if fetches is None else 0)
        assert ("skipped" in updated) == (fetches is None)
        cash, rows = total_cash(spark, crawl_dir)
        if fetches is None:      # applying a segment twice equals applying it once: no row moved
            assert rows == before
        assert cash == pytest.approx(1.0, abs=1e-12), (segment, {u: r.opic_cash for u, r in rows.items()})
        assert all(r.opic_cash >= 0 and r.opic_history >= 0 for r in rows.values())
        assert sum(r.score for r in rows.values()) <= 1.0 + 1e-12
    assert set(rows) == {A, B, C, D, E, VIRTUAL_URL}
    assert rows[A].last_processed == NOW + timedelta(days=2)   # s2 (its rerun did not move it)


def test_unlinked_page_loses_importance_with_the_window(spark):
    """d is linked by a at first, then a drops the link; every page is refetched each day."""
    def links(pairs):
        return spark.createDataFrame(
            [(s, d, host_of(s), host_of(d), None, None, False, NOW, NOW) for s, d in pairs],
            "src string, dst string, src_host string, dst_host string, anchor string, "
            "meta map<string,string>, nofollow boolean, first_seen timestamp, last_seen timestamp")

    def run(window):
        crawldb = opic_inject(to_crawldb(spark, crawldb_dicts([{"url": u, "depth": 0} for u in (A, B, C, D)])))
        before = links([(A, B), (A, D), (B, C), (C, A), (D, A)])
        after = links([(A, B), (B, C), (C, A), (D, A)])
        processed = spark.createDataFrame([(u,) for u in (A, B, C, D)], "url string")
        scores = []
        for k in range(6):
            ctx = ScoringContext(spark, make_conf(scoring__opic_window=window), NOW + timedelta(days=k),
                                 crawldb=crawldb, links=before if k < 2 else after, processed=processed)
            out = get_scorer("opic").score(ctx)
            crawldb = crawldb.drop(*STATE, "score").join(out, on="url").localCheckpoint(eager=True)
            got = {r.url: r for r in out.collect()}
            assert sum(r.opic_cash for r in got.values()) == pytest.approx(1.0, abs=1e-12)
            scores.append(got[D].score)
        return scores

    windowed = run(2 * 86400)
    unwindowed = run(0)
    peak = windowed[1]
    assert windowed[-1] < 0.5 * peak                     # the lost in-link shows within days
    assert windowed[-1] < unwindowed[-1]                 # history without a window remembers it
    assert windowed[2:] == sorted(windowed[2:], reverse=True)
