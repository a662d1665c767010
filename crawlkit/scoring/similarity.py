"""Similarity to a driving query IS'(P, Q): TF-IDF cosine, idf estimated from the pages
crawled so far (Cho et al. §2, file 000).

A fetched page is a vector of term weights tf * idf, where a title word counts
``scoring.similarity_title_weight`` times a body word; idf = 1 + ln((N + 1) / (df + 1)) over
the N pages whose text is known (smoothed, so a word in every page still counts a little
and a query word no page has yet gets the largest idf). IS' is the cosine between that
vector and the query's (``scoring.similarity_query``). Because idf is re-estimated as the
crawl grows, IS' of a page can change without the page changing.

A page not fetched yet has no text: it scores ``scoring.similarity_anchor_weight`` times the
cosine of the anchor texts of its in-links (one document per page, same idf), the
"promising page" estimate of the paper's similarity crawler. Neither text nor anchors: 0.

``ctx.texts`` (url, title, text) must hold every page crawled so far (the job reads all
segments' parse output); the ordering only needs this round's pages to be re-scored, but
the idf needs them all.
"""
from __future__ import annotations

import logging
import math

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from crawlkit.scoring.base import BaseScorer, ScoringContext, register
from crawlkit.scoring.links import prepare_links

log = logging.getLogger(__name__)

TOKEN_SPLIT = r"[^\p{L}\p{M}\p{N}]+"   # letters with their combining marks, digits


def terms(text: Column, weight: float) -> Column:
    """array<struct<term, w>> of the words of a text column, each with weight ``weight``."""
    words = F.filter(F.split(F.lower(F.coalesce(text, F.lit(""))), TOKEN_SPLIT),
                     lambda w: F.length(w) > 0)
    return F.transform(words, lambda w: F.struct(w.alias("term"), F.lit(float(weight)).alias("w")))


def term_frequencies(docs: DataFrame, parts: list[tuple[str, float]]) -> DataFrame:
    """(url, term, tf) with each text column weighted."""
    bag = F.flatten(F.array(*[terms(F.col(c), w) for c, w in parts]))
    return (docs.select("url", F.explode(bag).alias("t"))
            .groupBy("url", F.col("t.term").alias("term")).agg(F.sum("t.w").alias("tf")))


def cosine(tf: DataFrame, query_tf: DataFrame, idf: DataFrame, n_docs: int) -> DataFrame:
    """(url, sim): cosine of tf*idf vectors against the query's."""
    default_idf = F.lit(1.0 + math.log(n_docs + 1.0))
    weighted = (tf.join(idf, on="term", how="left")
                .select("url", "term", (F.col("tf") * F.coalesce(F.col("idf"), default_idf)).alias("w")))
    norms = weighted.groupBy("url").agg(F.sqrt(F.sum(F.col("w") * F.col("w"))).alias("norm"))
    q = (query_tf.join(idf, on="term", how="left")
         .select("term", (F.col("tf") * F.coalesce(F.col("idf"), default_idf)).alias("q")))
    q_norm = q.agg(F.sqrt(F.sum(F.col("q") * F.col("q")))).first()[0] or 0.0
    if q_norm == 0.0:
        return tf.select("url", F.lit(0.0).alias("sim")).limit(0)
    dots = (weighted.join(q, on="term", how="inner").groupBy("url")
            .agg(F.sum(F.col("w") * F.col("q")).alias("dot")))
    return (dots.join(norms, on="url", how="inner")
            .select("url", F.when(F.col("norm") > 0, F.col("dot") / (F.col("norm") * F.lit(q_norm)))
                    .otherwise(F.lit(0.0)).alias("sim")))   # all weight 0: a title at weight 0


@register
class SimilarityScorer(BaseScorer):
    name = "similarity"

    def score(self, ctx: ScoringContext) -> DataFrame:
        conf, spark = ctx.conf, ctx.spark
        pages = ctx.pages.select("url")
        query = conf["scoring.similarity_query"].strip()
        if not query:
            log.warning("scoring.similarity_query is empty: every page scores 0")
        texts = ctx.texts if ctx.texts is not None else spark.createDataFrame(
            [], "url string, title string, text string")
        texts = texts.select("url", "title", "text").dropDuplicates(["url"])
        doc_tf = term_frequencies(texts, [("title", conf["scoring.similarity_title_weight"]),
                                          ("text", 1.0)]).cache()
        n_docs = texts.count()
        idf = (doc_tf.groupBy("term").agg(F.countDistinct("url").alias("df"))
               .select("term", (F.lit(1.0) + F.log((F.lit(n_docs + 1.0)) / (F.col("df") + 1.0)))
                       .alias("idf")))
        query_tf = term_frequencies(spark.createDataFrame([("q", query)], "url string, text string"),
                                    [("text", 1.0)]).select("term", "tf")
        fetched = cosine(doc_tf, query_tf, idf, n_docs)

        anchors = (prepare_links(ctx.links, conf, crawldb=ctx.pages)
                   .filter(F.col("anchor").isNotNull())
                   .join(texts.select(F.col("url").alias("dst")), on="dst", how="left_anti")
                   .groupBy(F.col("dst").alias("url"))
                   .agg(F.concat_ws(" ", F.collect_list("anchor")).alias("text")))
        anchor_sim = cosine(term_frequencies(anchors, [("text", 1.0)]), query_tf, idf, n_docs)
        anchor_sim = anchor_sim.select(
            "url", (F.col("sim") * F.lit(float(conf["scoring.similarity_anchor_weight"]))).alias("sim"))
        sims = fetched.unionByName(anchor_sim)
        out = (pages.join(sims, on="url", how="left")
               .select("url", F.coalesce(F.col("sim"), F.lit(0.0)).alias("score")))
        return out
