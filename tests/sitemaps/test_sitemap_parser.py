"""crawlkit.fetch.sitemap: the three forms, lastmod, bad and hostile input, the caps."""
import gzip
from datetime import datetime

import pytest

from crawlkit.fetch.robots import RobotsRules
from crawlkit.fetch.sitemap import SitemapUrl, parse_lastmod, parse_sitemap

URLSET = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc> http://a.test/x </loc><lastmod>2024-01-02T03:04:05+01:00</lastmod>
       <changefreq>Daily</changefreq><priority>0.7</priority></url>
  <url><loc>http://a.test/y</loc><lastmod>yesterday</lastmod><changefreq>often</changefreq>
       <priority>1.5</priority></url>
  <url><lastmod>2024-01-01</lastmod></url>
</urlset>"""


def test_a_urlset_gives_loc_lastmod_changefreq_and_priority_and_drops_bad_values():
    doc = parse_sitemap(URLSET)
    assert (doc.kind, doc.truncated, doc.error) == ("urlset", False, None)
    assert doc.urls == [SitemapUrl("http://a.test/x", datetime(2024, 1, 2, 2, 4, 5), "daily", 0.7),
                        SitemapUrl("http://a.test/y")]   # bad lastmod, changefreq, priority: None; no loc: no entry


def test_tags_match_whatever_the_namespace():
    for root in (b"<urlset>", b'<urlset xmlns="http://www.google.com/schemas/sitemap/0.84">',
                 b'<s:urlset xmlns:s="urn:other">'):
        close = b"</s:urlset>" if root.startswith(b"<s:") else b"</urlset>"
        prefix = b"s:" if root.startswith(b"<s:") else b""
        body = root + b"<" + prefix + b"url><" + prefix + b"loc>http://a.test/</" + prefix + b"loc></" + prefix + b"url>" + close
        assert [u.loc for u in parse_sitemap(body).urls] == ["http://a.test/"], body


def test_a_sitemap_index_gives_its_child_sitemaps_and_no_urls():
    doc = parse_sitemap(b"<sitemapindex xmlns='http://www.sitemaps.org/schemas/sitemap/0.9'>"
                        b"<sitemap><loc>http://a.test/s1.xml.gz</loc><lastmod>2024-01-01</lastmod></sitemap>"
                        b"<sitemap><loc>/s2.xml</loc></sitemap><url><loc>http://a.test/page</loc></url>"
                        b"</sitemapindex>")
    assert (doc.kind, doc.sitemaps, doc.urls) == ("index", ["http://a.test/s1.xml.gz", "/s2.xml"], [])


def test_a_text_sitemap_is_one_url_per_line():
    doc = parse_sitemap(b"\xef\xbb\xbfhttp://a.test/1\r\n\n# not a url\nhttps://a.test/2  \nftp://a.test/3\n")
    assert doc.kind == "text"
    assert [u.loc for u in doc.urls] == ["http://a.test/1", "https://a.test/2"]


@pytest.mark.parametrize("body", [b"", b"   \n", b"<html><body>not found</body></html>",
                                  b"<<<>>>", b"<rss version='2.0'><channel/></rss>"])
def test_what_is_no_sitemap_is_invalid_and_does_not_raise(body):
    doc = parse_sitemap(body)
    assert doc.kind == "invalid" and doc.error and doc.urls == [] and doc.sitemaps == []


def test_a_broken_tail_keeps_the_entries_before_it():
    doc = parse_sitemap(b"<urlset><url><loc>http://a.test/1</loc></url><url><loc>http://a.test/2</loc></url><url><lo")
    assert [u.loc for u in doc.urls][:2] == ["http://a.test/1", "http://a.test/2"]


def test_external_entities_are_not_resolved(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    body = (f'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY xxe SYSTEM "{secret.as_uri()}">]>'
            '<urlset><url><loc>http://a.test/&xxe;</loc></url></urlset>').encode()
    doc = parse_sitemap(body)
    assert all("TOPSECRET" not in u.loc for u in doc.urls)
    assert [u.loc for u in doc.urls] == ["http://a.test/"]


def test_a_billion_laughs_is_not_expanded():
    lol = "".join(f'<!ENTITY l{i} "{("&l%d;" % (i - 1)) * 10}">' for i in range(1, 10))
    body = (f'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY l0 "lol">{lol}]>'
            '<urlset><url><loc>http://a.test/&l9;</loc></url></urlset>').encode()
    doc = parse_sitemap(body)
    assert [len(u.loc) for u in doc.urls] == [len("http://a.test/")]


def test_a_gzip_body_is_inflated_whatever_it_is_called():
    assert parse_sitemap(gzip.compress(URLSET)).urls == parse_sitemap(URLSET).urls
    text = parse_sitemap(gzip.compress(b"http://a.test/1\n"))
    assert (text.kind, [u.loc for u in text.urls]) == ("text", ["http://a.test/1"])
    assert parse_sitemap(b"\x1f\x8bnot gzip at all").kind == "invalid"


def test_a_gzip_bomb_is_cut_at_max_bytes():
    entry = b"<url><loc>http://a.test/p</loc></url>"
    bomb = gzip.compress(b"<urlset>" + entry * 200_000 + b"</urlset>")   # ~7 MB inflated
    doc = parse_sitemap(bomb, max_bytes=100_000)
    assert doc.truncated and doc.kind == "urlset"
    assert 0 < len(doc.urls) <= 100_000 // len(entry) + 1   # (+ the cut tail, recovered)


def test_entries_are_capped_per_document():
    body = b"<urlset>" + b"".join(b"<url><loc>http://a.test/%d</loc></url>" % i for i in range(30)) + b"</urlset>"
    doc = parse_sitemap(body, max_entries=10)
    assert doc.truncated and [u.loc for u in doc.urls] == [f"http://a.test/{i}" for i in range(10)]
    text = parse_sitemap(b"".join(b"http://a.test/%d\n" % i for i in range(30)), max_entries=5)
    assert text.truncated and len(text.urls) == 5
    index = parse_sitemap(b"<sitemapindex>" + b"<sitemap><loc>http://a.test/s</loc></sitemap>" * 9
                          + b"</sitemapindex>", max_entries=3)
    assert index.truncated and len(index.sitemaps) == 3
    assert not parse_sitemap(body, max_entries=30).truncated


def test_a_plain_body_over_max_bytes_is_cut():
    body = b"".join(b"http://a.test/%d\n" % i for i in range(100))
    doc = parse_sitemap(body, max_bytes=50)
    assert doc.truncated and 0 < len(doc.urls) < 100


@pytest.mark.parametrize("text, expected", [
    ("2024", datetime(2024, 1, 1)), ("2024-05", datetime(2024, 5, 1)), ("2024-05-06", datetime(2024, 5, 6)),
    ("2024-05-06T07:08Z", datetime(2024, 5, 6, 7, 8)), ("2024-05-06T07:08:09+00:00", datetime(2024, 5, 6, 7, 8, 9)),
    ("2024-05-06T07:08:09.5-02:30", datetime(2024, 5, 6, 9, 38, 9, 500000)),
    ("2024-05-06T07:08:09", datetime(2024, 5, 6, 7, 8, 9)),   # no zone: taken as UTC
    (" 2024-05-06 ", datetime(2024, 5, 6)),
    ("", None), (None, None), ("bad", None), ("2024-13-01", None), ("2024-02-30", None), ("06/05/2024", None)])
def test_lastmod_is_a_w3c_datetime_in_naive_utc(text, expected):
    assert parse_lastmod(text) == expected


def test_robots_rules_expose_sitemap_lines_and_keep_their_verdicts():
    text = "User-agent: *\nDisallow: /private/\nSitemap: http://a.test/s.xml\nSitemap: /rel.xml\n"
    rules = RobotsRules.from_text(text, "crawlkit")
    assert rules.sitemaps == ("http://a.test/s.xml", "/rel.xml")
    assert not rules.allowed("http://a.test/private/x") and rules.allowed("http://a.test/public")
    assert RobotsRules.allow_all("crawlkit").sitemaps == ()
    assert RobotsRules.from_text("User-agent: *\nDisallow: /\n", "crawlkit").sitemaps == ()


def test_only_direct_children_of_the_root_are_entries():
    # a video extension's own <url><loc> is no page, and does not replace the page's fields
    doc = parse_sitemap(b'<urlset xmlns:video="v"><url><loc>http://a.test/p</loc><lastmod>2024-01-02</lastmod>'
                        b"<video:video><video:url><loc>http://a.test/vid</loc><lastmod>2020-01-01</lastmod>"
                        b"</video:url></video:video></url></urlset>")
    assert doc.urls == [SitemapUrl("http://a.test/p", datetime(2024, 1, 2))]
    index = parse_sitemap(b"<sitemapindex><sitemap><loc>http://a.test/s.xml</loc>"
                          b"<x:sitemap xmlns:x='x'><loc>http://a.test/nested.xml</loc></x:sitemap></sitemap></sitemapindex>")
    assert index.sitemaps == ["http://a.test/s.xml"]


def test_every_child_of_the_root_is_dropped_as_the_document_streams(monkeypatch):
    from lxml import etree

    from crawlkit.fetch import sitemap

    parsers = []

    class Spy:   # lxml as the parser sees it, keeping the iterparse to look at its tree after
        LxmlError = etree.LxmlError

        @staticmethod
        def iterparse(*args, **kwargs):
            parsers.append(etree.iterparse(*args, **kwargs))
            return parsers[-1]

    monkeypatch.setattr(sitemap, "etree", Spy)
    doc = parse_sitemap(b"<urlset>" + b"<x>junk</x>" * 500 + b"<url><loc>http://a.test/</loc></url>"
                        + b"<sitemap><loc>http://a.test/s</loc></sitemap>" * 500 + b"</urlset>")
    assert [u.loc for u in doc.urls] == ["http://a.test/"]
    assert len(parsers[0].root) <= 1   # junk and unmatched elements do not pile up


def test_a_body_cut_by_the_http_client_drops_its_last_entry():
    body = b"<urlset>" + b"".join(b"<url><loc>http://a.test/page-%d.html</loc></url>" % i for i in range(5))
    cut = body[:-12]   # inside the last <loc>
    doc = parse_sitemap(cut, truncated=True)
    assert doc.truncated and [u.loc for u in doc.urls] == [f"http://a.test/page-{i}.html" for i in range(4)]
    here = parse_sitemap(body, max_bytes=len(body) - 12)   # cut here, at max_bytes
    assert here.truncated and here.urls == doc.urls
    text = parse_sitemap(b"http://a.test/1\nhttp://a.test/2\nhttp://a.test/lon", truncated=True)
    assert text.truncated and [u.loc for u in text.urls] == ["http://a.test/1", "http://a.test/2"]
    assert not parse_sitemap(body).truncated


def test_a_gzip_stream_without_its_end_is_cut():
    body = b"<urlset>" + b"".join(b"<url><loc>http://a.test/page-%d.html</loc></url>" % i for i in range(50))
    packed = gzip.compress(body + b"</urlset>")
    doc = parse_sitemap(packed[:-30])   # the crc and the last bytes of the stream missing
    assert doc.truncated and doc.kind == "urlset"
    assert all(u.loc.endswith(".html") for u in doc.urls) and len(doc.urls) < 50
    assert not parse_sitemap(packed).truncated and len(parse_sitemap(packed).urls) == 50


def test_a_bare_ampersand_in_a_loc_is_read_as_written():
    doc = parse_sitemap(b"<urlset><url><loc>http://a.test/?a=1&b=2</loc></url>"
                        b"<url><loc>http://a.test/?c=1&amp;d=2&#38;e=3</loc></url>"
                        b"<url><loc><![CDATA[http://a.test/?f=1&g=2]]></loc></url></urlset>")
    assert [u.loc for u in doc.urls] == ["http://a.test/?a=1&b=2", "http://a.test/?c=1&d=2&e=3",
                                         "http://a.test/?f=1&g=2"]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_a_utf16_document_is_read_as_xml(encoding):
    text = '<?xml version="1.0" encoding="UTF-16"?><urlset><url><loc>http://a.test/caf\xe9?a&amp;b</loc></url></urlset>'
    body = text.encode(encoding)
    if encoding == "utf-16-be":
        body = b"\xfe\xff" + body
    doc = parse_sitemap(body)
    assert (doc.kind, [u.loc for u in doc.urls]) == ("urlset", ["http://a.test/caf\xe9?a&b"])
