"""Hot pages (paper and similarity definitions) and hot_distance across rounds."""
import pytest

from crawlkit.conf import make_conf
from crawlkit.scoring.focus.hot import hot_distances, judge
from crawlkit.scoring.focus.query import Query

from focushelpers import as_dict

Q = Query(("computer",))


def test_paper_definition(texts):
    pages = texts([("t", "Computers at home", "nothing"), ("ten", "x", "computer " * 10),
                   ("nine", "x", "computer " * 9 + "compute"), ("none", None, None)])
    got = as_dict(judge(pages, Q, make_conf()), value="hot")
    assert got == {"t": True, "ten": True, "nine": False, "none": False}


@pytest.mark.parametrize("threshold, mixed", [(0.3, False), (0.2, True)])
def test_similarity_definition(texts, threshold, mixed):
    # "mixed": IS' = 1.288 / 4.46 = 0.289 (title words weigh 3, idf 1 + ln(4/3) for every word)
    pages = texts([("on", "computer science", "computer programs"), ("off", "gardening", "roses and soil"),
                   ("mixed", "gardening", "roses soil computer")])
    conf = make_conf(focus__hot="similarity", focus__hot_similarity=threshold)
    assert as_dict(judge(pages, Q, conf), value="hot") == {"on": True, "off": False, "mixed": mixed}


def test_unknown_definition_is_refused():
    with pytest.raises(ValueError, match="focus.hot must be one of paper, similarity, got 'magic'"):
        make_conf(focus__hot="magic")   # as the configuration loads, before any page is judged


def test_hot_distance_across_rounds(spark, crawldb, links):
    """Round 1: h is hot, h -> a -> b -> c. Round 2: g turns out hot and links to b; the
    link h -> a is gone but a keeps its distance (values only shrink)."""
    url = lambda x: f"http://s.test/{x}"  # noqa: E731
    pages = crawldb([{"url": url(x)} for x in "habcg"])
    hot1 = spark.createDataFrame([(url("h"), True), (url("a"), False)], "url string, hot boolean")
    round1 = links([(url("h"), url("a")), (url("a"), url("b")), (url("b"), url("c"))])
    d1 = as_dict(hot_distances(pages, round1, hot1, 8), value="hot_distance")
    assert d1 == {url("h"): 0, url("a"): 1, url("b"): 2, url("c"): 3, url("g"): None}

    stored = crawldb([{"url": u, "hot_distance": d} for u, d in d1.items()])
    hot2 = spark.createDataFrame([(url("g"), True)], "url string, hot boolean")
    round2 = links([(url("g"), url("b")), (url("b"), url("c"))])
    d2 = as_dict(hot_distances(stored, round2, hot2, 8), value="hot_distance")
    assert d2 == {url("h"): 0, url("a"): 1, url("b"): 1, url("c"): 2, url("g"): 0}


def test_hot_distance_stops_at_max_distance(spark, crawldb, links):
    chain = [f"http://s.test/{i}" for i in range(6)]
    hot = spark.createDataFrame([(chain[0], True)], "url string, hot boolean")
    got = as_dict(hot_distances(crawldb([{"url": u} for u in chain]),
                                links(list(zip(chain, chain[1:]))), hot, 3), value="hot_distance")
    assert [got[u] for u in chain] == [0, 1, 2, 3, None, None]
