"""Fixtures of the evaluation tests: the tiny web (evaluate_tinyweb.py) in memory and as
files, a crawl directory that crawled it, and the replay web's access log of that crawl."""
from __future__ import annotations

import gzip
import json
from datetime import datetime, timedelta

import numpy as np
import pytest

from crawlkit.evaluate.web import graph_web
from evaluate_tinyweb import (LABELS, LINKS, NAMES, SEGMENT_1, SEGMENT_2, SEGMENT_3, ids, url,
                              write_part)

T0 = datetime(2024, 1, 1)


@pytest.fixture
def tiny_web():
    web = graph_web([url(n) for n in NAMES], ids("".join(a for a, _ in LINKS)),
                    ids("".join(b for _, b in LINKS)))
    web.labels = np.array([LABELS.get(n, "other") for n in NAMES], dtype=object)
    return web


@pytest.fixture
def web_files(tmp_path):
    """links.tsv.gz and labels.tsv of the tiny web."""
    links = tmp_path / "links.tsv.gz"
    with gzip.open(links, "wt", encoding="utf-8") as f:
        f.write("".join(f"{url(a)}\t{url(b)}\n" for a, b in LINKS))
    labels = tmp_path / "labels.tsv"
    labels.write_text("url\tclass\tsite\n" + "".join(
        f"{url(n)}\t{LABELS.get(n, 'other')}\tt\n" for n in NAMES), encoding="utf-8")
    return links, labels


def _fetched(name, status, second):
    return {"url": url(name), "host": "t.test", "fetch_status": status,
            "fetched_at": T0 + timedelta(seconds=second)}


def _listed(name, score):
    return {"url": url(name), "host": "t.test", "score": score, "status": "unfetched"}


@pytest.fixture
def crawl_dir(tmp_path):
    """Round 1 fetches a b e (and x: 404); round 2 c f d, refetches a (304), follows a
    redirect r and fetches extra.html, a page outside the web; round 3 was generated only.
    Fetch-list scores: a.5 b.2 e.1 c.4 f.4 d.9 (ESTIMATES of the buffer test)."""
    crawl = tmp_path / "crawl"
    write_part(crawl, SEGMENT_1, "fetchlist", "fetchlist",
               [_listed("a", .5), _listed("b", .2), _listed("x", .3), _listed("e", .1)])
    write_part(crawl, SEGMENT_1, "content", "content",   # in host-queue order, not time order
               [_fetched("e", "success", 3), _fetched("x", "not_found", 4),
                _fetched("a", "success", 1), _fetched("b", "success", 2)])
    write_part(crawl, SEGMENT_2, "fetchlist", "fetchlist",
               [_listed("c", .4), _listed("f", .4), _listed("d", .9), _listed("a", .6),
                _listed("r", .3), _listed("extra", .05)])
    write_part(crawl, SEGMENT_2, "content", "content",
               [_fetched("c", "success", 10), _fetched("a", "not_modified", 11),
                _fetched("r", "redirect_perm", 12), _fetched("f", "success", 13),
                _fetched("d", "success", 14), _fetched("extra", "success", 15)])
    write_part(crawl, SEGMENT_3, "fetchlist", "fetchlist", [_listed("g", .1)])
    return crawl


@pytest.fixture
def access_log(tmp_path):
    """What the replay web answered: d before f (two fetch threads), g served but in no
    segment (as if a segment were lost), extra.html never served."""
    requests = [("/robots.txt", 200), ("/a.html", 200), ("/b.html", 200), ("/e.html", 200),
                ("/x.html", 404), ("/c.html", 200), ("/a.html", 304), ("/r.html", 301),
                ("/d.html", 200), ("/f.html", 200), ("/g.html", 200)]
    path = tmp_path / "access.log"
    path.write_text("".join(json.dumps({"ts": 1000.0 + i, "method": "GET", "host": "t.test",
                                        "url": f"http://t.test{p}", "status": s}) + "\n"
                            for i, (p, s) in enumerate(requests)), encoding="utf-8")
    return path
