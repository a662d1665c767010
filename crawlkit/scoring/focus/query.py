"""The driving query of a focused crawl and the word matching every focus heuristic shares.

Words are lower-case runs of letters (with their combining marks: the vowel signs of
Devanagari, a decomposed accent) or digits, and a letter-digit boundary splits a word
(``CS414`` -> ``cs``, ``414``), so URLs and texts are read the same way; a URL is read
percent-decoded (``/%E8%AF%BE%E7%A8%8B/`` is ``/课程/``). A topic word is read by the same
rule and must come out as one word (``cs414`` or ``machine learning`` is refused: it could
never match). It matches itself, composed or decomposed, and its English plural (``course``,
``courses``; ``courseses`` never occurs); synonyms match the same way. Scripts written
without spaces (Chinese, Japanese) are one word per run of characters: a topic word there
matches a whole run only.
"""
from __future__ import annotations

import csv
import unicodedata
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from crawlkit.conf import Conf, ConfError

TOKEN_SPLIT = r"[^\p{L}\p{M}\p{N}]+"
_LETTER_DIGIT = r"(?<=\p{L})(?=\p{N})|(?<=\p{N})(?=\p{L})"

# Extended link metadata (parse's outlink ``meta``), grouped as the heuristics read it.
URL_FIELDS = ("href", "onmouseover", "src")
TEXT_FIELDS = ("anchor", "surrounding", "image_alt", "area", "frame")
TITLE_FIELDS = ("title", "name")


def words(text: Column) -> Column:
    """array<string>: the words of a text column (null reads as empty)."""
    spaced = F.regexp_replace(F.lower(F.coalesce(text, F.lit(""))), _LETTER_DIGIT, " ")
    return F.filter(F.split(spaced, TOKEN_SPLIT), lambda w: F.length(w) > 0)


def url_words(url: Column) -> Column:
    """The words of a URL, read percent-decoded (as is, where the escapes are malformed)."""
    return words(F.coalesce(F.try_url_decode(url), url))


def field_words(fields: tuple[str, ...], *extra: Column, read=words) -> Column:
    """Words of the named ``meta`` entries of a link (plus ``extra`` columns), each read by ``read``."""
    parts = [F.col("meta").getItem(f) for f in fields] + list(extra)
    return F.array_distinct(F.flatten(F.array(*[read(p) for p in parts])))


def _category(c: str) -> str:
    return unicodedata.category(c)[0]


def word_tokens(text: str) -> list[str]:
    """:func:`words` in Python, for the query's own words."""
    out, current = [], ""
    for c in text.lower():
        kind = _category(c)
        if kind not in "LMN":
            out, current = out + [current] if current else out, ""
            continue
        last = _category(current[-1]) if current else ""
        if current and {kind, last} == {"L", "N"}:
            out, current = out + [current], ""
        current += c
    return out + [current] if current else out


def forms(word_list: list[str]) -> list[str]:
    """Each word, composed and decomposed, with its plural forms: what a topic word matches."""
    out = []
    for w in word_list:
        w = w.strip().lower()
        if w:
            out += [unicodedata.normalize(form, x) for x in (w, w + "s", w + "es") for form in ("NFC", "NFD")]
    return sorted(set(out))


def checked_words(key: str, values: list[str]) -> tuple[str, ...]:
    """The words of ``focus.words`` / ``focus.synonyms``, each one word as pages are read."""
    for value in values:
        tokens = word_tokens(value)
        if len(tokens) != 1:
            read = ", ".join(tokens) if tokens else "no word"
            raise ConfError(f"{key}: {value!r} reads as {read}; every entry must be one word, "
                            "as page text is split (list the words separately)")
    return tuple(values)


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
        try:
            lexicon = tuple((r[0], r[1], float(r[2])) for r in rows if len(r) >= 3)
        except ValueError as exc:
            raise ConfError(f"focus.lexicon {conf['focus.lexicon']}: the third column must be a "
                            f"weight in [0, 1] ({exc}); a header line must start with #") from None
    return Query(checked_words("focus.words", conf["focus.words"]),
                 checked_words("focus.synonyms", conf["focus.synonyms"]), lexicon)
