"""Fixtures of the recrawl tests (builders in recrawlhelpers.py)."""
import pytest

from recrawlhelpers import crawldb_dicts, to_crawldb


@pytest.fixture
def make_crawldb(spark):
    return lambda rows: to_crawldb(spark, crawldb_dicts(rows))
