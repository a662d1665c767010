"""Indexable pages: the crawldb joined with the parse output of the content it describes.

Title, noindex and canonical live in the segments' parse output, not in the crawldb. For each
page the export takes the newest parse row (across all segments) whose signature equals the
crawldb's signature: the parse of exactly the content that crawldb version describes. So a
segment parsed but not yet applied by updatedb cannot put a newer title next to an older
digest. A page whose parse is gone (its segments deleted) or failed is not exported, as
Nutch's indexer skips unparsed pages. (An incremental export compares with what an earlier
export sent, baseline.py; only for exports made without a state does it rebuild an older
version's records, from the segments that version had applied.)

Example::

    pages = candidates(crawldb, parse_rows(spark, "crawl"), conf)
    unboosted = records(pages, crawl_version=7)
"""
from __future__ import annotations

from typing import Callable

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from crawlkit import schemas, segment_names, storage
from crawlkit.conf import Conf
from crawlkit.stages.updatedb import host_expr, with_domain
from crawlkit.status import Status

# Statuses whose content is current: fetched, or refetched and unchanged. Everything else
# (gone, duplicate, redirects, retry, evicted, unfetched) has nothing to index.
INDEXABLE = (Status.FETCHED.value, Status.NOT_MODIFIED.value)
# Pseudo-URLs kept in the crawldb for bookkeeping (OPIC's virtual page) are not web pages.
PSEUDO_PREFIX = "crawlkit:"
PARSE_COLUMNS = ("url", "signature", "title", "noindex", "canonical", "segment")


def parse_rows(spark: SparkSession, crawl_dir: str, keep: Callable[[str], bool] | None = None) -> DataFrame:
    """Successful parse rows of every segment (of those ``keep`` accepts), only the columns
    the export reads (Parquet column pruning keeps the text and outlinks on disk)."""
    paths = [storage.segment_path(crawl_dir, s, "parse") for s in storage.list_segments(spark, crawl_dir)
             if (keep is None or keep(s)) and storage.segment_part_exists(spark, crawl_dir, s, "parse")]
    rows = (spark.read.schema(schemas.struct("parse")).parquet(*paths) if paths
            else schemas.empty(spark, "parse"))
    return rows.filter(F.col("parse_status") == "success").select(*PARSE_COLUMNS)


def finite(value: Column) -> Column:
    """The value, or null when it is null, NaN or infinite (JSON has no NaN)."""
    return F.when(~F.isnan(value) & (F.abs(value) < F.lit(float("inf"))), value)


def score_of(conf: Conf) -> Column:
    """The score a boost comes from, clamped to a finite non-negative number."""
    key = conf["export.score"]
    raw = F.col("scores").getItem(key) if key else F.col("score")
    return F.greatest(F.coalesce(finite(raw), F.lit(0.0)), F.lit(0.0))


def candidates(crawldb: DataFrame, parses: DataFrame, conf: Conf) -> DataFrame:
    """Pages with indexable status, their matched parse, and ``skip``: why a page is not
    exported (``no_parse``, ``noindex``) or null."""
    db = (crawldb.filter(F.col("status").isin(*INDEXABLE) & ~F.col("url").startswith(PSEUDO_PREFIX))
          .select("url", "signature", score_of(conf).alias("score"),
                  F.map_filter("scores", lambda _k, v: finite(v).isNotNull()).alias("components"),
                  F.col("domain").alias("page_domain"))
          .alias("db"))
    p = parses.alias("p")
    joined = (db.join(p, on=(F.col("db.url") == F.col("p.url"))
                      & F.col("db.signature").eqNullSafe(F.col("p.signature")), how="left")
              .groupBy(F.col("db.url").alias("url"))
              .agg(F.any_value("db.signature").alias("signature"), F.any_value("db.score").alias("score"),
                   F.any_value("db.components").alias("components"),
                   F.any_value("db.page_domain").alias("page_domain"),
                   # null when no parse row matched: max_by skips null orderings
                   F.max_by(F.struct("p.title", "p.noindex", "p.canonical"),
                            segment_names.order_column(F.col("p.segment"))).alias("parse")))
    skip = (F.when(F.col("parse").isNull(), F.lit("no_parse"))
            .when(F.col("parse.noindex"), F.lit("noindex")))
    return trusted_canonical(joined).select(
        F.col("url").alias("source_url"),
        F.coalesce(F.col("canonical"), F.col("url")).alias("url"),
        F.col("parse.title").alias("title"), F.col("signature").alias("digest"),
        "score", "components", skip.alias("skip"))


def trusted_canonical(pages: DataFrame) -> DataFrame:
    """``pages`` with ``canonical``: the page's rel=canonical when it names a URL of the page's
    own registrable domain, else null (the page is exported under its own URL). A page may
    not speak for another site: evil.test/p declaring ``https://bank.test/login`` canonical
    would otherwise put its title and text in the index under the bank's URL."""
    declared = F.col("parse.canonical")
    other_host = F.when(host_expr("parse.canonical") != host_expr("url"), host_expr("parse.canonical"))
    domains = with_domain(pages.withColumn("host", other_host))   # the canonical's, where it is elsewhere
    same_site = F.col("host").isNull() | (F.col("domain") == F.col("page_domain"))
    return domains.withColumn("canonical", F.when(same_site, declared)).drop("host", "domain")


def one_per_url(pages: DataFrame) -> DataFrame:
    """One record per indexed URL: of the pages naming the same canonical URL the page at that
    URL itself wins, then the highest score, then the smallest source URL (deterministic)."""
    order = Window.partitionBy("url").orderBy(
        (F.col("source_url") == F.col("url")).desc(), F.col("score").desc(), F.col("source_url"))
    return pages.withColumn("_n", F.row_number().over(order)).filter(F.col("_n") == 1).drop("_n")


def records(candidates: DataFrame, crawl_version: int) -> DataFrame:
    """Export records without their boost (the boosts schema less ``boost``)."""
    kept = one_per_url(candidates.filter(F.col("skip").isNull()))
    return kept.select("url", "source_url", "title", "digest", "score", "components",
                       F.lit(crawl_version).cast("bigint").alias("crawl_version"))
