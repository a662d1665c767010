"""The report's plots, each returned as an inline ``<svg>`` string (no files, no external assets).

Text stays text in the SVG (``svg.fonttype = none``): smaller, selectable, and drawn in the
page's font. A fixed ``svg.hashsalt`` and no date make the output byte-stable, so a report of
the same crawl is the same file.
"""
from __future__ import annotations

import io
import math
from collections import defaultdict

import matplotlib
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from crawlkit.inspect.stats import bin_edges
from crawlkit.status import FetchStatus

# One colour per fetch outcome, grouped by meaning: greens fine, blues redirects, warm errors.
STATUS_COLOURS = {
    FetchStatus.SUCCESS.value: "#2e7d32", FetchStatus.NOT_MODIFIED.value: "#81c784",
    FetchStatus.REDIRECT_PERM.value: "#1565c0", FetchStatus.REDIRECT_TEMP.value: "#64b5f6",
    FetchStatus.UNSUPPORTED_TYPE.value: "#26a69a", FetchStatus.NOT_FOUND.value: "#fb8c00",
    FetchStatus.GONE.value: "#e53935", FetchStatus.ACCESS_DENIED.value: "#8e24aa",
    FetchStatus.ROBOTS_DENIED.value: "#6d4c41", FetchStatus.RETRY.value: "#fdd835",
    FetchStatus.SKIPPED.value: "#9e9e9e", FetchStatus.BLOCKED.value: "#212121",
}
GROUP_COLOURS = {"fetched": "#2e7d32", "unfetched": "#90a4ae", "other": "#e53935"}
MAX_LABELS = 20  # segment names under a timeline
BASELINE_STYLES = {"ideal": dict(color="black", linestyle="--"), "random": dict(color="grey", linestyle=":")}


def to_svg(figure: Figure) -> str:
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "crawlkit"}):
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def _figure(height: float = 3.2) -> tuple[Figure, object]:
    figure = Figure(figsize=(9, height), layout="constrained")
    return figure, figure.subplots()


def _stacked(ax, labels: list[str], series: dict[str, list[float]], colours: dict[str, str]) -> None:
    bottom = [0.0] * len(labels)
    for name, values in series.items():
        ax.bar(range(len(labels)), values, bottom=bottom, label=name, color=colours.get(name))
        bottom = [b + v for b, v in zip(bottom, values)]
    crowded = len(labels) > 6
    step = math.ceil(len(labels) / MAX_LABELS) or 1   # hundreds of rounds: label every step-th
    ax.set_xticks(range(0, len(labels), step), labels[::step], rotation=30 if crowded else 0,
                  ha="right" if crowded else "center", fontsize="small")
    if series:   # a version with nothing fetched yet has no series to name
        ax.legend(fontsize="small", ncols=min(4, len(series)))


def fetch_timeline(rounds: list[dict]) -> str:
    """Fetch outcomes per segment, stacked by fetch status."""
    statuses = [s for s in STATUS_COLOURS if any(s in r["fetch_by_status"] for r in rounds)]
    statuses += sorted({s for r in rounds for s in r["fetch_by_status"]} - set(statuses))
    figure, ax = _figure()
    _stacked(ax, [r["segment"] for r in rounds],
             {s: [r["fetch_by_status"].get(s, 0) for r in rounds] for s in statuses}, STATUS_COLOURS)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("pages")
    ax.set_title("Fetch outcomes per round, by fetch status", fontsize="medium")
    return to_svg(figure)


def stage_timeline(rounds: list[dict], stages: list[str]) -> str:
    """Seconds per stage per segment (from round.json)."""
    figure, ax = _figure()
    colours = dict(zip(stages, ["#5c6bc0", "#26a69a", "#ffa726", "#ab47bc", "#ef5350", "#8d6e63"]))
    _stacked(ax, [r["segment"] for r in rounds], {s: [r["seconds"].get(s, 0.0) for r in rounds] for s in stages},
             colours)
    ax.set_ylabel("seconds")
    ax.set_title("Duration of each stage per round", fontsize="medium")
    return to_svg(figure)


def score_histogram(rows: list[dict], key: str, title: str, per_decade: int,
                    colours: dict[str, str] | None = None, stacked: bool = True) -> str:
    """Log-binned score histogram; one series per value of ``key`` (stacked bars, or step lines
    when the series are different scorers on different scales)."""
    series: dict[str, dict[int, int]] = defaultdict(dict)
    nonpositive = 0
    for r in rows:
        if r["bin"] is None:
            nonpositive += r["count"]
        else:
            series[r[key]][r["bin"]] = series[r[key]].get(r["bin"], 0) + r["count"]
    used = [b for counts in series.values() for b in counts]
    bins = list(range(min(used), max(used) + 1)) if used else []
    edges = [bin_edges(b, per_decade)["low"] for b in bins] + [bin_edges(bins[-1], per_decade)["high"]] if bins else []
    figure, ax = _figure()
    bottom = [0] * len(bins)
    for name, counts in sorted(series.items()):
        values = [counts.get(b, 0) for b in bins]
        if stacked:
            ax.bar(edges[:-1], values, width=[h - lo for lo, h in zip(edges, edges[1:])], align="edge",
                   bottom=bottom, label=name, color=(colours or {}).get(name), edgecolor="white", linewidth=0.5)
            bottom = [b + v for b, v in zip(bottom, values)]
        else:
            ax.stairs(values, edges, label=name, linewidth=1.5)
    ax.set_xscale("log")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("score (log scale)")
    ax.set_ylabel("pages")
    note = f" ({nonpositive} with score <= 0 not shown)" if nonpositive else ""
    ax.set_title(title + note, fontsize="medium")
    if series:
        ax.legend(fontsize="small")
    return to_svg(figure)


def evaluation_curves(rows: list[dict]) -> list[str]:
    """One plot per metric (and hot-page definition): value against the fraction crawled, one
    line per ordering, ideal and random dashed and dotted."""
    panels: dict[tuple, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        hot = r.get("hot_definition")
        panel = (r["metric"], hot if isinstance(hot, str) else None)
        panels[panel][r["ordering"]].append((r["fraction_crawled"], r["value"]))
    out = []
    for (metric, hot), orderings in panels.items():
        figure, ax = _figure(3.6)
        names = [o for o in orderings if o not in BASELINE_STYLES] + [o for o in BASELINE_STYLES if o in orderings]
        for ordering in names:
            points = sorted(set(orderings[ordering]))
            ax.plot([x for x, _ in points], [y for _, y in points], label=ordering,
                    marker="o" if len(points) == 1 else None, **BASELINE_STYLES.get(ordering, {}))
        ax.set_xlabel("fraction of the web crawled")
        ax.set_ylabel(metric)
        if all(0 <= y <= 1 for points in orderings.values() for _, y in points):
            ax.set_ylim(0, 1.05)
        ax.set_title(metric + (f", hot pages: {hot}" if hot else ""), fontsize="medium")
        ax.legend(fontsize="small")
        out.append(to_svg(figure))
    return out
