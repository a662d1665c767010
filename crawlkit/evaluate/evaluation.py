"""Evaluating one crawl ordering: read the crawl, measure it against the full web, report.

:func:`evaluate_order` is the core (a crawl order of page ids in, curves out, no I/O);
:func:`evaluate_crawl` reads a crawl directory and the web files around it. Experiment
scripts call the latter once per ordering and :func:`crawlkit.evaluate.report.compare` on
the results.

The limited-buffer measure P_BC comes two ways:

* ``buffer=B``: replay a buffer of B pages over the crawl order, evicting the page with the
  lowest *estimate*. With ``round_estimates`` (:func:`crawlkit.evaluate.crawl.read_round_estimates`:
  the crawldb scores as of each round's generate) each round's pages compete with the
  buffer's by the crawler's estimates *as of that round*, the buffer re-keyed at each round:
  scores from different rounds are on different scales (PageRank shrinks as the known graph
  grows, backlink counts grow), so comparing a page's score from its own round with a
  newcomer's would mostly keep the first B pages fetched. ``estimates`` (url -> score, e.g.
  the final crawldb score) is one estimate for all rounds instead.
* ``buffered=urls``: the crawler ran its own limited buffer; the crawled pages it holds at
  the end (:func:`crawlkit.evaluate.crawl.read_buffer`) are kept, B = how many. Only the
  end state is known: one point, at the last K.

Example::

    result = evaluate_crawl("crawl", "links.tsv.gz", "pagerank", buffer=500,
                            round_estimates=read_round_estimates(spark, "crawl"),
                            access_log="access.log")
    result = evaluate_crawl("crawl", "links.tsv.gz", "own-buffer",
                            buffered=read_buffer(spark, "crawl"))
    result.curves           # the long table
    print(result.table())   # P_ST, P_CS, P_BC at 5, 10, 20, 30, 50 % crawled
    result.write("crawl/evaluation")
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from crawlkit.evaluate import measures
from crawlkit.evaluate.crawl import crawl_order, read_segments
from crawlkit.evaluate.crosscheck import CrossCheck, cross_check
from crawlkit.evaluate.hot import DEFAULT_HOT, hot_set, parse_hot
from crawlkit.evaluate.report import (DEFAULT_FRACTIONS, DEFAULT_POINTS, curves_frame,
                                      fraction_table, plot_curves, sample_points)
from crawlkit.evaluate.web import Web, load_web
from crawlkit.replay.accesslog import read_access_log

SHOWN = 5


@dataclass
class EvaluationResult:
    name: str
    curves: pd.DataFrame          # ordering, metric, hot_definition, pages_crawled, fraction_crawled, value
    web_pages: int                # T
    pages_crawled: int            # crawled pages found in the web
    hot_pages: dict[str, int]     # hot definition -> how many pages are hot
    notes: list[str] = field(default_factory=list)
    crosscheck: CrossCheck | None = None

    def table(self, fractions: Iterable[float] = DEFAULT_FRACTIONS) -> str:
        return fraction_table(self.curves, fractions)

    def figure(self):
        return plot_curves(self.curves)

    def markdown(self, fractions: Iterable[float] = DEFAULT_FRACTIONS) -> str:
        lines = [f"# Crawl ordering evaluation: {self.name}", "",
                 f"- web: T = {self.web_pages} pages; crawled: K = {self.pages_crawled} "
                 f"({self.pages_crawled / self.web_pages:.1%})",
                 *[f"- hot pages, {name}: {count}" for name, count in self.hot_pages.items()],
                 *[f"- note: {note}" for note in self.notes], "", self.table(fractions)]
        if self.crosscheck is not None:
            lines += ["", self.crosscheck.markdown()]
        return "\n".join(lines)

    def write(self, out_dir: str | Path) -> dict[str, str]:
        """Write ``<name>.csv``, ``<name>.png`` and ``<name>.md`` into ``out_dir``."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {kind: str(out / f"{self.name}.{kind}") for kind in ("csv", "png", "md")}
        self.curves.to_csv(paths["csv"], index=False)
        self.figure().savefig(paths["png"], dpi=110)
        Path(paths["md"]).write_text(self.markdown(), encoding="utf-8")
        return paths

    def summary(self) -> dict:
        summary = {"name": self.name, "web_pages": self.web_pages,
                   "pages_crawled": self.pages_crawled, "hot_pages": self.hot_pages,
                   "notes": self.notes}
        if self.crosscheck is not None:
            summary["crosscheck"] = self.crosscheck.summary()
        return summary


def evaluate_order(name: str, order: np.ndarray, web: Web, *,
                   hot: str | Iterable[str] = DEFAULT_HOT, importance: str = "pagerank",
                   buffer: int | None = None,
                   estimates: np.ndarray | Sequence[np.ndarray] | None = None,
                   kept: np.ndarray | None = None,
                   topic: str | None = None, points: int = DEFAULT_POINTS,
                   fractions: Iterable[float] = DEFAULT_FRACTIONS) -> EvaluationResult:
    """Every measure for a crawl ``order`` (distinct page ids of ``web``, first fetched first).

    ``buffer`` with ``estimates`` (one per order position, or one array per round:
    :func:`measures.buffer_evictions`) replays a limited buffer; ``kept`` (bool per
    position) is the end state of the crawler's own buffer instead.
    Importance measures need a link graph; P_CS ranks the web by ``importance``
    (``pagerank``: IR, ``backlinks``: IB, in-links; ``scoring.importance``); harvest and
    recall need ``topic`` and labels.
    """
    if importance not in measures.IMPORTANCE:
        raise ValueError(f"importance {importance!r}: expected one of {', '.join(measures.IMPORTANCE)}")
    order = np.asarray(order, dtype=np.int64)
    if len(order) == 0:
        raise ValueError("no crawled pages to evaluate")
    curves, hot_pages, notes = [], {}, []
    if web.in_degree is not None:
        hot_sets = [hot_set(spec, web) for spec in parse_hot(hot)]
        hot_pages = {h.name: h.size for h in hot_sets}
        notes += [f"no page is {h.name}: its measures are left out" for h in hot_sets if h.size == 0]
        hot_sets = [h for h in hot_sets if h.size]
        curves += [measures.crawl_and_stop_threshold(order, h) for h in hot_sets]
        by = web.pagerank if importance == "pagerank" else web.in_degree
        curves.append(measures.crawl_and_stop(order, by, importance))
        if buffer is not None:
            evicted = measures.buffer_evictions(estimates, buffer)
            curves += [measures.limited_buffer(order, evicted, buffer, h) for h in hot_sets]
        if kept is not None:
            curves += [measures.kept_buffer(order, kept, h) for h in hot_sets]
    else:
        notes.append("the web has no link graph: P_ST, P_CS and P_BC are left out")
    if topic is not None:
        on_topic = web.on_topic(topic)
        curves += [measures.harvest_rate(order, on_topic, topic),
                   measures.target_recall(order, on_topic, topic)]
        hot_pages[f"topic:{topic}"] = int(on_topic.sum())
    if not curves:
        raise ValueError("nothing to measure: give a link graph, or labels and a topic")
    keep = sample_points(len(order), web.size, points, fractions)
    return EvaluationResult(name, curves_frame(name, curves, web.size, keep), web.size,
                            len(order), hot_pages, notes)


def evaluate_crawl(crawl_dir: str, web_links_path: str | Path | None, name: str | None = None, *,
                   hot: str | Iterable[str] = DEFAULT_HOT, importance: str = "pagerank",
                   buffer: int | None = None, round_estimates: pd.DataFrame | None = None,
                   estimates: Mapping[str, float] | None = None,
                   buffered: Iterable[str] | None = None, access_log: str | Path | None = None,
                   labels: str | Path | None = None, topic: str | None = None,
                   points: int = DEFAULT_POINTS,
                   fractions: Iterable[float] = DEFAULT_FRACTIONS) -> EvaluationResult:
    """Evaluate the crawl in ``crawl_dir`` against the web in ``web_links_path`` (and/or the
    ``labels``). Runs on the driver (pyarrow, pandas, numpy): no Spark needed; what the
    limited buffer needs from the crawldb comes in read already (``round_estimates`` or
    ``estimates`` for ``buffer``, ``buffered``: see the module docstring)."""
    name = name or os.path.basename(str(crawl_dir).rstrip("/"))
    web = load_web(web_links_path, labels)
    content, fetchlists, incomplete = read_segments(str(crawl_dir))
    pages = crawl_order(content, fetchlists)
    notes = [f"segment {s}: no complete content, left out" for s in incomplete]
    ids = pages["url"].map(web.page_id)
    outside = pages["url"][ids.isna()].tolist()
    if outside:
        notes.append(f"{len(outside)} crawled URLs are not in the web, left out "
                     f"(e.g. {', '.join(outside[:SHOWN])})")
    in_web = pages[ids.notna()].assign(page=ids[ids.notna()].astype(np.int64))
    first = in_web.drop_duplicates("page", keep="first")
    if len(first) < len(in_web):
        notes.append(f"{len(in_web) - len(first)} crawled URLs are a page crawled earlier "
                     "under another spelling, counted once")
    buffer_args = {}
    if buffered is not None:
        held = set(buffered)
        held_pages = set(in_web.loc[in_web["url"].isin(held), "page"])     # under any spelling
        buffer_args["kept"] = first["page"].isin(held_pages).to_numpy()
        left_out = held - set(in_web["url"])
        if left_out:
            notes.append(f"{len(left_out)} URLs the crawler's buffer holds are not crawled pages of "
                         f"the web, left out of B (e.g. {', '.join(sorted(left_out)[:SHOWN])})")
    if buffer is not None:
        if (round_estimates is None) == (estimates is None):
            raise ValueError("buffer=B replays the crawler's buffer with its estimates: give "
                             "round_estimates=read_round_estimates(spark, crawl_dir) (its estimates as "
                             "of each round) or estimates={url: score} (one estimate for all rounds)")
        scores = (estimates_by_round(first, round_estimates) if round_estimates is not None
                  else first["url"].map(estimates).to_numpy(dtype=np.float64))
        buffer_args.update(buffer=int(buffer), estimates=scores)
    result = evaluate_order(name, first["page"].to_numpy(), web, hot=hot, importance=importance, topic=topic,
                            points=points, fractions=fractions, **buffer_args)
    result.notes[:0] = notes
    if access_log is not None:
        result.crosscheck = cross_check(pages["url"], read_access_log(access_log))
    return result


def estimates_by_round(pages: pd.DataFrame, round_estimates: pd.DataFrame) -> list[np.ndarray]:
    """For each round of the crawl order ``pages`` (url, segment), the estimates as of that
    round (``round_estimates``: segment, url, estimate) of the pages crawled up to its end:
    the per-round form :func:`measures.buffer_evictions` replays."""
    by_segment = {segment: rows.set_index("url")["estimate"]
                  for segment, rows in round_estimates.groupby("segment")}
    ends = pages.groupby("segment", sort=False).size().cumsum()     # crawl order keeps rounds together
    missing = [segment for segment in ends.index if segment not in by_segment]
    if missing:
        raise ValueError(f"no estimates for segment(s) {', '.join(missing)} in round_estimates")
    return [pages["url"].iloc[:end].map(by_segment[segment]).to_numpy(dtype=np.float64)
            for segment, end in ends.items()]
