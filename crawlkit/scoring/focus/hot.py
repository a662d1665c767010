"""Hot pages and the distance from the nearest hot page (``crawldb.hot_distance``).

A fetched page is hot (``focus.hot``):

* ``paper`` (Cho et al. §6): a topic word in the title, or at least ``focus.hot_min_count``
  topic-word occurrences in the body;
* ``similarity``: IS'(P, Q) >= ``focus.hot_similarity``, the TF-IDF cosine of
  :mod:`crawlkit.scoring.similarity` against the topic words.

Distances are relaxed from the stored column: hot pages 0, and a link target of a page at
distance d gets min(existing, d + 1), repeated until nothing changes or
``focus.max_distance`` is reached. Stored values only ever shrink, so a page that was once
near a hot page stays near (as the paper's ``distance_from_hotpage``).
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from crawlkit.conf import Conf
from crawlkit.scoring.focus.query import Query, words


def judge(texts: DataFrame, query: Query, conf: Conf) -> DataFrame:
    """url, hot (bool) for every parsed page."""
    if conf["focus.hot"] == "similarity":
        return _judge_similarity(texts, query, conf)
    if conf["focus.hot"] != "paper":
        raise ValueError(f"focus.hot = {conf['focus.hot']!r}: expected paper or similarity")
    hot = (query.hits(words(F.col("title")))
           | (query.count(words(F.col("text"))) >= F.lit(int(conf["focus.hot_min_count"]))))
    return texts.select("url", hot.alias("hot"))


def _judge_similarity(texts: DataFrame, query: Query, conf: Conf) -> DataFrame:
    from crawlkit.scoring.similarity import cosine, term_frequencies

    spark = texts.sparkSession
    doc_tf = term_frequencies(texts, [("title", conf["scoring.similarity_title_weight"]), ("text", 1.0)])
    n_docs = texts.count()
    idf = (doc_tf.groupBy("term").agg(F.countDistinct("url").alias("df"))
           .select("term", (F.lit(1.0) + F.log(F.lit(n_docs + 1.0) / (F.col("df") + 1.0))).alias("idf")))
    q = spark.createDataFrame([("q", " ".join(query.words + query.synonyms))], "url string, text string")
    sims = cosine(doc_tf, term_frequencies(q, [("text", 1.0)]).select("term", "tf"), idf, n_docs)
    return (texts.select("url").join(sims, on="url", how="left")
            .select("url", (F.coalesce(F.col("sim"), F.lit(0.0)) >= F.lit(float(conf["focus.hot_similarity"])))
                    .alias("hot")))


def hot_distances(pages: DataFrame, links: DataFrame, hot: DataFrame, max_distance: int) -> DataFrame:
    """url, hot_distance for every page: relaxed from the stored value (see module doc)."""
    dist = (pages.select("url", "hot_distance")
            .join(hot.filter("hot").select("url", F.lit(0).alias("_h")), on="url", how="left")
            .select("url", F.least("hot_distance", "_h").cast("int").alias("hot_distance"))
            .localCheckpoint())
    edges = links.filter(F.col("src") != F.col("dst")).select("src", "dst").distinct().localCheckpoint()
    for _ in range(max_distance):
        reach = (edges.join(dist.filter(F.col("hot_distance") < F.lit(max_distance))
                            .select(F.col("url").alias("src"), "hot_distance"), on="src", how="inner")
                 .groupBy(F.col("dst").alias("url")).agg((F.min("hot_distance") + 1).alias("_via")))
        relaxed = (dist.join(reach, on="url", how="left")
                   .select("url", F.least("hot_distance", "_via").cast("int").alias("hot_distance"),
                           (F.col("_via") < F.coalesce(F.col("hot_distance"), F.lit(1 << 30))).alias("_changed"))
                   .localCheckpoint())
        changed = relaxed.filter("_changed").limit(1).count()
        dist = relaxed.drop("_changed")
        if not changed:
            break
    return dist
