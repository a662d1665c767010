"""The crawl-and-stop experiment of the URL-ordering paper, with the real crawler.

Crawls a replay-web graph from a seed once per ordering (crawlkit's default, and each
baseline scorer alone: ``scoring.scorer`` with ``generate.policy = "score"``),
in rounds of ``--round`` of the web (default 1%) until ``--upto`` of its pages are crawled
(crawl-and-stop, ``crawl.max_pages``; a fetch that is not a page of the web, such as a 404,
does not count, so the crawl runs on until the table's last column is reached), then
evaluates every crawl against the full graph and writes one comparison table and plot::

    .venv/bin/python scripts/bench/orderings.py /work/shared/data/hollins \\
        --seed http://www1.hollins.edu/ --upto 0.5 --out docs/orderings
    .venv/bin/python scripts/bench/orderings.py /work/shared/data/notredame \\
        --seed http://h0000.nd.test/p0.html --upto 0.3 --out docs/orderings

``--out`` is a folder: the table and plot go there, named after the source folder
(``docs/orderings/hollins.md`` and ``hollins.png``).

Each ordering's crawl and evaluation are kept under ``--workdir``; a rerun skips the
orderings already evaluated there up to ``--upto``, and a rerun with a larger ``--upto``
continues those crawls where they stopped (same crawl directory, same access log) instead of
starting over, so a long experiment can be run in steps. A crawl whose process died (no run
record yet) is continued too, unless ``--fresh``. Politeness is off
(the replay web is local); the fetch lists are not capped per host, as in the paper.
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
import shutil
import sys
import time
from pathlib import Path

from crawlkit.cli import utc_now
from crawlkit.conf import load_conf, parse_assignments
from crawlkit.crawl import pages_fetched_now, run_crawl
from crawlkit.evaluate.crawl import CRAWLED, read_segments
from crawlkit.evaluate.evaluation import evaluate_crawl
from crawlkit.evaluate.report import compare
from crawlkit.replay import ReplayServer
from crawlkit.spark import get_spark

ORDERINGS = {  # name -> conf; the baselines order by one scorer alone (generate.policy = score)
    "interleave": {},   # crawlkit's default: PageRank and backlink counts in turn
    "depth": {"scoring.scorer": "depth", "generate.policy": "score"},
    "backlinks": {"scoring.scorer": "backlinks", "generate.policy": "score"},
    "pagerank": {"scoring.scorer": "pagerank", "generate.policy": "score"},
    "opic": {"scoring.scorer": "opic", "generate.policy": "score"},
    "random": {"scoring.scorer": "random", "generate.policy": "score"},
}
LABELS = {"interleave": "default: PageRank + backlinks interleaved", "depth": "breadth-first",
          "backlinks": "backlink count (IB')", "pagerank": "PageRank (IR')", "opic": "Adaptive OPIC",
          "random": "random order (crawled)"}  # not "random": that names the baseline
HOT = "indegree:10,pagerank:1%"
FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.5)


def web_pages(links: Path) -> int:
    pages = set()
    with gzip.open(links, "rt", encoding="utf-8") as lines:
        for line in lines:
            src, _, dst = line.rstrip("\n").partition("\t")
            pages.update((src, dst))
    return len(pages)


def fetched_pages(crawl_dir: Path) -> int:
    """Pages fetched so far by the crawl in ``crawl_dir``, from its segments' fetch counters
    (a resumed round's fetch ran in an earlier process, so the reports of this one miss it).
    The files ``crawlkit.inspect.segments.stage_stats`` reads, read directly: the crawl is a
    local folder and the first call comes before any Spark session."""
    return sum(json.loads(stats.read_text())["pages"]
               for stats in crawl_dir.glob("segments/*/_stats/fetch.json"))


def crawled_pages(crawl_dir: Path) -> int:
    """Pages of the web crawled so far, as ``crawlkit evaluate`` counts them: URLs with a
    successful fetch, once each (a 404 or a redirect is a fetch, not a page crawled)."""
    content, _, _ = read_segments(str(crawl_dir))
    return int(content.loc[content["fetch_status"].isin(CRAWLED), "url"].nunique())


def interrupted(ordering: str) -> dict:
    """The run record of a crawl whose process died before writing one (killed, session
    over): the crawl continues where its segments stop instead of starting over; the dead
    process's timings are lost, and the record says so."""
    return {"ordering": ordering, "upto": 0.0, "rounds": 0, "seconds": 0.0, "stage_seconds": {},
            "timings_incomplete": True}


def crawl_one(source: str, seeds: list[str], ordering: str, pages: int, args, workdir: Path,
              previous: dict | None = None, crawled: int = 0) -> dict:
    """One crawl under one ordering up to ``args.upto`` of the web; returns its timings.

    With ``previous`` (the run record of the same crawl stopped at a smaller share) the crawl
    continues in its directory: no inject, the remaining pages only, timings added up;
    ``crawled`` is how many pages of the web it holds already (the segments are read once
    per pass, not again here).
    """
    crawl_dir = workdir / "crawl"
    if previous is None:
        crawled = 0
        for stale in (crawl_dir, workdir / "replay"):   # the access log appends
            shutil.rmtree(stale, ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "seeds.txt").write_text("\n".join(seeds) + "\n")
    per_round = max(1, round(args.round * pages))
    target = round(args.upto * pages)
    if previous is not None and (previous.get("frontier_exhausted") or crawled >= target):
        return {**previous, "upto": args.upto, "fetched": fetched_pages(crawl_dir)}
    seed_file = None if previous else str(workdir / "seeds.txt")
    reports, exhausted = [], False
    with ReplayServer([source], workdir=workdir / "replay", keep_log=True) as web:   # a continued crawl's log
        def conf_for(limit: int):
            return load_conf(overrides={
                "crawl.dir": str(crawl_dir), "crawl.topN": per_round, "crawl.max_pages": limit,
                "fetcher.proxy": web.proxy_url, "fetcher.server_delay": 0.0,
                "fetcher.threads_per_host": 8, "generate.max_per_host": 0,
                **ORDERINGS.get(ordering, {"scoring.scorer": ordering, "generate.policy": "score"}),
                **parse_assignments(args.conf)})
        spark = get_spark(conf_for(0))
        started = time.perf_counter()
        # crawl.max_pages counts fetches; top up until the pages of the web reach the target
        while (short := target - crawled) > 0:
            more = run_crawl(spark, conf_for(short), seed_file, math.ceil(short / per_round) + 20, utc_now,
                             log=lambda m: print(f"[{ordering}] {m}", file=sys.stderr))
            seed_file, reports = None, reports + more
            if not sum(pages_fetched_now(r) for r in more):
                exhausted = True   # nothing left to fetch: the crawl ends below the target
                break
            crawled = crawled_pages(crawl_dir)
        seconds = time.perf_counter() - started
    stages = dict(previous["stage_seconds"]) if previous else {}
    for report in reports:
        for stage, s in report.seconds.items():
            stages[stage] = round(stages.get(stage, 0.0) + s, 1)
    return {"ordering": ordering, "upto": args.upto,
            "rounds": len(reports) + (previous["rounds"] if previous else 0),
            "seconds": round(seconds + (previous["seconds"] if previous else 0.0), 1),
            "fetched": fetched_pages(crawl_dir),
            "stage_seconds": stages,
            **({"frontier_exhausted": True} if exhausted else {}),
            **({"timings_incomplete": True} if previous and previous.get("timings_incomplete") else {})}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="a graph web folder holding links.tsv.gz")
    parser.add_argument("--seed", action="append", required=True)
    parser.add_argument("--ordering", action="append",
                        help=f"orderings (default {list(ORDERINGS)}); any other name is a scorer alone")
    parser.add_argument("--round", type=float, default=0.01, help="pages per round, a share of the web")
    parser.add_argument("--upto", type=float, default=0.5, help="stop after this share of the web")
    parser.add_argument("--conf", action="append", default=[], help="extra key=value for every crawl")
    parser.add_argument("--workdir", default="/tmp/crawlkit-orderings")
    parser.add_argument("--fresh", action="store_true",
                        help="start over a crawl that died before its run record (default: continue it)")
    parser.add_argument("--out", required=True, help="where the table (.md), plot (.png) and CSVs go")
    args = parser.parse_args()

    links = Path(args.source) / "links.tsv.gz"
    pages = web_pages(links)
    name = Path(args.source).name
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    for ordering in args.ordering or ORDERINGS:
        workdir = Path(args.workdir) / name / ordering
        done = workdir / "run.json"
        previous = json.loads(done.read_text()) if done.exists() else None
        if previous is None and not args.fresh and fetched_pages(workdir / "crawl") > 0:
            previous = interrupted(ordering)
        crawled = crawled_pages(workdir / "crawl") if previous is not None else 0
        if previous is None or previous.get("upto", args.upto) < args.upto or (
                not previous.get("frontier_exhausted") and crawled < round(args.upto * pages)):
            run = crawl_one(args.source, args.seed, ordering, pages, args, workdir, previous, crawled)
            result = evaluate_crawl(str(workdir / "crawl"), str(links), LABELS.get(ordering, ordering),
                                    hot=HOT, access_log=str(workdir / "replay" / "access.jsonl"))
            run["csv"] = result.write(workdir / "evaluation")["csv"]
            run["crosscheck"] = result.crosscheck.summary() if result.crosscheck else None
            done.write_text(json.dumps(run, indent=1))
        run = json.loads(done.read_text())
        runs.append(run)
        print(json.dumps({k: v for k, v in run.items() if k != "csv"}), file=sys.stderr)
    table, figure = compare([r["csv"] for r in runs])
    figure.savefig(out / f"{name}.png", dpi=110)
    timing = ["| ordering | rounds | pages fetched | seconds | " + " | ".join(
        f"{s} s" for s in ("generate", "fetch", "parse", "updatedb", "score")) + " |",
        "|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        st = r["stage_seconds"]
        seconds = r["seconds"]
        if r.get("timings_incomplete"):
            seconds = f"{seconds} (rounds before a restart untimed)"
        timing.append(f"| {r['ordering']} | {r['rounds']} | {r['fetched']} | {seconds} | " + " | ".join(
            str(st.get(s, "")) for s in ("generate", "fetch", "parse", "updatedb", "score")) + " |")
    text = (f"# Orderings on {name}: T = {pages} pages, rounds of {args.round:.0%}, up to {args.upto:.0%}\n\n"
            f"{table}\n## Crawl time\n\n" + "\n".join(timing) + "\n")
    (out / f"{name}.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
