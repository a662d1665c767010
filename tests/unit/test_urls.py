"""crawlkit.urls: one table per normalisation rule and per filter reason."""

import pytest

from crawlkit import urls
from crawlkit.urls import UrlFilter, UrlNormalizer, domain_of, host_of, normalize

RFC_BASE = "http://a/b/c/d;p?q"

CASES = {
    "scheme and host case": [
        ("HTTP://Example.COM/Path", None, "http://example.com/Path"),
        ("hTtPs://WWW.EXAMPLE.org", None, "https://www.example.org/"),
    ],
    "default ports": [
        ("http://example.com:80/x", None, "http://example.com/x"),
        ("https://example.com:443/x", None, "https://example.com/x"),
        ("http://example.com:443/x", None, "http://example.com:443/x"),
        ("https://example.com:80/", None, "https://example.com:80/"),
        ("http://example.com:08080/", None, "http://example.com:8080/"),
        ("http://example.com:/x", None, "http://example.com/x"),
    ],
    "percent-encoding": [
        ("http://a.com/%7euser/%41%62", None, "http://a.com/~user/Ab"),
        ("http://a.com/%2f%3a%c3%a9", None, "http://a.com/%2F%3A%C3%A9"),
        ("http://a.com/a b", None, "http://a.com/a%20b"),
        ("http://a.com/caf\u00e9?q=\u00e4", None, "http://a.com/caf%C3%A9?q=%C3%A4"),
        ("http://a.com/100%", None, "http://a.com/100%25"),
        ("http://a.com/%zz", None, "http://a.com/%25zz"),
        ("http://a.com/a\"<>`{}|^", None, "http://a.com/a%22%3C%3E%60%7B%7D%7C%5E"),
        ("http://a.com/p;x=1,2?a=1&b=c+d:e@f/g!$'()*", None,
         "http://a.com/p;x=1,2?a=1&b=c+d:e@f/g!$'()*"),
    ],
    "dot segments": [
        ("http://a.com/a/./b/../c", None, "http://a.com/a/c"),
        ("http://a.com/../../x", None, "http://a.com/x"),
        ("http://a.com/a/b/..", None, "http://a.com/a/"),
        ("http://a.com/a/b/.", None, "http://a.com/a/b/"),
        ("http://a.com/a/%2E%2E/b", None, "http://a.com/b"),
        ("http://a.com/.hidden/v1.2/", None, "http://a.com/.hidden/v1.2/"),
        ("../../../g", RFC_BASE, "http://a/g"),
    ],
    "empty path": [
        ("http://a.com", None, "http://a.com/"),
        ("http://a.com?x=1", None, "http://a.com/?x=1"),
    ],
    "fragment and empty query": [
        ("http://a.com/x#section", None, "http://a.com/x"),
        ("http://a.com/x?#", None, "http://a.com/x"),
        ("#top", "http://a.com/page?x=1", "http://a.com/page?x=1"),
    ],
    "IDN": [
        ("http://b\u00fccher.de/", None, "http://xn--bcher-kva.de/"),
        ("http://B\u00dcCHER.de/", None, "http://xn--bcher-kva.de/"),
        ("http://\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25.com/", None, "http://example.com/"),
        ("http://\u2603.net/", None, "http://xn--n3h.net/"),  # IDNA 2003 fallback
        ("http://xn--bcher-kva.de/", None, "http://xn--bcher-kva.de/"),
    ],
    "whitespace and controls": [
        ("  http://a.com/x  ", None, "http://a.com/x"),
        ("\thttp://a.com/p\na\rth\x00", None, "http://a.com/path"),
        ("\\\\other.com\\x\\y?q=\\", "http://a.com/", "http://other.com/x/y?q=%5C"),
    ],
    "relative resolution (RFC 3986 5.4)": [
        ("g", RFC_BASE, "http://a/b/c/g"),
        ("./g", RFC_BASE, "http://a/b/c/g"),
        ("g/", RFC_BASE, "http://a/b/c/g/"),
        ("/g", RFC_BASE, "http://a/g"),
        ("//g", RFC_BASE, "http://g/"),
        ("?y", RFC_BASE, "http://a/b/c/d;p?y"),
        ("g?y", RFC_BASE, "http://a/b/c/g?y"),
        ("#s", RFC_BASE, "http://a/b/c/d;p?q"),
        ("", RFC_BASE, "http://a/b/c/d;p?q"),
        (".", RFC_BASE, "http://a/b/c/"),
        ("..", RFC_BASE, "http://a/b/"),
        ("../g", RFC_BASE, "http://a/b/g"),
        ("../..", RFC_BASE, "http://a/"),
        ("http:g", RFC_BASE, "http://a/b/c/g"),
        ("https://other/x", RFC_BASE, "https://other/x"),
    ],
    "base with and without trailing slash": [
        ("page.html", "http://a.com/dir/", "http://a.com/dir/page.html"),
        ("page.html", "http://a.com/dir", "http://a.com/page.html"),
        ("page.html", "http://a.com", "http://a.com/page.html"),
        ("../up.html", "http://a.com/x/y/", "http://a.com/x/up.html"),
    ],
    "<base href> semantics": [
        # a page at http://a.com/p/page.html with <base href="http://cdn.com/s/">
        ("img/x.png", "http://cdn.com/s/", "http://cdn.com/s/img/x.png"),
        ("/root", "http://cdn.com/s/", "http://cdn.com/root"),
        ("//third.com/x", "https://cdn.com/s/", "https://third.com/x"),
    ],
    "userinfo kept, normalised": [
        ("http://us%65r:pw@a.com/", None, "http://user:pw@a.com/"),
    ],
    "IPv6 and IPv4 hosts": [
        ("http://[2001:DB8::1]:8080/x", None, "http://[2001:db8::1]:8080/x"),
        ("http://127.0.0.1:80/", None, "http://127.0.0.1/"),
    ],
    "trailing dot in host": [
        ("http://example.com./", None, "http://example.com/"),
    ],
}

INVALID = [
    ("", None),
    ("   ", None),
    ("relative/path", None),
    ("/absolute/path", None),
    ("mailto:someone@example.com", None),
    ("javascript:void(0)", "http://a.com/"),
    ("data:text/plain,hi", "http://a.com/"),
    ("http://", None),
    ("http:///path", None),
    ("http://exa mple.com/", None),
    ("http://a..b.com/", None),
    ("http://[::1/", None),
    ("http://[]/", None),
    ("http://a.com:99999/", None),
    ("http://a.com:8o/", None),
    ("http://a.com:1:2/", None),
    ("http://\ud800.com/", None),
    (None, None),
    (42, None),
]


@pytest.mark.parametrize(
    "url,base,expected",
    [pytest.param(u, b, e, id=f"{rule}: {u!r}") for rule, rows in CASES.items() for u, b, e in rows],
)
def test_normalize(url, base, expected):
    assert normalize(url, base) == expected


@pytest.mark.parametrize("url,base", INVALID)
def test_normalize_invalid_gives_none(url, base):
    assert normalize(url, base) is None


def test_normalize_is_idempotent():
    for rows in CASES.values():
        for url, base, expected in rows:
            assert normalize(expected) == expected


@pytest.mark.parametrize(
    "url,expected",
    [
        ("http://a.com/x;jsessionid=AB12?b=2&PHPSESSID=9&a=1", "http://a.com/x?a=1&b=2"),
        ("http://a.com/x?SID=1", "http://a.com/x"),
        ("http://a.com/x?b=&a&&c=3", "http://a.com/x?a&b=&c=3"),
    ],
)
def test_normalizer_drops_session_ids_and_sorts(url, expected):
    assert UrlNormalizer({"sort_query": True})(url) == expected


def test_normalizer_defaults_keep_order_and_can_keep_session_ids():
    url = "http://a.com/x?z=1&jsessionid=2&a=3"
    assert UrlNormalizer()(url) == "http://a.com/x?z=1&a=3"
    assert UrlNormalizer({"session_params": []})(url) == url
    assert UrlNormalizer({"session_params": ["z"]})("?Z=1", "http://a.com/?q") == "http://a.com/"


def test_normalize_without_options_keeps_query_untouched():
    url = "http://a.com/x?b=2&jsessionid=1&a=1"
    assert normalize(url) == url


@pytest.mark.parametrize(
    "url,expected",
    [
        ("http://Www.Example.com:8080/x", "www.example.com"),
        ("https://user@a.com/", "a.com"),
        ("http://[::1]:80/", "::1"),
        ("/relative", None),
        ("not a url", None),
    ],
)
def test_host_of(url, expected):
    assert host_of(url) == expected


@pytest.mark.parametrize(
    "host,expected",
    [
        ("www.example.com", "example.com"),
        ("a.b.example.co.uk", "example.co.uk"),
        ("example.com", "example.com"),
        ("WWW.Example.COM.", "example.com"),
        ("10.1.2.3", "10.1.2.3"),
        ("::1", "::1"),
        ("localhost", "localhost"),
        ("co.uk", "co.uk"),
    ],
)
def test_domain_of(host, expected):
    assert domain_of(host) == expected


def test_domain_of_treats_private_suffixes_as_public():
    if urls._TLD_EXTRACT is None:
        pytest.skip("tldextract not installed")
    assert domain_of("alice.github.io") == "alice.github.io"


def test_domain_heuristic_without_tldextract():
    assert urls._domain_heuristic("a.b.example.co.uk".split(".")) == "example.co.uk"
    assert urls._domain_heuristic("www.example.com".split(".")) == "example.com"


FILTER_SETTINGS = {
    "include": [r"^https?://[^/]*example\.(com|org)/"],
    "exclude": [r"\.(jpg|png|zip)$", r"/private/"],
    "max_length": 60,
    "max_path_depth": 4,
    "hosts_deny": ["bad.example.com", ".spam.example.org"],
    "max_repeated_segments": 2,
    "max_query_params": 3,
}


@pytest.mark.parametrize(
    "url,reason",
    [
        ("http://www.example.com/ok", None),
        ("https://example.org/a/b/c/d", None),
        ("ftp://example.com/file", "scheme"),
        ("http://example.com/" + "x" * 60, "too_long"),
        ("http://example.com/a/b/c/d/e", "too_deep"),
        ("http://example.com/a/b/a/a", "repeated_segments"),
        ("http://example.com/?a=1&b=2&c=3&d=4", "query_too_long"),
        ("http://example.com/photo.jpg", "excluded"),
        ("http://example.com/private/x", "excluded"),
        ("http://other.net/page", "not_included"),
        ("http://bad.example.com/x", "host_denied"),
        ("http://spam.example.org/x", "host_denied"),
        ("http://deep.spam.example.org/x", "host_denied"),
        ("http://notbad.example.com/x", None),
        ("", "invalid"),
        ("http:///nohost", "invalid"),
    ],
)
def test_filter_reasons(url, reason):
    assert UrlFilter(FILTER_SETTINGS).check(url) == reason


def test_filter_hosts_allow():
    url_filter = UrlFilter({"hosts_allow": ["example.com", ".example.org"],
                            "hosts_deny": ["x.example.org"]})
    assert url_filter.check("http://example.com/") is None
    assert url_filter.check("http://www.example.com/") == "host_not_allowed"
    assert url_filter.check("http://example.org/") is None
    assert url_filter.check("http://a.b.example.org/") is None
    assert url_filter.check("http://x.example.org/") == "host_denied"
    assert url_filter.check("http://evilexample.org/") == "host_not_allowed"


def test_host_patterns_in_unicode_match_punycode_hosts():
    # the filter sees normalized URLs, whose hosts are punycode; operators write Unicode
    deny = UrlFilter({"hosts_deny": ["bücher.de"]})
    assert deny.check("http://xn--bcher-kva.de/katalog") == "host_denied"
    allow = UrlFilter({"hosts_allow": [".BÜCHER.de"]})
    assert allow.check("http://shop.xn--bcher-kva.de/") is None
    assert allow.check("http://example.de/") == "host_not_allowed"


def test_filter_defaults():
    url_filter = UrlFilter({})
    assert url_filter.check("https://anything.net/a/b") is None
    assert url_filter.check("mailto:x@y.z") == "scheme"
    assert url_filter.check("http://a.com/" + "/".join("abcdefghijklmnopq")) == "too_deep"
    assert url_filter.check("http://a.com/" + "x/" * 4) == "repeated_segments"
    assert url_filter.check("http://a.com/" + "y" * 2048) == "too_long"
    assert url_filter.accepts("http://a.com/")


def test_filter_limits_can_be_disabled():
    url_filter = UrlFilter({"max_length": None, "max_path_depth": None,
                            "max_repeated_segments": None, "max_query_params": None})
    assert url_filter.check("http://a.com/" + "x/" * 40 + "?" + "&".join("a" * 50)) is None


def test_filter_reasons_are_listed():
    assert set(UrlFilter.REASONS) == {
        "invalid", "scheme", "too_long", "too_deep", "excluded", "not_included",
        "host_denied", "host_not_allowed", "repeated_segments", "query_too_long"}
