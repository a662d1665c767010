"""Schedules over many rounds of updatedb's schedule logic (updated_entries) on inline tables.

Two pages are refetched every time they are due: one never changes (same signature every
fetch), one changes before every fetch (a new signature). Under a small window
(min 600 s, max 8 h) the never-changing page drifts to schedule.max_interval and the fast one
to schedule.min_interval under the adaptive schedule; fixed stays put. Under change_rate the
interval is the mean gap between the checks, whatever they found.
"""
from __future__ import annotations

from datetime import timedelta


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


def test_never_changing_drifts_to_max_and_fast_to_min(spark):
    rows, history = run_rounds(spark, "adaptive", 10)
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


def test_change_rate_keeps_the_mean_gap_between_checks(spark):
    """The estimator's I is the time between checks. Taken from the interval it was feeding
    (1 / rate), a page checked an hour after its first fetch went to max_interval at once,
    and a redirect shrank the interval on every fetch until min_interval."""
    conf = make_conf(schedule__kind="change_rate", schedule__min_interval=LOW,
                     schedule__max_interval=100 * 3600, schedule__default_interval=50 * 3600)
    record = crawldb_dicts([dict(url=FAST, status="fetched", signature="v0", fetched_at=NOW,
                                 fetch_interval=30 * 86400, fetch_time=NOW + timedelta(days=30))])[0]
    copy_taken, intervals = NOW, []
    for k, (gap_h, outcome) in enumerate([(1, "v0"), (5, "v1"), (3, "v1"), (7, "redirect"), (2, "v2")]):
        now = copy_taken + timedelta(hours=gap_h)
        status = "redirect_perm" if outcome == "redirect" else "success"
        o = dict(url=FAST, fetch_status=status, fetched_at=now, http_status=301 if status != "success" else 200,
                 signature=None if status != "success" else outcome,
                 redirect_url="http://fast.test/moved" if status != "success" else None)
        df = updated_entries(to_crawldb(spark, [record]), outcome_rows(spark, [o]), conf, now)
        record = df.first().asDict(recursive=True)
        intervals.append(record["fetch_interval"] / 3600)
        copy_taken = now
        assert record["fetch_time"] == now + timedelta(seconds=record["fetch_interval"])
    # checks after 1 h, 5 h, 3 h: means 1, 3, 3; the redirect compares nothing (the interval
    # stays, and so does the time line: the next gap counts from the redirect's fetch); then 2 h
    assert intervals == [1, 3, 3, 3, 2.75]
    assert (record["check_count"], record["change_count"]) == (4, 2)
