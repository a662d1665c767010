"""The export tests' fixtures: a fresh crawl directory, and one shared crawl exported once in
every format (builders and data in exporthelpers.py)."""
import json
from pathlib import Path

import pytest

from exporthelpers import FORMATS, PAGES, Crawl, cli_export, crawldb_row, parse_row


@pytest.fixture
def crawl(spark, tmp_path):
    return Crawl(spark, tmp_path)


@pytest.fixture(scope="session")
def shared_crawl(spark, tmp_path_factory):
    crawl = Crawl(spark, tmp_path_factory.mktemp("shared"))
    crawl.crawldb([crawldb_row(u, p["score"], scores=p["scores"]) for u, p in PAGES.items()])
    crawl.parse([parse_row(u, title=p["title"]) for u, p in PAGES.items()])
    return crawl


@pytest.fixture(scope="session")
def exported(shared_crawl, tmp_path_factory):
    """The shared crawl in every format: format -> (export directory, counters). The jsonl
    export is made by the command line, into its default directory (test_cli.py)."""
    root = tmp_path_factory.mktemp("exports")
    done = {fmt: (root / fmt, shared_crawl.export(out=str(root / fmt), export__format=fmt, export__index="web"))
            for fmt in FORMATS if fmt != "jsonl"}
    assert cli_export(shared_crawl.dir, "--format", "jsonl", "--conf", "export.partitions=2",
                      "--conf", "export.boost=log") == 0
    out = Path(shared_crawl.dir) / "exports" / "jsonl-v1"
    with open(out / "_export.json", encoding="utf-8") as fh:
        done["jsonl"] = (out, json.load(fh))
    return done
