"""Plain-text renderings of the inspection dicts, for a terminal (``--json`` prints the dicts)."""
from __future__ import annotations

BAR = 40  # characters of the longest histogram bar


def _versions(d: dict) -> str:
    linkdb = "none" if d["linkdb_version"] is None else d["linkdb_version"]
    return f"crawldb version {d['crawldb_version']} (committed {d['committed_at']}), linkdb version {linkdb}"


def _bars(rows: list[tuple[str, int]]) -> list[str]:
    top = max((n for _, n in rows), default=0) or 1
    width = max((len(label) for label, _ in rows), default=0)
    return [f"  {label:<{width}} {n:>9}  {'#' * max(1 if n else 0, round(BAR * n / top))}" for label, n in rows]


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def bin_label(b: dict) -> str:
    return "<= 0" if b["low"] is None else f"[{b['low']:.3g}, {b['high']:.3g})"


def format_stats(s: dict) -> str:
    t = s["totals"]
    lines = [_versions(s),
             f"urls {t['urls']}  hosts {t['hosts']}  domains {t['domains']}  fetched {t['fetched']}  "
             f"links {t['links']}  due {t['due']} (at {s['due']['now']})",
             "", "urls by status:"]
    lines += _bars(list(s["by_status"].items()))
    lines += ["", "due by status:"] + (_bars(list(s["due"]["by_status"].items())) or ["  none"])
    width = max([len(h["host"]) for h in s["top_hosts"]] + [4])
    lines += ["", "top hosts:", f"  {'host':<{width}} {'urls':>9} {'fetched':>9} {'unfetched':>9} {'failed':>9}"]
    lines += [f"  {h['host']:<{width}} {h['urls']:>9} {h['fetched']:>9} {h['unfetched']:>9} {h['failed']:>9}"
              for h in s["top_hosts"]]
    q = s["score"]
    lines += ["", "score: " + "  ".join(f"{k} {_score(v)}" for k, v in q.items())]
    lines += [f"score histogram ({s['bins_per_decade']} bins per power of ten):"] + _bars([(bin_label(b), b["count"]) for b in s["score_histogram"]])
    lines += ["", "fetch interval:"] + _bars([(b["band"], b["count"]) for b in s["fetch_interval"]])
    return "\n".join(lines)


def format_top(pages: list[dict]) -> str:
    lines = [f"{'rank':>4}  {'score':>10}  {'status':<13} {'inlinks':>7}  url"]
    for p in pages:
        components = ", ".join(f"{k}={v:.4g}" for k, v in p["scores"].items())
        lines.append(f"{p['rank']:>4}  {_score(p['score']):>10}  {p['status']:<13} {p['inlinks']:>7}  {p['url']}"
                     + (f"  ({components})" if components else ""))
    return "\n".join(lines)


def format_dump(d: dict) -> str:
    lines = [d["url"], _versions(d)]
    if d["record"] is None:
        lines.append("not in the crawldb")
    else:
        width = max(len(k) for k in d["record"])
        lines += [f"  {k:<{width}}  {v}" for k, v in d["record"].items()]
    for kind, other in (("inlinks", "src"), ("outlinks", "dst")):
        links = d[kind]
        lines += ["", f"{kind}: {links['total']}" + (f" (best {len(links['links'])} shown)"
                                                    if links["total"] > len(links["links"]) else "")]
        for link in links["links"]:
            anchor = f'  "{link["anchor"]}"' if link["anchor"] else ""
            flags = "  nofollow" if link["nofollow"] else ""
            lines.append(f"  {_score(link[f'{other}_score']):>10}  {link[f'{other}_status'] or 'unknown':<13} "
                         f"{link[other]}{anchor}{flags}")
    return "\n".join(lines)


def format_summary(status_counts: dict[str, int], top: list[dict], stage_seconds: list[dict]) -> str:
    """The demo's closing summary: pages by status, top pages, seconds per stage and round."""
    lines = ["pages by status:"]
    lines += [f"  {status:<14} {count:>8}" for status, count in status_counts.items()]
    lines.append("top pages by score:")
    lines += [f"  {p['score']:.6f}  {p['status']:<10} {p['url']}" for p in top]
    if stage_seconds:
        stages = list(stage_seconds[0])
        lines.append("seconds per stage:  round  " + "  ".join(f"{s:>8}" for s in stages))
        for i, seconds in enumerate(stage_seconds, start=1):
            lines.append(f"                    {i:>5}  " + "  ".join(f"{seconds.get(s, 0):8.1f}" for s in stages))
    return "\n".join(lines)
