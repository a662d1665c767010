"""The ``crawlkit`` command: one subcommand per stage, plus crawl, inspection and tools.

Every subcommand takes ``--conf key=value`` (repeatable), ``--site FILE``, ``--crawl-dir``
and ``--master``; the precedence is defaults < site file < --conf (see conf/). ``--now`` sets
the logical time of a stage (ISO 8601, UTC); it defaults to the wall clock, which is read
here, at the edge, and nowhere inside the library.
"""
from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone

from crawlkit.conf import ConfError, load_conf, parse_assignments
from crawlkit.lock import LockedError
from crawlkit.resume import SegmentStateError
from crawlkit.storage import NewerTableError

STAGES = {
    "inject": "add seed URLs to the crawldb",
    "sitemaps": "read the sitemaps of the crawldb's hosts: add the URLs they list, make changed pages due",
    "generate": "write the next fetch list (top-N by score, capped per host)",
    "fetch": "fetch a segment's fetch list, politely",
    "parse": "parse a segment's fetched content",
    "updatedb": "apply a fetched and parsed segment to the crawldb and link table",
    "dedup": "mark pages whose visible text a kept page already has as duplicate",
    "score": "run a scorer (PageRank, OPIC, ...) and write the scores to the crawldb",
    "evict": "apply the limited buffer (crawl.buffer_pages): evict the lowest-scored stored pages",
    "crawl": "inject, then run rounds of [sitemaps/]generate/fetch/parse/updatedb/dedup/score",
    "round": "one round over an existing crawldb (cron-friendly)",
    "export": "export scores as search-index boosts",
    "maintain": ("compact the crawl's Delta tables and delete the files no kept version needs (OPTIMIZE, "
                 "VACUUM); with maintain.keep_segments, old segments cut down to what is still read"),
    "warc": "write a segment's fetched responses as WARC 1.1 files (archives, replay tools)",
    "stats": "crawldb statistics: counts by status, top hosts, score and fetch-interval distributions",
    "dump": "one URL's crawldb record with its inlinks (and anchors) and outlinks",
    "top": "the top pages by the active score",
    "report": "write a self-contained HTML report of a crawl directory",
    "replay": "serve the local replay web (graph, WARC or generated)",
    "evaluate": "evaluate a finished crawl's ordering against a full web graph",
}
# Read-only views of a crawl directory (crawlkit.inspect, crawlkit.report).
INSPECTION = ("stats", "dump", "top", "report")

# Commands that change the crawl directory hold its lock while they run.
SPILLERS = {"generate", "fetch", "round", "crawl"}   # commands whose fetch tasks write the crawl dir
WRITERS = {"inject", "sitemaps", "generate", "fetch", "parse", "updatedb", "dedup", "score", "evict", "crawl", "round",
           "maintain"}


def utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)


def parse_time(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc).replace(tzinfo=None)
    return value


def parse_duration(text: str) -> float:
    """'90', '30s', '15m', '6h', '1d', '2w' -> seconds."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    text = text.strip().lower()
    try:
        if text and text[-1] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (use e.g. 30m, 6h, 1d)") from None


def _count(text: str) -> int:
    """A number of items: an integer, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a count (0 or more), got {text!r}")
    return value


def parse_every(text: str) -> float:
    """--every: a duration above zero (0 would start rounds back to back)."""
    seconds = parse_duration(text)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"--every needs a duration above zero, got {text!r}")
    return seconds


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="override a configuration key (repeatable)")
    parser.add_argument("--site", help="site configuration file (TOML)")
    parser.add_argument("--crawl-dir", help="crawl directory (sets crawl.dir)")
    parser.add_argument("--master", help="Spark master URL (sets spark.master)")
    parser.add_argument("--now", type=parse_time, help="logical time of the stage (ISO 8601, UTC)")
    parser.add_argument("--quiet", action="store_true", help="print only errors and the final JSON counters")
    parser.add_argument("--break-lock", action="store_true",
                        help="remove a crawl-directory lock left by a process that died on another machine "
                             "(one on this machine is broken without asking), then proceed")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="crawlkit", description="An importance-ordered batch web crawler on Spark.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in STAGES.items():
        if name == "replay":
            sub.add_parser(name, help=help_text, add_help=False)
            continue
        p = sub.add_parser(name, help=help_text, description=help_text)
        _common(p)
        if name in ("inject", "crawl"):
            p.add_argument("--seeds", required=(name == "inject"), help="seeds file, one URL per line")
            p.add_argument("--update", action="store_true", default=None,
                           help="merge the seed lines' metadata into known URLs (sets inject.update)")
            p.add_argument("--refetch", action="store_true", default=None,
                           help="make known seed URLs due now (sets inject.refetch)")
        if name in ("fetch", "parse", "updatedb", "dedup", "score", "evict", "warc"):
            p.add_argument("--segment", help="segment name (default: the newest)")
        if name == "generate":
            p.add_argument("--topN", type=int, help="URLs to generate (sets crawl.topN)")
        if name == "crawl":
            p.add_argument("--rounds", type=int, help="rounds to run (sets crawl.rounds)")
            p.add_argument("--topN", type=int, help="URLs per round (sets crawl.topN)")
            p.add_argument("--every", type=parse_every, help="start a round every DURATION (e.g. 30m, 6h, 1d)")
            p.add_argument("--until", type=parse_time, help="with --every: stop at this time (ISO 8601, UTC)")
        if name == "round":
            p.add_argument("--topN", type=int, help="URLs to generate (sets crawl.topN)")
        if name in ("round", "crawl"):
            p.add_argument("--abandon-segment", metavar="SEGMENT",
                           help="do not continue this unfinished segment: release its URLs to "
                                "the next generate (its files are kept), then run as usual")
        if name == "export":
            p.add_argument("--format", help="parquet, jsonl, solr or elasticsearch (sets export.format)")
            p.add_argument("--out", help="output directory (default: <crawl dir>/exports/<format>-v<version>)")
            p.add_argument("--since-version", type=int, metavar="V",
                           help="only what changed since the newest export of crawldb version V, plus deletions")
            p.add_argument("--since-export", metavar="DIR",
                           help="only what changed since the complete export in DIR, plus deletions")
        if name == "warc":
            p.add_argument("--out", required=True, help="directory to write the .warc.gz files to (path or URI)")
        if name == "evaluate":
            from crawlkit.evaluate.cli import add_arguments
            add_arguments(p)
        if name == "score":
            p.add_argument("--scorer", help="scorer name (sets scoring.scorer)")
            p.add_argument("--list", action="store_true", help="list the available scorers")
        if name in INSPECTION:
            p.add_argument("--version", type=int, metavar="V",
                           help="crawldb version to read (default: the latest); the linkdb is read as it was then")
        if name in ("stats", "dump", "top"):
            p.add_argument("--json", action="store_true", help="print everything as one JSON line instead of text")
        if name == "stats":
            p.add_argument("--hosts", type=_count, default=10, metavar="N", help="hosts to list (default 10)")
        if name == "dump":
            p.add_argument("--url", required=True, help="the URL (normalized as inject does)")
            p.add_argument("--limit", type=_count, default=100, metavar="N", help="inlinks and outlinks to list (default 100)")
        if name == "top":
            p.add_argument("--n", type=_count, default=20, metavar="N", help="pages to list (default 20)")
        if name == "report":
            p.add_argument("--out", help="HTML file to write (default: <crawl dir>/report.html)")
    return parser


# The command line's own options that set a configuration key: (attribute, option, key).
FLAG_KEYS = (("crawl_dir", "--crawl-dir", "crawl.dir"), ("master", "--master", "spark.master"),
             ("topN", "--topN", "crawl.topN"), ("rounds", "--rounds", "crawl.rounds"),
             ("scorer", "--scorer", "scoring.scorer"), ("update", "--update", "inject.update"),
             ("refetch", "--refetch", "inject.refetch"))


def _conf_from(args):
    flags = {option: {key: getattr(args, attribute)} for attribute, option, key in FLAG_KEYS
             if getattr(args, attribute, None) is not None}
    return load_conf(site=args.site, overrides=parse_assignments(args.conf), flags=flags)


def loop_rounds(conf) -> int | None:
    """How many rounds ``crawl --every`` runs: ``crawl.rounds`` where the operator set it
    (``--rounds``, ``--conf``, a site file), else no bound (its default 3 is for a plain crawl)."""
    return conf["crawl.rounds"] if "crawl.rounds" in conf.explicit() else None


def _require_applied(spark, conf, segment: str) -> None:
    """Scoring a segment (OPIC moves its cash) before updatedb applied it would move the cash
    over a link table without its links, and tag it done: the round's own scoring would then
    skip it."""
    from crawlkit import storage
    db_path = storage.crawldb_path(conf["crawl.dir"])
    tag = f"updatedb:{segment}"
    if not (storage.is_delta(spark, db_path)
            and storage.was_applied(spark, db_path, tag, since=storage.generated_tag(segment))):
        raise SegmentStateError(f"segment {segment} is not applied to the crawldb yet: run updatedb first")


def _latest_segment(spark, conf) -> str:
    from crawlkit import storage
    segments = storage.list_segments(spark, conf["crawl.dir"])
    if not segments:
        raise SystemExit(f"crawlkit: no segments under {conf['crawl.dir']}")
    return segments[-1]


def run(args) -> dict:
    """Dispatch a parsed command line; returns the stage's counters."""
    from crawlkit.spark import get_spark, job_group

    conf = _conf_from(args)
    if conf["focus.words"] or conf["focus.synonyms"]:   # a bad query word fails now, not after a fetch
        from crawlkit.scoring.focus.query import load_query
        load_query(conf)
    if args.command == "evaluate":  # runs on the driver; Spark only for the Delta crawldb
        from crawlkit.evaluate.cli import run_evaluate
        return run_evaluate(args, conf)
    if args.command in SPILLERS:   # before Spark starts, and before a URL is locked or fetched
        from crawlkit.stages.fetch import check_executor_scheme
        check_executor_scheme(conf["crawl.dir"])
    spark = get_spark(conf, checkpoints=args.command not in INSPECTION)
    now = args.now or utc_now()
    say = (lambda _msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr))
    cmd = args.command
    if conf.changed():
        say("options in effect: " + json.dumps(conf.changed(), default=str, sort_keys=True))
    if cmd in SPILLERS:   # a crawl dir without a scheme, as Hadoop resolves it; no speculation
        from crawlkit.stages.fetch import check_no_speculation, executor_uri
        executor_uri(spark, conf["crawl.dir"])
        check_no_speculation(spark.sparkContext.getConf().get("spark.speculation", "false"))
    with job_group(spark, cmd, getattr(args, "segment", None)):
        if cmd in WRITERS:
            from crawlkit.lock import round_lock
            with round_lock(spark, conf["crawl.dir"], cmd, break_lock=args.break_lock,
                            heartbeat=conf["crawl.lock_heartbeat"], expiry=conf["crawl.lock_expiry"]):
                return _dispatch(cmd, args, spark, conf, now, say)
        return _dispatch(cmd, args, spark, conf, now, say)


def _abandon(args, spark, conf, now, say) -> dict:
    """--abandon-segment: release the segment's locks before the round looks for one to resume."""
    if not args.abandon_segment:
        return {}
    from crawlkit.resume import abandon_segment
    counters = abandon_segment(spark, conf, args.abandon_segment, now)
    say(f"abandoned segment {counters['segment']}: {counters['released']} URLs released")
    return {"abandoned": counters}


def _dispatch(cmd, args, spark, conf, now, say) -> dict:
    if cmd == "inject":
        from crawlkit.stages.inject import run_inject
        counters = run_inject(spark, args.seeds, conf, now)
        for problem in counters["errors"] + counters["repeats"]:
            say(f"seeds {problem}")
        return counters
    if cmd == "sitemaps":
        from crawlkit.stages.sitemaps import run_sitemaps
        return run_sitemaps(spark, conf, now)
    if cmd == "generate":
        from crawlkit.stages.generate import run_generate
        return run_generate(spark, conf, now)   # a fresh segment name, never an existing folder
    if cmd == "fetch":
        from crawlkit.stages.fetch import run_fetch
        return run_fetch(spark, conf, now, args.segment or _latest_segment(spark, conf))
    if cmd == "parse":
        from crawlkit.stages.parse import run_parse
        return run_parse(spark, conf, args.segment or _latest_segment(spark, conf))
    if cmd == "updatedb":
        from crawlkit.stages.updatedb import run_updatedb
        return run_updatedb(spark, conf, now, args.segment or _latest_segment(spark, conf))
    if cmd == "dedup":
        from crawlkit.stages.dedup import run_dedup
        return run_dedup(spark, conf, args.segment or _latest_segment(spark, conf))
    if cmd == "score":
        from crawlkit.scoring import run_scoring
        if args.segment:
            _require_applied(spark, conf, args.segment)
        return run_scoring(spark, conf["crawl.dir"], conf, now, args.segment)
    if cmd == "evict":
        from crawlkit.stages.evict import run_evict
        return run_evict(spark, conf, now, args.segment or _latest_segment(spark, conf))
    if cmd == "round":
        from crawlkit.crawl import run_round
        abandoned = _abandon(args, spark, conf, now, say)
        report = run_round(spark, conf, now, say)
        return {"segment": report.segment, "seconds": report.seconds, "counters": report.counters,
                "resumed_from": report.resumed_from, **abandoned}
    if cmd == "crawl":
        from crawlkit.crawl import run_crawl, run_every
        _abandon(args, spark, conf, now, say)
        if args.every is not None:
            reports = run_every(spark, conf, args.seeds, args.every, args.until, loop_rounds(conf),
                                utc_now, time.sleep, say)
        else:
            # --now pins every round to that logical time (reproducible runs); else the wall clock
            clock = (lambda: args.now) if args.now else utc_now
            reports = run_crawl(spark, conf, args.seeds, conf["crawl.rounds"], clock, say)
        return {"rounds": [{"segment": r.segment, "seconds": r.seconds, "counters": r.counters,
                            "resumed_from": r.resumed_from} for r in reports]}
    if cmd == "export":
        from crawlkit.export import run_export
        if args.format:
            conf = conf.with_overrides({"export.format": args.format}, origin="--format")
        try:
            return run_export(spark, conf, args.out, args.since_version, args.since_export)
        except ConfError:
            raise
        except ValueError as exc:
            raise SystemExit(f"crawlkit export: {exc}") from None
    if cmd == "maintain":
        from crawlkit.stages.maintain import run_maintain
        return run_maintain(spark, conf, now)
    if cmd == "warc":
        from crawlkit.stages.warc import run_warc
        return run_warc(spark, conf, args.segment or _latest_segment(spark, conf), args.out)
    if cmd in INSPECTION:
        from crawlkit.inspect.command import run_inspection
        return run_inspection(spark, conf, args, now, (lambda _text: None) if args.quiet else print)
    raise AssertionError(f"no dispatch for command {cmd!r}")   # build_parser lists only these


@contextmanager
def _terminate_as_exit():
    """SIGTERM (cron's timeout, systemd stopping a unit, a cluster scheduler) ends the command
    as an exit, so its ``finally`` blocks run: the round lock is released rather than left for
    every later round to be refused until --break-lock. What the stage committed stands; what
    it had not is left as a crash leaves it (the next round resumes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def exit_on_term(_signum, _frame):
        raise SystemExit(128 + signal.SIGTERM)
    previous = signal.signal(signal.SIGTERM, exit_on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "replay":
        from crawlkit.replay.cli import main as replay_main
        return replay_main(argv[1:]) or 0
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "until", None) is not None and args.every is None:
        parser.error("--until needs --every (it ends a recrawl loop)")
    if getattr(args, "every", None) is not None and args.now is not None:
        parser.error("--now and --every: a recrawl loop keeps the wall clock's time; give one")
    if not args.command:
        parser.print_help()
        return 2
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "score" and args.list:   # no crawl, no Spark, no lock: just the names
        from crawlkit.scoring import list_scorers
        print(json.dumps({"scorers": list_scorers()}, sort_keys=True))
        return 0
    try:
        with _terminate_as_exit():
            counters = run(args)
    except ConfError as exc:
        print(f"crawlkit: configuration error: {exc}", file=sys.stderr)
        return 2
    except LockedError as exc:
        print(f"crawlkit: {exc}", file=sys.stderr)
        return 3
    except (SegmentStateError, NewerTableError) as exc:
        print(f"crawlkit: {exc}", file=sys.stderr)
        return 4
    print(json.dumps(counters, default=str, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
