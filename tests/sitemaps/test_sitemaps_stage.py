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
  <url><loc>http://SM.test:80/b.html#top</loc><changefreq>Daily</changefreq></url>
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
    assert after["http://sm.test/b.html"].metadata == {"source": "sitemap", "sitemap_changefreq": "daily"}
    # a changefreq sets the first interval; without one, the schedule's default
    assert {url: after[url].fetch_interval for url in FROM_SITEMAPS} == {
        "http://sm.test/a.html": INTERVAL, "http://sm.test/b.html": 86400, "http://sm.test/c.html": INTERVAL,
        "http://other.test/o1.html": INTERVAL}

    # a lastmod after the last fetch makes the page due now; before it, locked, gone or a
    # lastmod still to come (a made-up date): nothing
    made = after["http://sm.test/new.html"]
    assert made.fetch_time == NOW
    # ... and its last fetch, fetch_time - fetch_interval, stays where it was
    assert made.fetch_time - timedelta(seconds=made.fetch_interval) == FETCHED
    for url in ("old.html", "locked.html", "gone.html", "future.html"):
        assert after[f"http://sm.test/{url}"] == before[f"http://sm.test/{url}"], url
    for url in set(before) - {"http://sm.test/new.html"}:
        assert after[url] == before[url], url

    assert storage.commit_tags(spark, path) == commits + [f"sitemaps:{NOW.isoformat()}"]   # one commit
    assert {k: counters[k] for k in ("hosts", "new", "made_due", "sitemaps_robots_denied")} == {
        "hosts": 2, "new": 4, "made_due": 1, "sitemaps_robots_denied": 1}
    # index, gzip, text (sm.test) and the guessed /sitemap.xml (other.test)
    assert counters["sitemaps_fetched"] == 4 and "failed" not in counters
    assert all(v for k, v in counters.items() if k not in ("new", "made_due"))   # the rest only if they happened
    assert counters["refused_other_host"] == 2 and counters["filtered"] == 1
    assert counters["urls_seen"] == 13   # 9 + 3 + 1, a.html twice
    stats = storage.read_text(spark, storage.join(conf["crawl.dir"], "_stats", "sitemaps-20260201120000.json"))
    assert json.loads(stats) == json.loads(json.dumps(counters))

    requested = [r["url"] for r in web.access_log()]
    assert "http://sm.test/private/sitemap.xml" not in requested
    assert {"http://sm.test/robots.txt", "http://other.test/robots.txt", "http://other.test/sitemap.xml"} <= set(requested)

    # both hosts were read to the end: recorded, with the URLs each listed
    hostdb = storage.read_table(spark, storage.hostdb_path(conf["crawl.dir"]), "hostdb").collect()
    assert sorted((r.host, r.sitemaps_read, r.sitemap_urls) for r in hostdb) == [
        ("other.test", NOW, 1), ("sm.test", NOW, 8)]
    assert counters["hosts_recorded"] == 2

    # within sitemaps.interval (a day) no host is read again: nothing asked, nothing committed
    asked = len(web.access_log())
    soon = run_sitemaps(spark, conf, NOW + timedelta(hours=1))
    assert (soon["hosts"], soon["hosts_not_due"], soon["sitemaps_fetched"], soon["hosts_recorded"]) == (0, 2, 0, 0)
    assert len(web.access_log()) == asked

    # a day later both are read again; the unchanged sitemaps change nothing in the crawldb
    later = NOW + timedelta(days=1)
    again = run_sitemaps(spark, conf, later)
    assert (again["hosts"], again["new"], again["made_due"], again["sitemaps_fetched"]) == (2, 0, 0, 4)
    assert storage.commit_tags(spark, path) == commits + [f"sitemaps:{NOW.isoformat()}"]   # no commit
    assert _db(spark, conf) == after
    hostdb = storage.read_table(spark, storage.hostdb_path(conf["crawl.dir"]), "hostdb").collect()
    assert sorted((r.host, r.sitemaps_read) for r in hostdb) == [("other.test", later), ("sm.test", later)]


def test_a_time_limit_passed_before_the_tasks_start_reads_nothing_and_leaves_every_host_due(spark, crawl, web):
    conf = crawl
    path = storage.crawldb_path(conf["crawl.dir"])
    commits, asked = storage.commit_tags(spark, path), len(web.access_log())
    counters = run_sitemaps(spark, conf.with_overrides({"sitemaps.time_limit": 1e-6}), NOW)
    assert (counters["hosts"], counters["hosts_not_reached"], counters["hosts_recorded"], counters["new"]) == (0, 2, 0, 0)
    assert len(web.access_log()) == asked and storage.commit_tags(spark, path) == commits
    assert storage.read_table(spark, storage.hostdb_path(conf["crawl.dir"]), "hostdb").count() == 0
    assert run_sitemaps(spark, conf, NOW)["hosts_recorded"] == 2   # both still due


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
    assert counters["sitemaps_over_cap"] == 2   # what the URL cap left unread: text and private


def test_without_respect_robots_a_robots_txt_without_sitemap_lines_still_guesses_sitemap_xml(reader, web):
    found, counters = reader(lambda _s: None, fetcher__respect_robots=False).read("other.test", ["http://other.test"])
    assert set(found) == {"http://other.test/o1.html"} and counters["fetched"] == 1


def test_speculation_is_refused_before_anything_is_read(spark, crawl, monkeypatch):
    from crawlkit.stages import fetch

    def refuse(setting):
        raise RuntimeError(f"speculation checked: {setting}")
    monkeypatch.setattr(fetch, "check_no_speculation", refuse)
    with pytest.raises(RuntimeError, match="speculation checked"):
        run_sitemaps(spark, crawl, NOW)


def test_the_command_line_knows_the_stage_and_it_holds_the_round_lock():
    from crawlkit.cli import SPILLERS, STAGES, WRITERS, build_parser

    args = build_parser().parse_args(["sitemaps", "--crawl-dir", "c", "--now", "2026-02-01T12:00:00"])
    assert args.command == "sitemaps" and args.now == NOW
    assert "sitemaps" in STAGES and "sitemaps" in WRITERS and "sitemaps" not in SPILLERS


# --- HostReader against a stub client on a fake clock (no network, no Spark, no sleeping) ---

URLSET = b"<urlset><url><loc>%s</loc></url></urlset>"


class FakeWeb:
    """A stub HttpClient over ``site`` (url -> (status, headers, body[, seconds the request
    takes]); a body that is an exception is raised) on a fake clock that requests and
    sleeps move."""

    def __init__(self, site: dict, monkeypatch, **overrides):
        from types import SimpleNamespace

        from crawlkit.conf import make_conf
        from crawlkit.fetch.settings import FetchSettings
        from crawlkit.stages import sitemaps

        self.conf = make_conf(**{"fetcher__server_delay": 0.0, **overrides})
        self.settings = FetchSettings.from_conf(self.conf)
        self.site, self.log, self.waits, self.now = site, [], [], 1000.0
        monkeypatch.setattr(sitemaps, "time", SimpleNamespace(monotonic=lambda: self.now, time=lambda: self.now,
                                                               sleep=self.sleep))

    def get(self, url, *, deadline, max_bytes, accept_types=None, headers=None):
        from crawlkit.fetch.http import Response
        from crawlkit.fetch.outcomes import utcnow

        self.log.append(url)
        status, hdrs, body, *took = self.site.get(url, (404, {}, b""))
        self.now += took[0] if took else 0.0
        if isinstance(body, Exception):
            raise body
        response = Response(url=url, fetched_at=utcnow(), status=status, headers=hdrs)
        if 200 <= status < 300:
            response.body, response.truncated = body[:max_bytes], len(body) > max_bytes
        return response

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def reader(self):
        from crawlkit.stages.sitemaps import HostReader

        return HostReader(self.conf, self, self.sleep)


@pytest.fixture
def fake(monkeypatch):
    """``fake(site, **conf) -> FakeWeb``."""
    return lambda site, **overrides: FakeWeb(site, monkeypatch, **overrides)


def _robots(text: str, *took: float) -> tuple:
    return (200, {}, text.encode(), *took)


def test_a_malformed_sitemap_url_is_counted_and_the_others_are_read(fake):
    web = fake({"http://h.test/robots.txt": _robots("Sitemap: http://[oops/s.xml\nSitemap: http://h.test/idx.xml\n"),
                "http://h.test/idx.xml": (200, {}, b"<sitemapindex><sitemap><loc>http://[oops/a.xml</loc></sitemap>"
                                          b"<sitemap><loc>http://h.test/s.xml</loc></sitemap></sitemapindex>"),
                "http://h.test/s.xml": (200, {}, URLSET % b"http://h.test/page")})
    found, counters = web.reader().read("h.test", ["http://h.test"])
    assert list(found) == ["http://h.test/page"]
    assert counters["bad_sitemap_url"] == 2 and counters["fetched"] == 2


def test_an_error_reading_one_host_is_counted_and_the_task_goes_on(fake):
    from crawlkit.stages.sitemaps import _read_host

    web = fake({"http://bad.test/robots.txt": (200, {}, RuntimeError("unexpected")),
                "http://h.test/robots.txt": _robots(""), "http://h.test/sitemap.xml": (200, {}, URLSET % b"http://h.test/p")})
    reader = web.reader()
    assert _read_host(reader, "bad.test", ["http://bad.test"]) == ({}, {"hosts": 1, "host_errors": 1})
    found, counters = _read_host(reader, "h.test", ["http://h.test"])
    assert list(found) == ["http://h.test/p"] and "host_errors" not in counters


def test_redirected_sitemaps_are_followed_on_the_host_each_hop_checked_and_polite(fake):
    site = {"http://h.test/robots.txt": _robots(
                "User-agent: *\nDisallow: /private/\nSitemap: http://h.test/a.xml\nSitemap: http://h.test/b.xml\n"
                "Sitemap: http://h.test/c.xml\nSitemap: http://h.test/loop0.xml\n"),
            "http://h.test/a.xml": (301, {"location": "https://h.test/a.xml"}, b""),   # http -> https: same host
            "https://h.test/a.xml": (200, {}, URLSET % b"https://h.test/p"),
            "http://h.test/b.xml": (302, {"location": "http://cdn.test/b.xml"}, b""),
            "http://h.test/c.xml": (301, {"location": "/private/c.xml"}, b"")}
    for i in range(10):
        site[f"http://h.test/loop{i}.xml"] = (301, {"location": f"/loop{i + 1}.xml"}, b"")
    web = fake(site, fetcher__server_delay=2.0)
    found, counters = web.reader().read("h.test", ["http://h.test"])
    assert list(found) == ["https://h.test/p"] and counters["fetched"] == 1
    assert counters["redirect_other_host"] == 1 and "http://cdn.test/b.xml" not in web.log
    assert counters["sitemaps_robots_denied"] == 1 and "http://h.test/private/c.xml" not in web.log
    assert counters["too_many_redirects"] == 1 and sum("loop" in url for url in web.log) == 6   # 1 + 5 hops
    assert web.waits == [2.0] * (len(web.log) - 1)   # every hop waits the delay
    assert "failed" not in counters


def test_without_respect_robots_the_sitemap_lines_of_robots_txt_are_still_read(fake):
    web = fake({"http://h.test/robots.txt": _robots("User-agent: *\nDisallow: /\nSitemap: http://h.test/sm/main.xml\n"),
                "http://h.test/sm/main.xml": (200, {}, URLSET % b"http://h.test/page")}, fetcher__respect_robots=False)
    found, counters = web.reader().read("h.test", ["http://h.test"])
    assert list(found) == ["http://h.test/page"]   # its rules are not enforced
    assert web.log == ["http://h.test/robots.txt", "http://h.test/sm/main.xml"]


def test_a_sitemap_both_origins_list_is_read_once(fake):
    robots = _robots("Sitemap: https://h.test/sitemap.xml\n")
    web = fake({"http://h.test/robots.txt": robots, "https://h.test/robots.txt": robots,
                "https://h.test/sitemap.xml": (200, {}, URLSET % b"https://h.test/page")})
    found, counters = web.reader().read("h.test", ["http://h.test", "https://h.test"])
    assert web.log.count("https://h.test/sitemap.xml") == 1 and counters["fetched"] == 1


@pytest.mark.parametrize("hosts", [{"urls__hosts_deny": ["h.test"]}, {"urls__hosts_allow": [".other.test"]}])
def test_a_host_the_url_filter_rejects_is_asked_nothing(fake, hosts):
    web = fake({"http://h.test/robots.txt": _robots(""), "http://h.test/sitemap.xml": (200, {}, URLSET % b"http://h.test/p")},
               **hosts)
    found, counters = web.reader().read("h.test", ["http://h.test"])
    assert (found, web.log, dict(counters)) == ({}, [], {"hosts": 1, "hosts_filtered": 1})


@pytest.mark.parametrize("status", [429, 503])
def test_too_many_requests_or_unavailable_pauses_the_host_for_the_run(fake, status):
    index = b"<sitemapindex>" + b"".join(b"<sitemap><loc>http://h.test/s%d.xml</loc></sitemap>" % i for i in range(6))
    site = {"http://h.test/robots.txt": _robots("Sitemap: http://h.test/idx.xml\n"),
            "http://h.test/idx.xml": (200, {}, index + b"</sitemapindex>"),
            "https://h.test/robots.txt": _robots("")}
    site.update({f"http://h.test/s{i}.xml": (status, {"retry-after": "3600"}, b"") for i in range(6)})
    web = fake(site)
    found, counters = web.reader().read("h.test", ["http://h.test", "https://h.test"])
    assert web.log == ["http://h.test/robots.txt", "http://h.test/idx.xml", "http://h.test/s0.xml"]
    assert counters["host_paused"] == 1 and counters["failed"] == 1


def test_the_delay_runs_from_the_end_of_robots_txt_and_the_largest_crawl_delay_holds(fake):
    web = fake({"http://h.test/robots.txt": _robots("User-agent: *\nCrawl-delay: 3\n", 1.5),   # 1.5 s to answer
                "https://h.test/robots.txt": _robots("User-agent: *\nCrawl-delay: 1\n"),
                "http://h.test/sitemap.xml": (200, {}, URLSET % b"http://h.test/a"),
                "https://h.test/sitemap.xml": (200, {}, URLSET % b"https://h.test/b")})
    found, counters = web.reader().read("h.test", ["http://h.test", "https://h.test"])
    assert len(found) == 2
    assert web.waits == [3.0, 3.0, 3.0]   # https's robots.txt asks less: the host's largest holds


def test_a_sitemap_the_client_cut_drops_its_last_url_and_counts_it(fake):
    body = b"<urlset>" + b"".join(b"<url><loc>http://h.test/page-%d.html</loc></url>" % i for i in range(10))
    web = fake({"http://h.test/robots.txt": _robots(""), "http://h.test/sitemap.xml": (200, {}, body)},
               sitemaps__max_bytes=len(body) - 8)
    found, counters = web.reader().read("h.test", ["http://h.test"])
    assert list(found)[-1] == "http://h.test/page-8.html" and len(found) == 9
    assert counters["sitemaps_truncated"] == 1


def test_only_counters_that_happened_are_given(fake):
    web = fake({"http://h.test/robots.txt": _robots(""), "http://h.test/sitemap.xml": (200, {}, URLSET % b"http://h.test/a")})
    _found, counters = web.reader().read("h.test", ["http://h.test"])
    assert dict(counters) == {"hosts": 1, "fetched": 1, "urls_seen": 1}


def test_a_round_under_each_round_reads_the_sitemaps_first_and_fetches_what_they_list(spark, crawl, web):
    from crawlkit.crawl import run_round

    conf = crawl.with_overrides({"sitemaps.each_round": True, "crawl.topN": 100})
    table = storage.ensure_table(spark, storage.crawldb_path(conf["crawl.dir"]), "crawldb")
    table.update("generated_segment is not null", {"generated_segment": "null"})   # the fixture's lock: no segment
    report = run_round(spark, conf, NOW, lambda _msg: None)
    assert list(report.seconds)[:2] == ["sitemaps", "generate"]
    assert report.counters["sitemaps"]["new"] == 4
    # the URLs only a sitemap names were generated and fetched in the same round
    fetched = {r.url for r in storage.read_table(spark, storage.crawldb_path(conf["crawl.dir"]), "crawldb").collect()
               if r.status == "fetched"}
    assert FROM_SITEMAPS <= fetched
    round_stats = json.loads(storage.read_text(spark, storage.join(
        storage.segment_path(conf["crawl.dir"], report.segment), "_stats", "round.json")))
    assert "sitemaps" in round_stats["seconds"]
    # the stage's counters beside the round's others (a round pinned to one --now keeps each its own)
    stats = json.loads(storage.read_text(spark, storage.join(
        storage.segment_path(conf["crawl.dir"], report.segment), "_stats", "sitemaps.json")))
    assert stats["new"] == 4


def test_a_read_cut_short_is_told_apart_from_one_read_to_the_end(fake, monkeypatch):
    """The task's host rows: a host paused by a 503 (with its Retry-After), whose sitemap failed
    (500), whose robots.txt is down (even without respect_robots: its Sitemap: lines are
    unknown) or whose read raised was cut short; a missing sitemap (404) is a read to the end."""
    import pyarrow as pa

    from crawlkit.stages import sitemaps

    web = fake({"http://ok.test/robots.txt": _robots(""),
                "http://ok.test/sitemap.xml": (200, {}, URLSET % b"http://ok.test/a"),
                "http://none.test/robots.txt": _robots(""),
                "http://busy.test/robots.txt": _robots(""),
                "http://busy.test/sitemap.xml": (503, {"retry-after": "1800"}, b""),
                "http://broken.test/robots.txt": _robots(""),
                "http://broken.test/sitemap.xml": (500, {}, b""),
                "http://down.test/robots.txt": (503, {}, b""),
                "http://raising.test/robots.txt": _robots(""),
                "http://raising.test/sitemap.xml": (200, {}, RuntimeError("a bug"))},
               fetcher__respect_robots=False, urls__hosts_deny=["denied.test"])
    web.close = lambda: None
    monkeypatch.setattr(sitemaps, "HttpClient", lambda _settings, _guard: web)
    hosts = ["ok.test", "none.test", "busy.test", "broken.test", "down.test", "raising.test", "denied.test"]
    batch = pa.RecordBatch.from_pylist([{"host": h, "origin": f"http://{h}"} for h in hosts])
    rows = [r for b in sitemaps._read_partition(web.conf.to_dict())(iter([batch])) for r in b.to_pylist()]
    host_rows = {r["host"]: (r["outcome"], r["found_urls"], r["retry_after"])
                 for r in rows if r["url"] is None and r["counters"] is None}
    assert host_rows == {"ok.test": ("complete", 1, None), "none.test": ("complete", 0, None),
                         "busy.test": ("cut_short", 0, 1800), "broken.test": ("cut_short", 0, None),
                         "down.test": ("cut_short", 0, None), "raising.test": ("cut_short", 0, None),
                         "denied.test": ("filtered", 0, None)}
    assert "http://down.test/sitemap.xml" not in web.log   # a failing server is asked nothing more


def _host_rows(spark, *rows):
    """The reader's host rows (host, outcome, found_urls, retry_after) as read_sitemaps gives them."""
    from crawlkit.stages.sitemaps import FOUND_DDL

    return spark.createDataFrame([(None, h, None, None, None, None, None, None, o, n, r) for h, o, n, r in rows],
                                 FOUND_DDL)


def test_hosts_wait_the_interval_after_a_read_and_a_growing_backoff_after_a_cut_short_one(spark, make_test_conf):
    from crawlkit.stages.sitemaps import hosts_due, record_hosts_read

    conf = make_test_conf()
    path = storage.hostdb_path(conf["crawl.dir"])
    hostdb = storage.ensure_table(spark, path, "hostdb")
    day = 86400

    def stored():   # read afresh: a DeltaTable's toDF() may keep the snapshot it first read
        return storage.read_table(spark, path, "hostdb").collect()

    def record(at, *rows):
        return record_hosts_read(spark, hostdb, _host_rows(spark, *rows), at, day, f"sitemaps:{at.isoformat()}")

    def due(at, interval=day):
        origins = spark.createDataFrame([(h, f"http://{h}") for h in ("ok.test", "busy.test", "flaky.test", "new.test",
                                                                       "denied.test")], "host string, origin string")
        return sorted(r.host for r in hosts_due(origins, storage.read_table(spark, path, "hostdb"), at, interval).collect())

    assert record(NOW, ("ok.test", "complete", 3, None), ("busy.test", "cut_short", 0, 7200),
                  ("flaky.test", "cut_short", 0, None), ("denied.test", "filtered", 0, None)) == 1
    rows = {r.host: (r.sitemaps_read, r.sitemap_urls, r.sitemaps_failures, r.sitemaps_retry_at)
            for r in stored()}
    hour = timedelta(hours=1)
    assert rows == {"ok.test": (NOW, 3, 0, None), "busy.test": (None, None, 1, NOW + 2 * hour),
                    "flaky.test": (None, None, 1, NOW + hour)}   # the filtered host is not recorded
    assert due(NOW + hour / 2) == ["denied.test", "new.test"]
    assert due(NOW + hour) == ["denied.test", "flaky.test", "new.test"]   # its first backoff, an hour
    assert due(NOW + 2 * hour) == ["busy.test", "denied.test", "flaky.test", "new.test"]   # Retry-After: 2 h
    assert due(NOW + timedelta(days=1)) == ["busy.test", "denied.test", "flaky.test", "new.test", "ok.test"]
    assert due(NOW + hour / 2, interval=0) == ["denied.test", "new.test", "ok.test"]   # still backing off

    # cut short again: the wait doubles; read to the end: the failures are forgotten
    record(NOW + hour, ("flaky.test", "cut_short", 0, None), ("busy.test", "complete", 2, None))
    rows = {r.host: (r.sitemaps_read, r.sitemaps_failures, r.sitemaps_retry_at) for r in stored()}
    assert rows["flaky.test"] == (None, 2, NOW + 3 * hour) and rows["busy.test"] == (NOW + hour, 0, None)

    # a read recorded at a later clock (a run at a future --now) does not hold the host back
    record(NOW + timedelta(days=30), ("ok.test", "complete", 3, None))
    assert "ok.test" in due(NOW + timedelta(days=2))


def test_runs_at_one_now_keep_each_their_counters_file(spark, make_test_conf):
    from crawlkit.stages.sitemaps import write_counters

    conf = make_test_conf()
    for run in range(3):
        write_counters(spark, conf["crawl.dir"], NOW, {"run": run})
    stats = storage.join(conf["crawl.dir"], "_stats")
    names = ["sitemaps-20260201120000.json", "sitemaps-20260201120000-000001.json", "sitemaps-20260201120000-000002.json"]
    assert [json.loads(storage.read_text(spark, storage.join(stats, n)))["run"] for n in names] == [0, 1, 2]


def test_the_time_limit_stops_requests_keeps_what_was_found_and_leaves_the_rest_due(fake, monkeypatch):
    """Requests take 1 s and start 10 s apart (server_delay); the limit is 25 s: the first host
    is read to the end, the second is stopped before its second sitemap (its first one's URL
    kept), and the third is not begun, though the clock (24 s) would let its first request out:
    the task stops at the first host the limit stops."""
    import pyarrow as pa

    from crawlkit.stages import sitemaps

    web = fake({"http://one.test/robots.txt": _robots("", 1.0),
                "http://one.test/sitemap.xml": (200, {}, URLSET % b"http://one.test/a", 1.0),
                "http://two.test/robots.txt": _robots("Sitemap: http://two.test/a.xml\nSitemap: http://two.test/b.xml\n", 1.0),
                "http://two.test/a.xml": (200, {}, URLSET % b"http://two.test/a", 1.0),
                "http://two.test/b.xml": (200, {}, URLSET % b"http://two.test/b", 1.0),
                "http://three.test/robots.txt": _robots("", 1.0)}, fetcher__server_delay=10.0)
    web.close = lambda: None
    monkeypatch.setattr(sitemaps, "HttpClient", lambda _settings, _guard: web)
    batch = pa.RecordBatch.from_pylist([{"host": h, "origin": f"http://{h}"} for h in ("one.test", "two.test", "three.test")])
    start = web.now
    rows = [r for b in sitemaps._read_partition(web.conf.to_dict(), ends_at=start + 25)(iter([batch]))
            for r in b.to_pylist()]
    assert {r["host"]: r["outcome"] for r in rows if r["url"] is None and r["counters"] is None} == {
        "one.test": "complete", "two.test": "unfinished"}
    assert sorted(r["url"] for r in rows if r["url"]) == ["http://one.test/a", "http://two.test/a"]
    assert web.log == ["http://one.test/robots.txt", "http://one.test/sitemap.xml",
                       "http://two.test/robots.txt", "http://two.test/a.xml"]
    assert web.now - start == 24
    counters = json.loads(rows[-1]["counters"])
    assert (counters["hosts"], counters["hosts_unfinished"], counters["hosts_not_reached"]) == (2, 1, 1)


def test_a_host_that_failed_before_the_time_limit_is_cut_short_not_unfinished(fake):
    from crawlkit.stages.sitemaps import HostReader, host_outcome

    web = fake({"http://h.test/robots.txt": _robots("Sitemap: http://h.test/a.xml\nSitemap: http://h.test/b.xml\n", 1.0),
                "http://h.test/a.xml": (500, {}, b"", 1.0)}, fetcher__server_delay=10.0)
    _, counters = HostReader(web.conf, web, web.sleep, deadline=web.now + 15).read("h.test", ["http://h.test"])
    assert web.log == ["http://h.test/robots.txt", "http://h.test/a.xml"] and counters["failed"] == 1
    # backed off as a failing host (an unfinished one would be asked again at the next run)
    assert host_outcome(counters) == "cut_short" and "hosts_unfinished" not in counters


def test_an_unfinished_host_stays_due_behind_the_hosts_not_begun_since(spark, make_test_conf):
    """A host the time limit stopped is recorded only as begun: still due, its last read and
    failures as they were, and read after the hosts begun longer ago (a host slower than the
    limit does not hold the ones behind it back run after run)."""
    from pyspark.sql import functions as F

    from crawlkit.stages.sitemaps import hosts_due, reading_order, record_hosts_read

    conf = make_test_conf()
    path = storage.hostdb_path(conf["crawl.dir"])
    hostdb = storage.ensure_table(spark, path, "hostdb")
    day = timedelta(days=1)
    for at, host in ((NOW - 3 * day, "old.test"), (NOW - 2 * day, "recent.test")):
        record_hosts_read(spark, hostdb, _host_rows(spark, (host, "complete", 1, None)), at, 86400, "t")
    assert record_hosts_read(spark, hostdb, _host_rows(spark, ("slow.test", "unfinished", 5, None),
                                                      ("recent.test", "unfinished", 5, None)), NOW, 86400, "t") == 0
    stored = {r.host: (r.sitemaps_begun, r.sitemaps_read, r.sitemap_urls, r.sitemaps_failures)
              for r in storage.read_table(spark, path, "hostdb").collect()}
    assert stored == {"old.test": (NOW - 3 * day, NOW - 3 * day, 1, 0), "recent.test": (NOW, NOW - 2 * day, 1, 0),
                      "slow.test": (NOW, None, None, None)}
    origins = spark.createDataFrame([(h, f"http://{h}") for h in ("recent.test", "slow.test", "old.test", "new.test")],
                                    "host string, origin string")
    due = hosts_due(origins, storage.read_table(spark, path, "hostdb"), NOW + day / 2, 86400)
    assert [r.host for r in reading_order(due, 1).collect()] == ["new.test", "old.test", "recent.test", "slow.test"]
    # a v1 hostdb's rows have no begun time: their last read orders them, after the hosts never read
    v1 = storage.read_table(spark, path, "hostdb").withColumn("sitemaps_begun", F.lit(None).cast("timestamp"))
    assert [r.host for r in reading_order(hosts_due(origins, v1, NOW + day / 2, 86400), 1).collect()] == [
        "new.test", "slow.test", "old.test", "recent.test"]


def test_a_changefreq_gives_the_first_interval_within_the_schedules_bounds(spark, make_test_conf):
    from pyspark.sql import functions as F

    from crawlkit.stages.sitemaps import first_interval

    freqs = spark.createDataFrame([(f,) for f in ("always", "hourly", "weekly", "never", None)], "changefreq string")
    conf = make_test_conf(schedule__min_interval=7200, schedule__default_interval=86400,
                          schedule__max_interval=10 * 86400)

    def intervals(conf):
        return [r[0] for r in freqs.select(first_interval(F.col("changefreq"), conf)).collect()]

    # always and hourly up to the floor, never down to the ceiling; no changefreq: the default
    assert intervals(conf) == [7200, 7200, 7 * 86400, 10 * 86400, 86400]
    assert intervals(conf.with_overrides({"sitemaps.changefreq": False})) == [86400] * 5
    # change_rate prices a page the crawl lacks by 1/interval: a claimed "hourly" would sink it
    assert intervals(conf.with_overrides({"schedule.kind": "change_rate"})) == [86400] * 5


def test_a_v1_hostdb_gains_sitemaps_begun_and_keeps_its_rows(spark, tmp_path):
    from delta.tables import DeltaTable

    path = str(tmp_path / "hostdb")
    (spark.createDataFrame([("a.test", NOW, 3, 0, None)], "host string, sitemaps_read timestamp, sitemap_urls int, "
                                                         "sitemaps_failures int, sitemaps_retry_at timestamp")
     .write.format("delta").save(path))
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('{storage.SCHEMA_PROPERTY}' = 'hostdb:v1')")
    storage.ensure_table(spark, path, "hostdb")
    assert [tuple(r) for r in storage.read_table(spark, path, "hostdb").collect()] == [("a.test", NOW, 3, 0, None, None)]
    assert DeltaTable.forPath(spark, path).detail().first()["properties"][storage.SCHEMA_PROPERTY] == "hostdb:v2"
