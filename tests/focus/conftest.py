"""Small inline crawldb, link and text tables for the focus tests, and a ScoringContext maker."""
from __future__ import annotations

import pytest
from focushelpers import NOW

from crawlkit import schemas


def host(url: str) -> str:
    return url.split("/")[2]


@pytest.fixture
def crawldb(spark):
    """crawldb rows from dicts (url required; depth 1, unfetched, due now by default)."""
    def build(rows):
        data = []
        for r in rows:
            row = dict(url=r["url"], host=host(r["url"]), status="unfetched", fetch_time=NOW, retries=0,
                       fetch_interval=2592000, score=0.0, scores={}, opic_cash=0.0, opic_history=0.0,
                       change_count=0, check_count=0, depth=1, schema_version=1, metadata={})
            row.update(r)
            data.append(row)
        return schemas.frame(spark, "crawldb", data)
    return build


@pytest.fixture
def links(spark):
    """Link rows from (src, dst) or (src, dst, meta-dict); meta['anchor'] is also the anchor."""
    def build(pairs):
        data = []
        for p in pairs:
            meta = {"kind": "a", **(p[2] if len(p) > 2 else {})}
            row = dict(src=p[0], dst=p[1], src_host=host(p[0]), dst_host=host(p[1]),
                       anchor=meta.get("anchor"), meta=meta, nofollow=False, first_seen=NOW, last_seen=NOW)
            data.append(tuple(row.get(c) for c in schemas.columns("links")))
        return spark.createDataFrame(data, schemas.struct("links"))
    return build


@pytest.fixture
def texts(spark):
    def build(rows):
        return spark.createDataFrame(list(rows) or [], "url string, title string, text string")
    return build


@pytest.fixture
def context(spark, make_test_conf):
    """A ScoringContext; with focus words the focus state is computed as run_scoring does."""
    from crawlkit.scoring.base import ScoringContext
    from crawlkit.scoring.focus.query import load_query
    from crawlkit.scoring.focus.state import focus_state

    def build(db, link_df, text_df=None, segment="20240101000000", **conf):
        conf.setdefault("focus__words", ["course"])
        conf.setdefault("focus__tie_breadth", 0.0)
        c = make_test_conf(**conf)
        ctx = ScoringContext(spark, c, NOW, crawldb=db, links=link_df, texts=text_df, segment=segment)
        return ScoringContext(spark, c, NOW, crawldb=db, links=link_df, texts=text_df, segment=segment,
                              focus=focus_state(ctx, load_query(c)))
    return build
