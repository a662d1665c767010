"""Crawl and stop: the last round is cut to what is left of crawl.max_pages."""
from crawlkit.conf import make_conf
from crawlkit.crawl import _within_budget


def test_round_size_is_capped_by_pages_left():
    conf = make_conf(crawl__max_pages=250, crawl__topN=100)
    assert _within_budget(conf, 0)["crawl.topN"] == 100
    assert _within_budget(conf, 200)["crawl.topN"] == 50
    assert _within_budget(make_conf(crawl__max_pages=30, crawl__topN=0), 10)["crawl.topN"] == 20
    assert _within_budget(make_conf(crawl__topN=100), 10**6)["crawl.topN"] == 100  # no limit set
