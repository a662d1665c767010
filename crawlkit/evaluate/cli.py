"""``crawlkit evaluate``: its arguments and its run. Kept import-light (the heavy modules load
only when the command runs) because the main parser builds every subcommand."""
from __future__ import annotations

import argparse
import sys


def buffer_arg(text: str) -> int | str:
    if text == "crawldb":
        return text
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise argparse.ArgumentTypeError("expected a page count B > 0 or 'crawldb'")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--web", help="the full web: links.tsv(.gz), src TAB dst (optional with --labels)")
    parser.add_argument("--access-log", help="replay-web access log to cross-check the crawl order with")
    parser.add_argument("--hot", help="hot pages, comma-separated: indegree:G (more than G in-links), "
                                      "pagerank:H or pagerank:P%% (top by PageRank); default "
                                      "indegree:3,indegree:10,indegree:100,pagerank:1%%")
    parser.add_argument("--buffer", type=buffer_arg,
                        help="limited buffer: B pages replayed with the fetch-list scores, or "
                             "'crawldb' for the crawler's own buffer (status evicted)")
    parser.add_argument("--labels", help="labels.tsv (url, class, site) for harvest rate and recall")
    parser.add_argument("--topic", help="the on-topic class of --labels, e.g. course")
    parser.add_argument("--name", help="ordering name in the outputs (default: the crawl directory's name)")
    parser.add_argument("--out", help="local output directory (default <crawl dir>/evaluation)")


def run_evaluate(args, conf) -> dict:
    """Evaluate, write <name>.csv/.png/.md, show the markdown; returns the summary counters.
    Spark starts only for ``--buffer crawldb`` (the crawldb is Delta)."""
    from crawlkit.evaluate.crawl import read_evicted
    from crawlkit.evaluate.evaluation import evaluate_crawl
    from crawlkit.evaluate.hot import DEFAULT_HOT

    if not args.web and not args.labels:
        raise SystemExit("crawlkit evaluate: give --web, --labels, or both")
    if bool(args.labels) != bool(args.topic):
        raise SystemExit("crawlkit evaluate: --labels and --topic go together")
    crawl_dir = conf["crawl.dir"]
    if not args.out and "://" in crawl_dir:
        raise SystemExit("crawlkit evaluate: --out (a local directory) is needed for a crawl at a URI")
    evicted = None
    if args.buffer == "crawldb":
        from crawlkit.spark import get_spark
        evicted = read_evicted(get_spark(conf, checkpoints=False), crawl_dir)   # reads only
    try:
        result = evaluate_crawl(crawl_dir, args.web, args.name, hot=args.hot or DEFAULT_HOT,
                                importance=conf["scoring.importance"],
                                buffer=args.buffer if isinstance(args.buffer, int) else None,
                                evicted=evicted, access_log=args.access_log, labels=args.labels,
                                topic=args.topic)
    except ValueError as exc:   # no crawled pages, a hot-set spec or topic that does not parse
        raise SystemExit(f"crawlkit evaluate: {exc}") from None
    paths = result.write(args.out or f"{crawl_dir.rstrip('/')}/evaluation")
    if not args.quiet:
        print(result.markdown(), file=sys.stderr)
    return {**result.summary(), "outputs": paths}
