"""Freshness of fixed, adaptive and change-rate schedules over a simulated month, with the real crawler.

The web is the replay web (``crawlkit.replay.ReplayServer``): a generated web of PAGES pages
whose change classes (``crawlkit.replay.changes``) mix never / 1 day / 1 week, served under
the replay clock, which this script sets. For each schedule, one crawl after the other in
one Spark session (crawls in threads of one session break Delta MERGE):

* day 0: inject every page, one round fetching all of them (``crawl.topN`` = PAGES);
* days 1..DAYS: set the replay clock to the day, then one real round at that logical ``now``
  (``crawlkit.crawl.run_round``: generate -> fetch -> parse -> updatedb -> score) with
  ``crawl.topN`` = BUDGET (and ``schedule.budget`` = BUDGET under change_rate), so every
  schedule has the same fetch budget. fixed: ``default_interval`` = PAGES / BUDGET days, the
  interval that spends the budget; adaptive and change_rate start there, within [1 day, 30 days].

Freshness is measured on the crawldb the rounds leave: after each round the bench reads each
page's stored ETag and compares it with the ETag the change model gives the page at sample
times (the round's time and ``--samples`` - 1 more points before the next round), computed
in process from the same change model and seed as the server, never from the wall clock.
A page is fresh when its copy is the current version. Importance-weighted freshness weighs
each page by the crawl's own score (PageRank) after the day-0 round, frozen so that all
schedules are measured with the same weights (the day-0 rounds are identical).

Both are averaged over days 1..DAYS and again over the days after the start-up transient
(from PAGES / BUDGET + 1: fixed and adaptive have nothing due until day PAGES / BUDGET).

Each schedule's per-round ETags are saved to ``WORKDIR/<schedule>.json``; a rerun skips the
schedules already there (``--fresh`` starts over). ``--schedules`` runs some of them, so each
can run in a process of its own (its own Spark session and replay server, one crawl per
session) and a last ``--no-run`` prints the table; ``--no-run`` also rebuilds a schedule cut
short (no JSON yet) from its crawl directory, up to its last finished round, and compares
every schedule over the days all of them reached.

    .venv/bin/python scripts/bench/freshness.py [--pages 200] [--days 30] [--budget 40] \\
        [--seed 1] [--samples 6] [--workdir /tmp/crawlkit-freshness] [--markdown]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

from crawlkit import storage
from crawlkit.conf import Conf, load_conf, parse_assignments
from crawlkit.crawl import run_round
from crawlkit.replay import ReplayServer
from crawlkit.replay.changes import ChangeModel
from crawlkit.replay.generated import GeneratedWeb
from crawlkit.replay.synthetic import SyntheticSite
from crawlkit.spark import get_spark
from crawlkit.stages.inject import run_inject

DAY = 86400
CHANGES = "0.4:never,0.3:1d,0.3:1w"
START = datetime(2026, 1, 1)          # the logical time of replay clock 0
SCHEDULES = ("fixed", "adaptive", "change_rate")


def web_spec(pages: int, seed: int) -> str:
    return f"gen:{pages},seed={seed}"


def schedule_conf(kind: str, crawl_dir: Path, proxy: str, args, extra: list[str]) -> Conf:
    """The crawl's conf: only the schedule keys differ between schedules. The fetch list is
    pinned to the plain score order (generate.policy = score, what the run in docs/recrawl.md
    had) so that the comparison does not move with the policy's default."""
    return load_conf(overrides={
        "crawl.dir": str(crawl_dir), "crawl.topN": args.budget,
        "schedule.kind": kind, "schedule.budget": args.budget,
        "schedule.default_interval": round(args.pages / args.budget * DAY),
        "schedule.min_interval": DAY, "schedule.max_interval": 30 * DAY,
        "fetcher.proxy": proxy, "fetcher.server_delay": 0.0, "fetcher.threads": 4,
        "generate.max_per_host": 0, "generate.partitions": 2, "generate.policy": "score",
        "spark.shuffle_partitions": 2,
        "scoring.engine": "driver", **parse_assignments(extra)})


def crawldb_rows(spark, conf: Conf) -> dict[str, dict]:
    """URL -> {etag, score} of the crawldb as the round left it."""
    db = storage.read_table(spark, storage.crawldb_path(conf["crawl.dir"]), "crawldb")
    return {r.url: {"etag": r.etag, "score": r.score} for r in db.select("url", "etag", "score").collect()}


def crawl_month(spark, server: ReplayServer, urls: list[str], kind: str, args, workdir: Path) -> dict:
    """One schedule's month: day-0 crawl, then a round per day; the crawldb after each."""
    crawl_dir = workdir / kind
    shutil.rmtree(crawl_dir, ignore_errors=True)
    crawl_dir.mkdir(parents=True)
    seeds = crawl_dir / "seeds.txt"
    seeds.write_text("\n".join(urls) + "\n")
    conf = schedule_conf(kind, crawl_dir / "crawl", server.proxy_url, args, args.conf)
    log = lambda m: print(f"[{kind}] {m}", file=sys.stderr, flush=True)  # noqa: E731
    server.set_clock(0)
    run_inject(spark, str(seeds), conf, START)
    started = time.perf_counter()
    first = run_round(spark, conf.with_overrides({"crawl.topN": args.pages}), START, log)
    after = {0: crawldb_rows(spark, conf)}
    fetches, seconds = {0: first.counters.get("fetch", {}).get("pages", 0)}, {0: sum(first.seconds.values())}
    for day in range(1, args.days + 1):
        server.set_clock(day * DAY)
        report = run_round(spark, conf, START + timedelta(days=day), log)
        fetches[day] = report.counters.get("fetch", {}).get("pages", 0)
        seconds[day] = round(sum(report.seconds.values()), 1)
        after[day] = crawldb_rows(spark, conf) if report.segment else after[day - 1]
        log(f"day {day}: {fetches[day]} fetched, {seconds[day]} s")
    return {"schedule": kind, "after": after, "fetches": fetches, "round_seconds": seconds,
            "seconds": round(time.perf_counter() - started, 1)}


def freshness(result: dict, site: SyntheticSite, pages: int, weight: dict[str, float], days: range,
              samples: int) -> tuple[float, float]:
    """(freshness, importance-weighted freshness) averaged over ``samples`` points per day of
    ``days``: the crawldb after day d's round against the pages' versions at d + k/samples."""
    plain, weighted, total = [], [], sum(weight.values())
    for day in days:
        held = result["after"][day]
        for k in range(samples):
            t = (day + k / samples) * DAY
            fresh = {site.graph.url(p) for p in range(pages)
                     if (held.get(site.graph.url(p)) or {}).get("etag") == site.state(p, t)[2]}
            plain.append(len(fresh) / pages)
            weighted.append(sum(weight.get(u, 0.0) for u in fresh) / total)
    return sum(plain) / len(plain), sum(weighted) / len(weighted)


def class_of(model: ChangeModel, url: str) -> str:
    interval = model.interval(url)
    return "never" if interval is None else f"{interval / DAY:g}d"


def per_class(result: dict, site: SyntheticSite, model: ChangeModel, pages: int, days: range,
              samples: int) -> dict[str, float]:
    """Freshness of each change class (same samples as :func:`freshness`)."""
    fresh: dict[str, list[float]] = {}
    for p in range(pages):
        url = site.graph.url(p)
        hits = [(result["after"][day].get(url) or {}).get("etag") == site.state(p, (day + k / samples) * DAY)[2]
                for day in days for k in range(samples)]
        fresh.setdefault(class_of(model, url), []).append(sum(hits) / len(hits))
    return {c: sum(v) / len(v) for c, v in fresh.items()}


def fetches_by_class(crawl_dir: Path, model: ChangeModel, last_day: int) -> dict[str, dict[str, int]]:
    """Requests of days 1..``last_day`` per change class, and how many were answered 304 (the copy was
    still current: a fetch that bought no freshness), from the segments' content."""
    import pyarrow.parquet as pq
    day0 = START.strftime("%Y%m%d%H%M%S")
    counts: dict[str, dict[str, int]] = {}
    for segment in sorted((crawl_dir / "segments").iterdir()):
        if segment.name <= day0 or not (segment / "content").exists() or \
                (datetime.strptime(segment.name[:14], "%Y%m%d%H%M%S") - START).days > last_day:
            continue
        content = pq.read_table(segment / "content", columns=["url", "http_status"]).to_pylist()
        for row in content:
            c = counts.setdefault(class_of(model, row["url"]), {"fetches": 0, "not_modified": 0})
            c["fetches"] += 1
            c["not_modified"] += int(row["http_status"] == 304)
    return counts


def from_segments(spark, kind: str, workdir: Path, days: int) -> dict:
    """A schedule's result rebuilt from its crawl directory (``--no-run``, for a month cut
    short): the ETag each page had in the crawldb after each finished round, replayed from the
    segments' content with updatedb's rule (a 200 or 304 answer carries the page's current
    ETag, which updatedb keeps), checked against the crawldb's own ``etag`` column as the last
    finished round left it; the day-0 scores read from the crawldb's version after the day-0
    scoring."""
    import pyarrow.parquet as pq
    from delta.tables import DeltaTable

    crawl_dir = workdir / kind / "crawl"
    held: dict[str, str] = {}
    after, fetches, last, finished, seconds = {}, {}, -1, None, 0.0
    for segment in sorted((crawl_dir / "segments").iterdir()):
        if not (segment / "_stats" / "round.json").exists():
            continue                                             # a round still running
        day = (datetime.strptime(segment.name[:14], "%Y%m%d%H%M%S") - START).days
        content = pq.read_table(segment / "content", columns=["url", "http_status", "headers"]).to_pylist()
        for row in content:
            etag = dict(row["headers"] or []).get("etag")
            if row["http_status"] in (200, 304) and etag:
                held[row["url"]] = etag
        after[day] = {u: {"etag": e} for u, e in held.items()}
        fetches[day] = len(content)
        seconds += sum(json.loads((segment / "_stats" / "round.json").read_text())["seconds"].values())
        last, finished = day, segment.name
    db_path = storage.crawldb_path(str(crawl_dir))
    history = DeltaTable.forPath(spark, db_path).history().select("version", "userMetadata").collect()
    version = {tag: r["version"] for r in history for tag in storage.tags_of(r["userMetadata"])}
    checked = version[f"score-pagerank:{finished}"]          # the crawldb as the last finished round left it
    stored = {r.url: r.etag for r in storage.read_table(spark, db_path, "crawldb", version=checked)
              .select("url", "etag").collect() if r.etag is not None}
    if stored != held:
        raise RuntimeError(f"{kind}: ETags replayed from the segments differ from the crawldb's "
                           f"({len(set(stored.items()) ^ set(held.items()))} differences)")
    day0 = version[f"score-pagerank:{START.strftime('%Y%m%d%H%M%S')}"]
    for r in storage.read_table(spark, db_path, "crawldb", version=day0).select("url", "score").collect():
        if r.url in after[0]:
            after[0][r.url]["score"] = r.score
    for day in range(1, min(days, last) + 1):     # a day with nothing due left no segment
        after.setdefault(day, after[day - 1])
        fetches.setdefault(day, 0)
    return {"schedule": kind, "after": after, "fetches": fetches, "seconds": round(seconds, 1), "days": min(days, last)}


def load_or_run(spark_factory, server_factory, urls, kind, args, workdir: Path) -> dict:
    path = workdir / f"{kind}.json"
    if path.exists():
        result = json.loads(path.read_text())
        result["after"] = {int(d): v for d, v in result["after"].items()}
        return result
    if args.no_run:
        return from_segments(spark_factory(), kind, workdir, args.days)
    result = crawl_month(spark_factory(), server_factory(), urls, kind, args, workdir)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result))
    os.replace(tmp, path)
    return result


def class_counts(model: ChangeModel, urls: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for u in urls:
        counts[class_of(model, u)] = counts.get(class_of(model, u), 0) + 1
    return counts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pages", type=int, default=200)
    p.add_argument("--days", type=int, default=30)
    p.add_argument("--budget", type=int, default=40, help="fetches per daily round, every schedule")
    p.add_argument("--seed", type=int, default=1, help="seed of the generated web and its change model")
    p.add_argument("--samples", type=int, default=6, help="freshness samples per day (the round's time first)")
    p.add_argument("--steady-from", type=int, default=0,
                   help="first day of the second average, once every schedule spends its budget (0 = PAGES/BUDGET + 1)")
    p.add_argument("--schedules", default=",".join(SCHEDULES))
    p.add_argument("--workdir", default="/tmp/crawlkit-freshness")
    p.add_argument("--fresh", action="store_true", help="forget saved schedules in --workdir")
    p.add_argument("--no-run", action="store_true",
                   help="crawl nothing: a schedule not saved is rebuilt from its crawl directory (a partial month)")
    p.add_argument("--conf", action="append", default=[], help="extra key=value for every crawl")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = p.parse_args(argv)
    workdir = Path(args.workdir)
    args.steady_from = args.steady_from or args.pages // args.budget + 1
    if args.fresh:
        shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)

    spec = web_spec(args.pages, args.seed)
    model = ChangeModel(CHANGES, args.seed)
    site = SyntheticSite(GeneratedWeb(spec), model, args.seed)   # the server's pages, in process
    urls = [site.graph.url(p) for p in range(args.pages)]
    held: dict = {}

    def spark_factory():
        if "spark" not in held:
            held["spark"] = get_spark(schedule_conf("fixed", workdir / "none", "", args, args.conf))
        return held["spark"]

    def server_factory():
        if "server" not in held:
            replay_dir = workdir / f"replay-{args.schedules.replace(',', '-')}"   # one per process
            held["server"] = ReplayServer([spec], workdir=replay_dir, changes=CHANGES,
                                          seed=args.seed).start()
        return held["server"]

    try:
        results = [load_or_run(spark_factory, server_factory, urls, kind, args, workdir)
                   for kind in args.schedules.split(",")]
    finally:
        if "server" in held:
            held["server"].stop()
    weight = {u: r["score"] for u, r in results[0]["after"][0].items() if u in set(urls)}
    drift = max(abs(weight[u] - (res["after"][0].get(u) or {}).get("score", 0.0)) for res in results for u in weight)
    days = min(res.get("days", args.days) for res in results)   # < DAYS only for a partial month (--no-run)
    month, steady = range(1, days + 1), range(min(args.steady_from, days), days + 1)
    rows = []
    for res in results:
        fetched = sum(v for d, v in res["fetches"].items() if 0 < int(d) <= days)
        rows.append((res["schedule"], *freshness(res, site, args.pages, weight, month, args.samples),
                     *freshness(res, site, args.pages, weight, steady, args.samples), fetched, res["seconds"]))
    classes = ", ".join(f"{k}: {v}" for k, v in sorted(class_counts(model, urls).items()))
    print(f"# {args.pages} pages ({classes}), {days} daily rounds of {args.budget} fetches, seed {args.seed}, "
          f"{args.samples} samples a day; day-0 scores equal across schedules to {drift:.1e}")
    head = ["schedule", f"freshness, days 1-{days}", "importance-weighted", f"freshness, days {steady.start}-{days}",
            "importance-weighted", f"fetches, days 1-{days}", "seconds"]
    print("| " + " | ".join(head) + " |" if args.markdown else "  ".join(head))
    if args.markdown:
        print("| --- |" + " ---: |" * (len(head) - 1))
    for name, *values, fetched, seconds in rows:
        cells = [name, *(f"{v:.3f}" for v in values), str(fetched), f"{seconds:.0f}"]
        print("| " + " | ".join(cells) + " |" if args.markdown else "  ".join(cells))
    print(f"\nBy change class: freshness (days 1-{days}) / requests (of which answered 304)")
    kinds = sorted(class_counts(model, urls))
    if args.markdown:
        print("| schedule | " + " | ".join(kinds) + " |")
        print("| --- |" + " ---: |" * len(kinds))
    for res in results:
        share = per_class(res, site, model, args.pages, month, args.samples)
        counts = fetches_by_class(workdir / res["schedule"] / "crawl", model, days)
        cells = [f"{share.get(k, 0):.3f} / {counts.get(k, {}).get('fetches', 0)} "
                 f"({counts.get(k, {}).get('not_modified', 0)})" for k in kinds]
        print(f"| {res['schedule']} | " + " | ".join(cells) + " |" if args.markdown
              else f"{res['schedule']:14s} " + "  ".join(f"{k}: {c}" for k, c in zip(kinds, cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
