"""``crawlkit replay SOURCE...``: run the replay web (or write a generated web's files).

Examples::

    crawlkit replay gen:10000,seed=1 --port 8080 --access-log access.jsonl
    crawlkit replay /work/shared/data/hollins --faults faults.toml --robots robots.toml
    crawlkit replay pages.warc.gz --site cs.cornell.edu --port 8081   # a plain origin server
    crawlkit replay gen:1000000,seed=3 --write-links links.tsv.gz --write-labels labels.tsv
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from .accesslog import AccessLog
from .changes import DEFAULT_CHANGES, Clock
from .generated import GeneratedWeb
from .graph import write_links
from .server import ReplayHTTPServer
from .web import load_web


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="crawlkit replay",
        description="Serve a replay web on 127.0.0.1, as an HTTP forward proxy for any host (docs/replay.md).")
    parser.add_argument("sources", nargs="+", metavar="SOURCE",
                        help="gen:N[,key=value...] | links.tsv[.gz] | pages.warc[.gz] | a folder of those")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port; 0 picks a free one (default 8080)")
    parser.add_argument("--site", help="host to serve origin-form requests (GET /path) for, instead of the Host header")
    parser.add_argument("--access-log", metavar="FILE", help="append one JSON line per request to FILE")
    parser.add_argument("--faults", metavar="FILE", help="fault rules, TOML or JSON")
    parser.add_argument("--robots", metavar="FILE", help="robots.txt per host, TOML or JSON")
    parser.add_argument("--clock", metavar="FILE", help="read the clock (seconds) from FILE whenever it changes")
    parser.add_argument("--clock-start", type=float, default=0.0, metavar="T", help="clock at start (default 0)")
    parser.add_argument("--changes", default=DEFAULT_CHANGES, metavar="SPEC",
                        help=f"page change classes SHARE:INTERVAL,... (default {DEFAULT_CHANGES}; 1:never: no change)")
    parser.add_argument("--seed", type=int, default=0, help="seed for page text, change times and fault rates")
    parser.add_argument("--ready-file", metavar="FILE", help="write the bound port to FILE once listening")
    parser.add_argument("--stop-on-eof", action="store_true",
                        help="stop when stdin reaches EOF (ReplayServer: the server dies with its parent)")
    parser.add_argument("--write-links", metavar="FILE", help="write the generated web's links.tsv[.gz] and exit")
    parser.add_argument("--write-labels", metavar="FILE", help="write the generated web's url/topical labels and exit")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.write_links or args.write_labels:
        return _write_generated(args)
    try:
        web = load_web(args.sources, faults=args.faults, robots=args.robots, changes=args.changes,
                       seed=args.seed, clock=Clock(args.clock_start, args.clock))
    except (OSError, ValueError) as error:
        print(f"crawlkit replay: {error}", file=sys.stderr)
        return 2
    server = ReplayHTTPServer(web, args.site, AccessLog(args.access_log) if args.access_log else None)
    asyncio.run(server.serve(args.host, args.port, args.ready_file, args.stop_on_eof))
    return 0


def _write_generated(args: argparse.Namespace) -> int:
    generated = [s for s in args.sources if s.startswith("gen:")]
    if len(generated) != 1:
        print("crawlkit replay: --write-links/--write-labels need exactly one gen:... source", file=sys.stderr)
        return 2
    web = GeneratedWeb(generated[0])
    if args.write_links:
        write_links(web, args.write_links)
    if args.write_labels:
        web.write_labels(args.write_labels)
    return 0
