"""Shared fixtures: one Spark session for the whole run, a conf factory, a crawl directory."""
from __future__ import annotations

import os
import sys

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """One local[2] session with Delta (and GraphFrames when its jar is present)."""
    from crawlkit.conf import make_conf
    from crawlkit.spark import get_spark

    conf = make_conf(spark__master="local[2]", spark__shuffle_partitions=2,
                     spark__checkpoint_dir=str(tmp_path_factory.mktemp("checkpoints")),
                     spark__driver_memory="2g", spark__ui=False)
    session = get_spark(conf)
    yield session
    session.stop()


@pytest.fixture
def make_test_conf(tmp_path):
    """make_conf with a fresh crawl directory and small-machine settings; kwargs override."""
    from crawlkit.conf import make_conf

    def factory(**overrides):
        base = dict(crawl__dir=str(tmp_path / "crawl"), spark__master="local[2]",
                    spark__shuffle_partitions=2, generate__partitions=2)
        base.update(overrides)
        return make_conf(**base)
    return factory
