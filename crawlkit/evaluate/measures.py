"""Cho et al.'s crawl measures as pure functions: a crawl order plus importance -> curves.

A crawl order is an array of page ids (0..T-1) in the order the pages were first fetched;
the value at K is the measure after the first K of them. Every curve carries the ideal
crawler's and the random crawler's value at the same K, so a plot shows where an ordering
sits between the two. With T pages, H hot ones and K crawled:

==============  ===========================================  ================  ==============
measure         crawler                                      ideal             random (expected)
==============  ===========================================  ================  ==============
P_ST            hot pages found / H                          min(1, K/H)       K/T
P_CS            first K pages that are among the K most      1                 n(K)/T
                important (n(K): pages at least as
                important as the K-th; = K without ties)
P_BC            hot pages kept in the buffer / B             min(K, H, B)/B    min(K, B)·H/(T·B)
harvest         on-topic pages / K                           min(K, R)/K       R/T
recall          on-topic pages / R (R on-topic in the web)   min(K, R)/R       K/T
==============  ===========================================  ================  ==============
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from crawlkit.evaluate.hot import HotSet
from crawlkit.evaluate.importance import tie_groups

IMPORTANCE = ("pagerank", "backlinks")   # IR (PageRank) and IB (in-links) of the whole web


@dataclass
class Curve:
    """One measure under one hot definition, at each K in ``pages_crawled``."""
    metric: str
    hot_definition: str
    pages_crawled: np.ndarray
    crawler: np.ndarray
    ideal: np.ndarray
    random: np.ndarray


def _positions(order: np.ndarray) -> np.ndarray:
    return np.arange(1, len(order) + 1)


def crawl_and_stop_threshold(order: np.ndarray, hot: HotSet) -> Curve:
    """P_ST: the share of all hot pages among the first K crawled."""
    k, pages, found = _positions(order), len(hot.mask), np.cumsum(hot.mask[order])
    return Curve("P_ST", hot.name, k, found / hot.size, np.minimum(1.0, k / hot.size), k / pages)


def crawl_and_stop(order: np.ndarray, importance: np.ndarray, metric: str = "pagerank") -> Curve:
    """P_CS: the share of the first K crawled pages that are among the K most important by
    ``importance`` (``metric`` names it in the curve: ``<metric>-top-K``).

    Ties are inclusive: a page counts when it is at least as important as the K-th most
    important page (values within the tie tolerance are equal), so no arbitrary order
    among equals decides the score. A page at crawl position i with m more important pages
    in the web counts for every K >= max(i, m + 1).
    """
    keys = tie_groups(importance)
    pages, k = len(keys), _positions(order)
    ascending = np.sort(keys)
    more_important = pages - np.searchsorted(ascending, keys[order], side="right")
    counts_from = np.maximum(k, more_important + 1)
    counted = np.cumsum(np.bincount(counts_from, minlength=len(order) + 1)[1:len(order) + 1])
    kth = ascending[::-1][k - 1]
    at_least_kth = pages - np.searchsorted(ascending, kth, side="left")
    return Curve("P_CS", f"{metric}-top-K", k, counted / k, np.ones(len(k)), at_least_kth / pages)


def buffer_evictions(estimates: np.ndarray | Sequence[np.ndarray], capacity: int) -> np.ndarray:
    """Replay a limited buffer: for the page entering at each crawl position, the position
    of the page evicted then (-1 while the buffer has room).

    The crawler keeps at most ``capacity`` pages; when one more arrives it drops the page it
    estimates least important, which may be the newcomer. On equal estimates the page
    fetched last goes, so the incumbents stay.

    ``estimates`` is one estimate per crawl position (one estimate for the whole crawl), or
    one array per round: array r holds the crawler's estimates *as of round r* of the pages
    crawled up to the end of round r, so its length is where round r ends. A crawler
    compares its pages by its current estimates, and a batch crawler's scores change scale
    from round to round (PageRank shrinks as the known graph grows, backlink counts grow):
    comparing a page's score from its own round with a newcomer's would mostly keep the
    first pages fetched. So at each round the buffer is re-keyed with that round's
    estimates, then the round's pages arrive in crawl order.
    """
    rounds = [estimates] if len(estimates) == 0 or np.ndim(estimates[0]) == 0 else estimates
    rounds = [np.asarray(current, dtype=np.float64) for current in rounds]
    if any(len(later) < len(earlier) for earlier, later in zip(rounds, rounds[1:])):
        raise ValueError("each round's estimates must cover the pages crawled before it")
    evicted = np.full(len(rounds[-1]), -1, dtype=np.int64)
    buffer: list[tuple[float, int]] = []      # (estimate, -position): lowest, then latest, first
    start = 0
    for number, current in enumerate(rounds, start=1):
        held, arriving = [-p for _, p in buffer], range(start, len(current))
        if np.isnan(current[held + list(arriving)]).any():
            raise ValueError(f"round {number}: every page in the buffer or arriving needs an estimate "
                             "for the limited-buffer replay")
        buffer = [(current[p], -p) for p in held]
        heapq.heapify(buffer)
        for position in arriving:
            heapq.heappush(buffer, (current[position], -position))
            if len(buffer) > capacity:
                evicted[position] = -heapq.heappop(buffer)[1]
        start = len(current)
    return evicted


def limited_buffer(order: np.ndarray, evicted: np.ndarray, capacity: int, hot: HotSet) -> Curve:
    """P_BC after each K: the share of the buffer's B slots holding hot pages."""
    k, pages, hot_size = _positions(order), len(hot.mask), hot.size
    entering = hot.mask[order].astype(np.int64)
    leaving = np.where(evicted >= 0, entering[np.maximum(evicted, 0)], 0)
    kept_hot = np.cumsum(entering - leaving)
    ideal = np.minimum(np.minimum(k, hot_size), capacity) / capacity
    random = np.minimum(k, capacity) * hot_size / (pages * capacity)
    return Curve(f"P_BC(B={capacity})", hot.name, k, kept_hot / capacity, ideal, random)


def kept_buffer(order: np.ndarray, kept: np.ndarray, hot: HotSet) -> Curve:
    """P_BC of a crawl that ran its own limited buffer: ``kept`` marks the crawled pages not
    evicted at the end (B = how many). Only the end state is known, so one point, at K = all."""
    capacity, crawled, pages = int(kept.sum()), len(order), len(hot.mask)
    if capacity == 0:
        raise ValueError("the crawler's buffer holds none of the crawled pages of the web")
    value = hot.mask[order][kept].sum() / capacity
    ideal = min(crawled, hot.size, capacity) / capacity
    return Curve(f"P_BC(evicted, B={capacity})", hot.name, np.array([crawled]),
                 np.array([value]), np.array([ideal]), np.array([hot.size / pages]))


def harvest_rate(order: np.ndarray, on_topic: np.ndarray, topic: str) -> Curve:
    """Focused crawling: the share of the first K fetched pages that are on topic."""
    k, relevant = _positions(order), int(on_topic.sum())
    found = np.cumsum(on_topic[order])
    return Curve("harvest", f"topic:{topic}", k, found / k, np.minimum(k, relevant) / k,
                 np.full(len(k), relevant / len(on_topic)))


def target_recall(order: np.ndarray, on_topic: np.ndarray, topic: str) -> Curve:
    """Focused crawling: the share of all on-topic pages among the first K fetched."""
    k, relevant = _positions(order), int(on_topic.sum())
    found = np.cumsum(on_topic[order])
    return Curve("recall", f"topic:{topic}", k, found / relevant,
                 np.minimum(k, relevant) / relevant, k / len(on_topic))
