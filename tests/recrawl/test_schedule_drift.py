"""Schedules over many rounds of updatedb's schedule logic (updated_entries) on inline tables.

Two pages are refetched every time they are due: one never changes (same signature every
fetch), one changes before every fetch (a new signature). Under a small window
(min 600 s, max 8 h) the never-changing page drifts to schedule.max_interval and the fast one
to schedule.min_interval, for the adaptive and the change_rate schedules; fixed stays put.
"""
from __future__ import annotations

from datetime import timedelta

import pytest

from crawlkit.conf import make_conf
from crawlkit.stages.transition import updated_entries

from recrawlhelpers import NOW, crawldb_dicts, outcome_rows, to_crawldb

NEVER, FAST = "http://never.test/", "http://fast.test/"
LOW, HIGH, START = 600, 8 * 3600, 3600


def run_rounds(spark, kind, rounds):
    conf = make_conf(schedule__kind=kind, schedule__min_interval=LOW, schedule__max_interval=HIGH,
                     schedule__default_interval=START)
    records = crawldb_dicts([
        dict(url=u, status="fetched", signature="v0", fetched_at=NOW, fetch_interval=START,
             fetch_time=NOW + timedelta(seconds=START)) for u in (NEVER, FAST)])
    history = {NEVER: [], FAST: []}
    for k in range(1, rounds + 1):
        crawldb = to_crawldb(spark, records)
        outcomes = []
        for r in records:
            now = r["fetch_time"]   # each page is fetched when due
            outcomes.append(dict(url=r["url"], fetch_status="success", fetched_at=now,
                                 signature="v0" if r["url"] == NEVER else f"v{k}"))
        # one updatedb per page so each sees its own logical time
        new = []
        for o in outcomes:
            df = updated_entries(crawldb, outcome_rows(spark, [o]), conf, o["fetched_at"])
            new.extend(row.asDict(recursive=True) for row in df.collect())
        records = new
        for r in records:
            history[r["url"]].append(r["fetch_interval"])
    return {r["url"]: r for r in records}, history


@pytest.mark.parametrize("kind", ["adaptive", "change_rate"])
def test_never_changing_drifts_to_max_and_fast_to_min(spark, kind):
    rows, history = run_rounds(spark, kind, 10)
    assert rows[NEVER]["fetch_interval"] == HIGH, history[NEVER]
    assert rows[FAST]["fetch_interval"] == LOW, history[FAST]
    # monotone on the way
    assert history[NEVER] == sorted(history[NEVER])
    assert history[FAST] == sorted(history[FAST], reverse=True)
    # the counts that feed the estimator: every fetch after the first was a comparison
    assert rows[NEVER]["check_count"] == 10 and rows[NEVER]["change_count"] == 0
    assert rows[FAST]["check_count"] == 10 and rows[FAST]["change_count"] == 10
    assert rows[NEVER]["status"] == "not_modified" and rows[FAST]["status"] == "fetched"
    # next fetch time = fetch time + new interval
    for r in rows.values():
        assert r["fetch_time"] - r["fetched_at"] == timedelta(seconds=r["fetch_interval"])


def test_fixed_schedule_never_moves(spark):
    rows, history = run_rounds(spark, "fixed", 3)
    assert set(history[NEVER]) == set(history[FAST]) == {START}
