"""RWB's tunnel: a relevant page reachable only through irrelevant ones is eventually
fetched by RWB, while RW (which never fetches a 0-scored link) stalls in front of it.

Rounds are simulated without a fetcher: each round scores the known pages, "fetches" the
two best unfetched ones whose score is above 0, and learns their links and text.
"""
from crawlkit.scoring import get_scorer

from focushelpers import as_dict

S, R, J = "http://w.test/", "http://w.test/course.html", "http://w.test/j.html"
MIDDLE = [f"http://w.test/i{i}.html" for i in range(4)]
OUT = {S: [(m, "misc") for m in MIDDLE], J: [(R, "more")], R: [],
       **{m: [(J, "stuff")] for m in MIDDLE}}
TEXT = {u: ("page", "nothing to see here") for u in OUT} | {R: ("Course home", "the syllabus")}


def simulate(scorer, context, crawldb, links, texts, rounds, **conf):
    known, fetched = {S}, [S]
    known.update(d for d, _ in OUT[S])
    for n in range(rounds):
        db = crawldb([{"url": u, "status": "fetched" if u in fetched else "unfetched",
                       "depth": 0 if u == S else 1} for u in sorted(known)])
        link_df = links([(s, d, {"anchor": a}) for s in fetched for d, a in OUT[s]])
        text_df = texts([(u, *TEXT[u]) for u in fetched])
        ctx = context(db, link_df, text_df, segment=f"2024010100{n:04d}", **conf)
        scores = as_dict(get_scorer(scorer).score(ctx))
        best = sorted((u for u in known if u not in fetched and scores[u] > 0), key=lambda u: (-scores[u], u))[:2]
        if R in fetched or not best:
            break
        for u in best:
            fetched.append(u)
            known.update(d for d, _ in OUT[u])
    return fetched


def test_rw_stalls_in_front_of_the_tunnel(context, crawldb, links, texts):
    assert simulate("rw", context, crawldb, links, texts, rounds=3) == [S]


def test_rwb_tunnels_through_irrelevant_pages(context, crawldb, links, texts):
    fetched = simulate("rwb", context, crawldb, links, texts, rounds=10)
    assert R in fetched and J in fetched


def test_rwb_draws_are_reproducible_and_fresh_each_round(context, crawldb, links, texts):
    db = crawldb([{"url": S, "status": "fetched", "depth": 0}] + [{"url": m} for m in MIDDLE])
    link_df = links([(S, m, {"anchor": "misc"}) for m in MIDDLE])
    text_df = texts([(S, "page", "nothing")])
    score = lambda seg, **c: as_dict(get_scorer("rwb").score(context(db, link_df, text_df, segment=seg, **c)))  # noqa: E731
    first, again, other = score("20240101000000"), score("20240101000000"), score("20240101010000")
    assert first == again and first != other
    assert all(0.0 <= v < 1.0 for v in first.values())
    assert set(score("20240101000000", focus__rwb_boost=1.0).values()) == {0.0}   # P1 < 1: never boosted
