"""Hot pages: which pages a crawl should have found early ("indegree:10", "pagerank:1%").

``indegree:G`` makes a page hot when more than G distinct other pages link to it (the data
sets' "more than G in-links", the default's G = 3, 10, 100); ``indegree>=:G`` when at least G
do, the paper's own threshold (Cho et al.: hot when I(P) >= G). ``pagerank:H`` takes the top
H pages by full-graph PageRank, ``pagerank:P%`` the top P percent of T; pages tied with the
H-th (see :func:`crawlkit.evaluate.importance.tie_groups`) are hot too, so a hot set never
depends on an arbitrary order among equals and may hold a few more than H pages.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from crawlkit.evaluate.importance import tie_groups
from crawlkit.evaluate.web import Web

DEFAULT_HOT = ("indegree:3", "indegree:10", "indegree:100", "pagerank:1%")
SPEC = re.compile(r"indegree(>=)?:\d+(\.\d+)?|pagerank:(\d+|\d+(\.\d+)?%)")


@dataclass(frozen=True)
class HotSet:
    name: str          # the hot_definition column: "indegree>10", "pagerank-top-1%"
    mask: np.ndarray   # bool per page

    @property
    def size(self) -> int:
        return int(self.mask.sum())


def parse_hot(specs: str | list[str] | tuple[str, ...]) -> list[str]:
    """Split "indegree:3,pagerank:100" into checked specs (errors name the bad one)."""
    items = [s.strip() for s in specs.split(",")] if isinstance(specs, str) else list(specs)
    for spec in items:
        if not SPEC.fullmatch(spec):
            raise ValueError(f"hot definition {spec!r}: expected indegree:G, indegree>=:G, pagerank:H or pagerank:P%")
    return items


def hot_set(spec: str, web: Web) -> HotSet:
    kind, _, value = spec.partition(":")
    if kind == "indegree":
        return HotSet(f"indegree>{value}", web.in_degree > float(value))
    if kind == "indegree>=":
        return HotSet(f"indegree>={value}", web.in_degree >= float(value))
    count = round(web.size * float(value[:-1]) / 100) if value.endswith("%") else int(value)
    return HotSet(f"pagerank-top-{value}", top_pages(web.pagerank, count))


def top_pages(importance: np.ndarray, count: int) -> np.ndarray:
    """The ``count`` most important pages, plus any tied with the last of them."""
    if count <= 0:
        return np.zeros(len(importance), dtype=bool)
    keys = tie_groups(importance)
    return keys >= np.sort(keys)[::-1][min(count, len(keys)) - 1]
