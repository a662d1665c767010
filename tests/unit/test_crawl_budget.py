"""Crawl and stop: the last round is cut to what is left of crawl.max_pages, which counts
the pages this process fetched."""
from crawlkit.conf import make_conf
from crawlkit.crawl import _within_budget


def test_round_size_is_capped_by_pages_left():
    conf = make_conf(crawl__max_pages=250, crawl__topN=100)
    assert _within_budget(conf, 0)["crawl.topN"] == 100
    assert _within_budget(conf, 200)["crawl.topN"] == 50
    assert _within_budget(make_conf(crawl__max_pages=30, crawl__topN=0), 10)["crawl.topN"] == 20
    assert _within_budget(make_conf(crawl__topN=100), 10**6)["crawl.topN"] == 100  # no limit set


def test_a_resumed_round_counts_only_what_this_process_fetched(monkeypatch):
    """The dead process fetched 80 of the resumed round's 100 pages; this one fetched 20 of
    them and has a budget of 120, so it still runs the next full round."""
    from datetime import datetime, timezone

    import crawlkit.crawl as crawl

    rounds = iter([
        crawl.RoundReport("s1", counters={"fetch": {"pages": 100, "fetched_now": 20}}, resumed_from="fetch"),
        crawl.RoundReport("s2", counters={"fetch": {"pages": 100, "fetched_now": 100}}),
        crawl.RoundReport("s3", counters={"fetch": {"pages": 100, "fetched_now": 100}}),
    ])
    asked = []

    def fake_round(spark, conf, now, log):
        asked.append(conf["crawl.topN"])
        return next(rounds)

    monkeypatch.setattr(crawl, "run_round", fake_round)
    reports = crawl.run_crawl(None, make_conf(crawl__max_pages=120, crawl__topN=100), None, 5,
                              lambda: datetime(2026, 1, 1, tzinfo=timezone.utc), log=lambda m: None)
    assert [r.segment for r in reports] == ["s1", "s2"]
    assert asked == [100, 100]   # 20 counted after the resumed round, so 100 are left to ask


def test_a_round_that_only_scored_fetched_nothing_now():
    from crawlkit.crawl import RoundReport, pages_fetched_now

    assert pages_fetched_now(RoundReport("s", counters={"score": {}}, resumed_from="score")) == 0
    assert pages_fetched_now(RoundReport("s", counters={"fetch": {"pages": 7}})) == 7


class _Clock:
    """A logical clock that only moves when a round runs or the loop sleeps."""

    def __init__(self, start):
        self.now = start

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += __import__("datetime").timedelta(seconds=seconds)


def _every(monkeypatch, round_hours, **kw):
    """run_every with rounds that take ``round_hours`` each (a list); returns their start hours."""
    from datetime import datetime, timedelta

    import crawlkit.crawl as crawl

    t0 = datetime(2026, 1, 1)
    clock, durations, started = _Clock(t0), iter(round_hours), []

    def fake_round(spark, conf, now, log):
        started.append((now - t0).total_seconds() / 3600)
        clock.now += timedelta(hours=next(durations))
        return crawl.RoundReport(f"s{len(started)}", counters={"fetch": {"fetched_now": 10}})

    monkeypatch.setattr(crawl, "run_round", fake_round)
    until, rounds = kw.pop("until", None), kw.pop("rounds", None)
    crawl.run_every(None, make_conf(**kw), None, 3600, until and t0 + timedelta(hours=until),
                    rounds, clock, clock.sleep, log=lambda m: None)
    return started


def test_an_overrun_skips_the_slots_it_missed_instead_of_a_burst(monkeypatch):
    # hourly; the first round takes 5 h 10 min: the next starts at 6 h, not at once
    assert _every(monkeypatch, [5 + 1 / 6, 0.1, 0.1], rounds=3) == [0, 6, 7]


def test_until_is_checked_against_the_clock_not_the_grid(monkeypatch):
    assert _every(monkeypatch, [5 + 1 / 6, 0.1], until=3) == [0]
    assert _every(monkeypatch, [0.5, 0.5, 0.5, 0.5], until=3) == [0, 1, 2]


def test_the_loop_stops_at_max_pages(monkeypatch):
    # 10 pages a round, crawl-and-stop at 25: three rounds, the last asked for 5
    assert _every(monkeypatch, [0.1] * 5, crawl__max_pages=25, crawl__topN=100) == [0, 1, 2]
