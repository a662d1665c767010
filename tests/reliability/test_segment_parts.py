"""Segment parts and stages run by hand: a part is replaced only by a complete one, a part
its writer left incomplete is refused rather than applied as a segment without pages, and a
segment is scored only once updatedb applied it."""
from datetime import datetime
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from crawlkit import cli, storage
from crawlkit.conf import make_conf
from crawlkit.stages.updatedb import run_updatedb
from crawlkit.storage import SegmentStateError

NOW = datetime(2026, 3, 1, 12, 0, 0)
SEGMENT = "20260301120000"


def rows(spark, *urls):
    return spark.createDataFrame([(u, u.split("/")[2], "success", 200, NOW, False, SEGMENT) for u in urls],
                                 "url string, host string, fetch_status string, http_status int, "
                                 "fetched_at timestamp, truncated boolean, segment string")


def test_a_failed_rewrite_leaves_the_part_it_was_replacing(spark, tmp_path):
    crawl_dir = str(tmp_path / "crawl")
    storage.write_segment_part(rows(spark, "http://a.test/", "http://b.test/"), crawl_dir, SEGMENT,
                               "content", "content")
    failing = rows(spark, "http://c.test/").withColumn("url", F.raise_error(F.lit("killed")))
    with pytest.raises(Exception, match="killed"):
        storage.write_segment_part(failing, crawl_dir, SEGMENT, "content", "content")
    kept = storage.read_segment_part(spark, crawl_dir, SEGMENT, "content", "content")
    assert sorted(r.url for r in kept.collect()) == ["http://a.test/", "http://b.test/"]
    storage.write_segment_part(rows(spark, "http://c.test/"), crawl_dir, SEGMENT, "content", "content")
    assert [r.url for r in storage.read_segment_part(spark, crawl_dir, SEGMENT, "content", "content")
            .collect()] == ["http://c.test/"]
    assert sorted(p.name for p in (Path(crawl_dir) / "segments" / SEGMENT).iterdir()) == ["content"]


def test_updatedb_refuses_a_part_its_writer_left_incomplete(spark, tmp_path):
    crawl_dir = str(tmp_path / "crawl")
    conf = make_conf(crawl__dir=crawl_dir)
    db_path = storage.crawldb_path(crawl_dir)
    storage.ensure_table(spark, db_path, "crawldb")
    version = storage.table_version(spark, db_path)
    storage.write_segment_part(rows(spark, "http://a.test/"), crawl_dir, SEGMENT, "content", "content")
    # a parse that died writing (Spark's own overwrite deleted the old copy first): no _SUCCESS
    (Path(storage.segment_path(crawl_dir, SEGMENT, "parse")) / "part-00000.parquet").parent.mkdir(parents=True)
    with pytest.raises(SegmentStateError, match="parse.* is missing or incomplete"):
        run_updatedb(spark, conf, NOW, SEGMENT)
    assert storage.table_version(spark, db_path) == version        # nothing applied


def test_scoring_a_segment_before_updatedb_is_refused(spark, tmp_path, capsys):
    crawl_dir = str(tmp_path / "crawl")
    (tmp_path / "seeds.txt").write_text("http://a.test/\n")
    common = ["--crawl-dir", crawl_dir, "--now", NOW.isoformat(), "--quiet",
              "--conf", "spark.shuffle_partitions=2"]
    assert cli.main(["inject", "--seeds", str(tmp_path / "seeds.txt"), *common]) == 0
    assert cli.main(["generate", *common]) == 0
    segment = storage.list_segments(spark, crawl_dir)[-1]
    capsys.readouterr()
    assert cli.main(["score", "--segment", segment, "--scorer", "opic", *common]) == 4
    assert "not applied to the crawldb yet: run updatedb first" in capsys.readouterr().err
    assert not storage.was_applied(spark, storage.crawldb_path(crawl_dir), f"score-opic:{segment}")
