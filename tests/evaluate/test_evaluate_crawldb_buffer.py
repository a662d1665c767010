"""The limited buffer read from the Delta crawldb (Spark): the crawler's estimates as of each
round for a replayed buffer (``--buffer B``), and the pages its own buffer holds
(``--buffer crawldb``). The crawl is the crawl_dir fixture's: round 1 (SEGMENT_1) fetches
a b e, round 2 (SEGMENT_2) c f d and extra.html (outside the web).

Functions the fix adds are imported inside the tests, so that the command-line tests run,
and fail on their values, against code without them.
"""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

from crawlkit import storage
from crawlkit.cli import main
from evaluate_tinyweb import SEGMENT_1, SEGMENT_2, url
from sparkhelpers import crawldb_rows

pytestmark = pytest.mark.slow  # Spark and Delta; every other evaluation test runs without Spark

NOW = datetime(2024, 1, 1)
# The crawldb's scores through the crawl. Round 2's fetch list holds a .6 c .4 f .4 d .9 (the
# fixture's); b, fetched in round 1, is not in it, but its score grew from .2 to .45 as the
# pages found in round 1 linked to it. The last commit (after round 2) changes the scores again.
ROUND_1 = {"a": .5, "b": .2, "x": .3, "e": .1}
ROUND_2 = {"a": .6, "b": .45, "x": .3, "e": .15, "c": .4, "f": .4, "d": .9, "r": .3, "extra": .05}
AFTER = {**ROUND_2, "b": .05, "c": .8}


def write_history(spark, crawl, commits: list[tuple[str, dict[str, float]]]) -> str:
    """One crawldb commit per (tag, scores), each replacing the whole table."""
    path = storage.crawldb_path(str(crawl))
    for tag, scores in commits:
        rows = [{"url": url(n), "host": "t.test", "score": s} for n, s in scores.items()]
        with storage.commit_tag(spark, tag):
            crawldb_rows(spark, rows, NOW).write.format("delta").mode("overwrite").save(path)
    return path


@pytest.fixture
def crawl_history(spark, crawl_dir):
    write_history(spark, crawl_dir, [(storage.generated_tag(SEGMENT_1), ROUND_1),
                                     (storage.generated_tag(SEGMENT_2), ROUND_2),
                                     (f"updatedb:{SEGMENT_2} score:{SEGMENT_2}", AFTER)])
    return crawl_dir


def evaluate(crawl, web_files, out, *extra) -> pd.DataFrame:
    assert main(["evaluate", "--crawl-dir", str(crawl), "--web", str(web_files[0]), "--name", "run",
                 "--hot", "indegree:1,indegree:2", "--out", str(out), "--quiet",
                 "--conf", "spark.shuffle_partitions=2", *extra]) == 0
    curves = pd.read_csv(out / "run.csv")
    return curves[curves.metric.str.startswith("P_BC") & (curves.ordering == "run")]


def test_the_replayed_buffer_compares_pages_by_the_estimates_of_the_round(spark, crawl_history,
                                                                          web_files, tmp_path):
    # B = 2. Round 1 (a .5 b .2 e .1): e arrives to {a, b} and goes itself.
    # Round 2 re-keys the buffer: a .6, b .45. c .4 arrives: c goes itself; f .4: f goes;
    # d .9: b goes -> {a, d}. Buffer per K: {a} {a b} {a b} {a b} {a b} {a d}.
    # (By fetch-list scores b would keep .2 and go as soon as c arrived: {a c} at K = 4.)
    bc = evaluate(crawl_history, web_files, tmp_path, "--buffer", "2")
    value = {hot: rows.sort_values("pages_crawled")["value"].tolist()
             for hot, rows in bc.groupby("hot_definition")}
    assert value["indegree>1"] == [.5, .5, .5, .5, .5, 1]     # hot: a c d
    assert value["indegree>2"] == [0, 0, 0, 0, 0, .5]         # hot: c d

    from crawlkit.evaluate import measures, read_round_estimates
    from crawlkit.evaluate.crawl import crawl_order, read_segments
    from crawlkit.evaluate.evaluation import estimates_by_round

    by_round = read_round_estimates(spark, str(crawl_history))
    # the pages crawled by each round's end, at the version of its generate commit
    got = {(r.segment, r.url): r.estimate for r in by_round.itertuples()}
    assert got == {**{(SEGMENT_1, url(n)): ROUND_1[n] for n in "abe"},
                   **{(SEGMENT_2, url(n)): ROUND_2[n] for n in ("a", "b", "e", "c", "f", "d", "extra")}}
    pages = crawl_order(*read_segments(str(crawl_history))[:2])
    evicted = measures.buffer_evictions(estimates_by_round(pages, by_round), 2)
    # crawl a b e | c f d extra: e goes, then c, f, b, and extra (.05) itself
    assert evicted.tolist() == [-1, -1, 2, 3, 4, 1, 6]


def test_a_round_whose_generate_commit_is_lost_is_an_error(spark, crawl_dir, web_files, tmp_path):
    # the log before round 2 was cleaned up: round 1's generate commit is no longer in the history
    write_history(spark, crawl_dir, [("updatedb:older", ROUND_1),
                                     (storage.generated_tag(SEGMENT_2), ROUND_2)])
    with pytest.raises(SystemExit, match=f"segment {SEGMENT_1}: its generate commit is no longer in "
                                         "the crawldb's history.*--buffer crawldb"):
        evaluate(crawl_dir, web_files, tmp_path, "--buffer", "2")


def test_a_round_whose_version_was_vacuumed_is_an_error(spark, crawl_dir):
    from crawlkit.evaluate import read_round_estimates

    path = write_history(spark, crawl_dir, [(storage.generated_tag(SEGMENT_1), ROUND_1),
                                            (storage.generated_tag(SEGMENT_2), ROUND_2)])
    # what VACUUM does to version 0's files once version 1 replaced them (VACUUM itself takes
    # a minute or two here)
    for action in map(json.loads, (Path(path) / "_delta_log" / f"{0:020d}.json").read_text().splitlines()):
        if "add" in action:
            (Path(path) / action["add"]["path"]).unlink()
    with pytest.raises(ValueError, match=f"segment {SEGMENT_1}: the crawldb as of its generate "
                                         r"\(version 0\) cannot be read "
                                         r"\(vacuumed\); VACUUM may.*estimates="):
        read_round_estimates(spark, str(crawl_dir))


# The crawler's own buffer at the end of the crawl a b e c f d (crawl.buffer_pages = 3):
# a, c stored, f readmitted and awaiting its refetch hold the 3 places. b was evicted; d is a
# duplicate and e went gone on its refetch: crawled, neither holds a place. g was never fetched.
BUFFER = [("a", "fetched", {}), ("b", "evicted", {"evicted_at": "2024-01-02T00:00:00Z"}),
          ("c", "not_modified", {}), ("d", "duplicate", {}), ("e", "gone", {}),
          ("f", "unfetched", {"readmitted_at": "2024-01-02T00:00:00Z"}), ("g", "unfetched", {})]


@pytest.fixture
def own_buffer(spark, crawl_dir):
    rows = [{"url": url(n), "host": "t.test", "status": s, "metadata": m} for n, s, m in BUFFER]
    rows.append({"url": "crawlkit:virtual", "host": "", "status": "fetched"})   # OPIC's, not a page
    crawldb_rows(spark, rows, NOW).write.format("delta").save(storage.crawldb_path(str(crawl_dir)))
    return crawl_dir


def test_the_crawlers_own_buffer_counts_only_the_pages_it_holds(own_buffer, web_files, tmp_path):
    bc = evaluate(own_buffer, web_files, tmp_path, "--buffer", "crawldb")
    assert set(bc["metric"]) == {"P_BC(evicted, B=3)"}    # a c f, not the 5 crawled pages not evicted
    value = {r.hot_definition: r.value for r in bc.itertuples()}
    assert value == pytest.approx({"indegree>1": 2 / 3, "indegree>2": 1 / 3})   # a c of a c f; c


def test_read_buffer(spark, own_buffer):
    from crawlkit.evaluate import read_buffer

    assert read_buffer(spark, str(own_buffer)) == {url(n) for n in "acf"}
