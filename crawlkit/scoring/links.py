"""Link preparation shared by every link-analysis metric (PageRank, HITS, OPIC, backlinks).

The link table records what pages say; link analysis wants what pages *vote for*. One
function decides that for all scorers, so PageRank and the backlink count never disagree
about which links exist:

* self-links are dropped (a page cannot vote for itself: Nutch's old OPIC feedback loop);
* duplicate (src, dst) pairs collapse to one vote;
* rel=nofollow links carry no vote unless ``scoring.count_nofollow``;
* links from pages flagged spam (crawldb ``metadata['spam'] = 'true'``) are ignored, and so
  are those of ``duplicate`` pages (their kept copy's links vote once) and of ``gone`` pages
  (a page that stopped answering, after ``db.retry_max`` transient failures, keeps its last
  links in the link table, which a 404 would have emptied);
* noise options: ``scoring.drop_same_host_links`` drops navigational links within a host;
  ``scoring.one_link_per_source_host`` keeps one vote per (source host, target), from the
  smallest source URL, so a site-wide footer counts once.

Example::

    edges = prepare_links(ctx.links, conf, crawldb=ctx.pages)   # src, dst, src_host, dst_host
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from crawlkit.conf import Conf
from crawlkit.status import Status

SPAM_FLAG = "spam"
SILENT_STATUSES = (Status.DUPLICATE.value, Status.GONE.value)


def silent_pages(crawldb: DataFrame) -> DataFrame:
    """URLs whose links do not vote: pages flagged spam (``metadata['spam'] = 'true'``),
    duplicates and gone pages."""
    spam = F.lower(F.coalesce(F.col("metadata").getItem(SPAM_FLAG), F.lit(""))) == F.lit("true")
    return crawldb.filter(spam | F.col("status").isin(*SILENT_STATUSES)).select("url")


def prepare_links(links: DataFrame, conf: Conf, crawldb: DataFrame | None = None) -> DataFrame:
    """The links that vote, one row per distinct (src, dst): src, dst, src_host, dst_host, anchor.

    ``crawldb`` is needed only to find the pages whose links do not vote (spam, duplicate,
    gone); without it every page's links do.
    """
    edges = links.filter(F.col("src") != F.col("dst"))
    if not conf["scoring.count_nofollow"]:
        edges = edges.filter(~F.coalesce(F.col("nofollow"), F.lit(False)))
    if conf["scoring.drop_same_host_links"]:
        edges = edges.filter(F.col("src_host") != F.col("dst_host"))
    if crawldb is not None:
        silent = silent_pages(crawldb).select(F.col("url").alias("src"))
        edges = edges.join(silent, on="src", how="left_anti")
    edges = (edges.groupBy("src", "dst")
             .agg(F.first("src_host").alias("src_host"), F.first("dst_host").alias("dst_host"),
                  F.min("anchor").alias("anchor")))
    if conf["scoring.one_link_per_source_host"]:
        edges = (edges.groupBy("src_host", "dst")
                 .agg(F.min(F.struct("src", "dst_host", "anchor")).alias("k"))
                 .select(F.col("k.src").alias("src"), "dst", "src_host",
                         F.col("k.dst_host").alias("dst_host"), F.col("k.anchor").alias("anchor")))
    return edges.select("src", "dst", "src_host", "dst_host", "anchor")
