"""rel(t, W): how related a word is to the topic, from the lexicon or learned from the crawl.

With ``focus.lexicon`` the file's weights are used (topic words and synonyms 1.0). Without
one, relatedness is learned from co-occurrence in the pages parsed so far: rel(t) =
hot(t) / (pages(t) + k), the share of pages holding t that were judged hot (which hold the
topic words by definition), shrunk by ``focus.learn_prior`` = k pseudo-pages that are not
hot, so a word seen in one hot page is not yet trusted. Topic words stay at 1.0.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from crawlkit.scoring.base import ScoringContext
from crawlkit.scoring.focus.metadata import page_words
from crawlkit.scoring.focus.query import Query


def learned_relatedness(texts: DataFrame, hot: DataFrame, query: Query, prior: float) -> DataFrame:
    """(word, rel) from the parsed pages ``texts`` and their ``hot`` flags."""
    spark = texts.sparkSession
    occurrences = (page_words(texts.dropDuplicates(["url"])).join(hot.select("url", "hot"), on="url", how="inner")
                   .select(F.explode("words").alias("word"), F.col("hot").cast("double").alias("h")))
    learned = occurrences.groupBy("word").agg(
        (F.sum("h") / (F.count("*") + F.lit(float(prior)))).alias("rel"))
    topic = spark.createDataFrame([(w, 1.0) for w in query.forms], "word string, rel double")
    return learned.unionByName(topic).groupBy("word").agg(F.max("rel").alias("rel"))


def relatedness(ctx: ScoringContext, query: Query) -> DataFrame:
    """(word, rel) for the run: the lexicon when given, else learned (needs ``ctx.focus``)."""
    given = query.relatedness(ctx.spark)
    if given is not None:
        return given
    texts = ctx.texts if ctx.texts is not None else ctx.spark.createDataFrame(
        [], "url string, title string, text string")
    hot = (ctx.focus.filter(F.col("hot").isNotNull()) if ctx.focus is not None
           else ctx.spark.createDataFrame([], "url string, hot boolean"))
    return learned_relatedness(texts, hot, query, ctx.conf["focus.learn_prior"]).localCheckpoint()
