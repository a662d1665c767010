"""The CLI's inspection commands (stats, dump, top, report): read a snapshot, print text or
return the whole dict for ``--json``; the CLI prints the returned dict as its JSON line."""
from __future__ import annotations

from datetime import datetime
from typing import Callable

from pyspark.sql import SparkSession

from crawlkit.conf import Conf
from crawlkit.inspect.pages import dump, top
from crawlkit.inspect.snapshot import snapshot
from crawlkit.inspect.stats import crawl_stats
from crawlkit.inspect.text import format_dump, format_stats, format_top
from crawlkit.urls import UrlNormalizer


def run_inspection(spark: SparkSession, conf: Conf, args, now: datetime, show: Callable[[str], None]) -> dict:
    """Run one inspection command. Human-readable output goes to ``show`` and the result is
    the versions read; with ``--json`` nothing is shown and the result is everything."""
    crawl_dir = conf["crawl.dir"]
    try:
        if args.command == "report":
            from crawlkit.report import write_report
            return write_report(spark, crawl_dir, conf, now, args.out, args.version)
        snap = snapshot(spark, crawl_dir, args.version)
    except ValueError as exc:
        raise SystemExit(f"crawlkit {args.command}: {exc}") from None
    if args.command == "stats":
        result, text = crawl_stats(snap, conf, now, args.hosts), format_stats
    elif args.command == "dump":
        url = UrlNormalizer(conf.section("urls"))(args.url) or args.url  # the crawldb keys are normalized
        result, text = dump(snap, url, args.limit), format_dump
    else:
        pages = top(snap, args.n)
        result, text = {**snap.versions(), "pages": pages}, (lambda _: format_top(pages))
    if args.json:
        return result
    show(text(result))
    return snap.versions()
