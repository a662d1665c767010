"""The hot_queue generate policy: the hot queue first, each queue by score; caps and top-N."""
from conftest import NOW
from crawlkit.stages.generate import generate

ROWS = [  # url, score, hot_link, hot_distance
    ("http://a.test/1", 0.9, 0.0, None),
    ("http://a.test/2", 0.2, 1.0, None),   # anchor/URL names the topic
    ("http://b.test/3", 0.5, 0.0, 2),      # two links from a hot page
    ("http://b.test/4", 0.8, 0.0, 3),      # three: not near enough
    ("http://c.test/5", 0.1, 1.0, 5),
    ("http://c.test/6", 0.7, 0.0, None),
]


def fetch_list(crawldb, make_test_conf, **conf):
    db = crawldb([{"url": u, "score": s, "scores": {"depth": s, "hot_link": h}, "hot_distance": d}
                  for u, s, h, d in ROWS])
    return [r.url for r in generate(db, make_test_conf(**conf), NOW, "s1").collect()]


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
