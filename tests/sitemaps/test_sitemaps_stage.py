"""`crawlkit sitemaps` end to end: a tiny WARC web served by the replay web, a real crawldb.

Host sm.test names its sitemap index in robots.txt; the index lists a gzip sitemap, a
plain-text one and one under a path robots.txt disallows. Host other.test names none, so its
/sitemap.xml is guessed. Two pages were fetched before (their rows set by hand): one whose
sitemap lastmod is newer than that fetch, one whose lastmod is older.
"""
from __future__ import annotations

import gzip
import io
import json
from datetime import datetime, timedelta

import pytest
from warcio.warcwriter import WARCWriter

from crawlkit import storage
from crawlkit.replay import ReplayServer
from crawlkit.stages.inject import run_inject
from crawlkit.stages.sitemaps import run_sitemaps

NOW = datetime(2026, 2, 1, 12, 0, 0)
FETCHED = datetime(2026, 1, 20)        # when the known pages were last fetched (crawl clock)
INTERVAL = 30 * 86400
ROBOTS = {"sm.test": "User-agent: *\nDisallow: /private/\nSitemap: http://sm.test/sitemap_index.xml\n"}

INDEX = b"""<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>http://sm.test/sitemap-pages.xml.gz</loc></sitemap>
  <sitemap><loc>/sitemap-more.txt</loc></sitemap>
  <sitemap><loc>http://sm.test/private/sitemap.xml</loc></sitemap>
</sitemapindex>"""
PAGES = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://sm.test/a.html</loc><lastmod>2026-01-05</lastmod><priority>0.8</priority></url>
  <url><loc>http://SM.test:80/b.html#top</loc></url>
  <url><loc>http://sm.test/new.html</loc><lastmod>2026-01-25T10:00:00+00:00</lastmod></url>
  <url><loc>http://sm.test/old.html</loc><lastmod>2026-01-10</lastmod></url>
  <url><loc>http://sm.test/locked.html</loc><lastmod>2026-01-25</lastmod></url>
  <url><loc>http://sm.test/gone.html</loc><lastmod>2026-01-25</lastmod></url>
  <url><loc>http://sm.test/future.html</loc><lastmod>2026-03-01</lastmod></url>
  <url><loc>http://sm.test/picture.jpg</loc></url>
  <url><loc>http://elsewhere.test/x.html</loc></url>
</urlset>"""
MORE = b"http://sm.test/c.html\nhttp://sm.test/a.html\nhttp://elsewhere.test/y.html\n"
PRIVATE = b"<urlset><url><loc>http://sm.test/secret.html</loc></url></urlset>"
OTHER = b"<urlset><url><loc>http://other.test/o1.html</loc></url></urlset>"
SEEDS = ["http://sm.test/", "http://other.test/", "http://sm.test/new.html", "http://sm.test/old.html",
         "http://sm.test/locked.html", "http://sm.test/gone.html", "http://sm.test/future.html"]
FROM_SITEMAPS = {"http://sm.test/a.html", "http://sm.test/b.html", "http://sm.test/c.html",
                 "http://other.test/o1.html"}


def _response(body: bytes, content_type: str) -> bytes:
    return (f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
            .encode() + body)


def _page(title: str) -> bytes:
    return _response(f"<html><title>{title}</title><body>{title}</body></html>".encode(), "text/html")


def write_warc(path, records) -> None:
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for uri, raw in records:
            writer.write_record(writer.create_warc_record(
                uri, "response", payload=io.BytesIO(raw),
                warc_headers_dict={"WARC-Date": "2026-01-01T00:00:00Z"}, http_headers=None))


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sitemap-web")
    pages = [(url, _page(url)) for url in SEEDS + sorted(FROM_SITEMAPS)]
    write_warc(folder / "web.warc.gz", pages + [
        ("http://sm.test/sitemap_index.xml", _response(INDEX, "application/xml")),
        ("http://sm.test/sitemap-pages.xml.gz", _response(gzip.compress(PAGES), "application/x-gzip")),
        ("http://sm.test/sitemap-more.txt", _response(MORE, "text/plain")),
        ("http://sm.test/private/sitemap.xml", _response(PRIVATE, "application/xml")),
        ("http://other.test/sitemap.xml", _response(OTHER, "text/xml")),
    ])
    with ReplayServer([folder / "web.warc.gz"], workdir=folder / "run", robots=ROBOTS) as server:
        yield server


@pytest.fixture
def crawl(spark, make_test_conf, web, tmp_path):
    """A crawldb of the seeds, two of them fetched at FETCHED, one locked, one gone."""
    conf = make_test_conf(fetcher__proxy=web.proxy_url, fetcher__server_delay=0.0,
                          fetcher__proxy_resolve_targets=False, fetcher__connect_timeout=2.0,
                          fetcher__read_timeout=2.0, fetcher__page_deadline=5.0,
                          schedule__default_interval=INTERVAL, sitemaps__partitions=2)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(SEEDS) + "\n")
    run_inject(spark, str(seeds), conf, NOW - timedelta(days=30))
    table = storage.ensure_table(spark, storage.crawldb_path(conf["crawl.dir"]), "crawldb")
    held = f"timestamp'{FETCHED + timedelta(seconds=INTERVAL)}'"   # last fetch = fetch_time - interval
    for url, status, segment in (("new.html", "fetched", None), ("old.html", "fetched", None),
                                 ("locked.html", "fetched", "'20260201000000'"), ("gone.html", "gone", None),
                                 ("future.html", "fetched", None)):
        table.update(f"url = 'http://sm.test/{url}'", {
            "status": f"'{status}'", "fetch_time": held, "fetch_interval": str(INTERVAL),
            "generated_segment": segment or "null"})
    return conf


def _db(spark, conf) -> dict:
    rows = storage.read_table(spark, storage.crawldb_path(conf["crawl.dir"]), "crawldb").collect()
    return {row.url: row for row in rows}


def test_sitemaps_add_same_host_urls_make_newer_pages_due_and_run_again_changes_nothing(spark, crawl, web):
    conf = crawl
    path = storage.crawldb_path(conf["crawl.dir"])
    before, commits = _db(spark, conf), storage.commit_tags(spark, path)

    counters = run_sitemaps(spark, conf, NOW)
    after = _db(spark, conf)

    # exactly the sitemaps' same-host URLs are new: not elsewhere.test's, not the filtered
    # picture, not the one in the sitemap robots.txt disallows
    assert set(after) - set(before) == FROM_SITEMAPS
    for url in FROM_SITEMAPS:
        row = after[url]
        assert (row.status, row.depth, row.score, row.fetch_time) == ("unfetched", 1, 1.0, NOW), url
        assert row.metadata["source"] == "sitemap", url
    assert after["http://sm.test/a.html"].metadata == {
        "source": "sitemap", "sitemap_lastmod": "2026-01-05T00:00:00Z", "sitemap_priority": "0.8"}
    assert after["http://sm.test/b.html"].metadata == {"source": "sitemap"}

    # a lastmod after the last fetch makes the page due now; before it, locked, gone or a
    # lastmod still to come (a made-up date): nothing
    assert after["http://sm.test/new.html"].fetch_time == NOW
    for url in ("old.html", "locked.html", "gone.html", "future.html"):
        assert after[f"http://sm.test/{url}"] == before[f"http://sm.test/{url}"], url
    for url in set(before) - {"http://sm.test/new.html"}:
        assert after[url] == before[url], url

    assert storage.commit_tags(spark, path) == commits + [f"sitemaps:{NOW.isoformat()}"]   # one commit
    assert {k: counters[k] for k in ("hosts", "new", "made_due", "sitemaps_robots_denied")} == {
        "hosts": 2, "new": 4, "made_due": 1, "sitemaps_robots_denied": 1}
    # index, gzip, text (sm.test) and the guessed /sitemap.xml (other.test)
    assert counters["sitemaps_fetched"] == 4 and counters["failed"] == 0
    assert counters["refused_other_host"] == 2 and counters["filtered"] == 1
    assert counters["urls_seen"] == 13   # 9 + 3 + 1, a.html twice
    stats = storage.read_text(spark, storage.join(conf["crawl.dir"], "_stats", "sitemaps-20260201120000.json"))
    assert json.loads(stats) == json.loads(json.dumps(counters))

    requested = [r["url"] for r in web.access_log()]
    assert "http://sm.test/private/sitemap.xml" not in requested
    assert {"http://sm.test/robots.txt", "http://other.test/robots.txt", "http://other.test/sitemap.xml"} <= set(requested)

    again = run_sitemaps(spark, conf, NOW + timedelta(hours=1))
    assert (again["new"], again["made_due"], again["sitemaps_fetched"]) == (0, 0, 4)
    assert storage.commit_tags(spark, path) == commits + [f"sitemaps:{NOW.isoformat()}"]   # no commit
    assert _db(spark, conf) == after


def test_without_robots_sitemaps_or_guessing_nothing_is_read(spark, crawl, web):
    conf = crawl.with_overrides({"sitemaps.guess": False})
    path = storage.crawldb_path(conf["crawl.dir"])
    commits = storage.commit_tags(spark, path)
    counters = run_sitemaps(spark, conf, NOW)
    # sm.test's robots.txt still names its index; other.test's /sitemap.xml is not guessed
    assert "http://other.test/o1.html" not in _db(spark, conf)
    assert counters["new"] == 3 and counters["sitemaps_fetched"] == 3
    assert len(storage.commit_tags(spark, path)) == len(commits) + 1


def test_max_depth_zero_reads_the_index_but_not_its_children(spark, crawl):
    conf = crawl.with_overrides({"sitemaps.max_depth": 0, "sitemaps.guess": False})
    counters = run_sitemaps(spark, conf, NOW)
    assert (counters["new"], counters["made_due"], counters["sitemaps_fetched"]) == (0, 0, 1)
    assert counters["sitemaps_too_deep"] == 3


@pytest.fixture
def reader(web):
    """``reader(sleep, **conf) -> HostReader`` through the replay web (no Spark)."""
    from crawlkit.conf import make_conf
    from crawlkit.fetch.guard import AddressGuard
    from crawlkit.fetch.http import HttpClient
    from crawlkit.fetch.settings import FetchSettings
    from crawlkit.stages.sitemaps import HostReader

    clients = []

    def make(sleep, **overrides):
        conf = make_conf(**{"fetcher__proxy": web.proxy_url, "fetcher__server_delay": 0.0,
                            "fetcher__proxy_resolve_targets": False, "fetcher__page_deadline": 5.0,
                            **overrides})
        settings = FetchSettings.from_conf(conf)
        clients.append(HttpClient(settings, AddressGuard(settings.block_private, settings.allow_private,
                                                         settings.proxy_resolve_targets)))
        return HostReader(conf, clients[-1], sleep)
    yield make
    for client in clients:
        client.close()


def test_requests_to_a_host_wait_the_server_delay_between_them(reader):
    waits: list[float] = []
    found, counters = reader(waits.append, fetcher__server_delay=100.0).read("sm.test", ["http://sm.test"])
    # robots.txt, the index, the gzip and the text sitemap: 4 requests, 3 waits (none before the first)
    assert counters["fetched"] == 3
    assert len(waits) == 3 and all(99.0 < w <= 100.0 for w in waits)
    assert set(found) == FROM_SITEMAPS - {"http://other.test/o1.html"} | {
        "http://sm.test/new.html", "http://sm.test/old.html", "http://sm.test/locked.html", "http://sm.test/gone.html",
        "http://sm.test/future.html"}


def test_per_host_caps_on_documents_and_urls(reader):
    found, counters = reader(lambda _s: None, sitemaps__max_sitemaps_per_host=2).read("sm.test", ["http://sm.test"])
    assert counters["fetched"] == 2 and counters["sitemaps_over_cap"] == 2   # index + gzip; text and private left
    assert "http://sm.test/c.html" not in found
    found, counters = reader(lambda _s: None, sitemaps__max_urls_per_host=2).read("sm.test", ["http://sm.test"])
    assert list(found) == ["http://sm.test/a.html", "http://sm.test/b.html"]
    assert counters["urls_over_cap"] == 5 and counters["fetched"] == 2   # the text sitemap is not read


def test_without_respect_robots_no_robots_txt_is_asked_and_sitemap_xml_is_guessed(reader, web):
    found, counters = reader(lambda _s: None, fetcher__respect_robots=False).read("other.test", ["http://other.test"])
    assert set(found) == {"http://other.test/o1.html"} and counters["fetched"] == 1


def test_the_command_line_knows_the_stage_and_it_holds_the_round_lock():
    from crawlkit.cli import SPILLERS, STAGES, WRITERS, build_parser

    args = build_parser().parse_args(["sitemaps", "--crawl-dir", "c", "--now", "2026-02-01T12:00:00"])
    assert args.command == "sitemaps" and args.now == NOW
    assert "sitemaps" in STAGES and "sitemaps" in WRITERS and "sitemaps" not in SPILLERS
