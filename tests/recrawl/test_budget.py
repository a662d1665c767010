"""The change_rate schedule's fetch budget (crawlkit.stages.refetch, hooked into generate)."""
from __future__ import annotations

import math
from datetime import timedelta

import pytest

from crawlkit.conf import make_conf
from crawlkit.stages.generate import generate

from recrawlhelpers import NOW

H = 3600
HOT_FAST, HOT_NEVER, COLD_FAST, MEDIUM = (f"http://{n}.test/" for n in ("hotfast", "hotnever", "coldfast", "medium"))
RECENT, LOCKED = "http://recent.test/", "http://locked.test/"
NEW1, NEW2, NEW3 = (f"http://new.test/p{i}" for i in (1, 2, 3))


def held(url, score, changes, checks, age_s, **extra):
    base = dict(url=url, status="fetched", score=score, change_count=changes, check_count=checks,
                fetch_interval=H, fetched_at=NOW - timedelta(seconds=age_s), signature="s",
                fetch_time=NOW + timedelta(days=1))     # not due: the budget ignores fetch_time
    base.update(extra)
    return base


@pytest.fixture
def crawldb(make_crawldb):
    return make_crawldb([
        held(HOT_FAST, 0.5, 9, 10, 2 * H),
        held(HOT_NEVER, 0.9, 0, 10, 2 * H),          # most important, but never changes
        held(COLD_FAST, 0.01, 10, 10, 2 * H),
        held(MEDIUM, 0.3, 2, 10, 2 * H, status="not_modified"),
        held(RECENT, 0.8, 10, 10, 600),               # fetched 10 min ago < min_interval (1 h)
        held(LOCKED, 0.8, 10, 10, 2 * H, generated_segment="other", generate_time=NOW),
        dict(url=NEW1, score=0.05), dict(url=NEW2, score=0.04), dict(url=NEW3, score=0.03),
    ])


def expected_priority(score, changes, checks, age, interval=H, high=31536000):
    rate = -math.log((checks - changes + 0.5) / (checks + 0.5)) / interval
    rate = max(rate, 1.0 / high)
    return score * (1 - math.exp(-rate * age))


def conf_for(**kw):
    return make_conf(schedule__kind="change_rate", schedule__min_interval=H, **kw)


def test_budget_goes_to_importance_times_staleness(spark, crawldb):
    # priorities: hot_fast 0.49, medium 0.10, cold_fast 0.0099, hot_never 0.0002
    assert expected_priority(0.5, 9, 10, 2 * H) > expected_priority(0.3, 2, 10, 2 * H) \
        > expected_priority(0.01, 10, 10, 2 * H) > expected_priority(0.9, 0, 10, 2 * H)
    rows = generate(crawldb, conf_for(schedule__budget=2, crawl__topN=4), NOW, "s1").collect()
    urls = [r.url for r in rows]
    assert urls[:2] == [HOT_FAST, MEDIUM]          # refetches, best priority first
    assert urls[2:] == [NEW1, NEW2]                 # the rest of topN: new URLs by score
    assert HOT_NEVER not in urls and RECENT not in urls and LOCKED not in urls


def test_budget_zero_means_top_n(spark, crawldb):
    rows = generate(crawldb, conf_for(schedule__budget=0, crawl__topN=3), NOW, "s1").collect()
    assert [r.url for r in rows] == [HOT_FAST, MEDIUM, COLD_FAST]


def test_unused_budget_leaves_room_for_new_urls(spark, crawldb):
    rows = generate(crawldb, conf_for(schedule__budget=10, crawl__topN=7), NOW, "s1").collect()
    urls = [r.url for r in rows]
    assert urls[:4] == [HOT_FAST, MEDIUM, COLD_FAST, HOT_NEVER]
    assert urls[4:] == [NEW1, NEW2, NEW3]


def test_other_schedules_keep_the_due_rule(spark, crawldb):
    rows = generate(crawldb, make_conf(schedule__kind="adaptive", crawl__topN=10), NOW, "s1").collect()
    assert {r.url for r in rows} == {NEW1, NEW2, NEW3}   # held pages are not due until tomorrow
