"""Link preparation, the registry and combiner, and the short metrics on 4-6 node graphs."""
from __future__ import annotations

import networkx as nx
import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from crawlkit.conf import make_conf
from crawlkit.scoring import ScoringContext, combine, get_scorer, list_scorers
from crawlkit.scoring.links import prepare_links

NOW = __import__("datetime").datetime(2024, 1, 1)
A, B, C, D = "http://a.edu/", "http://b.com/x/y/z", "http://b.com/home", "http://d.org/q"


def scores(spark, crawldb, links, name, texts=None, **conf):
    ctx = ScoringContext(spark, make_conf(**conf), NOW, crawldb=crawldb, links=links, texts=texts)
    return {r.url: r.score for r in get_scorer(name).score(ctx).collect()}


def test_registry_lists_every_metric():
    assert {"pagerank", "opic", "hits", "backlinks", "forward", "location", "similarity",
            "depth", "random", "host_pagerank"} <= set(list_scorers())
    with pytest.raises(ValueError, match="unknown scorer"):
        get_scorer("nope")


def test_combiner(spark):
    df = spark.createDataFrame([("u", {"pagerank": 0.5, "backlinks": 3.0}), ("v", None)],
                               "url string, scores map<string,double>")
    alone = df.select("url", combine(F.col("scores"), make_conf()).alias("s"))
    assert {r.url: r.s for r in alone.collect()} == {"u": 0.5, "v": 0.0}
    conf = make_conf(scoring__combine={"pagerank": 1.0, "backlinks": 0.1})
    both = df.select("url", combine(F.col("scores"), conf).alias("s"))
    assert {r.url: r.s for r in both.collect()} == pytest.approx({"u": 0.8, "v": 0.0})


def test_prepare_links_noise_options(spark, make_crawldb, make_links):
    copy, dead = "http://copy.test/", "http://dead.test/"
    crawldb = make_crawldb([{"url": u} for u in (A, B, C)]
                           + [{"url": D, "metadata": {"spam": "true"}},   # d is spam
                              {"url": copy, "status": "duplicate"}, {"url": dead, "status": "gone"}])
    links = make_links([
        (A, B), (A, B),                  # duplicate: one row
        (A, A),                          # self-link: dropped
        (A, C, {"nofollow": True}),      # nofollow: dropped
        (B, C),                          # same host b.com
        (C, A),                          # b.com -> a.edu
        (B, A),                          # b.com -> a.edu again (other source page)
        (D, A),                          # from a spam page: dropped
        (copy, A), (dead, B),            # from a duplicate, from a page gone silent: dropped
    ])
    edges = prepare_links(links, make_conf(), crawldb=crawldb).select("src", "dst")
    expected = spark.createDataFrame([(A, B), (B, C), (C, A), (B, A)], "src string not null, dst string not null")
    assert_df_equality(edges, expected, ignore_row_order=True, ignore_metadata=True)
    conf = make_conf(scoring__drop_same_host_links=True, scoring__one_link_per_source_host=True)
    edges = prepare_links(links, conf, crawldb=crawldb).select("src", "dst")
    # b.com -> a.edu counted once (from the smallest source URL, .../home)
    expected = spark.createDataFrame([(A, B), (C, A)], "src string not null, dst string not null")
    assert_df_equality(edges, expected, ignore_row_order=True, ignore_metadata=True)


@pytest.fixture
def small(make_crawldb, make_links):
    crawldb = make_crawldb([{"url": A, "depth": 0}, {"url": B, "depth": 1},
                            {"url": C, "depth": 1}, {"url": D, "depth": 2}])
    links = make_links([
        (A, B, {"anchor": "course syllabus"}),   # a -> b, c
        (A, C, {"anchor": "home"}),
        (B, C),                                   # b -> c
        (C, A),                                   # c -> a
        (D, C),                                   # d -> c; nobody links to d
    ])
    return crawldb, links


def test_backlinks_and_forward(spark, small):
    crawldb, links = small
    assert scores(spark, crawldb, links, "backlinks") == {A: 1.0, B: 1.0, C: 3.0, D: 0.0}
    # distinct source hosts: c gets a.edu, b.com (b itself), d.org
    assert scores(spark, crawldb, links, "backlinks", scoring__backlinks_distinct_hosts=True)[C] == 3.0
    assert scores(spark, crawldb, links, "forward") == {A: 2.0, B: 1.0, C: 1.0, D: 1.0}


def test_hits_matches_networkx(spark, small):
    crawldb, links = small
    got = scores(spark, crawldb, links, "hits", scoring__tolerance=1e-12, scoring__max_iterations=1000)
    g = nx.DiGraph([(A, B), (A, C), (B, C), (C, A), (D, C)])
    _, auth = nx.hits(g, tol=1e-14, max_iter=10000)
    total = sum(got.values())
    assert {u: v / total for u, v in got.items()} == pytest.approx(auth, abs=1e-8)
    hubs = scores(spark, crawldb, links, "hits", scoring__hits_score="hub")
    assert max(hubs, key=hubs.get) == A


def test_location(spark, small):
    crawldb, links = small
    conf = dict(scoring__location_tld_weights={"edu": 1.0, "com": 0.5},
                scoring__location_words={"home": 0.25}, scoring__location_slash_weight=1.0)
    got = scores(spark, crawldb, links, "location", **conf)
    assert got == pytest.approx({
        A: 1.0 + 1.0,                 # .edu, no path segment
        B: 0.5 + 1.0 / 4,             # .com, three segments
        C: 0.5 + 0.25 + 1.0 / 2,      # .com, "home", one segment
        D: 0.0 + 1.0 / 2,             # .org has no weight here
    })


def test_depth_and_random(spark, small):
    crawldb, links = small
    assert scores(spark, crawldb, links, "depth") == {A: 1.0, B: 0.5, C: 0.5, D: 1 / 3}
    first = scores(spark, crawldb, links, "random", scoring__random_seed=7)
    assert first == scores(spark, crawldb, links, "random", scoring__random_seed=7)
    assert first != scores(spark, crawldb, links, "random", scoring__random_seed=8)
    assert all(0.0 <= v < 1.0 for v in first.values())


def test_similarity(spark, small):
    crawldb, links = small
    texts = spark.createDataFrame([
        (A, "Course list", "courses and a syllabus for each course"),   # on topic
        (C, "Home", "welcome to our home page"),                        # off topic
        (D, "News", "news about the course of events"),                 # weakly on topic
    ], "url string, title string, text string")
    got = scores(spark, crawldb, links, "similarity", texts=texts,
                 scoring__similarity_query="course syllabus")
    assert got[A] > got[D] > got[C] == 0.0
    # b is not fetched: its in-link anchor "course syllabus" is the query itself (cosine 1).
    assert got[B] == pytest.approx(0.5)
    assert all(0.0 <= v <= 1.0 + 1e-12 for v in got.values())
