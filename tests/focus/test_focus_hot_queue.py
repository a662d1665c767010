"""The hot_queue generate policy: the hot queue first, each queue by score; caps and top-N;
hot-queue URLs in directories the crawl found mostly dead moved to the other queue, those in
directories it has explored behind the other hot-queue URLs."""
from datetime import timedelta

import numpy as np
import pytest
from focushelpers import NOW
from pyspark.sql import functions as F

from crawlkit.stages.generate import generate
from crawlkit.stages.hot_queue import dead_probability, directory

ROWS = [  # url, score, hot_link, hot_distance
    ("http://a.test/1", 0.9, 0.0, None),
    ("http://a.test/2", 0.2, 1.0, None),   # anchor/URL names the topic
    ("http://b.test/3", 0.5, 0.0, 2),      # two links from a hot page
    ("http://b.test/4", 0.8, 0.0, 3),      # three: not near enough
    ("http://c.test/5", 0.1, 1.0, 5),
    ("http://c.test/6", 0.7, 0.0, None),
]


# a hot-queue crawl is a focused crawl (the configuration refuses one without topic words);
# generate reads the hot distances and links the crawldb holds, not the words
TOPIC = ["topic"]


def fetch_list(crawldb, make_test_conf, **conf):
    db = crawldb([{"url": u, "score": s, "scores": {"depth": s, "hot_link": h}, "hot_distance": d}
                  for u, s, h, d in ROWS])
    return [r.url for r in generate(db, make_test_conf(**{"focus__words": TOPIC, **conf}), NOW, "s1").collect()]


def test_original_two_queue_crawler(crawldb, make_test_conf):
    got = fetch_list(crawldb, make_test_conf, generate__policy="hot_queue", focus__hot_queue_distance=0)
    assert got == ["http://a.test/2", "http://c.test/5",
                   "http://a.test/1", "http://b.test/4", "http://c.test/6", "http://b.test/3"]


def test_modified_crawler_adds_pages_near_hot_ones(crawldb, make_test_conf):
    got = fetch_list(crawldb, make_test_conf, generate__policy="hot_queue")
    assert got == ["http://b.test/3", "http://a.test/2", "http://c.test/5",
                   "http://a.test/1", "http://b.test/4", "http://c.test/6"]


def test_caps_and_top_n_follow_the_queue_order(crawldb, make_test_conf):
    got = fetch_list(crawldb, make_test_conf, generate__policy="hot_queue", generate__max_per_host=1,
                     crawl__topN=2)
    # a.test keeps its hot-queue URL over the better-scored one; top 2 of the queue order
    assert got == ["http://b.test/3", "http://a.test/2"]


def test_score_policy_ignores_the_queues(spark, crawldb, make_test_conf):
    got = fetch_list(crawldb, make_test_conf, generate__policy="score")
    assert got == ["http://a.test/1", "http://b.test/4", "http://c.test/6",
                   "http://b.test/3", "http://a.test/2", "http://c.test/5"]


def test_score_policy_caps_by_score_alone(spark, crawldb, make_test_conf):
    got = fetch_list(crawldb, make_test_conf, generate__policy="score", generate__max_per_host=1)
    assert got == ["http://a.test/1", "http://b.test/4", "http://c.test/6"]


def judged_rows(folder: str, dead: int, live: int) -> list[dict]:
    """Fetched URLs of one directory: ``dead`` gone and ``live`` fetched (not due again)."""
    later = NOW + timedelta(days=30)
    return ([{"url": f"{folder}gone{i}.html", "status": "gone", "fetch_time": later} for i in range(dead)]
            + [{"url": f"{folder}page{i}.html", "status": "fetched", "fetch_time": later} for i in range(live)])


def test_dead_link_probability_is_the_beta_posterior():
    # P(share > 1/2 | d dead, l live) = P(Binomial(d + l + 1, 1/2) <= d), summed by hand
    got = dead_probability(np.array([3, 2, 5, 4, 0]), np.array([0, 0, 1, 1, 0]))
    assert got == pytest.approx([15 / 16, 7 / 8, 1 - 8 / 128, 1 - 7 / 64, 1 / 2])


def test_directory_is_the_path_up_to_its_last_slash(spark):
    urls = ["http://a.test/x/y.html?q=1/2#f/g", "http://a.test/", "http://a.test/x/", "http://a.test/x"]
    got = [r.d for r in spark.createDataFrame([(u,) for u in urls], "url string")
           .select(directory(F.col("url")).alias("d")).collect()]
    assert got == ["http://a.test/x/", "http://a.test/", "http://a.test/x/", "http://a.test/"]


def dead_link_fetch_list(crawldb, make_test_conf, **conf):
    rows = (judged_rows("http://d.test/x/", 3, 0) + judged_rows("http://e.test/y/", 2, 0)
            + judged_rows("http://f.test/z/", 5, 1) + judged_rows("http://g.test/w/", 4, 1))
    due = [("http://d.test/x/new.html?page=2/3", 0.9), ("http://e.test/y/new.html", 0.8),
           ("http://f.test/z/new.html", 0.7), ("http://g.test/w/new.html", 0.6),
           ("http://d.test/other/new.html", 0.5)]
    rows += [{"url": u, "score": s, "scores": {"hot_link": 1.0}} for u, s in due]
    rows.append({"url": "http://h.test/cold.html", "score": 0.95})
    return [r.url for r in generate(crawldb(rows), make_test_conf(**{"focus__words": TOPIC, **conf}), NOW, "s1").collect()]


def test_hot_urls_in_mostly_dead_directories_join_the_other_queue(crawldb, make_test_conf):
    got = dead_link_fetch_list(crawldb, make_test_conf, generate__policy="hot_queue")
    # d/x (3 dead, 0 live: 0.94) and f/z (5 dead, 1 live: 0.94) leave the hot queue; e/y (2 dead:
    # 0.88) and g/w (4 dead, 1 live: 0.89) stay; d/other has no evidence and stays
    assert got == ["http://e.test/y/new.html", "http://g.test/w/new.html", "http://d.test/other/new.html",
                   "http://h.test/cold.html", "http://d.test/x/new.html?page=2/3", "http://f.test/z/new.html"]


def test_the_papers_crawler_ignores_dead_links(crawldb, make_test_conf):
    got = dead_link_fetch_list(crawldb, make_test_conf, generate__policy="hot_queue",
                               focus__dead_link_confidence=0.0, focus__explored_directory_pages=0)
    assert got == ["http://d.test/x/new.html?page=2/3", "http://e.test/y/new.html", "http://f.test/z/new.html",
                   "http://g.test/w/new.html", "http://d.test/other/new.html", "http://h.test/cold.html"]


def explored_fetch_list(crawldb, make_test_conf, **conf):
    later = NOW + timedelta(days=30)
    rows = (judged_rows("http://x.test/a/", 0, 2)      # explored: 2 fetched + 1 not modified
            + [{"url": "http://x.test/a/same.html", "status": "not_modified", "fetch_time": later}]
            + judged_rows("http://y.test/b/", 0, 2)    # 2 live: not explored at the default 3
            + judged_rows("http://z.test/c/", 8, 3))   # explored, but mostly dead (P = 0.927)
    due = [("http://x.test/a/new.html", 0.9), ("http://z.test/c/new.html", 0.8),
           ("http://y.test/b/new.html", 0.5), ("http://w.test/new.html", 0.1)]
    rows += [{"url": u, "score": s, "scores": {"hot_link": 1.0}} for u, s in due]
    rows.append({"url": "http://h.test/cold.html", "score": 0.95})
    return [r.url for r in generate(crawldb(rows), make_test_conf(**{"focus__words": TOPIC, **conf}), NOW, "s1").collect()]


def test_hot_urls_of_explored_directories_wait_behind_the_other_hot_urls(crawldb, make_test_conf):
    got = explored_fetch_list(crawldb, make_test_conf, generate__policy="hot_queue")
    # x/a has given 3 live pages: its URL waits behind the unexplored hot URLs, ahead of the
    # other queue; z/c is explored too, but its dead URLs send it to the other queue
    assert got == ["http://y.test/b/new.html", "http://w.test/new.html", "http://x.test/a/new.html",
                   "http://h.test/cold.html", "http://z.test/c/new.html"]


def test_explored_directory_pages_sets_the_tier_and_zero_turns_it_off(crawldb, make_test_conf):
    two = explored_fetch_list(crawldb, make_test_conf, generate__policy="hot_queue",
                              focus__explored_directory_pages=2)
    assert two == ["http://w.test/new.html", "http://x.test/a/new.html", "http://y.test/b/new.html",
                   "http://h.test/cold.html", "http://z.test/c/new.html"]
    off = explored_fetch_list(crawldb, make_test_conf, generate__policy="hot_queue",
                              focus__explored_directory_pages=0)
    assert off == ["http://x.test/a/new.html", "http://y.test/b/new.html", "http://w.test/new.html",
                   "http://h.test/cold.html", "http://z.test/c/new.html"]


def test_hot_queue_without_topic_words_is_refused(make_test_conf, tmp_path):
    from crawlkit.conf import ConfError
    with pytest.raises(ConfError, match="hot_queue needs focus.words"):   # as the configuration loads
        make_test_conf(crawl__dir=str(tmp_path / "crawl"), generate__policy="hot_queue")
