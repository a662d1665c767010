"""The crawl report as one self-contained HTML page: inline CSS, inline SVG plots, no script,
no external asset, so it can be mailed, archived or opened from any file system."""
from __future__ import annotations

import json
from html import escape

from crawlkit.inspect.text import bin_label
from crawlkit.report import plots
from crawlkit.status import Status

STAGE_ORDER = ["sitemaps", "generate", "fetch", "parse", "updatedb", "dedup", "score", "evict"]  # a round's stages, in order
STATUS_GROUPS = {Status.FETCHED.value: "fetched", Status.NOT_MODIFIED.value: "fetched",
                 Status.UNFETCHED.value: "unfetched"}  # every other status: "other"

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; margin: 0 auto;
       max-width: 1100px; padding: 1.5em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ddd; margin-top: 2em; }
.meta { color: #666; }
.cards { display: flex; flex-wrap: wrap; gap: 0.8em; margin: 1em 0; }
.card { background: #f5f7fa; border-radius: 6px; padding: 0.6em 1em; min-width: 7em; }
.card b { display: block; font-size: 1.5em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 13px; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f5f7fa; white-space: nowrap; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.url { word-break: break-all; max-width: 38em; }
svg { max-width: 100%; height: auto; display: block; margin: 0.5em 0; }
details { margin: 0.3em 0; } pre { background: #f5f7fa; padding: 0.6em; overflow-x: auto; font-size: 12px; }
"""


def _table(header: list[str], rows: list[list], numeric: set[int] = frozenset(), url_column: int | None = None) -> str:
    def cell(i: int, value) -> str:
        cls = ' class="n"' if i in numeric else ' class="url"' if i == url_column else ""
        return f"<td{cls}>{escape(_fmt(value))}</td>"
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(cell(i, v) for i, v in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _fmt(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_fmt(v)}" for k, v in value.items())
    return str(value)


def _cards(items: list[tuple[str, object]]) -> str:
    return '<div class="cards">' + "".join(
        f'<div class="card"><b>{escape(_fmt(v))}</b>{escape(k)}</div>' for k, v in items) + "</div>"


def render(data: dict) -> str:
    """The HTML page of :func:`crawlkit.report.data.collect`'s dict."""
    stats, rounds = data["stats"], data["rounds"]
    totals = stats["totals"]
    linkdb = "none" if data["linkdb_version"] is None else data["linkdb_version"]
    parts = [
        f"<h1>Crawl report: {escape(data['crawl_dir'])}</h1>",
        f'<p class="meta">crawldb version {data["crawldb_version"]} (committed {escape(str(data["committed_at"]))}), '
        f"linkdb version {linkdb}; due counts at {escape(str(data['now']))}</p>",
        _cards([("URLs", totals["urls"]), ("fetched", totals["fetched"]), ("hosts", totals["hosts"]),
                ("links", totals["links"]), ("due now", totals["due"]), ("rounds", len(rounds))]),
        _table(["status", "URLs"], [[k, v] for k, v in stats["by_status"].items()], numeric={1}),
    ]
    parts += _rounds_section(rounds)
    parts += _scores_section(data)
    parts += ["<h2>Top pages</h2>", _table(
        ["#", "score", "status", "inlinks", "url", "components"],
        [[p["rank"], p["score"], p["status"], p["inlinks"], p["url"], p["scores"]] for p in data["top"]],
        numeric={0, 1, 3}, url_column=4)]
    parts += ["<h2>Hosts with errors</h2>", _table(
        ["host", "fetches", "errors", "mean ms", "errors by status", "most frequent error"],
        [[h["host"], h["fetches"], h["errors"], h["mean_ms"], h["by_status"], h["top_error"]]
         for h in data["host_errors"]], numeric={1, 2, 3}) if data["host_errors"] else "<p>No fetch errors.</p>"]
    parts += ["<h2>Hosts with most URLs</h2>", _table(
        ["host", "URLs", "fetched", "unfetched", "failed"],
        [[h["host"], h["urls"], h["fetched"], h["unfetched"], h["failed"]] for h in stats["top_hosts"]],
        numeric={1, 2, 3, 4})]
    if data["evaluation"]:
        files = sorted({r["file"] for r in data["evaluation"]})
        parts += ["<h2>Ordering evaluation</h2>", f'<p class="meta">from {escape(", ".join(files))}</p>',
                  *plots.evaluation_curves(data["evaluation"])]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>Crawl report: {escape(data['crawl_dir'])}</title><style>{CSS}</style></head>"
            "<body>\n" + "\n".join(parts) + "\n</body></html>\n")


def _rounds_section(rounds: list[dict]) -> list[str]:
    if not rounds:
        return ["<h2>Rounds</h2>", "<p>No segments yet.</p>"]
    seen = {s for r in rounds for s in r["seconds"]}
    stages = [s for s in STAGE_ORDER if s in seen] + sorted(seen - set(STAGE_ORDER))
    out = ["<h2>Rounds</h2>", plots.fetch_timeline(rounds)]
    if stages:
        out.append(plots.stage_timeline(rounds, stages))
    out.append(_table(
        ["segment", "generated", "outcomes", "fetched", "by fetch status", "bytes", "parsed", "new URLs",
         *[f"{s} (s)" for s in stages]],
        [[r["segment"], r["generated"], r["outcomes"], r["fetched"], r["fetch_by_status"], r["bytes"], r["parsed"],
          r["new_urls"], *[r["seconds"].get(s) for s in stages]] for r in rounds],
        numeric={1, 2, 3, 5, 6, 7, *range(8, 8 + len(stages))}))
    options = next((r["options"] for r in reversed(rounds) if r["options"] is not None), None)
    if options is not None:
        out.append("<details><summary>Options in effect (latest round)</summary><pre>"
                   + escape(json.dumps(options, indent=1, sort_keys=True, default=str)) + "</pre></details>")
    out.append("<details><summary>Stage counters of every segment (_stats)</summary><pre>"
               + escape(json.dumps({r["segment"]: r["stats"] for r in rounds}, indent=1, sort_keys=True, default=str))
               + "</pre></details>")
    return out


def _scores_section(data: dict) -> list[str]:
    if not data["stats"]["totals"]["urls"]:
        return ["<h2>Scores</h2>", "<p>No pages yet.</p>"]
    score = data["stats"]["score"]
    out = ["<h2>Scores</h2>",
           plots.score_histogram([{**r, "group": STATUS_GROUPS.get(r["status"], "other")}
                                  for r in data["stats"]["score_histogram_by_status"]],
                                 "group", "Active (ordering) score, by status",
                                 data["stats"]["bins_per_decade"], plots.GROUP_COLOURS),
           _table(list(score), [list(score.values())], numeric=set(range(len(score))))]
    if len({c["component"] for c in data["score_components"]}) > 1:   # one alone is the active score again
        out.append(plots.score_histogram(data["score_components"], "component", "Score components",
                                         data["stats"]["bins_per_decade"], stacked=False))
    bands = data["stats"]["fetch_interval"]
    out += ["<h3>Fetch intervals</h3>", _table(["interval", "URLs"], [[b["band"], b["count"]] for b in bands],
                                               numeric={1})]
    histogram = data["stats"]["score_histogram"]
    out.append("<details><summary>Score histogram as a table</summary>"
               + _table(["score bin", "URLs"], [[bin_label(b), b["count"]] for b in histogram], numeric={1})
               + "</details>")
    return out
