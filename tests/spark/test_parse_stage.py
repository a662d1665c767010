"""The parse stage on content rows: the base URL of a redirected page, and the segment's links."""
from datetime import datetime

from crawlkit import schemas
from crawlkit.conf import make_conf
from crawlkit.stages.parse import parse
from crawlkit.stages.updatedb import segment_links

NOW = datetime(2026, 3, 1, 12, 0, 0)
# fetched as http://h.test/dir, served from http://h.test/dir/ after a redirect followed inline
PAGE = (b'<html><body><a href="page.html">p</a> <a href="/dir/">this page</a> '
        b'<a href="http://h.test/dir">the URL asked for</a> <a href="page.html">p again</a> '
        b'<a href="../up.html">up</a></body></html>')


def _content(spark):
    row = dict(url="http://h.test/dir", host="h.test", fetch_status="success", http_status=200,
               fetched_at=NOW, elapsed_ms=5, content_type="text/html", headers={}, content=PAGE,
               truncated=False, redirect_url="http://h.test/dir/", retry_after=None, error=None,
               segment="s1")
    return spark.createDataFrame([row], schemas.struct("content"))


def test_a_page_reached_through_inline_redirects_resolves_links_against_the_url_it_was_served_from(spark):
    [row] = parse(_content(spark), make_conf()).collect()
    # against the URL asked for, page.html would be http://h.test/page.html; both URLs of the
    # page itself are self-links, and the repeated link comes once
    assert [link.url for link in row.outlinks] == ["http://h.test/dir/page.html", "http://h.test/up.html"]


def test_each_segment_link_comes_once_and_the_redirect_link_wins_over_a_kept_self_link(spark):
    content = _content(spark)
    for ignore_self_links in (True, False):
        conf = make_conf(parser__ignore_same_page_links=ignore_self_links)
        links = segment_links(content, parse(content, conf), conf, NOW).collect()
        pairs = sorted((r.src, r.dst, dict(r.meta).get("kind")) for r in links)
        self_link = [("http://h.test/dir", "http://h.test/dir", "a")] if not ignore_self_links else []
        assert pairs == sorted([("http://h.test/dir", "http://h.test/dir/", "redirect"),
                                ("http://h.test/dir", "http://h.test/dir/page.html", "a"),
                                ("http://h.test/dir", "http://h.test/up.html", "a"), *self_link])
