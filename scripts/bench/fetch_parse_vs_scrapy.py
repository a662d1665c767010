"""Fetch + parse throughput per core: crawlkit's fetch and parse stages against Scrapy, in one run.

Issue #12. Starts the replay web (a generated web with many hosts, a subprocess on 127.0.0.1;
nothing goes beyond it), picks K of its pages, and in the same run:

1. **crawlkit (Spark)**: writes the K URLs as a fetch list (as generate does: one host per
   partition) and runs the real stages ``run_fetch`` then ``run_parse`` in local Spark mode,
   politeness off (``server_delay = 0``, robots.txt off, several connections per host), in
   each ``--modes``: ``fused`` (the default ``fetcher.parse = true``: the fetch tasks parse,
   and the parse stage has nothing left to do), ``fused-nomerge`` (the same with
   ``fetcher.merge_spills = false``: each task keeps its spill files instead of rewriting them
   as one; the file counts of ``content/`` are printed per variant) and ``stage``
   (``fetcher.parse = false``).
   CPU = user+system seconds of the driver's whole process tree (the driver Python, the JVM,
   pyspark's daemon and Python workers; reaped children included), the replay server excluded.
   The JVM start and a warm-up round on other URLs are not counted.
2. **Scrapy**: a small spider (kept below) crawling the same URLs through the same replay
   proxy, robots.txt and delays off, the same total concurrency, extracting the same outlinks
   (a/area href, frame/iframe src, resolved against <base href> and normalized by crawlkit's own
   ``UrlNormalizer`` + ``UrlFilter``), the title and the visible text; items go to a JSON-lines
   feed (crawlkit writes Parquet). It runs in a child process (its Twisted reactor); CPU is the
   child's rusage (``os.wait4``), and the spider also reports the CPU and wall of the crawl
   alone (spider open -> close, without interpreter and Scrapy start-up).
3. **crawlkit in-process**: the same per-partition functions the stages run on the executors
   (``stages.fetch._fetch_and_spill``, ``stages.parse._parse_batches``) called in this process
   on Arrow batches, without Spark: what the Python part costs by itself (``--profile`` runs the
   parse part under cProfile and prints the top functions).

pages/s per core = pages / CPU seconds (= pages/s divided by the cores the system kept busy).
The ratio column is crawlkit's pages per CPU-second over Scrapy's (crawl only). The replay
server's CPU per page is printed for each system as a check that both asked for the same work.

    .venv/bin/pip install -e '.[bench]'     # Scrapy (not a dependency of crawlkit itself)
    .venv/bin/python scripts/bench/fetch_parse_vs_scrapy.py --urls 5000 --hosts 100
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# ----------------------------------------------------------------------------------------------
# The Scrapy side (runs in a child process: `--scrapy-child`). Imports only crawlkit.urls and
# crawlkit.conf from crawlkit, never pyspark.


def _scrapy_child(args: argparse.Namespace) -> int:
    import scrapy
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess

    from crawlkit.conf import load_conf
    from crawlkit.urls import UrlFilter, UrlNormalizer

    conf = load_conf().to_dict()
    urls_conf = {k[len("urls."):]: v for k, v in conf.items() if k.startswith("urls.")}
    normalize, url_filter = UrlNormalizer(urls_conf), UrlFilter(urls_conf)
    urls = Path(args.urls_file).read_text().split()
    proxy = args.proxy
    timing: dict[str, float] = {}

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    class BenchSpider(scrapy.Spider):
        name = "bench"

        async def start(self):
            for url in urls:
                yield scrapy.Request(url, meta={"proxy": proxy}, dont_filter=True)

        def parse(self, response):
            base = normalize(response.url, None)
            base_href = response.xpath("//base/@href").get()
            if base_href:
                base = normalize(base_href, base) or base
            links, seen = [], set()
            for href in response.xpath("//a/@href | //area/@href | //frame/@src | //iframe/@src").getall():
                url = normalize(href, base)
                if url and url not in seen and not url_filter.check(url) and url != response.url:
                    seen.add(url)
                    links.append(url)
            text = " ".join(response.xpath(
                "//body//text()[not(ancestor::script or ancestor::style or ancestor::noscript"
                " or ancestor::template or ancestor::iframe)]").getall()).split()
            title = response.xpath("//title/text()").get()
            yield {"url": response.url, "title": " ".join(title.split()) if title else None,
                   "text": " ".join(text), "links": links}

    def opened(spider):
        timing["cpu0"], timing["wall0"] = cpu(), time.perf_counter()

    def closed(spider):
        timing["cpu1"], timing["wall1"] = cpu(), time.perf_counter()

    process = CrawlerProcess(settings={
        "ROBOTSTXT_OBEY": False,
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": args.per_host,
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "COOKIES_ENABLED": False,
        "RETRY_ENABLED": False,
        "REDIRECT_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "WARNING",
        "USER_AGENT": "scrapy-bench",
        "FEEDS": {args.out: {"format": "jsonlines", "overwrite": True}},
    })
    crawler = process.create_crawler(BenchSpider)
    crawler.signals.connect(opened, signal=signals.spider_opened)
    crawler.signals.connect(closed, signal=signals.spider_closed)
    process.crawl(crawler)
    process.start()
    stats = crawler.stats.get_stats()
    Path(args.out + ".timing.json").write_text(json.dumps({
        "crawl_cpu_s": timing["cpu1"] - timing["cpu0"], "crawl_wall_s": timing["wall1"] - timing["wall0"],
        "responses": stats.get("downloader/response_count", 0),
        "status_200": stats.get("downloader/response_status_count/200", 0),
        "item_count": stats.get("item_scraped_count", 0)}))
    return 0


def run_scrapy(urls: list[str], proxy: str, workdir: Path, concurrency: int, per_host: int) -> dict:
    urls_file, out = workdir / "scrapy-urls.txt", workdir / "scrapy-items.jsonl"
    urls_file.write_text("\n".join(urls) + "\n")
    command = [sys.executable, __file__, "--scrapy-child", "--urls-file", str(urls_file), "--out", str(out),
               "--proxy", proxy, "--concurrency", str(concurrency), "--per-host", str(per_host)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH")]))
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if child.returncode != 0:
        raise RuntimeError(f"scrapy child failed with exit code {child.returncode}")
    timing = json.loads(Path(str(out) + ".timing.json").read_text())
    items = {}
    with open(out) as lines:
        for line in lines:
            item = json.loads(line)
            items[item["url"]] = item
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "max_rss_mb": usage.ru_maxrss / 1024,
            "items": items, **timing}


# ----------------------------------------------------------------------------------------------
# Measuring a process tree.


class TreeCpu:
    """CPU seconds (user+system, reaped children included) of this process and its descendants,
    by kind: driver (this process), jvm, python (pyspark daemon and workers), other; processes
    under ``exclude`` pids (the replay server) are left out."""

    def __init__(self, exclude: list[int]):
        import psutil
        self.psutil = psutil
        self.root = psutil.Process()
        self.exclude = set(exclude)

    def snapshot(self) -> dict[str, float]:
        totals = {"driver": 0.0, "jvm": 0.0, "python": 0.0, "other": 0.0}
        skip = set(self.exclude)
        for pid in list(skip):
            try:
                skip.update(c.pid for c in self.psutil.Process(pid).children(recursive=True))
            except self.psutil.NoSuchProcess:
                pass
        for proc in [self.root, *self.root.children(recursive=True)]:
            if proc.pid in skip:
                continue
            try:
                t = proc.cpu_times()
                name = proc.name()
            except (self.psutil.NoSuchProcess, self.psutil.ZombieProcess):
                continue
            seconds = t.user + t.system + t.children_user + t.children_system
            if proc.pid == self.root.pid:
                # the replay server is our child too but is not reaped until the end: nothing
                # of it is in our children_* yet
                totals["driver"] += seconds
            elif name == "java":
                totals["jvm"] += seconds
            elif name.startswith("python"):
                totals["python"] += seconds
            else:
                totals["other"] += seconds
        return totals

    @staticmethod
    def delta(after: dict, before: dict) -> dict:
        return {k: after[k] - before.get(k, 0.0) for k in after}


def server_cpu(pid: int) -> float:
    import psutil
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


# ----------------------------------------------------------------------------------------------
# crawlkit


def fetchlist_rows(urls: list[str], segment: str) -> list[dict]:
    from crawlkit.urls import host_of
    return [{"url": u, "host": host_of(u), "score": 1.0, "status": "unfetched", "depth": 0, "etag": None,
             "last_modified": None, "signature": None, "retries": 0, "segment": segment} for u in urls]


def write_fetchlist(spark, conf, urls: list[str], segment: str) -> None:
    from crawlkit import schemas, storage
    from crawlkit.stages.generate import partition_by_host
    df = spark.createDataFrame(fetchlist_rows(urls, segment), schemas.struct("fetchlist"))
    partitions = conf["generate.partitions"] or spark.sparkContext.defaultParallelism
    storage.write_segment_part(partition_by_host(df, partitions), conf["crawl.dir"], segment, "fetchlist", "fetchlist")


def run_crawlkit_spark(spark, conf, urls: list[str], segment: str, now, tree: TreeCpu, server_pid: int,
                       memory=None) -> dict:
    """The two stages, timed; ``memory`` (scale.py's MemorySampler) records the peak RSS (MB)
    of the driver Python, the JVM and the Python workers over them in ``out["memory_mb"]``."""
    from contextlib import nullcontext

    from crawlkit.stages.fetch import run_fetch
    from crawlkit.stages.parse import run_parse
    write_fetchlist(spark, conf, urls, segment)
    out = {}
    with memory.peaks() if memory is not None else nullcontext({}) as peaks:
        s0, c0, t0 = server_cpu(server_pid), tree.snapshot(), time.perf_counter()
        out["fetch"] = run_fetch(spark, conf, now, segment)
        c1, t1 = tree.snapshot(), time.perf_counter()
        out["parse"] = run_parse(spark, conf, segment, out["fetch"])  # nothing left to do if fetch parsed
        c2, t2, s2 = tree.snapshot(), time.perf_counter(), server_cpu(server_pid)
    out["memory_mb"] = peaks
    out["fetch_wall_s"], out["parse_wall_s"] = t1 - t0, t2 - t1
    out["fetch_cpu"], out["parse_cpu"] = TreeCpu.delta(c1, c0), TreeCpu.delta(c2, c1)
    out["server_cpu_s"] = s2 - s0
    out["content_files"] = len(list(Path(conf["crawl.dir"], "segments", segment, "content").glob("*.parquet")))
    return out


def crawlkit_outlinks(spark, conf, segment: str) -> dict[str, dict]:
    from crawlkit import storage
    parsed = storage.read_segment_part(spark, conf["crawl.dir"], segment, "parse", "parse")
    from pyspark.sql import functions as F
    rows = parsed.select("url", F.col("outlinks.url").alias("links"), "text", "title").collect()
    return {r["url"]: {"links": list(r["links"] or []), "text": r["text"], "title": r["title"]} for r in rows}


def run_crawlkit_inprocess(conf, urls: list[str], segment: str, now, workdir: Path, server_pid: int,
                           profile: bool) -> dict:
    """The executors' per-partition functions, called here on Arrow batches (no Spark)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    from crawlkit import schemas
    from crawlkit.stages.fetch import _fetch_and_spill
    from crawlkit.stages.parse import _parse_batches

    plain = conf.to_dict()
    schema = to_arrow_schema(schemas.struct("fetchlist"))
    batch = pa.RecordBatch.from_pylist(fetchlist_rows(urls, segment), schema=schema)
    parts = workdir / f"inprocess-{segment}"

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    s0, c0, t0 = server_cpu(server_pid), cpu(), time.perf_counter()
    for _ in _fetch_and_spill(plain, now, parts.as_uri(), None)(iter([batch])):
        pass
    c1, t1 = cpu(), time.perf_counter()
    s1 = server_cpu(server_pid)
    content = pq.read_table(parts)
    content = content.filter(pc.equal(content["fetch_status"], "success"))
    c2, t2 = cpu(), time.perf_counter()
    parsed = sum(b.num_rows for b in _parse_batches(plain)(iter(content.to_batches(max_chunksize=10_000))))
    c3, t3 = cpu(), time.perf_counter()
    profiler = None
    if profile:  # a separate, untimed pass: cProfile slows what it measures
        import cProfile
        profiler = cProfile.Profile()
        sample = content.slice(0, min(content.num_rows, 2000))
        profiler.enable()
        for _ in _parse_batches(plain)(iter(sample.to_batches(max_chunksize=10_000))):
            pass
        profiler.disable()
    return {"fetched": content.num_rows, "parsed": parsed, "fetch_wall_s": t1 - t0, "fetch_cpu_s": c1 - c0,
            "parse_wall_s": t3 - t2, "parse_cpu_s": c3 - c2, "server_cpu_s": s1 - s0, "profiler": profiler}


# ----------------------------------------------------------------------------------------------


def pick_urls(spec: str, k: int, seed: int) -> tuple[list[str], int]:
    from crawlkit.replay import GeneratedWeb
    web = GeneratedWeb(spec)
    rng = random.Random(seed)
    pages = rng.sample(range(web.num_pages), min(k, web.num_pages))
    urls = [web.url(p) for p in pages]
    return urls, len({u.split("/")[2] for u in urls})


def compare(ck: dict[str, dict], sc: dict[str, dict]) -> dict:
    common = set(ck) & set(sc)
    same_links = sum(1 for u in common if sorted(ck[u]["links"]) == sorted(sc[u]["links"]))
    same_text = sum(1 for u in common if (ck[u]["text"] or "") == (sc[u]["text"] or ""))
    same_title = sum(1 for u in common if ck[u]["title"] == sc[u]["title"])
    example = next((u for u in sorted(common) if (ck[u]["text"] or "") != (sc[u]["text"] or "")), None)
    return {"pages_both": len(common), "same_link_set": same_links, "same_text": same_text,
            "same_title": same_title, "text_diff_example": example}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=5000, help="K: pages fetched and parsed by each system")
    parser.add_argument("--pages", type=int, default=50_000, help="size of the generated web")
    parser.add_argument("--hosts", type=int, default=100, help="hosts of the generated web")
    parser.add_argument("--partitions", type=int, default=2, help="fetch tasks (Spark partitions)")
    parser.add_argument("--threads", type=int, default=16, help="fetcher.threads per partition")
    parser.add_argument("--per-host", type=int, default=4, help="crawlkit: fetcher.threads_per_host")
    parser.add_argument("--scrapy-per-host", type=int, default=0,
                        help="Scrapy: CONCURRENT_REQUESTS_PER_DOMAIN (default 0: the total concurrency; "
                             "Scrapy also keeps at most this many persistent connections to the proxy)")
    parser.add_argument("--backends", default="bs4,selectolax",
                        help="parser.backend values to run crawlkit with, comma-separated (bs4 is the default)")
    parser.add_argument("--modes", default="fused,stage",
                        help="where crawlkit parses, comma-separated: fused (in the fetch tasks, "
                             "fetcher.parse = true, the default), fused-nomerge (fused, "
                             "fetcher.merge_spills = false) or stage (a parse stage of its own)")
    parser.add_argument("--warmup", type=int, default=300, help="URLs of an untimed crawlkit warm-up round")
    parser.add_argument("--repeat", type=int, default=1,
                        help="measure crawlkit and Scrapy this many times, alternating (the table shows medians)")
    parser.add_argument("--skip-scrapy", action="store_true")
    parser.add_argument("--skip-inprocess", action="store_true")
    parser.add_argument("--profile", action="store_true", help="cProfile the in-process parse, print top costs")
    parser.add_argument("--keep", help="work directory to keep (default: a temporary one)")
    # the Scrapy child
    parser.add_argument("--scrapy-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--urls-file", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--proxy", help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, default=32, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.scrapy_child:
        return _scrapy_child(args)
    if not args.skip_scrapy:
        try:
            import scrapy  # noqa: F401
        except ImportError:
            print("Scrapy is not installed: .venv/bin/pip install -e '.[bench]' (or run with --skip-scrapy)",
                  file=sys.stderr)
            return 2

    from datetime import datetime

    from crawlkit.conf import load_conf
    from crawlkit.replay import ReplayServer
    from crawlkit.spark import get_spark

    workdir = Path(args.keep or tempfile.mkdtemp(prefix="fetch-parse-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    spec = f"gen:{args.pages},seed=1,hosts={args.hosts}"
    urls, hosts = pick_urls(spec, args.urls + args.warmup, seed=0)
    warm, urls = urls[:args.warmup], urls[args.warmup:]
    hosts = len({u.split("/")[2] for u in urls})
    now = datetime(2026, 1, 1)
    concurrency = args.partitions * args.threads
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"replay web {spec}; {len(urls)} URLs on {hosts} hosts; concurrency {concurrency} "
          f"({args.partitions} x {args.threads} threads), {args.per_host} per host; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores", file=sys.stderr)
    measured: dict[str, list[tuple]] = {}  # row name -> one (pages, wall, cpu, server cpu) per repeat

    def add(name: str, pages: int, wall_s: float, cpu_s: float, server_s: float | None) -> None:
        measured.setdefault(name, []).append((pages, wall_s, cpu_s, server_s))

    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if set(modes) - {"fused", "fused-nomerge", "stage"}:
        parser.error(f"--modes: fused, fused-nomerge or stage, not {args.modes}")
    variants = [f"{b}, {m}" for b in backends for m in modes]   # "lxml, fused"
    profiler = None
    with ReplayServer([spec], workdir=workdir / "replay", changes="1:never") as web:
        def conf_for(variant: str):
            backend, _, mode = variant.partition(", ")
            return load_conf(overrides={"fetcher.parse": mode != "stage",
                "fetcher.merge_spills": mode != "fused-nomerge",
                "crawl.dir": str(workdir / "crawl"), "fetcher.proxy": web.proxy_url, "fetcher.server_delay": 0.0,
                "fetcher.threads": args.threads, "fetcher.threads_per_host": args.per_host,
                "fetcher.respect_robots": False, "generate.partitions": args.partitions,
                "parser.backend": backend, "spark.ui": False})
        spark = get_spark(conf_for(variants[0]))
        tree = TreeCpu(exclude=[web.pid])
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from scale import MemorySampler
        memory = MemorySampler()
        print("warm-up round ...", file=sys.stderr)
        for i, variant in enumerate(variants):
            run_crawlkit_spark(spark, conf_for(variant), warm, f"warmup-{i}", now, tree, web.pid)
        detail: dict = {}
        memory_peaks: dict[str, list[dict]] = {}   # variant -> peak RSS MB per repeat
        for rep in range(args.repeat):
            ck_items = None
            for i, variant in enumerate(variants):
                print(f"[{rep + 1}/{args.repeat}] crawlkit (Spark, {variant}) ...", file=sys.stderr)
                conf = conf_for(variant)
                ck = run_crawlkit_spark(spark, conf, urls, f"bench-{i}-{rep}", now, tree, web.pid, memory)
                pages = ck["parse"]["pages"]
                cpu_f, cpu_p = sum(ck["fetch_cpu"].values()), sum(ck["parse_cpu"].values())
                wall = ck["fetch_wall_s"] + ck["parse_wall_s"]
                by_kind = {k: round(ck["fetch_cpu"][k] + ck["parse_cpu"][k], 1) for k in ck["fetch_cpu"]}
                add(f"crawlkit fetch+parse stages, Spark, parser {variant}", pages, wall, cpu_f + cpu_p,
                    ck["server_cpu_s"])
                add(f"  fetch stage ({variant})", ck["fetch"]["pages"], ck["fetch_wall_s"], cpu_f, None)
                add(f"  parse stage ({variant})", pages, ck["parse_wall_s"], cpu_p, None)
                memory_peaks.setdefault(variant, []).append(ck["memory_mb"])
                detail[f"crawlkit_{variant}_{rep}"] = {
                    "fetch": ck["fetch"], "parse": ck["parse"], "cpu_s_by_process": by_kind,
                    "memory_mb": ck["memory_mb"], "content_files": ck["content_files"],
                    "fetch_cpu_s_by_process": {k: round(v, 2) for k, v in ck["fetch_cpu"].items()},
                    "parse_cpu_s_by_process": {k: round(v, 2) for k, v in ck["parse_cpu"].items()}}
                items = crawlkit_outlinks(spark, conf, f"bench-{i}-{rep}")
                if ck_items is None:
                    ck_items = items
                else:
                    detail[f"same_output_{variants[0]}_vs_{variant}"] = compare(ck_items, items)

            if not args.skip_scrapy:
                print(f"[{rep + 1}/{args.repeat}] Scrapy ...", file=sys.stderr)
                s0 = server_cpu(web.pid)
                sc = run_scrapy(urls, web.proxy_url, workdir, concurrency, args.scrapy_per_host or concurrency)
                s1 = server_cpu(web.pid)
                add("Scrapy, crawl only", len(sc["items"]), sc["crawl_wall_s"], sc["crawl_cpu_s"], s1 - s0)
                add("Scrapy, whole process", len(sc["items"]), sc["wall_s"], sc["cpu_s"], None)
                detail[f"scrapy_{rep}"] = {k: v for k, v in sc.items() if k != "items"}
                detail[f"same_output_crawlkit_{variants[0]}_vs_scrapy"] = compare(ck_items, sc["items"])

        if not args.skip_inprocess:
            for backend in backends:
                print(f"crawlkit in-process ({backend}) ...", file=sys.stderr)
                ip = run_crawlkit_inprocess(conf_for(f"{backend}, stage"), urls, f"inprocess-{backend}", now, workdir, web.pid,
                                            args.profile and backend == backends[0])
                add(f"crawlkit per-partition functions, no Spark, parser {backend}", ip["parsed"],
                    ip["fetch_wall_s"] + ip["parse_wall_s"], ip["fetch_cpu_s"] + ip["parse_cpu_s"], ip["server_cpu_s"])
                add(f"  fetch ({backend}, no Spark)", ip["fetched"], ip["fetch_wall_s"], ip["fetch_cpu_s"], None)
                add(f"  parse ({backend}, no Spark)", ip["parsed"], ip["parse_wall_s"], ip["parse_cpu_s"], None)
                profiler = ip.pop("profiler") or profiler
        memory.close()
        spark.stop()

    from statistics import median

    def per_core(m: tuple) -> float:
        return m[0] / m[2] if m[2] else float("nan")

    scrapy = measured.get("Scrapy, crawl only")
    print(f"\nload average {load_start} at the start, {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end "
          f"(1, 5, 15 min); {os.cpu_count()} cores; "
          f"{len(urls)} URLs on {hosts} hosts of {spec}; concurrency {concurrency}, {args.per_host} per host "
          f"(crawlkit), {args.scrapy_per_host or concurrency} per host (Scrapy); medians of {args.repeat} repeat(s)\n")
    print("| system | pages | wall s | CPU s | pages/s | pages/s per core | ratio to Scrapy | replay server CPU ms/page |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, runs in measured.items():
        n = runs[0][0]
        wall_s, cpu_s = median(r[1] for r in runs), median(r[2] for r in runs)
        core = n / cpu_s if cpu_s else float("nan")
        ratio = ""
        if scrapy and len(runs) == len(scrapy):  # the median of the ratios of each repeat
            ratio = f"{median(per_core(r) / per_core(q) for r, q in zip(runs, scrapy)):.2f}"
        elif scrapy:
            ratio = f"{core / median(per_core(q) for q in scrapy):.2f}"
        servers = [r[3] for r in runs if r[3] is not None]
        server = f"{median(servers) / n * 1000:.2f}" if servers and n else ""
        print(f"| {name} | {n} | {wall_s:.1f} | {cpu_s:.1f} | {n / wall_s:.0f} | {core:.0f} | {ratio} | {server} |")
    print("\npeak RSS MB over the two stages, largest of the repeats (driver Python / JVM, driver and "
          "executor in local mode / Python workers, summed: an upper bound):")
    for variant, peaks in memory_peaks.items():
        print(f"  crawlkit {variant}: " + " / ".join(str(max(p[k] for p in peaks)) for k in ("driver_py", "jvm", "workers")))
    print("\nfiles in the segment's content/, per repeat:")
    for variant in variants:
        print(f"  crawlkit {variant}: " + ", ".join(str(detail[f"crawlkit_{variant}_{rep}"]["content_files"])
                                                   for rep in range(args.repeat)))
    scrapy_rss = [v["max_rss_mb"] for k, v in detail.items() if k.startswith("scrapy_")]
    if scrapy_rss:
        print(f"  Scrapy (whole process): {max(scrapy_rss):.0f}")
    if scrapy and args.repeat > 1:
        for variant in variants:
            runs = measured[f"crawlkit fetch+parse stages, Spark, parser {variant}"]
            print(f"\nratio per repeat, crawlkit ({variant}) / Scrapy pages per CPU-s: "
                  + ", ".join(f"{per_core(r) / per_core(q):.2f}" for r, q in zip(runs, scrapy)))
    print()
    print(json.dumps(detail, default=str))
    if profiler is not None:
        import io
        import pstats
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        print(f"\ncProfile of the in-process parse, parser {backends[0]} (top 25 by own time):")
        print(out.getvalue())
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
