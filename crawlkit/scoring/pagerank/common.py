"""What the PageRank engines share: the result, the page set, page ids and Arrow transfer."""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from crawlkit import storage


@dataclass
class PageRankResult:
    ranks: DataFrame      # url, rank (probability form, sums to 1)
    iterations: int       # power iterations run
    delta: float          # L1 change of the last iteration (distributed: an upper bound of
                          # it; nan when the engine hides it)
    engine: str


def node_set(nodes: DataFrame, edges: DataFrame) -> DataFrame:
    """All pages: the given nodes plus every link endpoint (url)."""
    return (nodes.select("url")
            .union(edges.select(F.col("src").alias("url")))
            .union(edges.select(F.col("dst").alias("url")))
            .distinct())


def to_arrow(df: DataFrame) -> pa.Table:
    """Collect as Arrow (pyspark 4: toArrow; older: _collect_as_arrow)."""
    if hasattr(df, "toArrow"):
        return df.toArrow()
    return pa.Table.from_batches(df._collect_as_arrow())  # pragma: no cover


def from_arrow(spark: SparkSession, table: pa.Table) -> DataFrame:
    """``createDataFrame`` from Arrow as a distributed relation in about as many partitions
    as there are cores.

    Below ``arrow.localRelationThreshold`` (48 MB) pyspark 4.1 makes a LocalRelation, whose
    rows travel inside every task: counting 325k (id, rank) rows took 4-5 s that way and
    1 s as an RDD of Arrow batches. One partition per batch of ``arrow.maxRecordsPerBatch``
    (10,000) rows would be 33 tasks for 325k ranks.
    """
    cores = max(1, spark.sparkContext.defaultParallelism)
    batch_rows = str(max(10_000, -(-table.num_rows // cores)))
    with storage.session_setting(spark, "spark.sql.execution.arrow.localRelationThreshold", "0"), \
            storage.session_setting(spark, "spark.sql.execution.arrow.maxRecordsPerBatch", batch_rows):
        return spark.createDataFrame(table)


# What the driver engine collects of a link: its ends' xxhash64 (8 bytes each) and Murmur3
# (4 bytes each) as Arrow columns. Measured: 1,028.5 MiB for 7 of 8 tasks of ~5x10^7 links.
LINK_BYTES = 24


def max_result_size(spark: SparkSession) -> int:
    """``spark.driver.maxResultSize`` in bytes (0: no limit), the most one job may collect."""
    value = spark.sparkContext.getConf().get("spark.driver.maxResultSize", "1g")
    return int(spark.sparkContext._jvm.org.apache.spark.network.util.JavaUtils.byteStringAsBytes(value))


def page_id(col: str):
    """Page id: xxhash64 of the URL (a projection in Spark, no shuffle, no join)."""
    return F.xxhash64(F.col(col))


def check_hash(col: str):
    """Check hash: Murmur3 (32 bit, an unrelated function) of the URL. Two URLs that share
    an id are caught unless they also share this hash (a 96-bit fingerprint collision:
    probability below n^2 / 2^97, 1e-15 at 10M pages)."""
    return F.hash(F.col(col))


def empty_ranks(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([], "url string, rank double")
