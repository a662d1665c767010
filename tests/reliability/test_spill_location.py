"""Where the fetch tasks spill: the place Spark and Delta read, or a clear refusal.

The tasks write their results with pyarrow, everything else goes through Hadoop. A crawl dir
without a scheme must therefore be resolved as Hadoop resolves it (on a cluster whose default
filesystem is HDFS, not each executor's own disk), a URI pyarrow cannot open must be refused
before URLs are locked, and files the driver cannot see must stop the fetch, not publish a
segment without its pages."""
from __future__ import annotations

from contextlib import contextmanager

import pytest

from crawlkit import cli, storage
from crawlkit.conf import ConfError
from crawlkit.resume import SegmentStateError
from crawlkit.stages.fetch import _check_visible, check_no_speculation, executor_uri


@contextmanager
def default_fs(spark, uri: str, links: dict[str, str]):
    """The session's Hadoop default filesystem set to ``uri`` for the block (viewfs stands in
    for HDFS: it maps paths elsewhere, as a cluster's default filesystem does)."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    before = conf.get("fs.defaultFS")
    for path, target in links.items():
        conf.set(f"fs.viewfs.mounttable.c.link.{path}", target)
    conf.set("fs.defaultFS", uri)
    try:
        yield
    finally:
        conf.set("fs.defaultFS", before)


def test_a_path_without_a_scheme_is_where_hadoop_puts_it(spark, tmp_path):
    assert storage.absolute(spark, str(tmp_path / "crawl")) == str(tmp_path / "crawl")
    with default_fs(spark, "viewfs://c/", {str(tmp_path): (tmp_path / "elsewhere").as_uri()}):
        # pyarrow alone would have written str(tmp_path / "crawl"), a place Delta never reads
        assert storage.absolute(spark, str(tmp_path / "crawl")) == f"viewfs://c{tmp_path}/crawl"
    assert storage.absolute(spark, "s3://bucket/crawl") == "s3://bucket/crawl"


def test_a_crawl_dir_pyarrow_cannot_open_is_refused_before_generate(spark, tmp_path, capsys):
    for uri in ("s3a://bucket/crawl", "wasbs://c@account/crawl", "dbfs:/crawl"):
        with pytest.raises(ConfError, match="cannot write"):
            executor_uri(spark, uri)
    assert executor_uri(spark, str(tmp_path)) == str(tmp_path)
    assert cli.main(["generate", "--crawl-dir", "s3a://bucket/crawl", "--quiet"]) == 2
    assert "resolves to s3a:, which the fetch tasks cannot write" in capsys.readouterr().err


def test_files_the_tasks_wrote_and_the_driver_cannot_see_stop_the_fetch(spark, tmp_path):
    parts = tmp_path / "content_parts"
    parts.mkdir()
    (parts / "part-p00000-0123456789ab-00000.parquet").write_bytes(b"")
    _check_visible(spark, str(parts), ["part-p00000-0123456789ab-00000.parquet"])
    _check_visible(spark, str(parts), [])
    with pytest.raises(SegmentStateError, match="do not share that filesystem"):
        _check_visible(spark, str(parts), ["part-p00000-0123456789ab-00000.parquet",
                                           "part-p00001-ba9876543210-00000.parquet"])


def test_speculative_fetch_tasks_are_refused():
    check_no_speculation("false")
    with pytest.raises(ConfError, match="spark.speculation is on"):
        check_no_speculation(" True")
