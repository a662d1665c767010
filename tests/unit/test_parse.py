"""crawlkit.parse on small inline pages, for every backend.

The ``lxml`` backend must give bs4's output exactly: every page the ``parse``
fixture parses with it is also parsed with bs4 and the whole results are
compared, so each test below is also an lxml == bs4 test on its pages (with
its options and headers); ``TRICKY_PAGES`` at the end adds malformed pages.
"""

import os

import pytest

from crawlkit.parse import empty_result, parse_document, parse_html, parse_text
from crawlkit.parse.extract import refresh_target, urls_in_script

URL = "http://example.com/dir/page.html"
BACKENDS = ["bs4", "selectolax", "lxml"]
RESULT_KEYS = set(empty_result())


def page(body: str, head: str = "") -> bytes:
    return f"<!doctype html><html><head>{head}</head><body>{body}</body></html>".encode()


def links_by_url(result):
    return {link["url"]: link for link in result["outlinks"]}


@pytest.fixture(params=BACKENDS)
def parse(request):
    def run(body, url=URL, content_type="text/html", headers=None, **opts):
        result = parse_html(url, body, content_type, headers, backend=request.param, **opts)
        if request.param == "lxml":
            assert result == parse_html(url, body, content_type, headers, backend="bs4", **opts)
        return result
    return run


# -- title, text, lang ---------------------------------------------------------

def test_title_text_lang(parse):
    result = parse(b"""<html lang="de"><head><title>  Mein
        Titel </title><style>p { color: red }</style>
        <script>document.write("hidden script text")</script></head>
        <body><h1>Heading</h1><p>First   paragraph</p><p>Second<br>line</p>
        <noscript>enable javascript</noscript><template><p>tmpl</p></template>
        <!-- a comment --><p>caf&eacute; &amp; more</p></body></html>""")
    assert result["title"] == "Mein Titel"
    assert result["text"] == "Heading First paragraph Second line café & more"
    assert result["lang"] == "de"
    assert result["error"] is None
    assert set(result) == RESULT_KEYS


def test_text_is_truncated_and_blocks_are_separated(parse):
    result = parse(page("<div>one</div><div>two</div><span>thr</span><b>ee</b>"), max_text=9)
    assert result["text"] == "one two t"
    assert parse(page("<ul><li>a</li><li>b</li></ul>x<b>y</b>"))["text"] == "a b xy"


def test_missing_title_and_lang_are_none(parse):
    result = parse(page("<p>x</p><svg><title>icon</title></svg>"))
    assert result["title"] is None
    assert result["lang"] is None


# -- links and their metadata ------------------------------------------------

def test_anchor_and_surrounding_text(parse):
    before = " ".join(f"b{i}" for i in range(30))
    after = " ".join(f"a{i}" for i in range(30))
    result = parse(page(f"<p>outside</p><p>{before} <a href='x.html'>the <b>anchor</b></a> "
                        f"{after}</p><p>other block</p>"))
    (link,) = result["outlinks"]
    assert link["url"] == "http://example.com/dir/x.html"
    assert link["anchor"] == "the anchor"
    assert link["nofollow"] is False
    meta = link["meta"]
    assert meta["kind"] == "a"
    assert meta["href"] == "x.html"
    assert meta["anchor"] == "the anchor"
    words = meta["surrounding"].split()
    assert words == [f"b{i}" for i in range(10, 30)] + [f"a{i}" for i in range(20)]


def test_surrounding_text_stays_inside_the_block(parse):
    result = parse(page("<p>intro words</p><ul><li><a href='/a'>A</a></li>"
                        "<li>x <a href='/b'>B</a> y</li></ul>"))
    links = links_by_url(result)
    assert "surrounding" not in links["http://example.com/a"]["meta"]
    assert links["http://example.com/b"]["meta"]["surrounding"] == "x y"


def test_title_and_name_attributes_and_rel_nofollow(parse):
    result = parse(page("<a href='/t' title=' Link  title ' name='n1' rel='NoFollow noopener'>t</a>"))
    (link,) = result["outlinks"]
    assert link["nofollow"] is True
    assert link["meta"]["title"] == "Link title"
    assert link["meta"]["name"] == "n1"


def test_image_link_alt_and_src(parse):
    result = parse(page("<a href='/img'>Go <img src='pic.png' alt='A picture'></a>"))
    (link,) = result["outlinks"]
    assert link["anchor"] == "Go A picture"
    assert link["meta"]["image_alt"] == "A picture"
    assert link["meta"]["src"] == "pic.png"


def test_area_links(parse):
    result = parse(page("<img usemap='#m' src='map.png'><map name='m'>"
                        "<area shape='rect' coords='0,0,1,1' href='/region' alt='North region' "
                        "title='Region'><area shape='rect' alt='no href'></map>"))
    (link,) = result["outlinks"]
    assert link["url"] == "http://example.com/region"
    assert link["anchor"] == "North region"
    assert link["meta"] == {"kind": "area", "href": "/region", "anchor": "North region",
                            "area": "North region", "title": "Region"}


def test_frames_and_iframes(parse):
    frameset = (b"<html><head><title>F</title></head><frameset cols='50%,50%'>"
                b"<frame src='left.html' name='nav'><frame src='right.html' title='Main'>"
                b"</frameset></html>")
    links = links_by_url(parse(frameset))
    left = links["http://example.com/dir/left.html"]["meta"]
    assert left == {"kind": "frame", "src": "left.html", "name": "nav", "frame": "nav"}
    right = links["http://example.com/dir/right.html"]["meta"]
    assert right == {"kind": "frame", "src": "right.html", "title": "Main", "frame": "Main"}

    result = parse(page("<iframe src='//cdn.example.net/embed' name='video'>fallback</iframe>"))
    (link,) = result["outlinks"]
    assert link["url"] == "http://cdn.example.net/embed"
    assert link["meta"]["kind"] == "iframe"
    assert link["meta"]["frame"] == "video"
    assert "fallback" not in result["text"]


def test_onmouseover(parse):
    result = parse(page(
        "<a href='/roll' onmouseover=\"this.src='over.gif'; status='/promo.html'\">roll</a>"
        " <span onmouseover=\"window.location='http://other.example.org/x'\">hover</span>"
        " <span onmouseover=\"alert(1)\">nothing</span>"))
    links = links_by_url(result)
    assert links["http://example.com/roll"]["meta"]["onmouseover"] == "over.gif"
    # the rollover image is metadata only; page-like URLs become links of their own
    assert "http://example.com/dir/over.gif" not in links
    assert links["http://example.com/promo.html"]["meta"]["kind"] == "onmouseover"
    hover = links["http://other.example.org/x"]
    assert hover["meta"] == {"kind": "onmouseover", "onmouseover": "http://other.example.org/x",
                             "surrounding": "roll hover nothing"}
    assert len(links) == 3


def test_urls_in_script_reads_literals_only():
    assert urls_in_script("location.href='/a.html'; x = \"b.php?x=1\"") == ["/a.html", "b.php?x=1"]


def test_urls_in_script_leave_property_paths_versions_and_host_names():
    code = ("menu('nav.open'); v='v1.2'; go('www.example.org'); x.src='img/over.gif'; "
            "load('docs/list.cfm?id=3'); f('file.name.HTM'); s='toggle.js'")
    assert urls_in_script(code) == ["img/over.gif", "docs/list.cfm?id=3", "file.name.HTM", "toggle.js"]
    assert urls_in_script("doSomething(); show('menu')") == []


def test_only_nonempty_meta_keys(parse):
    (link,) = parse(page("<a href='/x' title='' name=''></a>"))["outlinks"]
    assert link["meta"] == {"kind": "a", "href": "/x"}
    assert link["anchor"] == ""


def test_links_are_deduplicated_keeping_the_first(parse):
    result = parse(page("<a href='/x#one'>first</a><a href='http://EXAMPLE.com/x'>second</a>"
                        "<a href='mailto:a@b.c'>mail</a><a href='javascript:go()'>js</a><a>no href</a>"))
    (link,) = result["outlinks"]
    assert link["url"] == "http://example.com/x"
    assert link["anchor"] == "first"


def test_outlinks_are_capped(parse):
    anchors = "".join(f"<a href='/p{i}'>{i}</a>" for i in range(10_000))
    result = parse(page(anchors), max_outlinks=5000)
    assert len(result["outlinks"]) == 5000
    assert result["outlinks_truncated"] is True
    assert result["outlinks"][-1]["url"] == "http://example.com/p4999"
    exactly = parse(page(anchors + "<a href='/p0'>dup</a>"), max_outlinks=10_000)
    assert len(exactly["outlinks"]) == 10_000
    assert exactly["outlinks_truncated"] is False


def test_cap_counts_distinct_urls(parse):
    result = parse(page("<a href='/a'>1</a><a href='/a'>2</a><a href='/b'>3</a>"), max_outlinks=2)
    assert [link["url"] for link in result["outlinks"]] == ["http://example.com/a",
                                                            "http://example.com/b"]
    assert result["outlinks_truncated"] is False


# -- base, canonical, robots, refresh ----------------------------------------

def test_base_href(parse):
    result = parse(page("<a href='x.html'>x</a><a href='/root'>r</a>",
                        head="<base href='http://static.example.com/assets/'>"))
    assert result["base"] == "http://static.example.com/assets/"
    assert set(links_by_url(result)) == {"http://static.example.com/assets/x.html",
                                         "http://static.example.com/root"}


def test_relative_base_href_and_default_base(parse):
    result = parse(page("<a href='x'>x</a>", head="<base href='../other/'>"))
    assert result["base"] == "http://example.com/other/"
    assert result["outlinks"][0]["url"] == "http://example.com/other/x"
    assert parse(page(""))["base"] == URL


def test_canonical_from_link_element_then_header(parse):
    html = parse(page("", head="<link rel='canonical' href='/canonical#frag'>"),
                 headers={"Link": '<http://example.com/from-header>; rel="canonical"'})
    assert html["canonical"] == "http://example.com/canonical"
    header = parse(page(""), headers={"link": '<http://example.com/a>; rel="preload", '
                                              '</from-header>; rel="canonical"'})
    assert header["canonical"] == "http://example.com/from-header"
    assert parse(page(""))["canonical"] is None


def test_a_link_header_canonical_is_the_responses_not_the_documents(parse):
    # <base href> moves the document's links, not the HTTP header's; and "canonical" is a
    # rel token of its own, not a prefix of another
    with_base = parse(page("", head="<base href='http://cdn.example.net/assets/'>"),
                      headers={"Link": '</canon>; rel="canonical"'})
    assert with_base["canonical"] == "http://example.com/canon"
    other_rel = parse(page(""), headers={"Link": '</a>; rel="canonical-foo", '
                                                 '</b>; rel="alternate canonical"'})
    assert other_rel["canonical"] == "http://example.com/b"


@pytest.mark.parametrize(
    "content,headers,noindex,nofollow",
    [
        ("noindex", None, True, False),
        ("NOFOLLOW", None, False, True),
        ("noindex, nofollow", None, True, True),
        ("none", None, True, True),
        ("index,follow", None, False, False),
        (None, {"X-Robots-Tag": "noindex"}, True, False),
        (None, {"x-robots-tag": ["nofollow", "noarchive"]}, False, True),
        (None, {"X-Robots-Tag": "googlebot: noindex"}, False, False),
        (None, {"X-Robots-Tag": "googlebot: noindex, nofollow"}, False, False),
        (None, {"X-Robots-Tag": ["otherbot: noindex", "nofollow"]}, False, True),
        (None, {"X-Robots-Tag": "unavailable_after: 2020-01-01, noindex"}, True, False),
    ],
)
def test_robots_directives(parse, content, headers, noindex, nofollow):
    head = f"<meta name='robots' content='{content}'>" if content else ""
    result = parse(page("<a href='/x' rel='nofollow'>x</a><a href='/y'>y</a>", head=head),
                   headers=headers)
    assert (result["noindex"], result["nofollow"]) == (noindex, nofollow)
    # page-level nofollow is reported separately; per-link flags stay per link
    assert [link["nofollow"] for link in result["outlinks"]] == [True, False]


def test_meta_refresh(parse):
    result = parse(page("", head="<meta http-equiv='Refresh' content=\"0; URL='/moved?x=1'\">"))
    assert result["refresh"] == "http://example.com/moved?x=1"
    (link,) = result["outlinks"]
    assert link["url"] == "http://example.com/moved?x=1"
    assert link["meta"] == {"kind": "refresh", "href": "/moved?x=1"}
    assert parse(page("", head="<meta http-equiv='refresh' content='30'>"))["refresh"] is None


@pytest.mark.parametrize(
    "content,target",
    [("0;url=http://a/b", "http://a/b"), ("5 ; URL = 'x.html'", "x.html"),
     ("3, next.html", "next.html"), ("0;url=a?b=1,2", "a?b=1,2"), ("10", None), ("", None),
     # the HTML Standard also takes whitespace after the time, and nothing without a time
     ("0 url=/next", "/next"), ("0 /next", "/next"), ("1.5\turl='a b.html' x", "a b.html"),
     ("url=/next", None), ("0x; url=/next", None)],
)
def test_refresh_target(content, target):
    assert refresh_target(content) == target


# -- charsets ---------------------------------------------------------------

LATIN1_PAGE = "<html><head>{meta}<title>Caf\u00e9</title></head><body>na\u00efve r\u00e9sum\u00e9</body></html>"


def test_charset_from_header(parse):
    body = LATIN1_PAGE.format(meta="").encode("latin-1")
    result = parse(body, content_type="text/html; charset=ISO-8859-1")
    assert result["title"] == "Café"
    assert result["text"] == "naïve résumé"
    assert result["charset"] == "cp1252"  # browsers read latin-1 labels as windows-1252


def test_header_charset_wins_over_meta(parse):
    body = LATIN1_PAGE.format(meta="<meta charset='utf-8'>").encode("latin-1")
    assert parse(body, content_type="text/html; charset=latin1")["title"] == "Café"


def test_charset_from_meta(parse):
    for meta in ("<meta charset='iso-8859-1'>",
                 "<meta http-equiv='Content-Type' content='text/html; charset=windows-1252'>"):
        body = LATIN1_PAGE.format(meta=meta).encode("latin-1")
        result = parse(body, content_type="text/html")
        assert (result["title"], result["charset"]) == ("Café", "cp1252")


def test_charset_from_headers_dict_when_no_content_type(parse):
    body = LATIN1_PAGE.format(meta="").encode("latin-1")
    result = parse(body, content_type=None, headers={"Content-Type": "text/html; charset=latin-1"})
    assert result["title"] == "Café"


def test_bom_wins(parse):
    body = "\ufeff" + LATIN1_PAGE.format(meta="<meta charset='iso-8859-1'>")
    result = parse(body.encode("utf-8"), content_type="text/html; charset=iso-8859-1")
    assert (result["title"], result["charset"]) == ("Café", "utf-8")
    utf16 = parse(("\ufeff" + LATIN1_PAGE.format(meta="")).encode("utf-16-le"))
    assert (utf16["title"], utf16["charset"]) == ("Café", "utf-16-le")


def test_undeclared_charset_tries_utf8_then_cp1252(parse):
    utf8 = parse(LATIN1_PAGE.format(meta="").encode("utf-8"), content_type="text/html")
    assert (utf8["title"], utf8["charset"]) == ("Café", "utf-8")
    latin = parse(LATIN1_PAGE.format(meta="").encode("latin-1"), content_type="text/html")
    assert (latin["title"], latin["charset"]) == ("Café", "cp1252")


def test_wrong_or_unknown_charset_does_not_fail(parse):
    body = LATIN1_PAGE.format(meta="").encode("latin-1")
    wrong = parse(body, content_type="text/html; charset=utf-8")
    assert wrong["error"] is None
    assert wrong["title"] == "Caf\ufffd"
    bogus = parse(body, content_type="text/html; charset=x-no-such-charset")
    assert bogus["title"] == "Café"
    assert parse(body, content_type="text/html; charset=base64")["title"] == "Café"


@pytest.mark.parametrize("label,text,charset", [
    ("windows-874", "ภาษาไทย", "cp874"),    # the web's labels, not Python's codec names
    ("x-sjis", "日本語", "cp932"),
    ("x-cp1251", "Привет", "cp1251"),
])
def test_charset_labels_are_the_webs(parse, label, text, charset):
    body = f"<meta charset='{label}'><title>{text}</title>".encode(charset)
    result = parse(body, content_type="text/html")
    assert (result["title"], result["charset"]) == (text, charset)


def test_charsets_browsers_do_not_know_are_refused(parse):
    # an ASCII page that names UTF-32 or EBCDIC would be garbage read that way
    for label in ("utf-32", "cp037", "utf-7"):
        result = parse(f"<meta charset='{label}'><title>Hello</title><a href='/a'>a</a>"
                       .encode("ascii"), content_type="text/html")
        assert (result["title"], len(result["outlinks"])) == ("Hello", 1), label


def test_non_ascii_urls_are_percent_encoded(parse):
    # the path in UTF-8, the query in the page's encoding (the URL Standard, as browsers do)
    body = "<a href='/stra\u00dfe?q=\u00e9'>x</a>".encode("latin-1")
    (link,) = parse(body, content_type="text/html; charset=latin-1")["outlinks"]
    assert link["url"] == "http://example.com/stra%C3%9Fe?q=%E9"
    utf8 = parse(body.decode("latin-1").encode("utf-8"), content_type="text/html; charset=utf-8")
    assert utf8["outlinks"][0]["url"] == "http://example.com/stra%C3%9Fe?q=%C3%A9"


def test_a_query_is_encoded_in_the_pages_legacy_charset(parse):
    gbk = parse("<a href='/s?q=\u4e2d\u6587#\u6587'>x</a>".encode("gbk"),
                content_type="text/html; charset=gbk")
    assert gbk["outlinks"][0]["url"] == "http://example.com/s?q=%D6%D0%CE%C4"
    # a character the page's encoding lacks goes as its character reference, as browsers send it
    latin = parse(b"<a href='/s?q=&#20013;'>x</a>", content_type="text/html; charset=iso-8859-1")
    assert latin["outlinks"][0]["url"] == "http://example.com/s?q=%26%2320013%3B"


# -- robustness --------------------------------------------------------------

@pytest.mark.parametrize(
    "body",
    [
        b"<html><body><p>unclosed <b>bold <a href='/x'>link <div>mixed</p></b></a>",
        b"<<<>>><a href=>\"'<a href='/ok'>ok</a></html></html><body>",
        b"<table><tr><td><a href='/t'>cell</td></table></a>",
        b"</p></div></body>text after end",
        b"<a href='http://[::1'>broken ipv6</a><a href='http://exa mple.com/'>space</a>",
        b"<div>" * 5000 + b"deep" + b"</div>" * 5000,
        b"<?xml version='1.0' encoding='utf-8'?><html xmlns='http://www.w3.org/1999/xhtml'>"
        b"<body><p>xhtml</p></body></html>",
        b"\xff\xfe\x00\x00garbage\x80\x81",
        b"<p>nul \x00 inside</p>" + b"x" * 2000,
    ],
)
def test_malformed_input_never_raises(parse, body):
    result = parse(body)
    assert set(result) == RESULT_KEYS
    assert isinstance(result["text"], str)


def test_binary_garbage(parse):
    garbage = bytes(range(256)) * 40 + os.urandom(4096)
    result = parse(garbage, content_type="text/html")
    assert result["error"] == "binary_content"
    assert result["outlinks"] == []
    assert result["signature"]


@pytest.mark.parametrize("body", [b"", None, bytearray(b"<p>ba</p>"), "<p>str body</p>"])
def test_empty_and_odd_body_types(parse, body):
    result = parse(body)
    assert set(result) == RESULT_KEYS
    if not body:
        assert result["error"] == "empty_body"
    else:
        assert result["error"] is None and result["text"]


def test_bad_page_url_gives_no_links_but_no_error(parse):
    result = parse(page("<a href='/x'>x</a><a href='http://abs.example.com/'>abs</a>"),
                   url="not a url")
    assert result["base"] is None
    assert result["outlinks"] == []


def test_enormous_page(parse):
    body = page("<p>" + "word " * 200_000 + "</p>" + "<a href='/x'>x</a>" * 100)
    result = parse(body, max_text=1000)
    assert len(result["text"]) == 1000
    assert len(result["outlinks"]) == 1


def test_unknown_options_raise():
    with pytest.raises(ValueError):
        parse_html(URL, b"", "text/html", backend="nope")
    with pytest.raises(ValueError):
        parse_html(URL, b"", "text/html", signature="sha0")


# -- signatures --------------------------------------------------------------

def test_digest_is_the_exact_text_where_the_signature_is_its_frequent_words(parse):
    """Two short home pages that share their frequent words share a text profile; the digest
    (dedup's key) tells them apart, and sees the same text under other markup as the same."""
    alice = parse(b"<title>Home</title><p>Home page of Alice. Home: Upson 4130, phone 5-1234.</p>")
    bob = parse(b"<title>Home</title><p>Home page of Bob. Home: Gates 210, phone 5-9876.</p>")
    assert alice["signature"] == bob["signature"] and alice["digest"] != bob["digest"]
    again = parse(b"<div>Home page   of <b>Alice</b>. Home: Upson 4130, phone 5-1234.</div>")
    assert again["digest"] == parse(b"<p>Home page of Alice. Home: Upson 4130, phone 5-1234.</p>")["digest"]
    assert parse(b"<html><body><img src=x.png></body></html>")["digest"] is None     # no text


def test_signature_ignores_markup_and_whitespace(parse):
    one = parse(b"<html><body><p>The quick brown fox jumps over the lazy dog.</p></body></html>")
    two = parse(b"<html><head><meta name='generated' content='2024-01-01T10:00'></head><body>"
                b"<div class='x'>The  quick <b>brown</b>\n fox</div> <span>jumps over "
                b"the lazy dog!</span><script>var t = 17;</script></body></html>")
    assert one["signature"] == two["signature"]
    other = parse(b"<p>A completely different text about cats and mice.</p>")
    assert other["signature"] != one["signature"]
    assert len(one["signature"]) == 32


def test_md5_signature_is_of_raw_bytes(parse):
    first = parse(b"<p>same text</p>", signature="md5")
    second = parse(b"<p>same  text</p>", signature="md5")
    assert first["signature"] != second["signature"]


def test_text_profile_falls_back_to_bytes_for_empty_text(parse):
    assert parse(b"<p></p>")["signature"] != parse(b"<div></div>")["signature"]


# -- dispatch ----------------------------------------------------------------

def test_parse_document_dispatch():
    html = parse_document(URL, b"<title>T</title><a href='/x'>x</a>", "application/xhtml+xml")
    assert html["title"] == "T" and html["outlinks"]
    text = parse_document(URL, "plain   caf\u00e9\n text".encode("latin-1"), "text/plain")
    assert (text["text"], text["charset"], text["outlinks"]) == ("plain café text", "cp1252", [])
    assert text["base"] == URL
    pdf = parse_document(URL, b"%PDF-1.4 binary", "application/pdf")
    assert pdf["error"] == "unsupported_content_type"
    assert set(pdf) == set(text) == set(html) == RESULT_KEYS


def test_parse_document_sniffs_missing_content_type():
    assert parse_document(URL, b"  <!DOCTYPE html><title>S</title>", None)["title"] == "S"
    assert parse_document(URL, b"just words", "")["text"] == "just words"
    assert parse_document(URL, b"\x00\x01\x02", None)["error"] == "unsupported_content_type"


def test_parse_document_passes_options():
    result = parse_document(URL, page("<p>abcdef</p>"), "text/html; charset=utf-8",
                            backend="selectolax", max_text=3)
    assert result["text"] == "abc"
    assert parse_document(URL, b"abcdef", "text/plain", max_text=2, backend="bs4")["text"] == "ab"


def test_parse_text_binary():
    assert parse_text(URL, b"\x00\x01 binary", "text/plain")["error"] == "binary_content"


# -- the two backends agree --------------------------------------------------

REPRESENTATIVE_PAGES = [
    b"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>News</title>
    <link rel="canonical" href="https://example.com/news"></head><body>
    <header><nav><ul><li><a href="/">Home</a></li><li><a href="/world">World</a></li></ul></nav></header>
    <main><article><h1>Headline</h1><p>Body text with a <a href="/story/1" title="Story">story link</a>
    inside a paragraph, followed by more words.</p>
    <figure><a href="/gallery"><img src="/i.jpg" alt="Gallery image"></a><figcaption>Caption</figcaption></figure>
    </article></main><footer><p>&copy; 2024 <a href="mailto:x@y.z">mail</a></p></footer></body></html>""",
    b"""<html><head><title>Old style</title></head><body bgcolor=white>
    <table><tr><td><a href="a.html">A</a></td><td>Text <a href="b.html" rel="nofollow">B</a> tail</td></tr></table>
    <map name="m"><area href="c.html" alt="C area"></map><img usemap="#m" src="m.gif">
    <iframe src="frame.html" title="Frame title"></iframe>
    <a href="d.html" onmouseover="window.status='e.html'">D</a></body></html>""",
    b"""<html><body><div><p>Para one<p>Para two with <a href=x>unquoted</a><li>loose item
    <a href="/y">y link</a></div></body></html>""",
]


# Known differences, all on malformed markup: lexbor builds the HTML5 tree
# (adoption agency splits misnested <a>/<b>, table foster-parenting moves stray
# text before the table, a <td> outside a table is dropped, an <a> inside
# <noscript> in <head> moves to <body>), while libxml2 keeps the nesting as
# written. Text order, anchor extents and those links can then differ.
@pytest.mark.parametrize("body", REPRESENTATIVE_PAGES)
def test_backends_agree(body):
    bs4_result = parse_html(URL, body, "text/html", backend="bs4")
    lexbor_result = parse_html(URL, body, "text/html", backend="selectolax")
    assert bs4_result == lexbor_result


# -- lxml gives bs4's output exactly ------------------------------------------

def _latin1(text: str) -> bytes:
    return text.encode("latin-1")


# (id, body, content type). Pages 1990s crawls are full of; each compared
# whole (title, text, every outlink with anchor and metadata, charset, base,
# robots, refresh, canonical, signature, error).
TRICKY_PAGES = [
    ("frameset", b"""<html><head><title>Frames</title></head>
     <frameset rows="20%,*"><frame src="top.html" name="top" title="Top bar">
     <frameset cols="30%,70%"><frame src="nav.html" name=nav><frame src="/main.html" title="Main">
     </frameset><noframes><body>No frames? <a href="noframes.html">here</a></body></noframes>
     </frameset></html>""", "text/html"),
    ("frameset-unclosed-with-body-text", b"""<html><head><title>F</title>
     <frameset cols="*,*"><frame src=a.html><frame src=b.html name=b>
     <body>stray body text <a href=c.html>c</a>""", "text/html"),
    ("unclosed-p-and-li", b"""<html><body><p>first para <a href=a.html>a</a> words
     <p>second para <a href=b.html>b</a> more<ul><li>one <a href=c.html>c</a><li>two
     <a href=d.html>d</a> tail</ul><p>last""", "text/html"),
    ("unclosed-tables", b"""<html><body><table border=1><tr><td>cell one <a href=t1.html>t1</a>
     <td>cell two<tr><td colspan=2>row two <a href=t2.html>t2</a> after
     <table><tr><td>nested <a href=t3.html>t3</a></table>
     text after nested <a href=t4.html>t4</a></td></tr>
     <p>paragraph in a table <a href=t5.html>t5</a>
     </table><div>after table <a href=t6.html>t6</a>""", "text/html"),
    ("stray-text-in-table", b"""<table>loose text <a href=x.html>x</a><tr>
     <td>cell</td>more loose</tr></table>""", "text/html"),
    ("content-after-html", b"""<html><head><title>T</title></head><body><p>inside
     <a href=in.html>in</a></p></body></html>
     <p>after the end <a href=after.html>after</a></p>trailing text
     <a href=last.html title=Last>last</a></html></body>more""", "text/html"),
    ("content-after-body-only", b"""<html><body>body text</body>
     after body <a href=ab.html>ab</a></html>""", "text/html"),
    ("misnested-inline", b"""<p><b>bold <a href=m1.html>one <i>two</b> three</a> four</i>
     <a href=m2.html>m2 <a href=m3.html>nested anchor</a> rest</a>
     <font size=2><a href=m4.html>m4</font> font closed</a>""", "text/html"),
    ("stray-end-tags", b"""</div></span><p>text</td></tr></table> more </a><a href=s.html>s</a>
     </li></ul></p></b>end""", "text/html"),
    ("meta-charset-latin1", _latin1("""<html><head><meta http-equiv="Content-Type"
     content="text/html; charset=iso-8859-1"><title>Caf\u00e9 \u00fcber</title></head><body>
     <a href="/caf\u00e9.html">caf\u00e9 \u00e0 la carte</a> na\u00efve</body></html>"""),
     "text/html"),
    ("meta-says-utf8-bytes-latin1", _latin1("""<meta charset="utf-8"><title>Caf\u00e9</title>
     <p>r\u00e9sum\u00e9 <a href="r\u00e9sum\u00e9.html">cv \u00e9</a>"""), "text/html"),
    ("meta-says-latin1-bytes-utf8", """<meta charset="iso-8859-1"><title>\u65e5\u672c \u00e9</title>
     <p>\u65e5\u672c\u8a9e <a href="/\u65e5.html">\u00e9t\u00e9</a>""".encode(), "text/html"),
    ("header-wins-over-meta", _latin1("""<meta charset="utf-8"><title>\u00c9t\u00e9</title>
     <p>\u00e9t\u00e9"""), "text/html; charset=windows-1252"),
    ("undeclared-cp1252", b"<title>\x93smart quotes\x94</title><p>\x85 caf\xe9 "
     b"<a href='/\xe9'>\x96 dash</a>", "text/html"),
    ("utf16-meta-in-ascii", b"<meta charset=utf-16><title>ascii</title><p>plain", "text/html"),
    ("unknown-charset-label", b"<meta charset=x-klingon><title>caf\xc3\xa9</title>",
     "text/html"),
    ("xml-declaration-xhtml", b"""<?xml version="1.0" encoding="iso-8859-1"?>
     <!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">
     <html xmlns="http://www.w3.org/1999/xhtml" xml:lang="fr" lang="fr"><head><title>X</title></head>
     <body><p>xhtml <a href="x.html">x</a><br/>line<![CDATA[ cdata text ]]> end</p></body></html>""",
     "application/xhtml+xml"),
    ("double-bom", "\ufeff\ufeff<title>bom</title><p>text <a href=b.html>b</a>".encode(),
     "text/html"),
    ("nul-after-probe", b"<p>" + b"x " * 600 + b"nul \x00 here <a href=n.html>n</a></p>",
     "text/html"),
    ("ms-word-namespaces", b"""<html xmlns:o="urn:schemas-microsoft-com:office:office"><body>
     <p class=MsoNormal>Word <o:p>para</o:p> <st1:place w:st="on">Ithaca</st1:place>
     <a href="w.html">w</a><o:p></o:p></p></body></html>""", "text/html"),
    ("image-alt-and-area-links", b"""<body><a href=img.html><img src=i1.gif alt="First"> and
     <img src=i2.gif alt=" Second  image "><img src=i3.gif></a>
     <a href=noalt.html><img src=only.gif></a>
     <map name=nav><area shape=rect coords="0,0,9,9" href=north.html alt="North" title=N>
     <area href=south.html><area alt="no href"><area href=nf.html alt=nf rel="nofollow"></map>
     <img src=map.gif usemap="#nav" alt="map image">
     <a href=both.html title="t">text <img alt=pic>more</a></body>""", "text/html"),
    ("base-href-in-body-twice", b"""<html><head><title>B</title></head><body>
     <a href=before.html>before base</a><base href="http://other.example.org/sub/">
     <a href=after.html>after</a><base href="http://third.example.net/">
     <area href=area.html alt=a><frame src=fr.html></body></html>""", "text/html"),
    ("relative-base-href", b"""<base href="../up/"><a href=x.html>x</a><a href=/abs>abs</a>
     <a href=//cdn.example.com/p>proto-relative</a>""", "text/html"),
    ("nofollow-variants", b"""<meta name=ROBOTS content="NOINDEX, nofollow">
     <a href=a.html rel=nofollow>a</a><a href=b.html rel="NOFOLLOW noopener">b</a>
     <a href=c.html rel="nofollow,external">c</a><a href=d.html rel=follow>d</a>
     <a href=a.html>dup of a</a>""", "text/html"),
    ("whitespace-pre-textarea-comments", b"""<div>  \n\t </div><pre>  keep   spaces
     <a href=p.html>  pre link  </a>  </pre><textarea>  \n  </textarea>x<!-- c -->y
     <span> </span><b>\n</b>z&nbsp;&#160;w <?php echo 1 ?> after pi""", "text/html"),
    ("script-style-noscript-template", b"""<html><head><script>var s = "</p><a href='no.html'>";
     </script><style>a { }</style><noscript><a href=ns-head.html>ns</a></noscript>
     <title>S</title></head><body><script type="text/template"><a href="t.html">t</a></script>
     <noscript><p>enable js <a href=ns.html>ns</a></p></noscript><template><a href=tp.html>x</a>
     </template><iframe src=if.html name=f>fallback <a href=fb.html>fb</a></iframe>
     <ruby>\xe6\xbc\xa2<rp>(</rp><rt>kan</rt><rp>)</rp></ruby> <svg><title>svg t</title>
     <a href=svg.html>svg link</a></svg></body></html>""", "text/html; charset=utf-8"),
    ("title-in-body-and-twice", b"""<body><p>text<title>late   title</title>
     <title>second</title><a href=x.html>x</a>""", "text/html"),
    ("refresh-canonical-onmouseover", b"""<meta http-equiv=refresh content="0; URL=next.html">
     <link rel="Canonical" href="/canon"><a href=r.html onmouseover="img.src='r.gif';
     location='/ro.html'">r</a><td onmouseover="go('http://x.example.com/y')">cell</td>""",
     "text/html"),
    ("lang-and-entities", b"""<html LANG=" en-US "><body><p>&amp; &lt;tag&gt; &eacute;
     &unknown; &#x263A; &#9731 <a href="q?a=1&amp;b=2&c=3">q</a>""", "text/html"),
    ("bare-text", b"just some text with < and > and & signs", "text/html"),
    # bs4 turns each whitespace-only string into one space or newline (not in
    # <pre>), which moves link offsets: the surrounding-text window then
    # reaches other words in blocks with deep indentation.
    ("indentation-whitespace", b"<p>" + b"".join(b"<b>w%d</b>" % i + b" " * 300 + b"\n"
                                                 for i in range(40))
     + b"<a href=ind.html>ind</a>" + b"".join(b" " * 300 + b"<i>v%d</i>" % i for i in range(40)),
     "text/html"),
    ("indentation-whitespace-in-pre", b"<pre>" + b"".join(b"<b>w%d</b>" % i + b" " * 300
                                                          for i in range(40))
     + b"<a href=pre.html>pre</a></pre>", "text/html"),
    ("whitespace-only", b"   \n\t  ", "text/html"),
    ("comment-only", b"<!-- nothing here -->", "text/html"),
    ("deep-unclosed", b"<div><span>" * 300 + b"<a href=deep.html>deep</a>", "text/html"),
]


@pytest.mark.parametrize(
    "body,content_type",
    [pytest.param(body, ctype, id=name) for name, body, ctype in TRICKY_PAGES]
    + [pytest.param(body, "text/html", id=f"representative-{i}")
       for i, body in enumerate(REPRESENTATIVE_PAGES)],
)
def test_lxml_matches_bs4(body, content_type):
    bs4_result = parse_html(URL, body, content_type, backend="bs4")
    lxml_result = parse_html(URL, body, content_type, backend="lxml")
    assert lxml_result == bs4_result
    assert set(lxml_result) == RESULT_KEYS


def test_lxml_backend_builds_no_soup(monkeypatch):
    """The lxml backend is libxml2's events, not bs4 under another name."""
    import crawlkit.parse.backends as backends

    def no_soup(*args, **kwargs):
        raise AssertionError("BeautifulSoup used")

    monkeypatch.setattr(backends, "BeautifulSoup", no_soup)
    result = parse_html(URL, page("<p>x <a href='/y'>y</a></p>"), "text/html", backend="lxml")
    assert (result["text"], result["error"]) == ("x y", None)
    assert [link["url"] for link in result["outlinks"]] == ["http://example.com/y"]
    assert "AssertionError" in parse_html(URL, page("x"), "text/html", backend="bs4")["error"]
