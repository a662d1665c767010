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
