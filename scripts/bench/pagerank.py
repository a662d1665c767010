"""PageRank engines on web-NotreDame (1.5M links, 325k pages): time, iterations, accuracy, memory.

Every engine starts cold and runs to the same tolerance (the graphx and graphframes engines
read it as GraphX does: a per-vertex change on the N scale, see docs/scoring.md); accuracy
is the L1 distance to a scipy reference solved to 1e-13. The "plain scipy" row is the floor the driver engine is
measured against: the same power iteration on arrays already in memory (no Spark). Memory
is the peak RSS of this Python process (the driver) and of the JVM child (driver and
executor share it in local mode), sampled every 50 ms, plus the JVM heap in use at the end.
Warm start: ranks of the graph without 1% of its pages (and their links), then the full
graph from those ranks (driver and distributed: GraphX and GraphFrames take no start).
GraphX (engine graphx, through crawlkit's bridge) stands in for GraphFrames, whose jar this
machine cannot resolve: GraphFrames' pageRank is a wrapper around the same GraphX call.

Usage::

    .venv/bin/python scripts/bench/pagerank.py [--links FILE] [--tol 1e-6] [--out table.md]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import logging
import os
import pstats
import sys
import threading
import time

import numpy as np
import pandas as pd
import psutil

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from pyspark.sql import functions as F  # noqa: E402

from crawlkit.conf import make_conf  # noqa: E402
from crawlkit.scoring.pagerank import pagerank  # noqa: E402
from crawlkit.scoring.pagerank.driver import power_iteration, transition_matrix  # noqa: E402
from crawlkit.spark import get_spark, has_graphframes, has_graphx_bridge  # noqa: E402

DEFAULT_LINKS = "/work/shared/data/notredame/links.tsv.gz"


class PeakMemory:
    """Samples the RSS of this process and of its JVM child in a background thread."""

    def __init__(self):
        self.me = psutil.Process()
        self.peak_py = self.peak_jvm = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _jvm(self):
        for child in self.me.children(recursive=True):
            try:
                if "java" in child.name():
                    return child
            except psutil.Error:
                pass
        return None

    def _run(self):
        while not self._stop.is_set():
            try:
                self.peak_py = max(self.peak_py, self.me.memory_info().rss)
                jvm = self._jvm()
                if jvm is not None:
                    self.peak_jvm = max(self.peak_jvm, jvm.memory_info().rss)
            except psutil.Error:
                pass
            time.sleep(0.05)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


class IterationClock(logging.Handler):
    """Where an engine's time goes: the engine's per-iteration debug log lines timed, and the
    Spark jobs and stages it ran (the status tracker), so a slow engine is explained by its
    setup vs its iterations and by the jobs per iteration."""

    def __init__(self, spark):
        super().__init__(logging.DEBUG)
        self.tracker = spark.sparkContext.statusTracker()
        self.logger = logging.getLogger("crawlkit.scoring.pagerank")

    def _jobs(self) -> set[int]:
        return set(self.tracker.getJobIdsForGroup(None))

    def emit(self, record):
        if record.getMessage().startswith("pagerank iteration"):
            self.marks.append(time.perf_counter())

    def __enter__(self):
        self.marks, self.jobs0 = [], self._jobs()
        self.saved = self.logger.level
        self.logger.setLevel(logging.DEBUG)
        self.logger.addHandler(self)
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.end = time.perf_counter()
        self.logger.removeHandler(self)
        self.logger.setLevel(self.saved)
        jobs = sorted(self._jobs() - self.jobs0)
        infos = [self.tracker.getJobInfo(j) for j in jobs]
        self.n_jobs = len(jobs)
        self.n_stages = sum(len(i.stageIds) for i in infos if i is not None)

    def summary(self) -> str:
        if not self.marks:
            return f"{self.end - self.start:.1f} s, {self.n_jobs} jobs, {self.n_stages} stages"
        its = len(self.marks)
        loop = self.marks[-1] - self.marks[0]
        per = loop / max(1, its - 1)
        return (f"setup + iteration 1 {self.marks[0] - self.start:.1f} s, iterations 2-{its} "
                f"{loop:.1f} s ({per:.2f} s each), after the loop {self.end - self.marks[-1]:.1f} s; "
                f"{self.n_jobs} Spark jobs, {self.n_stages} stages "
                f"({self.n_jobs / its:.1f} jobs, {self.n_stages / its:.1f} stages per iteration, setup included)")


def jvm_heap_used(spark) -> int:
    runtime = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()
    return int(runtime.totalMemory() - runtime.freeMemory())


def load_arrays(path: str):
    """Edges as dense int arrays (pandas), self-links and duplicates dropped."""
    df = pd.read_csv(path, sep="\t", header=None, names=["src", "dst"], dtype=str)
    df = df[df.src != df.dst].drop_duplicates()
    codes, urls = pd.factorize(pd.concat([df.src, df.dst], ignore_index=True))
    n_edges = len(df)
    return codes[:n_edges].astype(np.int64), codes[n_edges:].astype(np.int64), np.asarray(urls)


def scipy_solve(src, dst, n, damping, tol, max_iter, start=None):
    matrix, dangling = transition_matrix(src, dst, n)
    x = np.full(n, 1.0 / n) if start is None else start
    return power_iteration(matrix, dangling, np.full(n, 1.0 / n), x, damping, tol, max_iter)


def mb(value: int) -> str:
    return f"{value / 2**20:,.0f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", default=DEFAULT_LINKS)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--damping", type=float, default=0.85)
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--engines", default="driver,distributed,graphx,graphframes")
    ap.add_argument("--nodes", choices=("pages", "none"), default="pages",
                    help="pages: every page passed as the nodes, as the scoring job passes the crawldb "
                         "(cached before timing, as edges are); none: no nodes, pages known from the links only")
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    load_start = os.getloadavg()

    # Reference and the plain-scipy floor (no Spark involved).
    src, dst, urls = load_arrays(args.links)
    n = len(urls)
    print(f"graph: {n:,} pages, {len(src):,} distinct links", flush=True)
    ref, ref_it, _ = scipy_solve(src, dst, n, args.damping, 1e-13, 10_000)
    t0 = time.perf_counter()
    plain, plain_it, _ = scipy_solve(src, dst, n, args.damping, args.tol, args.max_iter)
    plain_s = time.perf_counter() - t0
    reference = pd.Series(ref, index=urls)
    # The same solve from URL strings in memory: what the driver engine must do after the
    # transfer (ids from the strings), without Spark.
    raw = pd.read_csv(args.links, sep="\t", header=None, names=["src", "dst"], dtype=str)
    raw = raw[raw.src != raw.dst].drop_duplicates()
    t0 = time.perf_counter()
    codes, uniq = pd.factorize(pd.concat([raw.src, raw.dst], ignore_index=True))
    scipy_solve(codes[:len(raw)].astype(np.int64), codes[len(raw):].astype(np.int64), len(uniq),
                args.damping, args.tol, args.max_iter)
    strings_s = time.perf_counter() - t0
    del raw

    conf = make_conf(spark__master="local[2]", spark__shuffle_partitions=args.partitions,
                     spark__driver_memory="6g", spark__checkpoint_dir="/tmp/crawlkit-bench-ckpt")
    spark = get_spark(conf)
    edges = (spark.read.csv(args.links, sep="\t", schema="src string, dst string")
             .filter(F.col("src") != F.col("dst")).distinct().cache())
    edges.count()
    nodes = edges.select(F.col("src").alias("url")).limit(0)
    if args.nodes == "pages":
        nodes = nodes.union(edges.select(F.col("src").alias("url"))).union(
            edges.select(F.col("dst").alias("url"))).distinct().cache()
        nodes.count()
    rows = [("plain scipy, int arrays in memory", plain_s, plain_it,
             float(np.abs(plain - ref).sum()), "-", "-", "-"),
            ("plain scipy, URL strings in memory (factorize + solve)", strings_s, plain_it,
             float(np.abs(plain - ref).sum()), "-", "-", "-")]
    for row in rows:   # in the log at once: a run killed later (OOM here) still has them
        print(row, flush=True)

    clocks = {}

    def run(engine, label="cold", **kw):
        with PeakMemory() as mem, IterationClock(spark) as clock:
            t = time.perf_counter()
            result = pagerank(spark, nodes, edges, damping=args.damping, tol=args.tol,
                              max_iter=args.max_iter, engine=engine, **kw)
            result.ranks.count()       # materialized as a Spark DataFrame: what the job gets
            seconds = time.perf_counter() - t
        clocks[f"{engine} ({label})"] = clock.summary()
        print(f"{engine} ({label}): {clocks[f'{engine} ({label})']}", flush=True)
        got = result.ranks.toPandas().set_index("url")["rank"]
        err = float((got.reindex(reference.index).fillna(0.0) - reference).abs().sum())
        return result, seconds, err, mem

    results = {}
    for engine in args.engines.split(","):
        if engine == "graphframes" and not has_graphframes(spark):
            rows.append(("graphframes", "unavailable (no GraphFrames jar)", None, None, "-", "-", "-"))
            print("graphframes: JVM jar not available: skipped", flush=True)
            continue
        if engine == "graphx" and not has_graphx_bridge(spark):
            rows.append(("graphx", "unavailable (no bridge jar: scripts/setup.sh)", None, None,
                         "-", "-", "-"))
            continue
        result, seconds, err, mem = run(engine)
        results[engine] = seconds
        rows.append((engine, seconds, result.iterations, err, mb(mem.peak_py), mb(mem.peak_jvm),
                     mb(jvm_heap_used(spark))))
        print(rows[-1], flush=True)

    # Where the driver engine's time goes: one more cold run under cProfile (Spark time
    # shows up as py4j socket reads inside the calls that wait for a job).
    profile = ""
    if "driver" in results:
        prof = cProfile.Profile()
        prof.enable()
        again = pagerank(spark, nodes, edges, damping=args.damping, tol=args.tol,
                         max_iter=args.max_iter, engine="driver")
        again.ranks.count()
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(
            r"crawlkit/scoring/pagerank/|toArrow|createDataFrame|dataframe.py.*\(count\)|factorize|take|csr_matvec")
        profile = buf.getvalue()
        print(profile, flush=True)

    # Warm start: previous ranks on the graph without 1% of the pages.
    rng = np.random.default_rng(1)
    dropped = set(urls[rng.choice(n, size=max(1, n // 100), replace=False)])
    keep = ~(pd.Series(urls[src]).isin(dropped).to_numpy() | pd.Series(urls[dst]).isin(dropped).to_numpy())
    old_urls, inverse = np.unique(np.concatenate([src[keep], dst[keep]]), return_inverse=True)
    m = int(keep.sum())
    prev, _, _ = scipy_solve(inverse[:m], inverse[m:], len(old_urls), args.damping, 1e-13, 10_000)
    # Local-checkpointed: as a bare createDataFrame it is a LocalRelation whose 12 MB of rows
    # travel inside every task that reads it (every distributed iteration, through the state
    # table), which the scorer's start (read from the crawldb) does not pay.
    previous = (spark.createDataFrame(pd.DataFrame({"url": urls[old_urls], "rank": prev}))
                .localCheckpoint(eager=True))
    warm_rows = []
    for engine in [e for e in args.engines.split(",") if e in ("driver", "distributed")]:
        result, seconds, err, mem = run(engine, "warm", start=previous)
        warm_rows.append((engine, seconds, result.iterations, err))
        print(("warm", *warm_rows[-1]), flush=True)

    lines = [f"web-NotreDame: {n:,} pages, {len(src):,} distinct links (self-links dropped); "
             f"d = {args.damping}, L1 tolerance {args.tol:g}, local[2], "
             f"{args.partitions} shuffle partitions; {os.cpu_count()} cores; nodes: {args.nodes}.", "",
             "| engine (cold start) | seconds | iterations | L1 to reference | driver RSS peak MB "
             "| JVM RSS peak MB | JVM heap used MB |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, seconds, it, err, py, jvm, heap in rows:
        if isinstance(seconds, str):
            lines.append(f"| {name} | {seconds} | | | | | |")
        else:
            its = "n/a" if it is None or it < 0 else it
            lines.append(f"| {name} | {seconds:.2f} | {its} | {err:.2e} | {py} | {jvm} | {heap} |")
    lines += ["", "| engine (warm start, graph grown by 1%) | seconds | iterations | L1 to reference |",
              "| --- | ---: | ---: | ---: |"]
    lines += [f"| {e} | {s:.2f} | {it} | {err:.2e} |" for e, s, it, err in warm_rows]
    load = os.getloadavg()
    lines.append(f"\nload average (1/5/15 min) at the start: {load_start[0]:.1f} / "
                 f"{load_start[1]:.1f} / {load_start[2]:.1f}, at the end: {load[0]:.1f} / "
                 f"{load[1]:.1f} / {load[2]:.1f}, on {os.cpu_count()} cores")
    if "driver" in results:
        lines.append(f"driver / plain scipy (int arrays): {results['driver'] / plain_s:.1f}x; "
                     f"driver / plain scipy (URL strings): {results['driver'] / strings_s:.1f}x")
    for other in ("graphx", "graphframes"):
        if "distributed" in results and other in results:
            lines.append(f"{other} / distributed: {results[other] / results['distributed']:.2f}x")
    lines += ["", "Where the time went (engine log and Spark status tracker):", ""]
    lines += [f"* {name}: {text}" for name, text in clocks.items()]
    table = "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(table + "\n\n" + profile)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
