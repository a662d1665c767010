"""Scale of one round: generate, updatedb, PageRank and scoring at crawldb sizes N (synthetic tables).

For each N the script builds, directly as Delta tables with Spark (no fetching):

* a crawldb of N rows (``crawlkit.crawldb.new_entries``): URLs ``http://h<i>.scale.test/p<j>``
  on N/100 hosts (``--pages-per-host``), random scores, all due;
* a link table of ~``--links-per-page`` x N rows (src -> pseudo-random dst among the N URLs);
* a segment of K fetched URLs (``--segment``, default 10^4): the fetch list generate wrote,
  a content row per URL (success, 200) and a parse row with ``--links-per-page`` outlinks,
  half to known URLs and half to new ones, written with ``crawlkit.storage.write_segment_part``.

and times the stages on them:

* ``generate``: ``run_generate`` (scan + per-host cap + exact top-K, write the fetch list
  partitioned by host, and the MERGE that locks the K URLs in the crawldb);
* ``updatedb``: ``run_updatedb`` on the segment (link append + crawldb MERGE with inserts);
* ``pagerank``: the PageRank engines (``crawlkit.scoring.pagerank``) over the current links
  (``crawlkit.linkdb.current``) and the crawldb URLs with a fixed iteration count (tol = 0),
  timed end to end (collect/ids, iterations, ranks materialized). The driver engine is
  skipped above ``--driver-max-edges``;
* ``score``: the round's scoring job as a crawl runs it (``run_round_scoring``: PageRank on
  ``--score-engine`` with the same fixed iterations, then the one MERGE that writes every
  page's score into the crawldb), its MERGE also timed on its own (``score_merge``).

Building the synthetic tables is timed too (``build``) but is not part of a round. The table
is printed as markdown, with the log-log slope (growth exponent) of each stage between
consecutive sizes and fitted over all of them; ``--json`` appends one JSON line per N, and
the row so far is rewritten to ``<json>.partial`` after every stage (a size that does not
finish still leaves its stages).

With ``--big-segment`` K' (default 10^5, at sizes N >= 10 K'), a second round measures issue
#12's other target: ``run_updatedb`` with a K'-URL segment against writing the same crawldb
rows (K' updated + the new URLs) as a new Delta table and as an append to the crawldb, and
against that append plus an append of the segment's links to the link table (every row
updatedb writes), then
times a compaction of the link table (``crawlkit.linkdb.compact``), which updatedb runs once
the appended rows reach ``db.links_compact_ratio`` of the table, and the floor of any
updatedb: a second segment's rows, computed beforehand, written over its lock as updatedb's
commit writes them, against appending them (``overwrite_floor``). Every stage also records
peak memory (RSS of the driver Python, the Spark JVM and the Python workers, sampled; JVM
heap, peak execution memory, GC, jobs and shuffle bytes from Spark's REST API) and the Delta
metrics of its commit (files removed, rows copied, deletion vectors), which show whether a
MERGE rewrote the crawldb.

Usage::

    .venv/bin/python scripts/bench/scale.py --sizes 1e4,1e5,1e6,1e7 [--segment 1e4] [--policy score]
        [--iterations 10]
        [--big-segment 1e5] [--stages updatedb,big,pagerank,score] [--engines driver,distributed]
        [--score-engine auto] [--driver-max-edges 2e7] [--max-result-size 1g]
        [--workdir /tmp/crawlkit-scale] [--json results.jsonl] [--event-log DIR]
    .venv/bin/python scripts/bench/scale.py --table results.jsonl     # the tables from saved lines
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Iterator

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from pyspark.sql import functions as F  # noqa: E402

from crawlkit import linkdb, schemas, storage  # noqa: E402
from crawlkit.conf import make_conf  # noqa: E402
from crawlkit.crawldb import new_entries  # noqa: E402
from crawlkit.scoring import job as scoring_job  # noqa: E402
from crawlkit.scoring.pagerank import pagerank  # noqa: E402
from crawlkit.spark import get_spark  # noqa: E402
from crawlkit.stages.generate import locked_by_sql, run_generate  # noqa: E402
from crawlkit.stages.transition import outcomes, updated_entries  # noqa: E402
from crawlkit.stages.updatedb import new_urls, run_updatedb, segment_links  # noqa: E402

T0 = datetime(2026, 1, 1, 0, 0, 0)      # crawldb rows were created (and are due) then
NOW = datetime(2026, 1, 2, 0, 0, 0)     # the round's logical time
NOW2 = NOW + timedelta(days=1)          # the second round (the updatedb-vs-append segment)
STAGES = ("generate", "updatedb", "pagerank_driver", "pagerank_distributed", "score", "score_merge")
MB = 2 ** 20
# Delta MERGE/WRITE metrics kept from the commit a stage made: they show whether it rewrote
# the crawldb (files removed, rows copied) or only marked rows (deletion vectors).
DELTA_METRICS = ("numTargetRowsUpdated", "numTargetRowsInserted", "numTargetRowsCopied",
                 "numTargetFilesAdded", "numTargetFilesRemoved", "numTargetBytesAdded",
                 "numTargetBytesRemoved", "numTargetDeletionVectorsAdded", "numFiles",
                 "numOutputRows", "numOutputBytes", "scanTimeMs", "rewriteTimeMs", "executionTimeMs",
                 "numRemovedFiles", "numDeletedRows", "numCopiedRows", "numDeletionVectorsAdded")


class MemorySampler:
    """Peak resident memory of the driver Python, the Spark JVM (driver and executor in local
    mode) and pyspark's Python workers, sampled on a thread.

    Why sampling: the JVM's own metrics (heap used, execution memory) say nothing about what
    the process really holds (off-heap Arrow and Netty buffers, metaspace, the heap it grew
    to), and the Python driver and workers are outside the JVM. Workers are forked from one
    daemon, so their summed RSS counts shared pages more than once: an upper bound.
    """

    def __init__(self, interval: float = 0.2):
        import psutil
        self._psutil = psutil
        self.me = psutil.Process()
        self.interval = interval
        self.peak = {"driver_py": 0, "jvm": 0, "workers": 0}
        self._jvm = None
        self._stop = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def jvm(self):
        """The java child process that pyspark's gateway started (found once)."""
        if self._jvm is None:
            for child in self.me.children(recursive=True):
                try:
                    if child.name().startswith("java"):
                        self._jvm = child
                        break
                except self._psutil.Error:
                    pass
        return self._jvm

    def sample(self) -> dict:
        out = {"driver_py": self.me.memory_info().rss, "jvm": 0, "workers": 0}
        jvm = self.jvm()
        if jvm is not None:
            try:
                out["jvm"] = jvm.memory_info().rss
                for child in jvm.children(recursive=True):
                    out["workers"] += child.memory_info().rss
            except self._psutil.Error:
                pass
        return out

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            for key, value in self.sample().items():
                self.peak[key] = max(self.peak[key], value)

    @contextmanager
    def peaks(self) -> Iterator[dict]:
        """Peaks (MB) over the block, filled in when it ends."""
        self.peak = self.sample()
        result: dict = {}
        yield result
        final = self.sample()
        result.update({k: round(max(self.peak[k], final[k]) / MB) for k in final})

    def close(self) -> None:
        self._stop.set()


class SparkMetrics:
    """Jobs, stages, GC time and peak memory of the Spark work a benchmark stage started, read
    from the Spark UI's REST API (the UI is on for the benchmark only).

    ``exec_mb`` is the largest ``peakExecutionMemory`` of one stage (Spark sums the peaks of
    the stage's tasks: with 2 cores at most 2 of them run at once, so this bounds, from
    above, the sort/aggregation/join memory in use); ``heap_mb`` the largest JVM heap in use
    the executor reported during those stages (``peakExecutorMetrics``, sampled at heartbeats).
    """

    def __init__(self, spark):
        sc = spark.sparkContext
        self.base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}" if sc.uiWebUrl else None

    def get(self, path: str):
        with urllib.request.urlopen(f"{self.base}/{path}", timeout=60) as resp:
            return json.load(resp)

    def mark(self) -> dict:
        if not self.base:
            return {}
        jobs = self.get("jobs")
        stages = self.get("stages")
        return {"job": max((j["jobId"] for j in jobs), default=-1),
                "stage": max((s["stageId"] for s in stages), default=-1), "gc_ms": self.gc_ms()}

    def gc_ms(self) -> int:
        return sum(e.get("totalGCTime", 0) for e in self.get("executors"))

    def since(self, mark: dict) -> dict:
        if not self.base:
            return {}
        jobs = [j for j in self.get("jobs") if j["jobId"] > mark["job"]]
        stages = [s for s in self.get("stages") if s["stageId"] > mark["stage"]]
        peaks = [s.get("peakExecutorMetrics") or {} for s in stages]
        return {"jobs": len(jobs), "stages": len(stages),
                "tasks": sum(s.get("numCompleteTasks", 0) for s in stages),
                "gc_s": round((self.gc_ms() - mark["gc_ms"]) / 1000, 1),
                "shuffle_mb": round(sum(s.get("shuffleWriteBytes", 0) for s in stages) / MB),
                "input_mb": round(sum(s.get("inputBytes", 0) for s in stages) / MB),
                "exec_mb": round(max((s.get("peakExecutionMemory", 0) for s in stages), default=0) / MB),
                "heap_mb": round(max((p.get("JVMHeapMemory", 0) for p in peaks), default=0) / MB)}


def url_of(idx, pages_per_host: int):
    """URL of page number ``idx`` (a Column of longs)."""
    host = F.concat(F.lit("h"), (idx / pages_per_host).cast("long").cast("string"), F.lit(".scale.test"))
    return F.concat(F.lit("http://"), host, F.lit("/p"), idx.cast("string")), host


def build_tables(spark, crawl_dir: str, n: int, args, conf) -> dict:
    """The synthetic crawldb and link table as Delta tables under ``crawl_dir``."""
    parts = max(4, n // 250_000)          # ~250k rows (~20-30 MB) per crawldb file
    ids = spark.range(0, n, numPartitions=parts)
    url, host = url_of(F.col("id"), args.pages_per_host)
    rows = ids.select(url.alias("url"), host.alias("host"), host.alias("domain"),
                      (F.col("id") % 7).cast("int").alias("depth"),
                      F.rand(seed=1).alias("score"))
    crawldb = new_entries(rows, conf, T0)
    db_path = storage.crawldb_path(crawl_dir)
    storage.ensure_table(spark, db_path, "crawldb", deletion_vectors=conf["db.deletion_vectors"])
    crawldb.write.format("delta").mode("append").save(db_path)

    k = args.links_per_page
    src_idx = F.floor(F.col("id") / k).cast("long")
    # Pseudo-random destinations, never the source and distinct per source by construction
    # (offsets hash(src) + j * (n // k) differ by less than n - 1 for j < k), so no
    # dropDuplicates: that was a shuffle of all N*k links just to build the table.
    j = F.pmod(F.col("id"), F.lit(k))
    offset = F.pmod(F.xxhash64(src_idx, F.lit(7)) + j * F.lit(max(1, n // k)), F.lit(n - 1))
    dst_idx = F.pmod(src_idx + 1 + offset, F.lit(n))
    src, src_host = url_of(src_idx, args.pages_per_host)
    dst, dst_host = url_of(dst_idx, args.pages_per_host)
    links = spark.range(0, n * k, numPartitions=parts * 2).select(
        src.alias("src"), dst.alias("dst"), src_host.alias("src_host"), dst_host.alias("dst_host"),
        F.lit("anchor").alias("anchor"), F.lit(False).alias("nofollow"),
        F.lit(T0).alias("first_seen"), F.lit(T0).alias("last_seen"))
    link_path = storage.linkdb_path(crawl_dir)
    storage.ensure_table(spark, link_path, "links")
    schemas.conform(links, "links").write.format("delta").mode("append").save(link_path)
    return {"links": spark.read.format("delta").load(link_path).count()}


def write_segment(spark, crawl_dir: str, segment: str, n: int, args) -> None:
    """Content and parse rows for every URL of the segment's fetch list (all fetched fine)."""
    fl = storage.read_segment_part(spark, crawl_dir, segment, "fetchlist", "fetchlist")
    content = fl.select(
        "url", "host", F.lit("success").alias("fetch_status"), F.lit(200).alias("http_status"),
        F.lit(NOW - timedelta(hours=1)).alias("fetched_at"), F.lit(120).alias("elapsed_ms"),
        F.lit("text/html").alias("content_type"),
        F.create_map(F.lit("etag"), F.md5("url")).alias("headers"),
        F.lit(False).alias("truncated"), F.lit(segment).alias("segment"))
    storage.write_segment_part(content, crawl_dir, segment, "content", "content")
    k = args.links_per_page
    h = F.xxhash64("url")
    link = lambda j: F.struct(  # noqa: E731  even j: a known URL; odd j: a new one
        (url_of(F.pmod(h + j * 7919, F.lit(n)), args.pages_per_host)[0] if j % 2 == 0 else
         F.concat(F.col("url"), F.lit(f"/new{j}"))).alias("url"),
        F.lit(f"a{j}").alias("anchor"), F.lit(False).alias("nofollow"),
        F.create_map().cast("map<string,string>").alias("meta"))
    parse = fl.select(
        "url", F.lit("success").alias("parse_status"), F.lit("title").alias("title"),
        F.lit("text").alias("text"), F.md5(F.concat("url", F.lit("v2"))).alias("signature"),
        F.array(*[link(j) for j in range(k)]).alias("outlinks"),
        F.lit(False).alias("noindex"), F.lit(False).alias("nofollow"), F.lit(segment).alias("segment"))
    storage.write_segment_part(parse, crawl_dir, segment, "parse", "parse")


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


class Probe:
    """Times one benchmark stage and records its memory peaks and Spark work in ``row``."""

    def __init__(self, spark, partial: str = ""):
        self.spark = spark
        self.partial = partial          # the row so far is written here after every stage
        self.memory = MemorySampler()
        self.metrics = SparkMetrics(spark)

    def __call__(self, row: dict, name: str, fn):
        self.spark.sparkContext.setJobGroup(name, name)
        mark = self.metrics.mark()
        with self.memory.peaks() as mem:
            row[name], out = timed(fn)
        row.setdefault("mem", {})[name] = {**mem, **self.metrics.since(mark)}
        self.spark.sparkContext.setJobGroup("bench", "bench")
        if self.partial:
            with open(self.partial, "w") as f:
                f.write(json.dumps(row) + "\n")
        return out


def last_commit(spark, path: str) -> dict:
    """The Delta operation metrics of the table's newest commit (see DELTA_METRICS)."""
    from delta.tables import DeltaTable
    last = DeltaTable.forPath(spark, path).history(1).collect()[0]
    metrics = last["operationMetrics"] or {}
    return {"operation": last["operation"],
            **{k: int(metrics[k]) for k in DELTA_METRICS if k in metrics}}


def crawldb_files(spark, path: str) -> int:
    from delta.tables import DeltaTable
    return DeltaTable.forPath(spark, path).detail().collect()[0]["numFiles"]


def bench_conf(uri: str, top_n: int, args):
    """The conf of a benchmark round. The fetch-list policy is ``--policy`` (plain score order
    unless asked), not the default: the default may change (it did, to ``interleave``,
    during a run) and the benchmark measures one policy across sizes."""
    extra = {"db__broadcast_rows": args.broadcast_rows} if args.broadcast_rows is not None else {}
    return make_conf(crawl__dir=uri, crawl__topN=top_n, generate__policy=args.policy,
                     spark__shuffle_partitions=args.shuffle_partitions, **extra)


def run_size(spark, probe: Probe, n: int, args) -> dict:
    """Build the tables for ``n``, then one round (generate, updatedb, PageRank) on them and,
    if ``n`` is large enough, the updatedb-vs-append comparison with a ``--big-segment``."""
    crawl_dir = os.path.join(args.workdir, f"n{n}")
    uri = "file://" + crawl_dir
    db_path = storage.crawldb_path(uri)
    conf = bench_conf(uri, args.segment, args)
    spark.sparkContext.setCheckpointDir(uri + "/_checkpoints")
    row = {"N": n, "K": args.segment, "iterations": args.iterations, "load_start": os.getloadavg()}
    if args.reuse and storage.is_delta(spark, db_path):
        # the tables (and any round already run on them) of an earlier run that stopped
        row["reused"] = True
        row["L"] = spark.read.format("delta").load(storage.linkdb_path(uri)).count()
    else:
        shutil.rmtree(crawl_dir, ignore_errors=True)
        info = probe(row, "build", lambda: build_tables(spark, uri, n, args, conf))
        row["L"] = info["links"]
        row["files_built"] = crawldb_files(spark, db_path)
        print(f"N={n:,}: built crawldb and {row['L']:,} links in {row['build']:.0f} s", flush=True)

    stages = set(args.stages.split(","))
    segment = "20260102000000"
    if "generate" in stages:
        gen = probe(row, "generate", lambda: run_generate(spark, conf, NOW, segment))
        row["generated"] = gen["generated"]
        row["delta_generate"] = last_commit(spark, db_path)
        print(f"N={n:,}: generate {row['generate']:.1f} s ({gen})", flush=True)
    if "updatedb" in stages:
        write_segment(spark, uri, segment, n, args)
        upd = probe(row, "updatedb", lambda: run_updatedb(spark, conf, NOW, segment))
        row["new_urls"] = upd.get("new_urls")
        row["delta_updatedb"] = last_commit(spark, db_path)
        print(f"N={n:,}: updatedb {row['updatedb']:.1f} s (new urls {upd.get('new_urls')}) "
              f"{row['delta_updatedb']}", flush=True)

    # PageRank reads the tables as they are now, whatever the big segment adds to them
    versions = (storage.table_version(spark, db_path), storage.table_version(spark, storage.linkdb_path(uri)))
    if "big" in stages and args.big_segment and n >= 10 * args.big_segment:
        update_vs_write(spark, probe, row, uri, n, args)
    if "pagerank" in stages:
        run_pagerank(spark, probe, row, uri, args, versions)
    if "score" in stages:
        run_score(spark, probe, row, uri, args)
    row["crawldb_bytes"] = du(os.path.join(crawl_dir, "crawldb"))
    row["linkdb_bytes"] = du(os.path.join(crawl_dir, "linkdb"))
    row["files_end"] = crawldb_files(spark, db_path)
    row["load_end"] = os.getloadavg()
    if not args.keep:
        shutil.rmtree(crawl_dir, ignore_errors=True)
    return row


def run_pagerank(spark, probe: Probe, row: dict, uri: str, args, versions: tuple[int, int]) -> None:
    """Each PageRank engine over the current links (the append-only table's view, its
    shuffle by source included) and the crawldb URLs (at ``versions``: after the round's
    updatedb), result materialized."""
    db = spark.read.format("delta").option("versionAsOf", versions[0]).load(storage.crawldb_path(uri))
    links = linkdb.current(storage.read_table(spark, storage.linkdb_path(uri), "links", versions[1]))
    nodes, edges = db.select("url"), links.select("src", "dst")
    n = row["N"]
    for engine in args.engines.split(","):
        name = f"pagerank_{engine}"
        if engine == "driver" and row["L"] > args.driver_max_edges:
            row[name] = None
            continue

        def solve():
            res = pagerank(spark, nodes, edges, tol=0.0, max_iter=args.iterations, engine=engine,
                           broadcast_max_pages=args.broadcast_max_pages)
            res.ranks.agg(F.sum("rank")).first()   # materialize the result
            return res
        try:
            res = probe(row, name, solve)
            print(f"N={n:,}: pagerank {engine} {row[name]:.1f} s ({res.iterations} iterations)", flush=True)
        except Exception as exc:  # out of memory and the like: record, go on
            row[name] = None
            row[f"error_{engine}"] = repr(exc)[:300]
            print(f"N={n:,}: pagerank {engine} failed: {exc!r}"[:400], flush=True)


def run_score(spark, probe: Probe, row: dict, uri: str, args) -> None:
    """The scoring job of a round on the tables as they are (after the round's updatedb and
    whatever the big segment added): ``run_round_scoring`` with PageRank, ``--iterations``
    iterations (tol = 0) on ``--score-engine``. Its MERGE of all N rows is timed apart by
    wrapping ``merge_scores`` for the call."""
    conf = make_conf(crawl__dir=uri, generate__policy="score", scoring__scorer="pagerank",
                     scoring__max_iterations=args.iterations, scoring__tolerance=0.0,
                     scoring__engine=args.score_engine, scoring__driver_max_edges=args.driver_max_edges,
                     spark__shuffle_partitions=args.shuffle_partitions)
    merge_seconds = []
    merge_scores = scoring_job.merge_scores

    def timed_merge(*a, **kw):
        seconds, out = timed(lambda: merge_scores(*a, **kw))
        merge_seconds.append(seconds)
        return out
    scoring_job.merge_scores = timed_merge
    try:
        counters = probe(row, "score", lambda: scoring_job.run_round_scoring(spark, uri, conf, NOW))
    finally:
        scoring_job.merge_scores = merge_scores
    row["score_merge"] = merge_seconds[0] if merge_seconds else None
    row["score_engine"] = counters.get("engine")
    row["delta_score"] = last_commit(spark, storage.crawldb_path(uri))
    print(f"N={row['N']:,}: score {row['score']:.1f} s ({counters.get('engine')} engine, "
          f"{counters.get('iterations')} iterations, {counters.get('pages'):,} pages), of which the MERGE "
          f"{fmt(row['score_merge'])} s; {row['delta_score']}", flush=True)


def segment_rows(spark, conf, now: datetime, segment: str):
    """The crawldb rows updatedb would write for ``segment`` (K updated + the new URLs) and
    its link rows, built with updatedb's own functions and materialized, so writing them
    times only the write. Returns (crawldb rows, their count, link rows, their count)."""
    uri = conf["crawl.dir"]
    content = storage.read_segment_part(spark, uri, segment, "content", "content")
    parsed = storage.read_segment_part(spark, uri, segment, "parse", "parse")
    crawldb = spark.read.format("delta").load(storage.crawldb_path(uri))
    links = segment_links(content, parsed, conf, now)
    updates = schemas.conform(updated_entries(crawldb, outcomes(content, parsed), conf, now), "crawldb")
    rows = updates.unionByName(new_urls(links, crawldb, conf, now)).localCheckpoint(eager=True)
    link_rows = schemas.conform(links.withColumn("commit_version", F.lit(-2).cast("long")), "links") \
        .localCheckpoint(eager=True)
    return rows, rows.count(), link_rows, link_rows.count()


def update_vs_write(spark, probe: Probe, row: dict, uri: str, n: int, args):
    """Issue #12's second target: updatedb with a ``--big-segment`` of K URLs against simply
    writing that segment's crawldb rows (the K updated + the new ones) in the same run.

    Three baselines: the crawldb rows written as a new Delta table; appended to the crawldb
    itself (same table, same log and commit protocol: what any update of it must at least
    pay); and that append plus an append of the segment's links to the link table (every row
    updatedb writes, in the same two tables). The appends add duplicate rows: PageRank
    afterwards reads both tables at the versions before (the links' commit_version -2 marks
    them as an old version, which a compaction drops).
    """
    k = args.big_segment
    conf = bench_conf(uri, k, args)
    segment = "20260103000000"
    gen = probe(row, "generate_big", lambda: run_generate(spark, conf, NOW2, segment))
    write_segment(spark, uri, segment, n, args)
    rows, count, link_rows, link_count = segment_rows(spark, conf, NOW2, segment)
    row["big"] = {"K": k, "generated": gen["generated"], "rows": count, "link_rows": link_count}
    upd = probe(row, "updatedb_big", lambda: run_updatedb(spark, conf, NOW2, segment))
    row["big"]["new_urls"] = upd.get("new_urls")
    row["big"]["links_appended"] = upd["link_changes"].get("appended", 0) + upd["link_changes"].get("pages_without_links", 0)
    row["delta_updatedb_big"] = last_commit(spark, storage.crawldb_path(uri))
    probe(row, "write_big", lambda: rows.write.format("delta").save(uri + "/segment_rows"))
    print(f"N={n:,}: K={k:,} ({count:,} rows): updatedb {row['updatedb_big']:.1f} s, "
          f"write as a new table {row['write_big']:.1f} s -> {row['updatedb_big'] / row['write_big']:.2f}x; "
          f"{row['delta_updatedb_big']}", flush=True)
    append_to_crawldb(probe, row, rows, storage.crawldb_path(uri), spark)
    link_path = storage.linkdb_path(uri)
    probe(row, "append_links_big", lambda: link_rows.write.format("delta").mode("append").save(link_path))
    print(f"N={n:,}: append of the segment's {link_count:,} links {row['append_links_big']:.1f} s -> updatedb / "
          f"(crawldb rows + links appended) {row['updatedb_big'] / (row['append_big'] + row['append_links_big']):.2f}x",
          flush=True)
    kept = probe(row, "compact_big", lambda: linkdb.compact(spark, link_path, f"{linkdb.COMPACT_TAG}:{segment}"))
    row["big"]["compaction"] = kept
    print(f"N={n:,}: link-table compaction (done when the appended rows reach "
          f"db.links_compact_ratio of the table) {row['compact_big']:.1f} s, {kept}", flush=True)
    overwrite_floor(spark, probe, row, conf, n, args)


def overwrite_floor(spark, probe: Probe, row: dict, conf, n: int, args) -> None:
    """What updatedb's commit alone costs: a second segment generated, its crawldb rows
    computed and materialized as for the baselines, then written over its lock exactly as
    updatedb's commit does (``replaceWhere`` on the lock: ``replace_locked_rows``), and
    appended again for the ratio in the same state of the process. Any updatedb must at
    least make that commit, so its ratio to the append is the floor of updatedb's."""
    uri, segment, now = conf["crawl.dir"], "20260104000000", NOW2 + timedelta(days=1)
    db_path = storage.crawldb_path(uri)
    run_generate(spark, conf, now, segment)
    write_segment(spark, uri, segment, n, args)
    rows, count, _, _ = segment_rows(spark, conf, now, segment)

    def overwrite():
        with storage.session_setting(spark, "spark.databricks.delta.replaceWhere.constraintCheck.enabled", "false"):
            rows.write.format("delta").mode("overwrite").option("replaceWhere", locked_by_sql(segment)).save(db_path)
    probe(row, "overwrite_big", overwrite)
    probe(row, "append2_big", lambda: rows.write.format("delta").mode("append").save(db_path))
    print(f"N={n:,}: the commit alone, {count:,} computed rows over the lock {row['overwrite_big']:.1f} s, "
          f"appended {row['append2_big']:.1f} s -> {row['overwrite_big'] / row['append2_big']:.2f}x", flush=True)


def append_to_crawldb(probe: Probe, row: dict, rows, db_path: str, spark) -> None:
    """The segment's rows appended to the crawldb (the other baseline of update_vs_write)."""
    probe(row, "append_big", lambda: rows.write.format("delta").mode("append").save(db_path))
    row["delta_append_big"] = last_commit(spark, db_path)
    print(f"N={row['N']:,}: append to crawldb {row['append_big']:.1f} s -> "
          f"updatedb / append {row['updatedb_big'] / row['append_big']:.2f}x", flush=True)


def du(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log t against log N."""
    pts = [(math.log(n), math.log(t)) for n, t in points if t]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx


def fmt(v) -> str:
    return "–" if v is None else f"{v:,.1f}"


def megabytes(v) -> str:
    """Bytes as MB, or a dash for a partial row (sizes are read when a size ends)."""
    return "–" if v is None else f"{v / MB:,.0f}"


def exponents(rows: list[dict], stages=STAGES) -> list[str]:
    """Growth exponents per stage: between each pair of consecutive sizes and over all."""
    out = []
    for stage in stages:
        pts = [(r["N"], r.get(stage)) for r in rows if r.get(stage)]
        pairs = [f"{a[0]:.0e}->{b[0]:.0e}: {slope([a, b]):.2f}" for a, b in zip(pts, pts[1:])]
        total = slope(pts)
        if total is not None:
            out.append(f"| {stage} | {'; '.join(pairs)} | **{total:.2f}** |")
    return out


def memory_table(rows: list[dict]) -> list[str]:
    out = ["| N | stage | s | driver Python MB | JVM RSS MB | Python workers MB | JVM heap MB "
           "| peak execution MB | GC s | jobs | stages | shuffle write MB |",
           "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        for stage, m in r.get("mem", {}).items():
            out.append(f"| {r['N']:,} | {stage} | {fmt(r.get(stage))} | {m['driver_py']:,} | {m['jvm']:,} "
                       f"| {m['workers']:,} | {m.get('heap_mb', '–')} | {m.get('exec_mb', '–')} "
                       f"| {m.get('gc_s', '–')} | {m.get('jobs', '–')} | {m.get('stages', '–')} "
                       f"| {m.get('shuffle_mb', '–')} |")
    return out


def ratio(row: dict, *baselines: str) -> str:
    """updatedb_big over the sum of baselines' times, or a dash if one did not run."""
    if not all(row.get(b) for b in baselines):
        return "–"
    return f"{row['updatedb_big'] / sum(row[b] for b in baselines):.2f}"


def crawldb_commit(d: dict) -> dict:
    """updatedb's crawldb commit in the MERGE's metric names: the overwrite of the locked rows
    (a WRITE) names its files and rows otherwise."""
    if "numTargetFilesRemoved" in d or "numRemovedFiles" not in d:
        return d
    return {"numTargetFilesRemoved": d["numRemovedFiles"], "numTargetFilesAdded": d.get("numFiles", "?"),
            "numTargetRowsCopied": int(d.get("numCopiedRows", 0)),
            "numTargetDeletionVectorsAdded": d.get("numDeletionVectorsAdded", 0)}


def ratio_table(rows: list[dict]) -> list[str]:
    out = ["| N | K (big segment) | rows written (K updated + new) | updatedb s | append to crawldb s "
           "| write as new table s | links appended | append of the links s | updatedb / append "
           "| updatedb / write | updatedb / (append + links' append) | crawldb commit: files removed "
           "/ added, rows copied, DVs added | link compaction s (amortized per round) "
           "| the commit alone: overwrite of a lock by its computed rows s / append s |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"]
    for r in rows:
        if "updatedb_big" not in r:
            continue
        d = crawldb_commit(r.get("delta_updatedb_big", {}))
        out.append(f"| {r['N']:,} | {r['big']['K']:,} | {r['big']['rows']:,} | {fmt(r['updatedb_big'])} "
                   f"| {fmt(r.get('append_big'))} | {fmt(r.get('write_big'))} "
                   f"| {r['big'].get('link_rows', 0):,} | {fmt(r.get('append_links_big'))} "
                   f"| **{ratio(r, 'append_big')}** | {ratio(r, 'write_big')} "
                   f"| **{ratio(r, 'append_big', 'append_links_big')}** "
                   f"| {d.get('numTargetFilesRemoved', '?')} / {d.get('numTargetFilesAdded', '?')}, "
                   f"{d.get('numTargetRowsCopied', '?'):,}, {d.get('numTargetDeletionVectorsAdded', '?')} "
                   f"| {amortized_compaction(r)} | {overwrite_ratio(r)} |")
    return out


def overwrite_ratio(row: dict) -> str:
    """The floor of updatedb (``overwrite_floor``): its commit alone against an append."""
    if not (row.get("overwrite_big") and row.get("append2_big")):
        return "–"
    return (f"{fmt(row['overwrite_big'])} / {fmt(row['append2_big'])} "
            f"= **{row['overwrite_big'] / row['append2_big']:.2f}**")


def amortized_compaction(row: dict) -> str:
    """The compaction's time, and its share per round: it runs once the appended rows reach
    ``db.links_compact_ratio`` (0.5) of the table, i.e. every 0.5 L / (rows a round appends)."""
    if row.get("compact_big") is None:
        return "–"
    per_round = row["big"].get("links_appended", 0) / (0.5 * row["L"]) if row.get("L") else 0
    return f"{fmt(row['compact_big'])} ({fmt(row['compact_big'] * per_round)})"


def table(rows: list[dict]) -> str:
    rows = sorted(rows, key=lambda r: r["N"])
    out = ["| N (crawldb rows) | L (links) | K (segment) | build s | generate s | updatedb s "
           "| PageRank driver s | PageRank distributed s | score s (engine) | of which its MERGE s "
           "| crawldb MB | linkdb MB | load (1 min) start/end |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        load = "/".join(f"{r[k][0]:.1f}" for k in ("load_start", "load_end") if k in r) or "–"
        out.append(f"| {r['N']:,} | {r['L']:,} | {r['K']:,} | {fmt(r.get('build'))} | {fmt(r.get('generate'))} "
                   f"| {fmt(r.get('updatedb'))} | {fmt(r.get('pagerank_driver'))} "
                   f"| {fmt(r.get('pagerank_distributed'))} | {fmt(r.get('score'))} ({r.get('score_engine') or '–'}) "
                   f"| {fmt(r.get('score_merge'))} | {megabytes(r.get('crawldb_bytes'))} "
                   f"| {megabytes(r.get('linkdb_bytes'))} | {load} |")
    out += ["", "Growth exponents (log-log slope of time against N):", "",
            "| stage | between sizes | least squares over all |", "|---|---|---:|"]
    out += exponents(rows, STAGES + ("generate_big", "updatedb_big"))
    out += ["", "Peak memory and Spark work per stage:", ""] + memory_table(rows)
    ratio = ratio_table(rows)
    if len(ratio) > 2:
        out += ["", "updatedb against plain writes of the rows it writes:", ""] + ratio
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e5,1e6,1e7")
    ap.add_argument("--segment", type=float, default=1e4, help="K, URLs in the segment (= topN)")
    ap.add_argument("--policy", default="score", choices=["score", "interleave"],
                    help="generate.policy of the rounds (interleave: the default's score and "
                         "backlinks lists; the synthetic backlinks are all 0, one tie)")
    ap.add_argument("--links-per-page", type=int, default=5)
    ap.add_argument("--pages-per-host", type=int, default=100)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--engines", default="driver,distributed")
    ap.add_argument("--score-engine", default="auto", help="scoring.engine of the score stage")
    ap.add_argument("--driver-max-edges", type=lambda v: int(float(v)), default=20_000_000,
                    help="scoring.driver_max_edges of the score stage, and the pagerank stage's bound for its driver engine")
    ap.add_argument("--max-result-size", default="",
                    help="spark.driver.maxResultSize (default Spark's 1g; the driver engine collects 24 bytes a link)")
    ap.add_argument("--broadcast-max-pages", type=int, default=None,
                    help="distributed PageRank: broadcast the ranks up to this many pages (default: the engine's)")
    ap.add_argument("--broadcast-rows", type=lambda v: int(float(v)), default=None,
                    help="db.broadcast_rows of updatedb (default: the conf's)")
    ap.add_argument("--shuffle-partitions", type=int, default=8)
    ap.add_argument("--driver-memory", default="6g")
    ap.add_argument("--workdir", default="/tmp/crawlkit-scale")
    ap.add_argument("--json", default="", help="append one JSON line per size to this file")
    ap.add_argument("--table", default="", help="print the table of a --json file and exit")
    ap.add_argument("--keep", action="store_true", help="keep the synthetic tables")
    ap.add_argument("--big-segment", type=float, default=1e5,
                    help="K of the updatedb-vs-append comparison, run where N >= 10 K (0: skip)")
    ap.add_argument("--stages", default="generate,updatedb,big,pagerank,score",
                    help="which of generate and updatedb (K = --segment), big (--big-segment vs a plain "
                         "write), pagerank and score (the scoring job) to run (to fit a large N in the "
                         "time there is)")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse the tables left in --workdir by a run that stopped (with --keep or a crash)")
    ap.add_argument("--event-log", default="", help="write Spark's event log to this directory")
    args = ap.parse_args(argv)
    if args.table:
        with open(args.table) as f:
            print(table([json.loads(line) for line in f if line.strip()]))
        return 0
    args.segment = int(args.segment)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    args.big_segment = int(args.big_segment)
    conf = make_conf(spark__driver_memory=args.driver_memory,
                     spark__shuffle_partitions=args.shuffle_partitions,
                     crawl__dir="file://" + args.workdir, spark__ui=True,
                     spark__extra=spark_extra(args))
    os.makedirs(args.workdir, exist_ok=True)
    spark = get_spark(conf)
    probe = Probe(spark, args.json + ".partial" if args.json else "")
    rows = []
    for n in sizes:
        row = run_size(spark, probe, n, args)
        rows.append(row)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(row) + "\n")
    print(table(rows))
    probe.memory.close()
    spark.stop()
    return 0


def spark_extra(args) -> dict:
    """The UI (for its REST API: jobs, stages, memory per stage) keeps every job and stage of
    a run; the event log, if asked for, keeps them for the history server afterwards."""
    extra = {"spark.ui.retainedJobs": "100000", "spark.ui.retainedStages": "100000",
             "spark.ui.retainedTasks": "1000", "spark.sql.ui.retainedExecutions": "100"}
    if args.max_result_size:
        extra["spark.driver.maxResultSize"] = args.max_result_size
    if args.event_log:
        os.makedirs(args.event_log, exist_ok=True)
        extra.update({"spark.eventLog.enabled": "true", "spark.eventLog.dir": "file://" + args.event_log})
    return extra


if __name__ == "__main__":
    sys.exit(main())
