"""Made-up page text: a general vocabulary, topic vocabularies, and the HTML layout.

Topical crawlers score pages and links by words, so topical pages must differ
from the rest in title, body *and* in the anchor text of links pointing at them,
while ordinary pages still mention topic words now and then (so a classifier has
something to get wrong).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from html import escape

GENERAL_WORDS = tuple("""
about account action address advice age agency answer area article art attention
author bank base bed benefit bill board body book box budget building business
call car card care case center century chance change chapter church city class
clear college color community company computer condition contact control cost
country course court culture current data date day deal death degree department
design detail development difference direction director discussion district doctor
door economy education effect energy environment event evidence experience eye face
fact family field figure film floor form friend future garden government ground
group growth guide hand health heart history home hospital hotel house idea image
industry information interest issue job journal key kind kitchen land language law
leader letter level library life light line list local look machine magazine
management market material matter meeting member memory message method middle
minute model moment money month morning mother movement name nation nature network
news night note number office officer order page paper parent part party people
period person phone picture place plan plant point policy position power practice
president press price problem process product program project property public
quality question radio range rate reason record region report research resource
result review river road role room rule safety school science season section
service share side site situation society source space staff standard state station
story street student study style subject summer system table teacher term test
thing thought time today town trade training travel tree truth type unit university
user value version view village voice water way week window winter woman word work
world year
""".split())

TOPICS = {
    "sports": ("sports", "football", "soccer", "basketball", "tennis", "league", "match",
               "team", "coach", "score", "tournament", "athlete", "stadium", "championship"),
    "cooking": ("cooking", "recipe", "kitchen", "chef", "bake", "flavor", "ingredient",
                "oven", "sauce", "dish", "meal", "spice", "dessert", "cuisine"),
    "music": ("music", "song", "album", "band", "concert", "guitar", "melody", "singer",
              "orchestra", "rhythm", "jazz", "piano", "lyrics", "festival"),
    "astronomy": ("astronomy", "telescope", "galaxy", "planet", "orbit", "comet", "nebula",
                  "star", "eclipse", "asteroid", "cosmos", "observatory", "moon", "supernova"),
}


def topic_vocabulary(topic: str, words: Sequence[str] = ()) -> tuple[str, ...]:
    """The topic's words: ``words`` if given, a built-in list for known topics, else just ``topic``."""
    if words:
        return tuple(words)
    return TOPICS.get(topic, (topic,))


CORPUS_WORDS = 1 << 18


@lru_cache(maxsize=16)
def corpus(topic: tuple[str, ...], topic_rate: float) -> list[str]:
    """A fixed random word sequence in which each word is a topic word with probability ``topic_rate``.

    Page text is a window of it at a hashed offset: one slice and join per paragraph,
    where drawing words one by one would cost most of a request's time budget.
    """
    rng = np.random.default_rng(len(topic) * 1000 + round(topic_rate * 1000))
    words = [GENERAL_WORDS[i] for i in rng.integers(0, len(GENERAL_WORDS), CORPUS_WORDS)]
    if topic and topic_rate > 0:
        for position in np.flatnonzero(rng.random(CORPUS_WORDS) < topic_rate).tolist():
            words[position] = topic[position % len(topic)]
    return words


def paragraph(words: list[str], bits: int, shortest: int = 20, longest: int = 60) -> str:
    """A sentence of ``shortest..longest`` words of a corpus, chosen by the 32 low ``bits``."""
    count = shortest + (bits & 0xFF) % (longest - shortest + 1)
    start = (bits >> 8) % (len(words) - count)
    return " ".join(words[start : start + count]).capitalize() + "."


def pick_words(bits: int, count: int, topic: Sequence[str] = ()) -> list[str]:
    """``count`` words from the bits of a hash (the first from ``topic`` if given): cheaper
    than seeding a generator for a title or an anchor."""
    words = []
    for i in range(count):
        vocabulary = topic if topic and i == 0 else GENERAL_WORDS
        words.append(vocabulary[bits % len(vocabulary)])
        bits //= len(vocabulary)
    return words


def link_item(href: str, anchor: str) -> str:
    return f'<li><a href="{escape(href)}">{escape(anchor)}</a></li>\n'


def render_html(title: str, paragraphs: Sequence[str], link_items: str) -> bytes:
    """A small valid HTML page: title, a paragraph, the links in order (``link_item`` lines), a paragraph."""
    body = "".join(f"<p>{escape(p)}</p>\n" for p in paragraphs[:1])
    tail = "".join(f"<p>{escape(p)}</p>\n" for p in paragraphs[1:])
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title></head>\n<body>\n<h1>{escape(title)}</h1>\n"
        f"{body}<ul>\n{link_items}</ul>\n{tail}</body></html>\n"
    ).encode("utf-8")
