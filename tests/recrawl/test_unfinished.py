"""Unfinished segments (crawlkit.resume) on small inline crawl directories, without fetching:
what a rerun round continues, what it leaves, and abandoning a segment. The killed-and-rerun
round over the replay web is test_resume.py."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest

from crawlkit import cli, storage
from crawlkit.conf import make_conf
from crawlkit.crawl import new_segment_name, run_round
from crawlkit.resume import SegmentStateError, abandon_segment, find_unfinished, resumable
from crawlkit.stages.fetch import run_fetch
from crawlkit.segment_names import base_name as segment_name
from crawlkit.stages.generate import run_generate
from crawlkit.stages.updatedb import run_updatedb

from recrawlhelpers import NOW, crawldb_dicts, host_of, to_crawldb

A, B, C = (f"http://{h}.test/" for h in "abc")
WEEK = 7 * 86400


@pytest.fixture
def conf(spark, tmp_path):
    conf = make_conf(crawl__dir=str(tmp_path / "crawl"), generate__partitions=1, spark__shuffle_partitions=2,
                     generate__lock_timeout=WEEK, scoring__engine="driver")
    to_crawldb(spark, crawldb_dicts([{"url": u, "depth": 0} for u in (A, B, C)])) \
        .write.format("delta").save(storage.crawldb_path(conf["crawl.dir"]))
    return conf


def locked_by(spark, conf):
    return {r.url: r.generated_segment
            for r in storage.read_table(spark, storage.crawldb_path(conf["crawl.dir"]), "crawldb").collect()}


def apply_without_scoring(spark, conf, segment, now):
    """What a round killed between updatedb and score leaves: every URL fetched, applied."""
    content = spark.createDataFrame([(u, host_of(u), "success", 200, now, False, segment) for u in (A, B, C)],
                                    "url string, host string, fetch_status string, http_status int, "
                                    "fetched_at timestamp, truncated boolean, segment string")
    storage.write_segment_part(content, conf["crawl.dir"], segment, "content", "content")
    parsed = spark.createDataFrame([(u, "success", u, False, False, segment) for u in (A, B, C)],
                                   "url string, parse_status string, signature string, noindex boolean, "
                                   "nofollow boolean, segment string")
    storage.write_segment_part(parsed, conf["crawl.dir"], segment, "parse", "parse")
    run_updatedb(spark, conf, now, segment)


def test_a_generated_unapplied_segment_is_continued_until_its_lock_expires(spark, conf):
    segment = run_generate(spark, conf, NOW)["segment"]
    assert set(locked_by(spark, conf).values()) == {segment}
    [unfinished] = find_unfinished(spark, conf, NOW)
    assert (unfinished.segment, unfinished.stage, unfinished.locked, unfinished.expired) == \
        (segment, "fetch", 3, False)
    assert resumable(spark, conf, NOW + timedelta(seconds=WEEK - 1), log=lambda _m: None) == unfinished

    said = []
    assert resumable(spark, conf, NOW + timedelta(seconds=WEEK), log=said.append) is None
    assert len(said) == 1 and segment in said[0] and f"--abandon-segment {segment}" in said[0]


def test_an_expired_segment_whose_folder_is_gone_is_only_reported(spark, conf):
    import shutil
    segment = run_generate(spark, conf, NOW)["segment"]
    shutil.rmtree(storage.segment_path(conf["crawl.dir"], segment))
    with pytest.raises(SegmentStateError, match="fetch list .* is missing"):
        resumable(spark, conf, NOW, log=lambda _m: None)   # a live lock needs its segment
    said = []
    assert resumable(spark, conf, NOW + timedelta(seconds=WEEK), log=said.append) is None
    assert len(said) == 1 and segment in said[0]


def test_abandon_releases_the_locks_and_keeps_the_files(spark, conf, capsys):
    segment = run_generate(spark, conf, NOW)["segment"]
    counters = abandon_segment(spark, conf, segment, NOW)
    assert counters["released"] == 3
    assert set(locked_by(spark, conf).values()) == {None}
    assert find_unfinished(spark, conf, NOW) == []
    tags = storage.commit_tags(spark, storage.crawldb_path(conf["crawl.dir"]))
    assert tags[-1] == f"abandon:{segment}"
    assert storage.segment_part_exists(spark, conf["crawl.dir"], segment, "fetchlist")
    with pytest.raises(SegmentStateError, match="abandoned"):
        run_fetch(spark, conf, NOW, segment)
    # abandoning again changes nothing; the URLs go to a new segment, not into the old directory
    assert abandon_segment(spark, conf, segment, NOW)["released"] == 0
    assert storage.commit_tags(spark, storage.crawldb_path(conf["crawl.dir"])) == tags
    fresh = f"{segment_name(NOW)}-000001"
    assert new_segment_name(spark, conf, NOW) == fresh
    assert cli.main(["generate", "--crawl-dir", conf["crawl.dir"], "--now", NOW.isoformat(), "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (out["segment"], out["generated"]) == (fresh, 3)
    assert set(locked_by(spark, conf).values()) == {fresh}


def test_abandon_refuses_applied_and_unknown_segments(spark, conf, capsys):
    with pytest.raises(SegmentStateError, match="never generated"):
        abandon_segment(spark, conf, "19990101000000", NOW)
    segment = run_generate(spark, conf, NOW)["segment"]
    apply_without_scoring(spark, conf, segment, NOW)
    with pytest.raises(SegmentStateError, match="already applied"):
        abandon_segment(spark, conf, segment, NOW)
    args = ["round", "--crawl-dir", conf["crawl.dir"], "--now", NOW.isoformat(), "--quiet",
            "--abandon-segment", "19990101000000"]
    assert cli.main(args) == 4
    assert "never generated" in capsys.readouterr().err


def test_a_round_killed_before_scoring_is_finished_by_dedup_and_scoring_only(spark, conf):
    segment = run_generate(spark, conf, NOW)["segment"]
    apply_without_scoring(spark, conf, segment, NOW)
    assert [(u.segment, u.stage) for u in find_unfinished(spark, conf, NOW)] == [(segment, "score")]

    later = NOW + timedelta(hours=1)
    report = run_round(spark, conf, later, log=lambda _m: None)
    assert (report.segment, report.resumed_from) == (segment, "score")
    assert set(report.counters) == {"dedup", "score"}         # dedup is idempotent: run again
    assert find_unfinished(spark, conf, later) == []
    # the next round generates again (nothing is due an hour later: an empty round)
    assert run_round(spark, conf, later, log=lambda _m: None).segment is None


def test_a_round_killed_between_its_scorers_is_scored_again(spark, conf):
    from crawlkit.scoring import run_scoring
    from crawlkit.scoring.job import round_scorers

    conf = conf.with_overrides({"scoring.scorer": "pagerank", "generate.policy": "interleave",
                                "generate.interleave": ["score", "backlinks"]})
    assert round_scorers(conf) == ["pagerank", "backlinks"]
    segment = run_generate(spark, conf, NOW)["segment"]
    apply_without_scoring(spark, conf, segment, NOW)
    run_scoring(spark, conf["crawl.dir"], conf, NOW, segment, scorer="pagerank")   # killed before backlinks
    assert [(u.segment, u.stage) for u in find_unfinished(spark, conf, NOW)] == [(segment, "score")]

    report = run_round(spark, conf, NOW + timedelta(hours=1), log=lambda _m: None)
    assert (report.segment, report.resumed_from) == (segment, "score")
    tags = storage.commit_tags(spark, storage.crawldb_path(conf["crawl.dir"]))
    # the resumed round scores both metrics again, in one commit
    assert storage.tags_of(tags[-1]) == [f"score-pagerank:{segment}", f"score-backlinks:{segment}"]
    assert find_unfinished(spark, conf, NOW + timedelta(hours=1)) == []
