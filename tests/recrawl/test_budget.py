"""The change_rate schedule's fetch budget (crawlkit.stages.refetch, hooked into generate).

Rows are held the way updatedb leaves them: ``fetch_time = (logical) fetch + fetch_interval``.
"""
from __future__ import annotations

import math
from datetime import timedelta

import pytest

from crawlkit.conf import ConfError, make_conf
from crawlkit.stages.generate import generate
from crawlkit.stages.refetch import revisit_horizon

from recrawlhelpers import NOW

H, D = 3600, 86400
HOT_FAST, HOT_NEVER, COLD_FAST, MEDIUM = (f"http://{n}.test/" for n in ("hotfast", "hotnever", "coldfast", "medium"))
RECENT, LOCKED = "http://recent.test/", "http://locked.test/"
NEW1, NEW2, NEW3 = (f"http://new.test/p{i}" for i in (1, 2, 3))


def held(url, score, changes, checks, age_s, **extra):
    fetched = NOW - timedelta(seconds=age_s)
    base = dict(url=url, status="fetched", score=score, change_count=changes, check_count=checks,
                fetch_interval=D, fetched_at=fetched, signature="s",
                fetch_time=fetched + timedelta(seconds=D))   # not due yet: the budget ignores fetch_time
    base.update(extra)
    return base


@pytest.fixture
def crawldb(make_crawldb):
    return make_crawldb([
        held(HOT_FAST, 0.5, 9, 10, 20 * H),
        held(HOT_NEVER, 0.9, 0, 10, 20 * H),         # most important, but never changes
        held(COLD_FAST, 0.01, 10, 10, 20 * H),
        held(MEDIUM, 0.3, 2, 10, 20 * H, status="not_modified"),
        held(RECENT, 0.8, 10, 10, 600),               # fetched 10 min ago < min_interval (1 h)
        held(LOCKED, 0.8, 10, 10, 20 * H, generated_segment="other", generate_time=NOW),
        dict(url=NEW1, score=0.05), dict(url=NEW2, score=0.04), dict(url=NEW3, score=0.03),
    ])


def expected_priority(score, changes, checks, age, horizon, interval=D):
    """importance x P(stale) x expected fresh share of the horizon (refetch.py's priority)."""
    rate = -math.log((checks - changes + 0.5) / (checks + 0.5)) / interval
    rate = max(rate, 0.5 / (checks * interval))   # never seen changing: Jeffreys posterior mean
    return score * (1 - math.exp(-rate * age)) * (1 - math.exp(-rate * horizon)) / (rate * horizon)


def conf_for(**kw):
    return make_conf(**{"schedule__kind": "change_rate", "schedule__min_interval": H, **kw})


def test_budget_goes_to_importance_times_staleness(spark, crawldb):
    # 6 held pages, budget 2: horizon 3 rounds of 1 h (RECENT's copy is 10 min old, min_interval 1 h)
    # priorities: hot_fast 0.36, medium 0.048, hot_never 0.037 (10 unchanged checks: 1 change
    # in 20 days), cold_fast 0.0077
    p = lambda *a: expected_priority(*a, 20 * H, horizon=3 * H)  # noqa: E731
    assert p(0.5, 9, 10) > p(0.3, 2, 10) > p(0.9, 0, 10) > p(0.01, 10, 10)
    rows = generate(crawldb, conf_for(schedule__budget=2, crawl__topN=4), NOW, "s1").collect()
    urls = [r.url for r in rows]
    assert urls[:2] == [HOT_FAST, MEDIUM]          # refetches, best priority first
    assert urls[2:] == [NEW1, NEW2]                 # the rest of topN: new URLs by score
    assert HOT_NEVER not in urls and RECENT not in urls and LOCKED not in urls


def test_pages_changing_faster_than_they_can_be_revisited_lose(spark, make_crawldb):
    # Equally important, both surely stale; FAST changes ~3x a day, SLOW ~0.2x a day. A copy of
    # FAST taken now is stale again within hours: worth it only if the page comes up again soon.
    fast, slow = "http://fast.test/", "http://slow.test/"
    db = make_crawldb([held(fast, 0.5, 10, 10, 3 * D), held(slow, 0.5, 2, 10, 3 * D)])
    assert expected_priority(0.5, 10, 10, 3 * D, horizon=H) > expected_priority(0.5, 2, 10, 3 * D, horizon=H)
    assert expected_priority(0.5, 10, 10, 3 * D, horizon=5 * D) < expected_priority(0.5, 2, 10, 3 * D, horizon=5 * D)
    pick = lambda horizon: [r.url for r in generate(  # noqa: E731
        db, conf_for(schedule__budget=1, crawl__topN=1, schedule__horizon=horizon), NOW, "s1").collect()]
    assert pick(H) == [fast]
    assert pick(5 * D) == [slow]


def test_revisit_horizon_is_one_pass_of_the_budget(spark, crawldb):
    # 6 held pages (locked and recent ones included); the newest copy is 600 s old
    assert revisit_horizon(crawldb, conf_for(), NOW, 2) == 3 * H              # round >= min_interval (1 h)
    assert revisit_horizon(crawldb, conf_for(schedule__min_interval=60), NOW, 2) == 3 * 600
    assert revisit_horizon(crawldb, conf_for(), NOW, 10) == H                 # at least one round
    assert revisit_horizon(crawldb, conf_for(schedule__horizon=5 * D), NOW, 2) == 5 * D


def test_age_is_taken_on_the_logical_clock(spark, make_crawldb):
    # A crawl run at a logical --now before the wall clock: fetched_at (wall time of the
    # response) is after now; the copy's age still comes from fetch_time - fetch_interval.
    late = NOW + timedelta(days=300)
    db = make_crawldb([held(HOT_FAST, 0.5, 9, 10, 20 * H, fetched_at=late),
                       held(MEDIUM, 0.3, 2, 10, 20 * H, fetched_at=late)])
    rows = generate(db, conf_for(schedule__budget=2, crawl__topN=2), NOW, "s1").collect()
    assert [r.url for r in rows] == [HOT_FAST, MEDIUM]


def test_without_a_budget_refetches_and_new_urls_share_top_n_by_gain(spark, crawldb):
    # horizon 2 h (6 held pages, 3 a round); a new URL has no copy, its gain is score x fresh
    # share (its rate: once per fetch_interval, 1 h): new1 0.0216 < hot_never 0.037
    assert 0.05 * (1 - math.exp(-2)) / 2 < expected_priority(0.9, 0, 10, 20 * H, horizon=2 * H)
    rows = generate(crawldb, conf_for(schedule__budget=0, crawl__topN=3), NOW, "s1").collect()
    assert [r.url for r in rows] == [HOT_FAST, MEDIUM, HOT_NEVER]


def test_held_pages_never_crowd_out_the_pages_the_crawl_lacks(spark, make_crawldb):
    # Three dull pages seen unchanged 20 times, each copy two hours old, fill topN on their
    # own; three important pages were never fetched. Each new page's gain is above theirs.
    dull = [held(f"http://dull.test/{i}", 0.01, 0, 20, 2 * H, fetch_interval=30 * D) for i in range(3)]
    new = [dict(url=f"http://new.test/{i}", score=5.0, fetch_interval=30 * D) for i in range(3)]
    db = make_crawldb(dull + new)
    for budget in (0, 2):
        rows = generate(db, conf_for(schedule__budget=budget, crawl__topN=3), NOW, "s1").collect()
        assert sorted(r.url for r in rows) == [f"http://new.test/{i}" for i in range(3)], budget


def test_unused_budget_leaves_room_for_new_urls(spark, crawldb):
    rows = generate(crawldb, conf_for(schedule__budget=10, crawl__topN=7), NOW, "s1").collect()
    assert {r.url for r in rows} == {HOT_FAST, MEDIUM, HOT_NEVER, COLD_FAST, NEW1, NEW2, NEW3}


def test_a_budget_caps_the_refetches(spark, crawldb):
    rows = generate(crawldb, conf_for(schedule__budget=1, crawl__topN=4), NOW, "s1").collect()
    assert [r.url for r in rows] == [HOT_FAST, NEW1, NEW2, NEW3]


def test_hot_queue_does_not_combine_with_change_rate():
    # refused as the configuration loads, before inject or generate commits anything
    with pytest.raises(ConfError, match="hot_queue does not combine with schedule.kind = change_rate"):
        conf_for(generate__policy="hot_queue", focus__words=["course"])


def test_other_schedules_keep_the_due_rule(spark, crawldb):
    rows = generate(crawldb, make_conf(schedule__kind="adaptive", crawl__topN=10), NOW, "s1").collect()
    assert {r.url for r in rows} == {NEW1, NEW2, NEW3}   # held pages are not due until tomorrow


def test_a_page_never_seen_changing_fades_from_the_budget_as_the_evidence_grows(spark, make_crawldb):
    # Equally important and old copies, neither ever seen changing: 2 unchanged checks say less
    # than 20, so the page checked twice is the better bet (and neither has priority 0).
    twice, often = "http://twice.test/", "http://often.test/"
    db = make_crawldb([held(twice, 0.5, 0, 2, 5 * D), held(often, 0.5, 0, 20, 5 * D)])
    assert expected_priority(0.5, 0, 2, 5 * D, horizon=D) > expected_priority(0.5, 0, 20, 5 * D, horizon=D) > 0
    rows = generate(db, conf_for(schedule__budget=1, crawl__topN=1, schedule__horizon=D), NOW, "s1").collect()
    assert [r.url for r in rows] == [twice]


def test_the_per_host_cap_holds_for_refetches_and_new_urls_together(spark, make_crawldb):
    pages = [held(f"http://a.test/held{i}", 0.9, 9, 10, 20 * H) for i in range(5)]
    news = [dict(url=f"http://a.test/new{i}", score=0.5) for i in range(5)]
    other = [dict(url="http://b.test/new", score=0.1)]
    rows = generate(make_crawldb(pages + news + other),
                    conf_for(schedule__budget=1, crawl__topN=10, generate__max_per_host=2),
                    NOW, "s1").collect()
    by_host = {}
    for row in rows:
        by_host.setdefault(row.host, []).append(row.url)
    # one refetch (the budget) and one new URL fill a.test's cap of 2; b.test keeps its place
    assert len(by_host["a.test"]) == 2 and by_host["b.test"] == ["http://b.test/new"]
    assert sum("/held" in url for url in by_host["a.test"]) == 1


def test_a_held_page_skipped_unfetched_keeps_the_age_of_its_copy(spark, make_crawldb):
    from crawlkit.stages.transition import updated_entries
    from recrawlhelpers import outcome_rows
    page = held(HOT_FAST, 0.5, 9, 10, 2 * H)
    skipped = outcome_rows(spark, [dict(url=HOT_FAST, fetch_status="skipped", fetched_at=NOW)])
    for kind in ("change_rate", "adaptive"):
        conf = conf_for(schedule__kind=kind)
        row = updated_entries(make_crawldb([page]), skipped, conf, NOW).first()
        assert (row.status, row.fetch_interval) == ("fetched", D)
        if kind == "change_rate":   # fetch_time - interval: the copy is still two hours old
            assert row.fetch_time == page["fetch_time"]
        else:                       # fetch_time is the next due time there: retry soon
            assert row.fetch_time == NOW + timedelta(seconds=conf["db.retry_interval"])
