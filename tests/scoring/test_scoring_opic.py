"""Adaptive OPIC: hand-computed rounds, the cash invariant, refetches, the time window."""
from __future__ import annotations

import random
from datetime import timedelta

import pytest
from pyspark.sql import functions as F

from crawlkit.conf import make_conf
from crawlkit.scoring import VIRTUAL_URL, ScoringContext, get_scorer, real_pages
from crawlkit.scoring.opic import STATE, history_update, history_value, opic_inject

NOW = __import__("datetime").datetime(2024, 1, 1, 12, 0, 0)
A, B, C, D, E, X = (f"http://{h}.test/" for h in "abcdex")
LINKS = [
    (A, B), (A, C),   # a -> b, c
    (A, X),           # a -> x: x is not in the crawldb, so it gets no cash
    (A, A),           # a -> a: self-link, ignored
    (B, C),           # b -> c
    (C, A),           # c -> a
    # d has no out-links: a leaf, all its cash goes to the virtual page
    # e is known but unlinked: it only gets the virtual page's uniform share
]


@pytest.fixture
def web(spark, make_crawldb, make_links):
    """A fresh crawl: seeds a and d injected (0.5 cash each), b, c, e discovered (0 cash)."""
    seeds = make_crawldb([{"url": A, "depth": 0}, {"url": D, "depth": 0}])
    others = make_crawldb([{"url": u} for u in (B, C, E)])
    injected = opic_inject(seeds)
    return others.unionByName(injected), make_links(LINKS)


def round_(spark, crawldb, links, processed, now=NOW, **conf):
    """One scoring round applied to crawldb in memory (what the job's MERGE does)."""
    ctx = ScoringContext(spark, make_conf(**conf), now, crawldb=crawldb, links=links,
                         processed=spark.createDataFrame([(u,) for u in processed], "url string"))
    out = get_scorer("opic").score(ctx)
    merged = crawldb.drop(*STATE, "score").join(out, on="url", how="inner")
    return merged.localCheckpoint(eager=True), {r.url: r for r in out.collect()}


def test_inject_gives_the_virtual_cash_to_the_seeds(web):
    crawldb, _ = web
    cash = {r.url: r.opic_cash for r in crawldb.collect()}
    assert cash == {A: 0.5, D: 0.5, B: 0.0, C: 0.0, E: 0.0, VIRTUAL_URL: 0.0}


def test_reinject_takes_cash_from_the_virtual_page(spark, make_crawldb, web):
    crawldb, _ = web
    # Pretend the virtual page holds 0.2 (a's cash 0.3): a second inject of two new seeds.
    crawldb = crawldb.withColumn("opic_cash", F.when(F.col("url") == VIRTUAL_URL, 0.2)
                                 .when(F.col("url") == A, 0.3).otherwise(F.col("opic_cash")))
    new = make_crawldb([{"url": "http://n1.test/", "depth": 0}, {"url": "http://n2.test/", "depth": 0},
                        {"url": A, "depth": 0}])          # a is known already: no cash
    out = {r.url: r.opic_cash for r in opic_inject(new, crawldb).collect()}
    assert out == pytest.approx({"http://n1.test/": 0.1, "http://n2.test/": 0.1, VIRTUAL_URL: 0.0})


def test_one_round_by_hand(spark, web):
    crawldb, links = web
    # Process a and fail d (d not in the processed set), virtual share 0.2.
    _, out = round_(spark, crawldb, links, [A], scoring__opic_virtual_share=0.2)
    # a sends 0.5: 0.1 to the virtual page, 0.2 each to b and c (x unknown, self-link ignored).
    # The virtual page then spreads 0.1 over the 5 known pages: + 0.02 each.
    expected_cash = {A: 0.02, B: 0.22, C: 0.22, D: 0.52, E: 0.02, VIRTUAL_URL: 0.0}
    assert {u: r.opic_cash for u, r in out.items()} == pytest.approx(expected_cash, abs=1e-15)
    expected_hist = {A: 0.5, B: 0.0, C: 0.0, D: 0.0, E: 0.0, VIRTUAL_URL: 0.1}
    assert {u: r.opic_history for u, r in out.items()} == pytest.approx(expected_hist, abs=1e-15)
    assert out[A].last_processed == NOW and out[D].last_processed is None
    # importance = (H + C) / (G + 1) with G = 0.6; the virtual page scores 0.
    assert out[A].score == pytest.approx(0.52 / 1.6)
    assert out[D].score == pytest.approx(0.52 / 1.6)
    assert out[VIRTUAL_URL].score == 0.0


@pytest.mark.parametrize("seed", [3])
def test_total_cash_is_one_after_any_rounds(spark, web, make_crawldb, seed):
    crawldb, links = web
    rng = random.Random(seed)
    pages = [A, B, C, D, E]
    now = NOW
    for k in range(4):
        if k == 2:   # updatedb discovers a new page: it enters with no cash
            crawldb = crawldb.unionByName(make_crawldb([{"url": X}]))
            pages.append(X)
        fetched = rng.sample(pages, rng.randint(0, len(pages)))   # the rest failed
        now += timedelta(days=rng.randint(1, 40))
        crawldb, out = round_(spark, crawldb, links, fetched, now=now,
                              scoring__opic_window=(0, 30 * 86400)[k % 2])
        assert sum(r.opic_cash for r in out.values()) == pytest.approx(1.0, abs=1e-12)
        assert all(r.opic_cash >= 0 and r.opic_history >= 0 for r in out.values())
        assert sum(r.score for r in out.values()) <= 1.0 + 1e-12


@pytest.mark.parametrize("status", ["duplicate", "gone"])
def test_a_page_whose_links_do_not_vote_passes_its_cash_on_every_round(spark, web, status):
    """A duplicate is refetched rarely and a page gone after its retries never answers again:
    processed only when answered, the cash its in-links and the teleport pay it would stay
    there for good."""
    crawldb, links = web
    crawldb = (crawldb.withColumn("status", F.when(F.col("url") == C, status).otherwise(F.col("status")))
               .withColumn("opic_cash", F.when(F.col("url").isin(A, C), 0.25).otherwise(F.col("opic_cash"))))
    crawldb, out = round_(spark, crawldb, links, [], scoring__opic_virtual_share=0.2)
    # c -> a is not followed: all of c's 0.25 goes to the virtual page, 0.05 to each known page
    expected_cash = {A: 0.30, B: 0.05, C: 0.05, D: 0.55, E: 0.05, VIRTUAL_URL: 0.0}
    assert {u: r.opic_cash for u, r in out.items()} == pytest.approx(expected_cash, abs=1e-15)
    assert (out[C].opic_history, out[C].last_processed) == (pytest.approx(0.25), NOW)
    for k in range(1, 4):   # a and b fetched each round keep paying c, which never keeps it
        crawldb, out = round_(spark, crawldb, links, [A, B], now=NOW + timedelta(days=k))
        assert out[C].opic_cash < 0.5
        assert sum(r.opic_cash for r in out.values()) == pytest.approx(1.0, abs=1e-12)


def test_refetching_never_inflates(spark, web):
    crawldb, links = web
    scores = []
    for k in range(5):   # a is refetched every round, nothing else
        crawldb, out = round_(spark, crawldb, links, [A], now=NOW + timedelta(days=k))
        scores.append({u: r.score for u, r in out.items()})
        assert sum(r.opic_cash for r in out.values()) == pytest.approx(1.0, abs=1e-12)
    # Nutch's partial OPIC adds cash to a's out-links on every fetch, so b and c grow without
    # bound. Here a holds little cash after its first fetch: b's score converges.
    b = [s[B] for s in scores]
    assert b[4] - b[3] < 0.1 * (b[1] - b[0])
    assert max(sum(s.values()) for s in scores) <= 1.0 + 1e-12


def test_history_time_window(spark):
    t = 100.0
    assert history_value(5.0, 10.0, 300.0, 100) == pytest.approx(10.0 * 100 / 300)  # Δ >= T
    assert history_value(5.0, 10.0, 25.0, 100) == pytest.approx(10.0 + 5.0 * 75 / 100)  # Δ < T
    assert history_value(5.0, 10.0, None, 100) == pytest.approx(10.0)  # first processing
    assert history_value(5.0, 10.0, 25.0, 0) == pytest.approx(15.0)     # no window
    now = NOW
    df = spark.createDataFrame(
        [(5.0, 10.0, now - timedelta(seconds=300)), (5.0, 10.0, now - timedelta(seconds=25)),
         (5.0, 10.0, None)], "h double, c double, lp timestamp")
    got = [r[0] for r in df.select(history_update(F.col("h"), F.col("c"), F.col("lp"), now,
                                                  int(t))).collect()]
    assert got == pytest.approx([10.0 / 3, 13.75, 10.0])


def test_bootstrap_without_virtual_row(spark, make_crawldb, make_links):
    # A crawl that started under PageRank: no cash anywhere, no virtual row.
    crawldb = make_crawldb([{"url": A, "depth": 0}, {"url": B}, {"url": C}])
    _, out = round_(spark, crawldb, make_links(LINKS), [])
    # The seed a gets all the cash, then (nothing processed) keeps it.
    assert out[A].opic_cash == pytest.approx(1.0)
    assert sum(r.opic_cash for r in out.values()) == pytest.approx(1.0, abs=1e-12)
    assert real_pages(crawldb).count() == 3


def test_a_final_answer_processes_the_page_a_transient_failure_does_not(spark, tmp_path):
    from crawlkit import schemas, storage
    from crawlkit.scoring.job import processed_pages
    statuses = ["success", "not_modified", "redirect_perm", "not_found", "gone", "access_denied",
                "robots_denied", "blocked", "unsupported_type", "retry", "skipped"]
    rows = [dict(url=f"http://{s}.test/", host=f"{s}.test", fetch_status=s, segment="s1",
                 fetched_at=NOW, truncated=False) for s in statuses]
    content = schemas.frame(spark, "content", [{c: r.get(c) for c in schemas.columns("content")}
                                               for r in rows])
    storage.write_segment_part(content, str(tmp_path), "s1", "content", "content")
    got = {r.url for r in processed_pages(spark, str(tmp_path), "s1").collect()}
    # a 404 or a PDF is a page without links: its cash must reach the virtual page, or it
    # keeps gathering cash it never passes on; retry and skipped will be fetched again
    assert got == {f"http://{s}.test/" for s in statuses[:-2]}
