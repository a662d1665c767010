"""Curves as a long table, a markdown table at fixed fractions crawled, and a plot.

The long table (one row per ordering, metric, hot definition and K) is the exchange format:
one crawl writes it as CSV, and :func:`compare` lays several orderings' tables over each
other. The ideal and random crawlers are rows too (ordering ``ideal`` / ``random``); they
depend only on the web, so the copies from several crawls of one web collapse into one.

Example::

    markdown, figure = compare([result_bfs, "eval/pagerank.csv"])
    figure.savefig("compare.png")
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from crawlkit.evaluate.measures import Curve

COLUMNS = ["ordering", "metric", "hot_definition", "pages_crawled", "fraction_crawled", "value"]
BASELINES = ("ideal", "random")
DEFAULT_FRACTIONS = (0.05, 0.10, 0.20, 0.30, 0.50)
DEFAULT_POINTS = 1000


def sample_points(crawled: int, pages: int, points: int = DEFAULT_POINTS,
                  fractions: Iterable[float] = DEFAULT_FRACTIONS) -> np.ndarray:
    """The K values written out: ``points`` evenly spaced ones, the K of each table fraction
    (so the table is exact) and the last. Keeps a 300,000-page crawl's CSV small."""
    grid = np.linspace(1, crawled, min(points, crawled)).round()
    marks = [round(f * pages) for f in fractions if 1 <= round(f * pages) <= crawled]
    return np.unique(np.concatenate([grid, marks, [crawled]])).astype(np.int64)


def curves_frame(name: str, curves: list[Curve], pages: int, keep: np.ndarray) -> pd.DataFrame:
    """The long table of ``curves`` at the K values in ``keep`` (one-point curves whole)."""
    frames = []
    for curve in curves:
        rows = (np.ones(len(curve.pages_crawled), dtype=bool) if len(curve.pages_crawled) == 1
                else np.isin(curve.pages_crawled, keep))
        k = curve.pages_crawled[rows]
        for ordering, values in ((name, curve.crawler), ("ideal", curve.ideal), ("random", curve.random)):
            frames.append(pd.DataFrame({"ordering": ordering, "metric": curve.metric,
                                        "hot_definition": curve.hot_definition, "pages_crawled": k,
                                        "fraction_crawled": k / pages, "value": values[rows]}))
    return pd.concat(frames, ignore_index=True)[COLUMNS]


def _web_size(curves: pd.DataFrame) -> int:
    return int(round((curves["pages_crawled"] / curves["fraction_crawled"]).median()))


def _orderings(curves: pd.DataFrame) -> list[str]:
    names = [o for o in curves["ordering"].unique() if o not in BASELINES]
    return names + [b for b in BASELINES if b in set(curves["ordering"])]


def fraction_table(curves: pd.DataFrame, fractions: Iterable[float] = DEFAULT_FRACTIONS) -> str:
    """Markdown: one row per measure, hot definition and ordering; the value once K/T
    reaches each fraction (the last K at or below round(f·T); "–" when the crawl stopped
    before it), and each crawl's last value with the fraction it reached."""
    fractions = list(fractions)
    pages = _web_size(curves)
    header = ["measure", "hot pages", "ordering", *[f"{f:.0%}" for f in fractions], "end"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (metric, hot), panel in curves.groupby(["metric", "hot_definition"], sort=False):
        for ordering in _orderings(panel):
            series = panel[panel["ordering"] == ordering].sort_values("pages_crawled")
            cells = [_value_at(series, round(f * pages)) for f in fractions]
            last = series.iloc[-1]
            end = "" if ordering in BASELINES else f"{last['value']:.3f} @ {last['fraction_crawled']:.3f}"
            lines.append("| " + " | ".join([metric, hot, ordering, *cells, end]) + " |")
    return "\n".join(lines) + "\n"


def _value_at(series: pd.DataFrame, target: int) -> str:
    reached = series[series["pages_crawled"] <= target]
    if target < 1 or reached.empty or series["pages_crawled"].max() < target:
        return "–"
    return f"{reached.iloc[-1]['value']:.3f}"


def plot_curves(curves: pd.DataFrame) -> Figure:
    """One panel per measure and hot definition: each ordering against ideal and random."""
    panels = list(curves.groupby(["metric", "hot_definition"], sort=False))
    columns = min(3, max(1, len(panels)))
    rows = max(1, math.ceil(len(panels) / columns))
    figure = Figure(figsize=(5 * columns, 3.8 * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    styles = {"ideal": dict(color="black", linestyle="--"), "random": dict(color="grey", linestyle=":")}
    for ax, ((metric, hot), panel) in zip(axes, panels):
        for ordering in _orderings(panel):
            series = panel[panel["ordering"] == ordering].sort_values("pages_crawled")
            ax.plot(series["fraction_crawled"], series["value"], label=ordering,
                    marker="o" if len(series) == 1 else None, **styles.get(ordering, {}))
        ax.set_title(f"{metric}, {hot}", fontsize="medium")
        ax.set_xlabel("fraction of the web crawled (K/T)")
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize="small")
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    return figure


def compare(results: Iterable) -> tuple[str, Figure]:
    """One table and one plot over several orderings of the same web.

    ``results``: EvaluationResult objects, long DataFrames or paths to their CSV files.
    Ordering names must differ (they label the lines).
    """
    frames = [r if isinstance(r, pd.DataFrame)
              else pd.read_csv(r) if isinstance(r, (str, Path)) else r.curves for r in results]
    names = [o for frame in frames for o in frame["ordering"].unique() if o not in BASELINES]
    if len(names) != len(set(names)):
        raise ValueError(f"ordering names repeat: {sorted(names)}")
    curves = pd.concat(frames, ignore_index=True).drop_duplicates(
        ["ordering", "metric", "hot_definition", "pages_crawled"])
    return fraction_table(curves), plot_curves(curves)
