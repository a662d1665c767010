"""UH, TeH, TiH, AMH, RW and RWB on hand-made links."""
import pytest
from chispa import assert_df_equality

from crawlkit.scoring import get_scorer
from focushelpers import as_dict

A = "http://a.test/"
P = {name: f"http://a.test/{name}.html" for name in ("url", "text", "surr", "title", "all", "none")}
LINKS = [
    (A, "http://a.test/courses/cs1.html", {"anchor": "CS 1"}),
    (A, P["text"], {"anchor": "Homework 3"}),
    (A, P["surr"], {"anchor": "here", "surrounding": "the syllabus of the Course is"}),
    (A, P["title"], {"anchor": "notes", "title": "Lecture and course notes"}),
    (A, "http://a.test/course/all.html", {"anchor": "course page", "name": "course"}),
    (A, P["none"], {"anchor": "Photos", "surrounding": "our family"}),
]
TARGETS = ["http://a.test/courses/cs1.html", P["text"], P["surr"], P["title"],
           "http://a.test/course/all.html", P["none"]]


@pytest.fixture
def web(crawldb, links, texts):
    db = crawldb([{"url": A, "depth": 0, "status": "fetched"}] + [{"url": u} for u in TARGETS])
    return db, links(LINKS), texts([(A, "Home", "welcome")])


def scores(spark, context, web, name, **conf):
    ctx = context(*web, focus__words=["course", "homework"], **conf)
    return get_scorer(name).score(ctx).orderBy("url")


def expected(spark, values, schema):
    return spark.createDataFrame(sorted([(A, 0.0)] + list(zip(TARGETS, values))), schema).orderBy("url")


@pytest.mark.parametrize("name, values", [
    ("uh", [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]),
    ("teh", [0.0, 1.0, 1.0, 0.0, 1.0, 0.0]),
    ("tih", [0.0, 0.0, 0.0, 1.0, 1.0, 0.0]),
    ("amh", [0.3, 0.4, 0.4, 0.3, 1.0, 0.0]),
])
def test_metadata_heuristics(spark, context, web, name, values):
    got = scores(spark, context, web, name)
    assert_df_equality(got, expected(spark, values, got.schema))


def test_amh_weights_must_sum_to_one(spark, context, web):
    with pytest.raises(ValueError, match="summing to 1"):
        scores(spark, context, web, "amh", focus__amh_a=0.5)


def test_tie_breadth_breaks_ties_by_depth(spark, context, crawldb, links, texts):
    db = crawldb([{"url": A, "depth": 0}, {"url": P["none"], "depth": 1}, {"url": P["text"], "depth": 3}])
    ctx = context(db, links([(A, P["none"]), (A, P["text"])]), texts([]), focus__tie_breadth=0.01)
    got = {r.url: r.score for r in get_scorer("uh").score(ctx).collect()}
    assert got[P["none"]] == pytest.approx(0.005) and got[P["text"]] == pytest.approx(0.0025)


def test_rw_with_lexicon(spark, context, crawldb, links, texts, tmp_path):
    lexicon = tmp_path / "lexicon.tsv"
    lexicon.write_text("syllabus\tcourse\t0.9\nphoto\tcourse\t0.2\nhomework\tother\t0.9\n")
    urls = [f"http://a.test/{i}.html" for i in range(4)]
    db = crawldb([{"url": A, "depth": 0}] + [{"url": u} for u in urls])
    link_df = links([(A, urls[0], {"anchor": "Syllabus"}), (A, urls[1], {"anchor": "photo album"}),
                     (A, urls[2], {"anchor": "homework"}), (A, urls[3], {"href": "/courses/3.html"})])
    ctx = context(db, link_df, texts([]), focus__lexicon=str(lexicon))
    got = {r.url: r.score for r in get_scorer("rw").score(ctx).collect()}
    # 0.9 kept; 0.2 is below c = 0.5; "homework" relates to another topic word; a plural of a topic word is 1.0
    assert got == {A: 0.0, urls[0]: 0.9, urls[1]: 0.0, urls[2]: 0.0, urls[3]: 1.0}


def test_learned_relatedness_counts_hot_pages(spark, texts):
    from crawlkit.scoring.focus.query import Query
    from crawlkit.scoring.focus.relatedness import learned_relatedness

    pages = texts([("u1", "t", "grading weather"), ("u2", "t", "grading"), ("u3", "t", "grading weather")])
    hot = spark.createDataFrame([("u1", True), ("u2", True), ("u3", False)], "url string, hot boolean")
    rel = {r.word: r.rel for r in learned_relatedness(pages, hot, Query(("course",)), 1.0).collect()}
    assert rel["grading"] == pytest.approx(2 / 4)
    assert rel["weather"] == pytest.approx(1 / 3)
    assert rel["course"] == rel["courses"] == 1.0


def test_rw_learns_relatedness_without_lexicon(spark, context, crawldb, links, texts):
    hot_pages = [f"http://a.test/h{i}.html" for i in range(4)]
    db = crawldb([{"url": u, "status": "fetched"} for u in hot_pages + [A]]
                 + [{"url": f"http://a.test/{x}.html"} for x in "xyz"])
    text_df = texts([(u, "Course page", "grading rubric") for u in hot_pages] + [(A, "Home", "rubric weather")])
    link_df = links([(A, "http://a.test/x.html", {"anchor": "grading"}),
                     (A, "http://a.test/y.html", {"anchor": "weather"}),
                     (A, "http://a.test/z.html", {"anchor": "rubric"})])
    got = {r.url: r.score for r in get_scorer("rw").score(context(db, link_df, text_df)).collect()}
    assert got["http://a.test/x.html"] == pytest.approx(4 / 6)   # in 4 pages, all hot; k = 2
    assert got["http://a.test/z.html"] == pytest.approx(4 / 7)   # in 5 pages, 4 hot
    assert got["http://a.test/y.html"] == 0.0                    # 0 / 3: below c


def test_focus_learns_from_dead_links(spark, context, crawldb, links, texts):
    """Links named "course" that led to 404s stop being trusted; a live pattern keeps its rate."""
    hub = "http://a.test/hub.html"
    dead = [f"http://a.test/courses/old{i}.html" for i in range(6)]
    live = [f"http://a.test/syl/{i}.html" for i in range(2)]
    fresh = {"course": "http://a.test/courses/new.html", "syl": "http://a.test/syl/new.html"}
    db = crawldb([{"url": hub, "status": "fetched", "depth": 0}]
                 + [{"url": u, "status": "gone"} for u in dead]
                 + [{"url": u, "status": "fetched"} for u in live]
                 + [{"url": u} for u in fresh.values()])
    link_df = links([(hub, u, {"anchor": "course"}) for u in dead + [fresh["course"]]]
                    + [(hub, u, {"anchor": "notes"}) for u in live + [fresh["syl"]]])
    text_df = texts([(hub, "Home", "welcome")] + [(u, "Course notes", "course") for u in live])

    def focus_scores(learn, calibrate=False):   # the prior uncalibrated: the dead links' effect alone
        ctx = context(db, link_df, text_df, focus__learn_from_dead_links=learn, focus__calibrate_prior=calibrate)
        return as_dict(get_scorer("focus").score(ctx))

    without, with_dead = focus_scores(False), focus_scores(True)
    assert without[fresh["course"]] > without[fresh["syl"]]        # the topic word alone wins
    assert with_dead[fresh["course"]] < with_dead[fresh["syl"]]    # six 404s taught otherwise
    assert with_dead[fresh["syl"]] == pytest.approx(without[fresh["syl"]])
    calibrated = focus_scores(True, calibrate=True)                 # the default: the same order
    assert calibrated[fresh["course"]] < calibrated[fresh["syl"]]


def test_focus_calibrates_the_prior_of_untested_topic_words(spark, context, crawldb, links, texts):
    """Links named "course" led to pages that were not hot, links named "notes" to hot ones.
    An untested topic word ("homework") then starts where topic words have been found to
    lead, not at 1.0, and the tested "notes" pattern outranks it."""
    hub = "http://a.test/hub.html"
    missed = [f"http://a.test/c/{i}.html" for i in range(4)]
    found = [f"http://a.test/n/{i}.html" for i in range(2)]
    fresh = {"homework": "http://a.test/h/new.html", "notes": "http://a.test/n/new.html"}
    db = crawldb([{"url": hub, "status": "fetched", "depth": 0}]
                 + [{"url": u, "status": "fetched"} for u in missed + found]
                 + [{"url": u} for u in fresh.values()])
    link_df = links([(hub, u, {"anchor": "course"}) for u in missed]
                    + [(hub, u, {"anchor": "notes"}) for u in found]
                    + [(hub, fresh["homework"], {"anchor": "homework"}), (hub, fresh["notes"], {"anchor": "notes"})])
    text_df = texts([(hub, "Home", "welcome")] + [(u, "Photos", "family") for u in missed]
                    + [(u, "Course notes", "course") for u in found])

    def focus_scores(calibrate):
        ctx = context(db, link_df, text_df, focus__words=["course", "homework"], focus__calibrate_prior=calibrate)
        return as_dict(get_scorer("focus").score(ctx))

    raw, calibrated = focus_scores(False), focus_scores(True)
    assert raw[fresh["homework"]] == pytest.approx(1.0)                  # untested topic word: prior 1.0
    assert raw[fresh["homework"]] > raw[fresh["notes"]]
    assert calibrated[fresh["homework"]] < calibrated[fresh["notes"]]    # what topic words brought: 1 in 3
    assert calibrated[fresh["homework"]] < 0.5
