"""Small crawl directories built inline: a crawldb Delta table (one version per write) and
segment parse output, so the export runs on a handful of pages without a crawl."""
from __future__ import annotations

import glob
import json
from datetime import datetime

from crawlkit import schemas, storage
from crawlkit.cli import main
from crawlkit.conf import make_conf
from crawlkit.export import run_export

NOW = datetime(2026, 3, 1, 12, 0, 0)
FORMATS = ("parquet", "jsonl", "solr", "elasticsearch")

LONG = "http://long.test/" + "x" * 600  # over Elasticsearch's 512-byte _id limit
LOW, HIGH = "http://a.test/same", "http://b.test/same"  # same title, different scores
# The shared crawl of the format, Lucene and command-line tests (conftest.shared_crawl).
PAGES = {
    "http://a.test/": dict(score=0.5, scores={"pagerank": 0.5, "opic": 2.0}, title="Alpha"),
    "http://b.test/": dict(score=0.2, scores={"pagerank": 0.2}, title=None),
    "http://c.test/": dict(score=0.1, scores={}, title='Ünïcode "quoted" \\ title'),
    LONG: dict(score=0.3, scores={"pagerank": 0.3}, title="Long"),
    LOW: dict(score=0.1, scores={"pagerank": 0.1}, title="crawler ranking notes"),
    HIGH: dict(score=0.4, scores={"pagerank": 0.4}, title="crawler ranking notes"),
}


def crawldb_row(url: str, score: float, **columns) -> dict:
    """A fetched page with a PageRank-only score map and a signature derived from its URL."""
    row = dict(url=url, host=url.split("/")[2] if "://" in url else "", domain=None, status="fetched",
               fetch_time=NOW, fetched_at=NOW, retries=0, fetch_interval=86400, score=score,
               scores={"pagerank": score}, opic_cash=0.0, opic_history=0.0, signature=f"sig:{url}",
               change_count=0, check_count=0, depth=1, metadata={}, schema_version=1)
    row.update(columns)
    return row


def parse_row(url: str, segment: str = "20260301000000", **columns) -> dict:
    row = dict(url=url, parse_status="success", title=f"Page {url}", text="text",
               signature=f"sig:{url}", outlinks=[], noindex=False, nofollow=False,
               canonical=None, lang=None, error=None, segment=segment)
    row.update(columns)
    return row


class Crawl:
    """A crawl directory under a test's tmp_path."""

    def __init__(self, spark, root):
        self.spark, self.dir = spark, str(root / "crawl")

    def crawldb(self, rows: list[dict], tag: str | None = None) -> int:
        """Replace the crawldb's rows (a new Delta version, its commit tagged ``tag`` as a
        stage tags it, e.g. ``updatedb:<segment>``); returns that version."""
        path = storage.crawldb_path(self.dir)
        storage.ensure_table(self.spark, path, "crawldb")
        df = schemas.frame(self.spark, "crawldb", rows)
        if tag is None:
            df.write.format("delta").mode("overwrite").save(path)
        else:
            with storage.commit_tag(self.spark, tag):
                df.write.format("delta").mode("overwrite").save(path)
        return storage.table_version(self.spark, path)

    def parse(self, rows: list[dict], segment: str = "20260301000000") -> None:
        rows = [{**r, "segment": segment} for r in rows]
        df = self.spark.createDataFrame([tuple(r.get(c) for c in schemas.columns("parse")) for r in rows],
                                        schemas.struct("parse"))
        storage.write_segment_part(df, self.dir, segment, "parse", "parse")

    def conf(self, **overrides):
        base = dict(crawl__dir=self.dir, spark__shuffle_partitions=2, export__partitions=2)
        base.update(overrides)
        return make_conf(**base)

    def export(self, out: str | None = None, since_version: int | None = None,
               since_export: str | None = None, **overrides) -> dict:
        since = {} if since_export is None else {"since_export": since_export}
        return run_export(self.spark, self.conf(**overrides), out, since_version, **since)


def part_files(directory: str) -> list[str]:
    """The data files Spark wrote (part-*), in name order."""
    return sorted(p for p in glob.glob(f"{directory}/part-*") if not p.endswith(".crc"))


def json_lines(directory: str) -> list[dict]:
    """Every line of every part file, parsed (fails on any line that is not JSON)."""
    lines = []
    for path in part_files(directory):
        with open(path, encoding="utf-8") as fh:
            lines += [json.loads(line) for line in fh]
    return lines


def cli_export(crawl_dir: str, *args: str) -> int:
    """`crawlkit export` in-process. The command line applies its conf to the shared Spark
    session, so it keeps the test session's small shuffle."""
    return main(["export", "--crawl-dir", crawl_dir, "--quiet", "--conf", "spark.shuffle_partitions=2", *args])
