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
from crawlkit.stages import warc
from crawlkit.stages.warc import REVISIT_NOT_MODIFIED, file_pattern, http_headers, run_warc, warc_record

SEGMENT = "20240101000000"


def trap(host: str, path: str) -> str:
    return f"http://{host}/__trap/{path}"


PAGE, MISSING, GZIPPED = trap("w1.test", "page"), trap("w2.test", "status/404"), trap("w3.test", "encoding/gzip")
BIG, UNCHANGED, HUNG = trap("w4.test", "big/1"), trap("w5.test", "status/304"), trap("w6.test", "timeout/10")
DENIED = "http://robots.test/secret/x.html"   # robots.txt disallows it to crawlkit
RESET, DRIPPING = trap("w7.test", "reset/100"), trap("w8.test", "drip?bytes=1&every=0.5")   # cut after the headers
REDIRECTED, UNAVAILABLE = trap("w9.test", "redirect/2"), trap("w10.test", "status/503")
ANSWERED = {PAGE, MISSING, GZIPPED, BIG, REDIRECTED, UNAVAILABLE}   # the response records


@pytest.fixture(scope="module")
def fetched(fetch):
    rows, _ = fetch([PAGE, MISSING, GZIPPED, BIG, UNCHANGED, HUNG, DENIED, RESET, DRIPPING, REDIRECTED, UNAVAILABLE],
                    fetcher__max_content=100_000, fetcher__read_timeout=1.0, fetcher__page_deadline=2.0,
                    fetcher__follow_redirects=2)
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


def uri(row: dict) -> str:
    """Where a row's response is recorded: the last hop of the redirects the fetcher followed."""
    return row["redirect_url"] if row["url"] == REDIRECTED else row["url"]


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
    # a WARC holds what was on the wire: the timeout and the robots denial had no answer, the
    # reset and the drip cut by the page deadline no whole one
    assert set(records) == {uri(fetched[url]) for url in ANSWERED} | {UNCHANGED}
    assert (counters["response"], counters["revisit"], counters["no_response"], counters["incomplete"]) == (6, 1, 2, 2)
    assert counters["redirected"] == 1
    assert counters["files"] == len(files) and counters["bytes"] == sum(p.stat().st_size for p in out.glob("*.warc.gz"))
    for f in files:   # every record names its file's warcinfo
        assert {r[2].get_header("WARC-Warcinfo-ID") for r in f[1:]} == {f[0][2].get_header("WARC-Record-ID")}

    for url in ANSWERED:
        kind, warc, http, body = records[uri(fetched[url])]
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
    assert warc.get_header("WARC-Refers-To-Target-URI") == UNCHANGED
    info = files[0][0][4].decode()
    assert f"isPartOf: {SEGMENT}" in info and "robots: obey" in info and "software: crawlkit/" in info

    stats = storage.read_text(spark, storage.join(storage.segment_path(crawl["crawl.dir"], SEGMENT), "_stats", "warc.json"))
    assert '"response": 6' in stats
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
    assert len(many) == 7 and all(len(f) == 2 and f[0][0] == "warcinfo" for f in files)
    assert "operator: Ops <ops@example.org>" in files[0][0][4].decode()
    assert all(file_pattern("crawlkit", SEGMENT).fullmatch(name) for name in many)
    other = out / f"crawlkit-{SEGMENT}-000001-{'2' * 12}-00000-000.warc.gz"   # segment SEGMENT-000001's file: kept
    other.write_bytes(b"")

    counters = run_warc(spark, crawl, SEGMENT, str(out))
    left = sorted(p.name for p in out.glob("*.warc.gz"))
    assert counters["replaced_files"] == 7
    assert other.name in left and len(left) == 1 + counters["files"] < 1 + len(many)
    assert not list(out.glob("_tmp-*"))


def test_a_prefix_that_is_no_file_name_is_refused(spark, crawl, tmp_path):
    with pytest.raises(ConfError, match="warc.prefix"):
        run_warc(spark, crawl.with_overrides({"warc.prefix": "a/b"}), SEGMENT, str(tmp_path / "warc"))


def test_a_record_is_built_from_a_content_row_without_spark():
    writer = WARCWriter(io.BytesIO(), gzip=False, warc_version="1.1")
    row = {"url": "http://a.test/", "http_status": 200, "fetched_at": NOW, "truncated": False, "content": None,
           "headers": [("content-type", "text/html"), ("transfer-encoding", "chunked")],
           "fetch_status": "unsupported_type", "error": None, "redirect_url": None}
    record = warc_record(writer, row)
    assert record.rec_headers.get_header("WARC-Truncated") == "unspecified"   # a 200 whose body was not kept
    assert record.http_headers.get_header("x-crawlkit-original-transfer-encoding") == "chunked"
    assert warc_record(writer, {**row, "http_status": None}) is None
    assert http_headers(599, {}, 3).get_statuscode() == "599"   # no standard reason: still a status line
    assert http_headers(304, {"content-length": "7"}, 0).get_header("content-length") is None


def written(tmp_path, row: dict) -> tuple[bytes, list]:
    """The record of ``row`` written to a .warc.gz that warcio's checker passes: the file's
    inflated bytes, and its records as warcio reads them (WARC headers, HTTP headers, payload)."""
    import gzip

    path = tmp_path / "one.warc.gz"
    with open(path, "wb") as stream:
        writer = WARCWriter(stream, gzip=True, warc_version="1.1")
        writer.write_record(warc_record(writer, row))
    check = subprocess.run([sys.executable, "-m", "warcio.cli", "check", str(path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    with open(path, "rb") as stream:
        records = [(r.rec_headers, r.http_headers, r.content_stream().read()) for r in ArchiveIterator(stream)]
    return gzip.decompress(path.read_bytes()), records


def values(http, name: str) -> list[str]:
    return [value for key, value in http.headers if key == name]


ROW = {"url": "http://a.test/", "fetch_status": "success", "http_status": 200, "fetched_at": NOW,
       "truncated": False, "content": b"hello", "redirect_url": None, "error": None}


def test_a_header_the_fetcher_joined_with_newlines_is_a_line_per_value(tmp_path):
    # the fetcher joins a repeated X-Robots-Tag with "\n" (an empty one too); a CR or LF must not
    # start a header of its own, nor end the header block early
    headers = {"x-robots-tag": "googlebot: noindex\n\nbingbot: nofollow\n", "x-note": "a\r\nx-injected: 1",
               "set-cookie": "a=1; Expires=Wed, 09 Jun 2027 10:18:14 GMT\nb=2"}
    raw, [(_, http, body)] = written(tmp_path, {**ROW, "headers": headers})
    assert values(http, "x-robots-tag") == ["googlebot: noindex", "bingbot: nofollow"]
    assert values(http, "set-cookie") == ["a=1; Expires=Wed, 09 Jun 2027 10:18:14 GMT", "b=2"]
    assert values(http, "x-note") == ["a", "x-injected: 1"] and http.get_header("x-injected") is None
    assert body == b"hello" and b"\r\n\r\nhello" in raw


def test_non_ascii_header_values_are_written_as_the_fetcher_read_them_not_percent_encoded(tmp_path):
    headers = {"location": "http://a.test/café?x=1", "set-cookie": "name=José; Path=/", "x-latin": "caf\xe9"}
    raw, [(_, http, _)] = written(tmp_path, {**ROW, "http_status": 301, "fetch_status": "redirect_perm",
                                             "content": None, "redirect_url": "http://a.test/café?x=1",
                                             "headers": headers})
    assert "location: http://a.test/café?x=1\r\n".encode() in raw and b"%C3%A9" not in raw
    assert (http.get_header("location"), http.get_header("set-cookie")) == ("http://a.test/café?x=1", "name=José; Path=/")
    assert http.get_header("x-latin") == "café"


def test_an_answer_cut_after_its_headers_is_no_record_but_a_server_error_is(fetched):
    writer = WARCWriter(io.BytesIO(), gzip=False, warc_version="1.1")
    for url, error in ((RESET, "connection reset"), (DRIPPING, "deadline")):
        # the fetcher keeps the status of an answer whose body broke off: no empty 200 for it
        assert (fetched[url]["fetch_status"], fetched[url]["http_status"], fetched[url]["error"]) == ("retry", 200, error)
        assert warc_record(writer, fetched[url]) is None
    # a 503 is a retry too, but the server's whole answer
    assert fetched[UNAVAILABLE]["fetch_status"] == "retry"
    assert warc_record(writer, fetched[UNAVAILABLE]).http_headers.get_statuscode() == "503"


def test_a_followed_redirect_is_recorded_under_the_url_that_sent_the_answer(fetched):
    row = fetched[REDIRECTED]
    assert row["fetch_status"] == "success" and row["redirect_url"].endswith("/__trap/page/redirect-target")
    record = warc_record(WARCWriter(io.BytesIO(), gzip=False, warc_version="1.1"), row)
    assert record.rec_headers.get_header("WARC-Target-URI") == row["redirect_url"]
    # a redirect the fetcher did not follow is the URL's own answer; its redirect_url is the Location
    moved = warc_record(WARCWriter(io.BytesIO()), {**ROW, "http_status": 301, "fetch_status": "redirect_perm",
                                                   "content": None, "redirect_url": "http://b.test/",
                                                   "headers": {"location": "http://b.test/"}})
    assert moved.rec_headers.get_header("WARC-Target-URI") == ROW["url"]


def test_a_non_2xx_answer_whose_body_was_not_kept_is_marked_truncated(fetched):
    writer = WARCWriter(io.BytesIO(), gzip=False, warc_version="1.1")
    for url in (MISSING, UNAVAILABLE):
        assert fetched[url]["content"] is None, url
        assert warc_record(writer, fetched[url]).rec_headers.get_header("WARC-Truncated") == "unspecified", url
    for status, headers in ((204, {}), (404, {"content-length": "0"})):   # no body to keep
        record = warc_record(writer, {**ROW, "http_status": status, "content": None, "headers": headers})
        assert record.rec_headers.get_header("WARC-Truncated") is None, status


def test_a_failed_rerun_leaves_the_earlier_export_whole(spark, crawl, tmp_path, monkeypatch):
    out = tmp_path / "warc"
    run_warc(spark, crawl, SEGMENT, str(out))
    before = {p.name: p.read_bytes() for p in out.glob("*.warc.gz")}
    run = "2" * 12
    monkeypatch.setattr(warc, "new_run", lambda: run)
    (out / f"_tmp-crawlkit-{SEGMENT}-{run}-00000-000.warc.gz").mkdir()   # partition 0 cannot write its file
    with pytest.raises(Exception):
        run_warc(spark, crawl, SEGMENT, str(out))
    after = {p.name: p.read_bytes() for p in out.glob("*.warc.gz") if p.is_file()}
    assert after == before   # partition 1's files of the failed run removed too

    (out / f"_tmp-crawlkit-{SEGMENT}-{run}-00000-000.warc.gz").rmdir()
    (out / f"_tmp-crawlkit-{SEGMENT}-{'1' * 12}-00001-000.warc.gz").write_bytes(b"")   # a killed run's
    monkeypatch.setattr(warc, "new_run", lambda: "3" * 12)
    counters = run_warc(spark, crawl, SEGMENT, str(out))
    assert counters["replaced_files"] == len(before) + 1 and sorted(p.name for p in out.iterdir()) == sorted(
        p.name for p in out.glob(f"crawlkit-{SEGMENT}-{'3' * 12}-*.warc.gz"))


def test_speculation_is_refused(spark, crawl, tmp_path, monkeypatch):
    monkeypatch.setattr(spark.sparkContext, "getConf", lambda: {"spark.speculation": "true"})
    with pytest.raises(ConfError, match="spark.speculation is on: a speculative copy of a warc task"):
        run_warc(spark, crawl, SEGMENT, str(tmp_path / "warc"))


def test_an_output_in_the_crawls_segments_folder_is_refused(spark, crawl, tmp_path):
    for out in (f"{crawl['crawl.dir']}/segments/warc", f"file://{crawl['crawl.dir']}/segments/"):
        with pytest.raises(ConfError, match="inside the crawl's segments folder"):
            run_warc(spark, crawl, SEGMENT, out)
    run_warc(spark, crawl, SEGMENT, f"{crawl['crawl.dir']}/warc")   # beside the segments: fine


def test_an_output_scheme_the_tasks_cannot_open_is_refused_naming_out(spark, crawl):
    with pytest.raises(ConfError, match=r"^--out 's3a://bucket/warc' is a s3a: location") as refused:
        run_warc(spark, crawl, SEGMENT, "s3a://bucket/warc")
    assert "crawl.dir" not in str(refused.value)


def test_the_command_line_takes_a_segment_and_requires_an_output_directory():
    from crawlkit.cli import WRITERS, build_parser

    args = build_parser().parse_args(["warc", "--crawl-dir", "c", "--segment", SEGMENT, "--out", "w"])
    assert (args.command, args.segment, args.out) == ("warc", SEGMENT, "w")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["warc", "--crawl-dir", "c"])
    assert "warc" not in WRITERS   # reads a segment; a round may run meanwhile
