"""The full web a crawl is evaluated against: its pages, their importance and their labels.

Pages are matched to crawled URLs the way the replay web matches requests to pages
(crawlkit.replay.urls: ``url_key``, then the https/trailing-slash variants the WARC source
tries; a trailing-slash variant it answers with a 301 to the archived URL, which the crawl
then fetches under that URL), so a page counts as crawled when the replay web served it.

Example::

    web = load_web("links.tsv.gz")                        # in-degree and PageRank
    web = load_web(None, labels="labels.tsv")             # a labelled HTML web (no links)
    web.page_id("http://www1.hollins.edu/")               # -> 0
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from crawlkit.evaluate.importance import distinct_links, in_degree, pagerank
from crawlkit.replay.graph import LinkGraph
from crawlkit.replay.urls import key_variants, url_key


@dataclass
class Web:
    """Pages ``0..T-1``; importance arrays are None for a web known only by its labels."""
    urls: list[str]
    in_degree: np.ndarray | None = None
    pagerank: np.ndarray | None = None
    labels: np.ndarray | None = None          # class of each page ("" when unlabelled)
    _ids: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self):
        for i, url in enumerate(self.urls):
            self._ids.setdefault(url_key(url), i)

    @property
    def size(self) -> int:
        return len(self.urls)

    def page_id(self, url: str) -> int | None:
        key = url_key(url)
        if key in self._ids:
            return self._ids[key]
        return next((self._ids[k] for k in key_variants(key) if k in self._ids), None)

    def on_topic(self, topic: str) -> np.ndarray:
        if self.labels is None:
            raise ValueError("the web has no labels (pass labels=...)")
        on_topic = self.labels == topic
        if not on_topic.any():   # a mistyped topic: recall would be 0/0 on every row
            known = sorted({str(label) for label in self.labels if label})
            raise ValueError(f"no page is labelled {topic!r}; the labels are {', '.join(known[:20])}")
        return on_topic


def graph_web(urls: list[str], src: np.ndarray, dst: np.ndarray) -> Web:
    """A web from page URLs and link arrays (page ids), with in-degree and PageRank."""
    src, dst = distinct_links(np.asarray(src), np.asarray(dst), len(urls))
    return Web(list(urls), in_degree(dst, len(urls)), pagerank(src, dst, len(urls)))


def load_web(links: str | Path | None, labels: str | Path | None = None) -> Web:
    """Read ``links.tsv(.gz)`` (src TAB dst; T = distinct URLs on either side) and/or a
    ``labels.tsv`` (url, class, site; header). Without links, the labelled pages are the web."""
    label_of = read_labels(labels) if labels else {}
    if links:
        graph = LinkGraph.load(links)
        sources = np.repeat(np.arange(graph.num_pages), np.diff(graph.offsets))
        web = graph_web(graph.urls, sources, graph.targets)
    elif label_of:
        web = Web(list(label_of))
    else:
        raise ValueError("need a links file, a labels file, or both")
    if label_of:
        keyed = {url_key(url): cls for url, cls in label_of.items()}
        web.labels = np.array([keyed.get(url_key(url), "") for url in web.urls], dtype=object)
    return web


def read_labels(path: str | Path) -> dict[str, str]:
    """url -> class from a WebKB-style ``labels.tsv`` (columns url, class, site; header)."""
    with open(path, encoding="utf-8", newline="") as f:
        return {row["url"]: row["class"] for row in csv.DictReader(f, delimiter="\t")}
