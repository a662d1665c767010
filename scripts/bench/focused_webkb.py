"""Focused crawling on WebKB (Cornell + Texas): harvest rate and recall of course pages.

Crawls /work/shared/data/webkb-cornell-texas through the replay web once per crawler, from
the two department home pages, in rounds of --topN pages (politeness off), and measures
harvest rate and recall of ``course``-labelled pages after 100, 250 and 500 fetched pages
with crawlkit.evaluate's functions, twice: K counting pages of the web (a dead link, a page
the sample lacks, is not counted) and K counting every fetch (a dead link is a fetched page
that is not on topic). Writes markdown tables and a PNG plot::

    .venv/bin/python scripts/bench/focused_webkb.py --out docs/img/focused_webkb.png

Each crawler's result is kept in --work/<name>.json, so a rerun only crawls what is missing
(--only to pick crawlers, --fresh to start over, --extend to continue crawls that ended
before 500 pages of the web to a larger --pages, --measure-only to measure again).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from datetime import datetime, timedelta
from itertools import count
from pathlib import Path

import numpy as np
import pandas as pd
from orderings import fetched_pages as fetches   # sibling script: fetches so far, dead links included

DATA = Path("/work/shared/data/webkb-cornell-texas")
SEEDS = ["http://www.cs.cornell.edu/", "http://www.cs.utexas.edu/"]
TOPIC_WORDS = ["course", "syllabus", "homework", "lecture", "assignment", "exam"]
SCOPE = [".cs.cornell.edu", ".cs.utexas.edu"]   # the two department webs (90% of the pages)
AT = (100, 250, 500)
FOCUS = {"focus.words": TOPIC_WORDS}
PAPER = {**FOCUS, "focus.dead_link_confidence": 0.0,   # the paper's crawlers: no dead-link evidence,
         "focus.explored_directory_pages": 0}   # no explored-directory tier
CRAWLERS = {  # name -> conf overrides, in the order they run
    "breadth-first": {"scoring.scorer": "depth", "generate.policy": "score"},
    "dead links, explored directories wait (default)": {**FOCUS, "scoring.scorer": "depth",
                                                         "generate.policy": "hot_queue"},
    "hot-queue modified, dead links": {**FOCUS, "scoring.scorer": "depth", "generate.policy": "hot_queue",
                                       "focus.explored_directory_pages": 0},   # the default until 2026-12-03
    "focus": {**FOCUS, "scoring.scorer": "focus"},
    "focus, prior calibrated": {**FOCUS, "scoring.scorer": "focus", "focus.calibrate_prior": True},
    "hot-queue modified": {**PAPER, "scoring.scorer": "depth", "generate.policy": "hot_queue"},
    "hot-queue": {**PAPER, "scoring.scorer": "depth", "generate.policy": "hot_queue",
                  "focus.hot_queue_distance": 0},
    "rwb": {**FOCUS, "scoring.scorer": "rwb"},
    "amh": {**FOCUS, "scoring.scorer": "amh"},
    "rw": {**FOCUS, "scoring.scorer": "rw"},
    "pagerank": {"scoring.scorer": "pagerank", "generate.policy": "score"},
    "hot-queue modified, focus order": {**PAPER, "scoring.scorer": "focus", "generate.policy": "hot_queue"},
    "focus + breadth-first": {**FOCUS, "scoring.scorer": "focus", "focus.interleave": ["score", "depth"]},
    "rwb + breadth-first": {**FOCUS, "scoring.scorer": "rwb", "focus.interleave": ["score", "depth"]},
}


def crawl_folder(work: Path, name: str) -> Path:
    return work / name.replace(" ", "_").replace("(", "").replace(")", "")


def crawl(spark, name: str, overrides: dict, work: Path, proxy: str, top_n: int, pages: int,
          extend: bool = False) -> tuple[Path, float]:
    """Crawl up to ``pages`` fetches; with ``extend`` an existing crawl continues to that
    total (no inject, its logical clock going on after its last segment)."""
    from crawlkit.conf import load_conf
    from crawlkit.crawl import run_crawl

    crawl_dir = crawl_folder(work, name)
    done = fetches(crawl_dir) if extend else 0
    start = datetime(2026, 1, 1)
    if done:
        last = max(p.name for p in (crawl_dir / "segments").iterdir())
        start = datetime.strptime(last, "%Y%m%d%H%M%S") + timedelta(hours=1)
    else:
        shutil.rmtree(crawl_dir, ignore_errors=True)
        (crawl_dir.parent / f"{crawl_dir.name}.seeds").write_text("\n".join(SEEDS) + "\n")
    if pages - done <= 0:
        return crawl_dir, 0.0
    conf = load_conf(overrides={
        "crawl.dir": str(crawl_dir), "crawl.topN": top_n, "crawl.max_pages": pages - done,
        "fetcher.proxy": proxy, "fetcher.server_delay": 0.0, "fetcher.threads_per_host": 8,
        "generate.max_per_host": 0, "urls.hosts_allow": SCOPE, **overrides})
    ticks = count()
    clock = lambda: start + timedelta(hours=next(ticks))  # noqa: E731
    started = time.perf_counter()
    seeds = None if done else str(crawl_dir.parent / f"{crawl_dir.name}.seeds")
    run_crawl(spark, conf, seeds, (pages - done) // top_n + 20, clock,
              log=lambda m: print(f"[{name}] {m}", file=sys.stderr, flush=True))
    return crawl_dir, time.perf_counter() - started


def measure(crawl_dir: Path) -> dict:
    """Harvest and recall curves of course pages over the crawl order (evaluate's functions)."""
    from crawlkit.evaluate import measures
    from crawlkit.evaluate.crawl import crawl_order, read_segments
    from crawlkit.evaluate.web import load_web

    web = load_web(None, DATA / "labels.tsv")
    content, fetchlists, _ = read_segments(str(crawl_dir))
    ids = crawl_order(content, fetchlists)["url"].map(web.page_id).dropna().astype(np.int64)
    order = ids.drop_duplicates().to_numpy()
    on_topic = web.on_topic("course")
    harvest = measures.harvest_rate(order, on_topic, "course").crawler
    recall = measures.target_recall(order, on_topic, "course").crawler
    # The same over every fetch, a dead link (a page the sample lacks: 404) counting as a
    # fetched page that is not on topic: what the crawl cost, not only what it reached.
    every = content.sort_values(["segment", "fetched_at", "url"], kind="stable").drop_duplicates("url")
    page = every["url"].map(web.page_id)
    hit = np.array([bool(on_topic[int(i)]) if pd.notna(i) else False for i in page])
    found, k = np.cumsum(hit), np.arange(1, len(hit) + 1)
    return {"pages": len(order), "course_pages": int(on_topic.sum()),
            "harvest": harvest.tolist(), "recall": recall.tolist(), "fetches": len(hit),
            "harvest_per_fetch": (found / k).tolist(), "recall_per_fetch": (found / on_topic.sum()).tolist()}


def at(curve: list, k: int) -> str:
    return f"{curve[k - 1]:.3f}" if len(curve) >= k else "–"


def minutes(seconds: float) -> str:
    """Wall minutes; "–" where a crawl's first process died before recording them."""
    return "–" if seconds != seconds else f"{seconds / 60:.1f}"


def table(results: dict, per_fetch: bool = False) -> str:
    """K = pages of the web crawled (dead links not counted), or with ``per_fetch`` every
    fetch (dead links count as fetched pages that are not on topic)."""
    suffix = "_per_fetch" if per_fetch else ""
    head = ("| crawler | " + " | ".join(f"harvest@{k}" for k in AT) + " | "
            + " | ".join(f"recall@{k}" for k in AT) + " | pages of the web | fetches | minutes |")
    rows = [head, "|---" * (2 + 2 * len(AT)) + "|---|---|"]
    for name, r in results.items():
        if f"recall{suffix}" not in r:
            continue
        rows.append(f"| {name} | " + " | ".join(at(r[f"harvest{suffix}"], k) for k in AT) + " | "
                    + " | ".join(at(r[f"recall{suffix}"], k) for k in AT)
                    + f" | {r['pages']} | {r.get('fetches', '')} | {minutes(r['seconds'])} |")
    return "\n".join(rows)


def plot(results: dict, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(14, 4.5))
    colors = plt.cm.tab20(np.linspace(0, 1, 20))   # one colour per crawler (the default cycle has 10)
    for i, (name, r) in enumerate(results.items()):
        k = np.arange(1, len(r["recall"]) + 1)
        default = "default" in name
        style = dict(ls="-" if default else "--", lw=2.2 if default else 1.2, color=colors[(2 * i) % 20 + (i >= 10)])
        axes[0].plot(k, r["harvest"], label=name, **style)
        axes[1].plot(k, r["recall"], label=name, **style)
    for ax, what in zip(axes, ("harvest rate (course pages / fetched)", "recall of course pages")):
        ax.set_xlabel("pages fetched")
        ax.set_ylabel(what)
        ax.set_xlim(0, 520)
        for k in AT:
            ax.axvline(k, color="grey", lw=0.5)
    axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle("WebKB Cornell + Texas, topic course")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topN", type=int, default=50, help="pages per round")
    parser.add_argument("--pages", type=int, default=600, help="stop a crawl after this many fetches")
    parser.add_argument("--work", default="/tmp/focused-webkb")
    parser.add_argument("--out", default="docs/img/focused_webkb.png")
    parser.add_argument("--only", action="append", help="crawler names to run (default: all)")
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--extend", action="store_true",
                        help=f"continue the crawls that ended before {max(AT)} pages of the web, up to --pages fetches")
    parser.add_argument("--measure-only", action="store_true",
                        help="no crawling: measure (again) the crawl folders in --work as they are")
    args = parser.parse_args()

    from crawlkit.conf import load_conf
    from crawlkit.replay import ReplayServer
    from crawlkit.spark import get_spark

    work = Path(args.work)
    if args.fresh:
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    names = args.only or list(CRAWLERS)
    todo = [n for n in names if not (work / f"{n}.json").exists()]
    earlier = {}   # crawler -> seconds already spent on the crawl it continues
    if args.extend:
        for n in names:
            kept = work / f"{n}.json"
            result = json.loads(kept.read_text()) if kept.exists() else {"pages": 0, "seconds": float("nan")}
            if result["pages"] < max(AT) and 0 < fetches(crawl_folder(work, n)) < args.pages:
                if n not in todo:
                    todo.append(n)
                earlier[n] = result["seconds"]   # nan: the process that began it died first
    if args.measure_only:
        for name in names:
            if crawl_folder(work, name).exists():
                kept = work / f"{name}.json"
                seconds = json.loads(kept.read_text())["seconds"] if kept.exists() else float("nan")
                result = {**measure(crawl_folder(work, name)), "seconds": seconds, "conf": CRAWLERS[name]}
                kept.write_text(json.dumps(result))
        todo = []
    if todo:
        with ReplayServer([str(DATA / "pages.warc.gz")], workdir=work / "replay") as web:
            spark = get_spark(load_conf(overrides={"crawl.dir": str(work / "unused")}))

            def one(name: str) -> None:
                crawl_dir, seconds = crawl(spark, name, CRAWLERS[name], work, web.proxy_url,
                                           args.topN, args.pages, extend=name in earlier)
                seconds += earlier.get(name, 0.0)
                result = {**measure(crawl_dir), "seconds": seconds, "conf": CRAWLERS[name]}
                (work / f"{name}.json").write_text(json.dumps(result))
                print(f"[{name}] done in {seconds:.0f} s", file=sys.stderr, flush=True)

            # one crawl at a time: crawls in threads of one session break Delta's MERGE
            # (DELTA_MERGE_SOURCE_CACHED_DURING_EXECUTION when another thread caches)
            for name in todo:
                one(name)
    results = {n: json.loads((work / f"{n}.json").read_text()) for n in CRAWLERS
               if (work / f"{n}.json").exists()}
    print(f"Rounds of {args.topN} pages; {next(iter(results.values()))['course_pages']} course pages "
          f"in the web.\n\nK = pages of the web crawled:\n\n{table(results)}\n\n"
          f"K = fetches (a dead link is a fetched page):\n\n{table(results, per_fetch=True)}")
    plot(results, Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
