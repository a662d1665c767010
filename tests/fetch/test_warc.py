"""`crawlkit warc`: a segment's content, fetched for real through the replay web, as WARC files
that warcio reads back record for record."""
from __future__ import annotations

import io
import subprocess
import sys

import pytest
from fetch_helpers import NOW
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from crawlkit import schemas, storage
from crawlkit.conf import ConfError
from crawlkit.stages.warc import REVISIT_NOT_MODIFIED, file_pattern, http_headers, run_warc, warc_record

SEGMENT = "20240101000000"


def trap(host: str, path: str) -> str:
    return f"http://{host}/__trap/{path}"


PAGE, MISSING, GZIPPED = trap("w1.test", "page"), trap("w2.test", "status/404"), trap("w3.test", "encoding/gzip")
BIG, UNCHANGED, HUNG = trap("w4.test", "big/1"), trap("w5.test", "status/304"), trap("w6.test", "timeout/10")
DENIED = "http://robots.test/secret/x.html"   # robots.txt disallows it to crawlkit


@pytest.fixture(scope="module")
def fetched(fetch):
    rows, _ = fetch([PAGE, MISSING, GZIPPED, BIG, UNCHANGED, HUNG, DENIED],
                    fetcher__max_content=100_000, fetcher__read_timeout=1.0, fetcher__page_deadline=2.0)
    return rows


@pytest.fixture(scope="module")
def fetch(replay):   # module-scoped twin of conftest's: the fetch is made once for the module
    from fetch_helpers import fetch_row

    from crawlkit.conf import make_conf
    from crawlkit.fetch import FetchStats, fetch_partition

    def run(urls, **overrides):
        options = dict(fetcher__proxy=replay.proxy_url, fetcher__server_delay=0.0, fetcher__threads=4,
                       fetcher__connect_timeout=2.0, fetcher__proxy_resolve_targets=False, **overrides)
        results = list(fetch_partition([fetch_row(u) for u in urls], make_conf(**options), NOW, FetchStats()))
        return {r["url"]: r for r in results}, None
    return run


@pytest.fixture
def crawl(spark, make_test_conf, fetched):
    """A crawl directory whose segment holds the fetched rows as its content part."""
    conf = make_test_conf()
    records = [{**row, "headers": row["headers"], "segment": SEGMENT} for row in fetched.values()]
    storage.write_segment_part(schemas.frame(spark, "content", records).repartition(2), conf["crawl.dir"],
                               SEGMENT, "content", "content")
    return conf


def read_warcs(folder) -> list[list]:
    """Each .warc.gz file of ``folder`` (sorted by name) as its list of records (type, URI,
    WARC headers, HTTP headers, payload)."""
    files = []
    for path in sorted(folder.glob("*.warc.gz")):
        with open(path, "rb") as stream:
            files.append([(r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), r.rec_headers,
                           r.http_headers, r.content_stream().read()) for r in ArchiveIterator(stream)])
    return files


def test_every_answered_url_is_a_record_with_its_status_headers_and_body(spark, crawl, fetched, tmp_path):
    out = tmp_path / "warc"
    counters = run_warc(spark, crawl, SEGMENT, str(out))

    files = read_warcs(out)
    assert files and all(records[0][0] == "warcinfo" for records in files)   # each file opens with its warcinfo
    records = {uri: (kind, warc, http, body) for f in files for kind, uri, warc, http, body in f[1:]}
    # a WARC holds what was on the wire: the timeout and the robots denial had no answer
    assert set(records) == {PAGE, MISSING, GZIPPED, BIG, UNCHANGED}
    assert (counters["response"], counters["revisit"], counters["no_response"]) == (4, 1, 2)
    assert counters["files"] == len(files) and counters["bytes"] == sum(p.stat().st_size for p in out.glob("*.warc.gz"))

    for url in (PAGE, MISSING, GZIPPED, BIG):
        kind, warc, http, body = records[url]
        assert kind == "response" and body == (fetched[url]["content"] or b""), url
        assert http.get_statuscode() == str(fetched[url]["http_status"]), url
        assert http.get_header("content-length") == str(len(body)), url
        assert warc.get_header("WARC-Date").startswith(fetched[url]["fetched_at"].strftime("%Y-%m-%dT%H:%M:%S"))
    assert records[PAGE][3].startswith(b"<!DOCTYPE html>")
    # the fetcher kept the gzip body inflated: the header that said gzip is kept, renamed
    assert records[GZIPPED][2].get_header("content-encoding") is None
    assert records[GZIPPED][2].get_header("x-crawlkit-original-content-encoding") == "gzip"
    assert records[BIG][1].get_header("WARC-Truncated") == "length" and len(records[BIG][3]) == 100_000
    assert records[PAGE][1].get_header("WARC-Truncated") is None
    kind, warc, http, body = records[UNCHANGED]
    assert (kind, warc.get_header("WARC-Profile"), http.get_statuscode(), body) == (
        "revisit", REVISIT_NOT_MODIFIED, "304", b"")
    info = files[0][0][4].decode()
    assert f"isPartOf: {SEGMENT}" in info and "robots: obey" in info and "software: crawlkit/" in info

    stats = storage.read_text(spark, storage.join(storage.segment_path(crawl["crawl.dir"], SEGMENT), "_stats", "warc.json"))
    assert '"response": 4' in stats
    # warcio's own checker: one gzip member per record, block and payload digests right
    for path in out.glob("*.warc.gz"):
        check = subprocess.run([sys.executable, "-m", "warcio.cli", "check", str(path)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr


def test_small_files_roll_over_and_a_rerun_replaces_the_files_without_stale_ones(spark, crawl, tmp_path):
    out = tmp_path / "warc"
    small = crawl.with_overrides({"warc.max_file_bytes": 1, "warc.operator": "Ops <ops@example.org>"})
    run_warc(spark, small, SEGMENT, str(out))
    many = sorted(p.name for p in out.glob("*.warc.gz"))
    files = read_warcs(out)
    # a file per record past the limit: each answered URL in a file of its own, behind a warcinfo
    assert len(many) == 5 and all(len(f) == 2 and f[0][0] == "warcinfo" for f in files)
    assert "operator: Ops <ops@example.org>" in files[0][0][4].decode()
    assert all(file_pattern("crawlkit", SEGMENT).fullmatch(name) for name in many)
    other = out / f"crawlkit-{SEGMENT}-000001-00000-000.warc.gz"   # segment SEGMENT-000001's file: kept
    other.write_bytes(b"")

    counters = run_warc(spark, crawl, SEGMENT, str(out))
    left = sorted(p.name for p in out.glob("*.warc.gz"))
    assert counters["replaced_files"] == 5
    assert other.name in left and len(left) == 1 + counters["files"] < 1 + len(many)
    assert not list(out.glob("_tmp-*"))


def test_a_prefix_that_is_no_file_name_is_refused(spark, crawl, tmp_path):
    with pytest.raises(ConfError, match="warc.prefix"):
        run_warc(spark, crawl.with_overrides({"warc.prefix": "a/b"}), SEGMENT, str(tmp_path / "warc"))


def test_a_record_is_built_from_a_content_row_without_spark():
    writer = WARCWriter(io.BytesIO(), gzip=False, warc_version="1.1")
    row = {"url": "http://a.test/", "http_status": 200, "fetched_at": NOW, "truncated": False, "content": None,
           "headers": [("content-type", "text/html"), ("transfer-encoding", "chunked")]}
    record = warc_record(writer, row)
    assert record.rec_headers.get_header("WARC-Truncated") == "unspecified"   # a 200 whose body was not kept
    assert record.http_headers.get_header("x-crawlkit-original-transfer-encoding") == "chunked"
    assert warc_record(writer, {**row, "http_status": None}) is None
    assert http_headers(599, {}, 3).get_statuscode() == "599"   # no standard reason: still a status line
    assert http_headers(304, {"content-length": "7"}, 0).get_header("content-length") is None


def test_the_command_line_takes_a_segment_and_requires_an_output_directory():
    from crawlkit.cli import WRITERS, build_parser

    args = build_parser().parse_args(["warc", "--crawl-dir", "c", "--segment", SEGMENT, "--out", "w"])
    assert (args.command, args.segment, args.out) == ("warc", SEGMENT, "w")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["warc", "--crawl-dir", "c"])
    assert "warc" not in WRITERS   # reads a segment; a round may run meanwhile
