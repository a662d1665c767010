"""How the query's words meet the pages' words: scripts with combining marks, decomposed
accents, percent-encoded URLs, and query words that could never match."""
import pytest

from crawlkit.conf import ConfError, make_conf
from crawlkit.scoring.focus.hot import judge
from crawlkit.scoring.focus.query import Query, load_query
from crawlkit.scoring.focus.state import hot_link

HINDI, CAFE, COURSE_ZH = "हिन्दी", "caf\u00e9", "课程"


def test_words_keep_their_combining_marks(spark, texts):
    pages = texts([("http://a.test/hi", f"{HINDI} पाठ्यक्रम", ""),                 # vowel signs are marks
                   ("http://a.test/cafe", "Le cafe\u0301 du coin", ""),           # é decomposed
                   ("http://a.test/other", "हन्द", "")])                          # the letters alone
    for topic, hot in ((HINDI, {"http://a.test/hi"}), (CAFE, {"http://a.test/cafe"})):
        judged = judge(pages, Query((topic,)), make_conf())
        assert {r.url for r in judged.collect() if r.hot} == hot, topic


def test_a_url_is_read_percent_decoded(spark, links):
    pages = spark.createDataFrame([("http://a.test/%E8%AF%BE%E7%A8%8B/",), ("http://a.test/caf%C3%A9s.html",),
                                   ("http://a.test/%ZZ/",)], "url string")
    got = {r.url: r.hot_link for r in hot_link(pages, links([]), Query((COURSE_ZH, CAFE))).collect()}
    assert got == {"http://a.test/%E8%AF%BE%E7%A8%8B/": 1.0, "http://a.test/caf%C3%A9s.html": 1.0,
                   "http://a.test/%ZZ/": 0.0}


@pytest.mark.parametrize("word", ["cs414", "machine learning", "e-learning", "", "  "])
def test_a_query_word_pages_would_split_is_refused(word):
    with pytest.raises(ConfError, match="focus.words"):
        load_query(make_conf(focus__words=["course", word]))
    with pytest.raises(ConfError, match="focus.synonyms"):
        load_query(make_conf(focus__words=["course"], focus__synonyms=[word]))


def test_a_lexicon_with_a_header_line_is_a_configuration_error(tmp_path):
    lexicon = tmp_path / "lexicon.tsv"
    lexicon.write_text("word\ttopic\tweight\nsyllabus\tcourse\t0.8\n", encoding="utf-8")
    with pytest.raises(ConfError, match="header line must start with #"):
        load_query(make_conf(focus__words=["course"], focus__lexicon=str(lexicon)))
    lexicon.write_text("# word\ttopic\tweight\nsyllabus\tcourse\t0.8\n", encoding="utf-8")
    assert load_query(make_conf(focus__words=["course"], focus__lexicon=str(lexicon))).lexicon == (
        ("syllabus", "course", 0.8),)
