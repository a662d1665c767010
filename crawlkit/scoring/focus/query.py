"""The driving query of a focused crawl and the word matching every focus heuristic shares.

Words are lower-case runs of letters or digits, and a letter-digit boundary splits a word
(``CS414`` -> ``cs``, ``414``), so URLs and texts are read the same way. A topic word
matches itself and its plural (``course``, ``courses``, ``courseses`` never occurs), so a
query need not list inflections; synonyms match the same way.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from crawlkit.conf import Conf

TOKEN_SPLIT = r"[^\p{L}\p{N}]+"
_LETTER_DIGIT = r"(?<=\p{L})(?=\p{N})|(?<=\p{N})(?=\p{L})"

# Extended link metadata (parse's outlink ``meta``), grouped as the heuristics read it.
URL_FIELDS = ("href", "onmouseover", "src")
TEXT_FIELDS = ("anchor", "surrounding", "image_alt", "area", "frame")
TITLE_FIELDS = ("title", "name")


def words(text: Column) -> Column:
    """array<string>: the words of a text column (null reads as empty)."""
    spaced = F.regexp_replace(F.lower(F.coalesce(text, F.lit(""))), _LETTER_DIGIT, " ")
    return F.filter(F.split(spaced, TOKEN_SPLIT), lambda w: F.length(w) > 0)


def field_words(fields: tuple[str, ...], *extra: Column) -> Column:
    """Words of the named ``meta`` entries of a link (plus ``extra`` columns)."""
    parts = [F.col("meta").getItem(f) for f in fields] + list(extra)
    return F.array_distinct(F.flatten(F.array(*[words(p) for p in parts])))


def forms(word_list: list[str]) -> list[str]:
    """Each word with its plural forms: what a topic word matches."""
    out = []
    for w in word_list:
        w = w.strip().lower()
        if w:
            out += [w, w + "s", w + "es"]
    return sorted(set(out))


@dataclass(frozen=True)
class Query:
    words: tuple[str, ...]
    synonyms: tuple[str, ...] = ()
    lexicon: tuple[tuple[str, str, float], ...] = ()

    @property
    def enabled(self) -> bool:
        return bool(self.words)

    @property
    def forms(self) -> list[str]:
        return forms(list(self.words) + list(self.synonyms))

    def hits(self, word_array: Column) -> Column:
        """Boolean: the word array holds a topic word (or synonym)."""
        return F.arrays_overlap(word_array, F.array(*[F.lit(w) for w in self.forms or ["\u0000"]]))

    def count(self, word_array: Column) -> Column:
        """How many of the words are topic words (occurrences, not distinct)."""
        wanted = self.forms or ["\u0000"]
        return F.size(F.filter(word_array, lambda w: w.isin(*wanted)))

    def relatedness(self, spark: SparkSession) -> DataFrame | None:
        """(word, rel) from the lexicon file plus the topic words at 1.0; None without a lexicon."""
        if not self.lexicon:
            return None
        rows = [(f, 1.0) for f in self.forms]
        topic = set(self.forms)
        rows += [(w.lower(), float(weight)) for w, t, weight in self.lexicon if t.lower() in topic]
        df = spark.createDataFrame(rows, "word string, rel double")
        return df.groupBy("word").agg(F.max("rel").alias("rel"))


def load_query(conf: Conf) -> Query:
    """The query in conf's [focus] section (the lexicon file is read here, on the driver)."""
    lexicon = ()
    if conf["focus.lexicon"]:
        with open(conf["focus.lexicon"], encoding="utf-8", newline="") as f:
            rows = [r for r in csv.reader(f, delimiter="\t") if r and not r[0].startswith("#")]
        lexicon = tuple((r[0], r[1], float(r[2])) for r in rows if len(r) >= 3)
    return Query(tuple(conf["focus.words"]), tuple(conf["focus.synonyms"]), lexicon)
