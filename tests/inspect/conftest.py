"""Fixtures: the small crawl directory of smallcrawl.py, built once per test session."""
import pytest

from crawlkit.conf import make_conf

from smallcrawl import build_crawl


@pytest.fixture(scope="session")
def small_crawl(spark, tmp_path_factory):
    """The crawl directory, built once for all tests of this package."""
    crawl_dir = str(tmp_path_factory.mktemp("inspect") / "crawl")
    build_crawl(spark, crawl_dir)
    return crawl_dir


@pytest.fixture
def conf(small_crawl):
    return make_conf(crawl__dir=small_crawl, spark__master="local[2]", spark__shuffle_partitions=2)

