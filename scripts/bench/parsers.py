"""HTML parser backends on the same real pages: pages/s each and whether their output is identical.

Issue #12. Runs crawlkit's ``parse_html`` (the whole page extraction: text, title, outlinks
with anchors and link metadata, signature) with each tree backend over every HTML page of a
WARC (default: the WebKB Cornell + Texas pages, 1,694 real 1996-97 university pages with all
the malformed markup of their time):

- ``bs4``: BeautifulSoup with its lxml tree builder;
- ``selectolax``: lexbor through selectolax;
- ``lxml``: lxml's own HTML parser (libxml2, the same parser bs4 drives) used directly with a
  parser target (events straight into crawlkit's extractor, no tree): crawlkit's
  ``crawlkit.parse.backends.walk_lxml``, the default ``parser.backend``.

Backends are timed in rounds (each round runs every backend once over all pages, in rotating
order; the best round counts), as CPU seconds of this process (pages per CPU-second) and wall.
A second table times the tree building alone (no extraction). Then the outputs are compared
with bs4's page by page: outlinks (URL list in order; anchors and metadata), text, title and
the other fields; the number of mismatching pages per field and a few diffs are printed.

    .venv/bin/python scripts/bench/parsers.py
    .venv/bin/python scripts/bench/parsers.py --warc other.warc.gz --rounds 5 --diffs 5
"""
from __future__ import annotations

import argparse
import difflib
import os
import sys
import time

from lxml import etree

from crawlkit.parse.html import parse_html

DEFAULT_WARC = "/work/shared/data/webkb-cornell-texas/pages.warc.gz"


def read_pages(path: str, limit: int = 0) -> list[tuple[str, bytes, str | None, dict]]:
    """(url, body, content type, headers) of the WARC's HTML responses."""
    from warcio.archiveiterator import ArchiveIterator
    pages = []
    with open(path, "rb") as stream:
        for record in ArchiveIterator(stream):
            if record.rec_type != "response" or record.http_headers is None:
                continue
            content_type = record.http_headers.get_header("Content-Type")
            body = record.content_stream().read()
            if content_type and "html" not in content_type.lower():
                continue
            if not content_type and b"<" not in body[:2048]:
                continue
            headers = dict(record.http_headers.headers)
            pages.append((record.rec_headers.get_header("WARC-Target-URI"), body, content_type or "text/html", headers))
            if limit and len(pages) >= limit:
                break
    return pages


def run_backend(backend: str, pages) -> tuple[list[dict], float, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    results = [parse_html(url, body, ctype, headers, backend=backend) for url, body, ctype, headers in pages]
    return results, time.process_time() - c0, time.perf_counter() - t0


def tree_only(backend: str, markups: list[str]) -> float:
    from bs4 import BeautifulSoup
    from selectolax.lexbor import LexborHTMLParser
    build = {"bs4": lambda m: BeautifulSoup(m, "lxml", multi_valued_attributes=None),
             "selectolax": lambda m: LexborHTMLParser(m).root,
             "lxml": lambda m: etree.fromstring(m, etree.HTMLParser()) if m.strip() else None}[backend]
    c0 = time.process_time()
    for markup in markups:
        build(markup)
    return time.process_time() - c0


FIELDS = ("links", "anchors_meta", "text", "title", "other")


def differences(a: dict, b: dict) -> list[str]:
    """Fields of two parse results that differ (links: the outlink URL lists in order)."""
    out = []
    if [o["url"] for o in a["outlinks"]] != [o["url"] for o in b["outlinks"]]:
        out.append("links")
    elif a["outlinks"] != b["outlinks"]:
        out.append("anchors_meta")
    if a["text"] != b["text"]:
        out.append("text")
    if a["title"] != b["title"]:
        out.append("title")
    rest = ("lang", "noindex", "nofollow", "canonical", "base", "refresh", "signature", "error", "outlinks_truncated")
    if any(a[k] != b[k] for k in rest):
        out.append("other")
    return out


def show_diff(url: str, field: str, a: dict, b: dict, name: str) -> str:
    if field == "links":
        left, right = [o["url"] for o in a["outlinks"]], [o["url"] for o in b["outlinks"]]
        only_a, only_b = [u for u in left if u not in set(right)], [u for u in right if u not in set(left)]
        detail = f"only bs4: {only_a[:3]} only {name}: {only_b[:3]}" if only_a or only_b else "same URLs, other order"
        return f"  {url} [links] bs4 {len(left)}, {name} {len(right)}; {detail}"
    if field == "anchors_meta":
        for x, y in zip(a["outlinks"], b["outlinks"]):
            if x != y:
                keys = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
                return f"  {url} [anchors/meta] {x['url']}: bs4 {[x.get(k) for k in keys]!r:.200} {name} {[y.get(k) for k in keys]!r:.200}"
    if field in ("text", "title"):
        left, right = (a[field] or "").split(), (b[field] or "").split()
        matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op != "equal":
                context = " ".join(left[max(0, i1 - 4):i1])
                return (f"  {url} [{field}] ...{context} | bs4: {' '.join(left[i1:i2])[:120]!r} "
                        f"{name}: {' '.join(right[j1:j2])[:120]!r}")
    keys = [k for k in ("lang", "noindex", "nofollow", "canonical", "base", "refresh", "signature", "error") if a[k] != b[k]]
    return f"  {url} [{field}] " + "; ".join(f"{k}: bs4 {a[k]!r} {name} {b[k]!r}" for k in keys)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warc", default=DEFAULT_WARC)
    parser.add_argument("--backends", default="bs4,selectolax,lxml")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds (the best counts)")
    parser.add_argument("--limit", type=int, default=0, help="at most this many pages (0: all)")
    parser.add_argument("--diffs", type=int, default=3, help="diffs shown per backend and field")
    args = parser.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]

    pages = read_pages(args.warc, args.limit)
    megabytes = sum(len(p[1]) for p in pages) / 1e6
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{len(pages)} HTML pages, {megabytes:.1f} MB, from {args.warc}; load average {load}; "
          f"{os.cpu_count()} cores", file=sys.stderr)

    results: dict[str, list[dict]] = {}
    cpu: dict[str, list[float]] = {b: [] for b in backends}
    wall: dict[str, list[float]] = {b: [] for b in backends}
    for r in range(args.rounds):
        order = backends[r % len(backends):] + backends[:r % len(backends)]
        for backend in order:
            results[backend], c, w = run_backend(backend, pages)
            cpu[backend].append(c)
            wall[backend].append(w)

    from crawlkit.parse.charset import decode_body
    markups = [decode_body(body, ctype)[0] for _, body, ctype, _ in pages]
    tree_cpu = {b: min(tree_only(b, markups) for _ in range(args.rounds)) for b in backends}

    n = len(pages)
    base_cpu = min(cpu[backends[0]])
    print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min); {os.cpu_count()} cores; "
          f"{n} pages ({megabytes:.1f} MB); best of {args.rounds} rounds\n")
    print(f"| backend | pages/CPU-s (full parse_html) | CPU ms/page | wall pages/s | speed-up vs {backends[0]} "
          f"| tree only: pages/CPU-s | pages differing from {backends[0]}: " + " / ".join(FIELDS) + " |")
    print("|---|---:|---:|---:|---:|---:|---|")
    mismatches: dict[str, dict[str, list[str]]] = {}
    for backend in backends:
        per_field: dict[str, list[str]] = {f: [] for f in FIELDS}
        if backend != backends[0]:
            for (url, *_), a, b in zip(pages, results[backends[0]], results[backend]):
                for field in differences(a, b):
                    per_field[field].append(url)
        mismatches[backend] = per_field
        best = min(cpu[backend])
        counts = " / ".join(str(len(per_field[f])) for f in FIELDS) if backend != backends[0] else "(reference)"
        print(f"| {backend} | {n / best:.0f} | {best / n * 1000:.2f} | {n / min(wall[backend]):.0f} | "
              f"{base_cpu / best:.2f} | {n / tree_cpu[backend]:.0f} | {counts} |")

    for backend in backends[1:]:
        any_diff = sorted({u for urls in mismatches[backend].values() for u in urls})
        print(f"\n{backend}: {len(any_diff)} of {n} pages differ from {backends[0]} in some field")
        index = {p[0]: i for i, p in enumerate(pages)}
        for field in FIELDS:
            for url in mismatches[backend][field][:args.diffs]:
                i = index[url]
                print(show_diff(url, field, results[backends[0]][i], results[backend][i], backend))
    return 0


if __name__ == "__main__":
    sys.exit(main())
