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
                                      "indegree>=:G (at least G, the paper's), "
                                      "pagerank:H or pagerank:P%% (top by PageRank); default "
                                      "indegree:3,indegree:10,indegree:100,pagerank:1%%")
    parser.add_argument("--buffer", type=buffer_arg,
                        help="limited buffer: B pages replayed with the crawler's estimates as of "
                             "each round (the crawldb's history), or 'crawldb' for the crawler's "
                             "own buffer (crawl.buffer_pages)")
    parser.add_argument("--labels", help="labels.tsv (url, class, site) for harvest rate and recall")
    parser.add_argument("--topic", help="the on-topic class of --labels, e.g. course")
    parser.add_argument("--name", help="ordering name in the outputs (default: the crawl directory's name)")
    parser.add_argument("--out", help="local output directory (default <crawl dir>/evaluation)")


def run_evaluate(args, conf) -> dict:
    """Evaluate, write <name>.csv/.png/.md, show the markdown; returns the summary counters.
    Spark starts only for ``--buffer`` (it reads the crawldb, a Delta table)."""
    from crawlkit.evaluate.crawl import read_buffer, read_round_estimates
    from crawlkit.evaluate.evaluation import evaluate_crawl
    from crawlkit.evaluate.hot import DEFAULT_HOT

    if not args.web and not args.labels:
        raise SystemExit("crawlkit evaluate: give --web, --labels, or both")
    if bool(args.labels) != bool(args.topic):
        raise SystemExit("crawlkit evaluate: --labels and --topic go together")
    crawl_dir = conf["crawl.dir"]
    if not args.out and "://" in crawl_dir:
        raise SystemExit("crawlkit evaluate: --out (a local directory) is needed for a crawl at a URI")
    try:
        reads = {}
        if args.buffer is not None:
            from crawlkit.spark import get_spark
            spark = get_spark(conf, checkpoints=False)   # reads only
            reads = ({"buffer": args.buffer, "round_estimates": read_round_estimates(spark, crawl_dir)}
                     if isinstance(args.buffer, int) else {"buffered": read_buffer(spark, crawl_dir)})
        result = evaluate_crawl(crawl_dir, args.web, args.name, hot=args.hot or DEFAULT_HOT,
                                importance=conf["scoring.importance"], access_log=args.access_log,
                                labels=args.labels, topic=args.topic, **reads)
    except ValueError as exc:   # no crawled pages, a hot-set spec or topic that does not parse,
        raise SystemExit(f"crawlkit evaluate: {exc}") from None   # a round's estimates lost
    paths = result.write(args.out or f"{crawl_dir.rstrip('/')}/evaluation")
    if not args.quiet:
        print(result.markdown(), file=sys.stderr)
    return {**result.summary(), "outputs": paths}
