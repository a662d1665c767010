"""Reading a crawl directory (segments written with pyarrow in the declared schemas: see the
crawl_dir fixture) and cross-checking it with a replay-web access log (the access_log fixture)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from crawlkit.evaluate import evaluate_crawl
from crawlkit.evaluate.crawl import crawl_order, read_segments
from crawlkit.evaluate.crosscheck import cross_check, log_fetch_order
from crawlkit.evaluate.evaluation import estimates_by_round
from evaluate_tinyweb import CRAWL, SEGMENT_1, SEGMENT_2, SEGMENT_3, url


def test_crawl_order_from_segments(crawl_dir):
    content, fetchlists, incomplete = read_segments(str(crawl_dir))
    assert incomplete == [SEGMENT_3]
    assert len(content) == 10 and len(fetchlists) == 10
    order = crawl_order(content, fetchlists)
    # successes only, once per URL (a's 304 refetch, the 404 and the redirect do not count)
    assert order["url"].tolist() == [url(n) for n in CRAWL] + [url("extra")]
    assert order["segment"].tolist() == [SEGMENT_1] * 3 + [SEGMENT_2] * 4
    assert order["estimate"].tolist() == [.5, .2, .1, .4, .4, .9, .05]


def test_cross_check_with_the_access_log(crawl_dir, access_log):
    from crawlkit.replay.accesslog import read_access_log

    records = read_access_log(access_log)
    assert log_fetch_order(records) == [url(n) for n in "abecdfg"]
    order = crawl_order(*read_segments(str(crawl_dir))[:2])
    check = cross_check(order["url"], records)
    assert check.log_only == [url("g")]
    assert check.segments_only == [url("extra")]
    assert check.common == 6
    # log positions of the crawl order a b e c f d: 0 1 2 3 5 4, one discordant pair of 15
    assert check.order_agreement == pytest.approx(13 / 15)


# The crawler's estimates as of each round, as read_round_estimates gives them: round 1's
# fetch list, then round 2's with the earlier pages' scores unchanged (b, e: as in round 1).
ROUND_ESTIMATES = pd.DataFrame(
    [(SEGMENT_1, url(n), s) for n, s in zip("abe", [.5, .2, .1])]
    + [(SEGMENT_2, url(n), s) for n, s in zip("abecfd", [.6, .2, .1, .4, .4, .9])]
    + [(SEGMENT_2, url("extra"), .05)], columns=["segment", "url", "estimate"])


def test_evaluate_crawl(crawl_dir, access_log, web_files):
    links, labels = web_files
    result = evaluate_crawl(str(crawl_dir), links, "bfs", hot="indegree:1,indegree:2", buffer=2,
                            round_estimates=ROUND_ESTIMATES, access_log=access_log, labels=labels,
                            topic="course")
    assert result.web_pages == 8 and result.pages_crawled == 6
    assert result.notes[0] == f"segment {SEGMENT_3}: no complete content, left out"
    assert result.notes[1].startswith("1 crawled URLs are not in the web")
    assert result.crosscheck.summary() == {"common": 6, "log_only": 1, "segments_only": 1,
                                           "order_agreement": round(13 / 15, 6)}
    curves = result.curves[result.curves["ordering"] == "bfs"]
    # the same buffer trace as test_limited_buffer (round 2 re-keys a to .6: a stays on top)
    bc = curves[(curves.metric == "P_BC(B=2)") & (curves.hot_definition == "indegree>2")]
    assert_allclose(bc["value"], [0, 0, 0, 0.5, 0.5, 0.5])
    recall = curves[curves.metric == "recall"]
    assert_allclose(recall["value"], np.array([1, 1, 1, 2, 2, 2]) / 3)
    assert "## Cross-check with the access log" in result.markdown()


def test_round_estimates_become_one_array_per_round(crawl_dir):
    pages = crawl_order(*read_segments(str(crawl_dir))[:2])
    rounds = estimates_by_round(pages[pages["url"] != url("extra")], ROUND_ESTIMATES)
    assert [r.tolist() for r in rounds] == [[.5, .2, .1], [.6, .2, .1, .4, .4, .9]]
    with pytest.raises(ValueError, match=f"no estimates for segment\\(s\\) {SEGMENT_2}"):
        estimates_by_round(pages, ROUND_ESTIMATES[ROUND_ESTIMATES.segment == SEGMENT_1])


def test_a_replayed_buffer_needs_the_crawlers_estimates(crawl_dir, web_files):
    # the fetch-list scores are from different rounds: replaying with them is refused
    with pytest.raises(ValueError, match="round_estimates=read_round_estimates"):
        evaluate_crawl(str(crawl_dir), web_files[0], "bfs", buffer=2)


def test_estimates_override_the_fetch_list_scores(crawl_dir, web_files):
    # final scores that keep c and d: at the end the buffer holds the two indegree>2 pages
    final = {url(n): s for n, s in zip("abecfd", [.1, .2, .3, .8, .4, .9])}
    result = evaluate_crawl(str(crawl_dir), web_files[0], "final", hot="indegree:2",
                            buffer=2, estimates=final)
    bc = result.curves[(result.curves.metric == "P_BC(B=2)") & (result.curves.ordering == "final")]
    assert bc["value"].iloc[-1] == 1.0


def test_kept_buffer_from_the_pages_the_buffer_holds(crawl_dir, web_files):
    # the crawler's own buffer holds a and d of the crawled a b e c f d, and g, never crawled
    result = evaluate_crawl(str(crawl_dir), web_files[0], "own-buffer", hot="indegree:1,indegree:2",
                            buffered=[url(n) for n in "adg"])
    bc = result.curves[result.curves.metric == "P_BC(evicted, B=2)"]
    values = {(r.hot_definition, r.ordering): r.value for r in bc.itertuples()}
    # indegree>1 (a c d): 2 of 2 kept are hot; indegree>2 (c d): 1 of 2; one point at K = 6
    assert values[("indegree>1", "own-buffer")] == 1.0
    assert values[("indegree>2", "own-buffer")] == 0.5
    assert values[("indegree>2", "random")] == pytest.approx(2 / 8)
    assert set(bc["pages_crawled"]) == {6}
    assert result.notes[-1] == ("1 URLs the crawler's buffer holds are not crawled pages of the web, "
                                f"left out of B (e.g. {url('g')})")
