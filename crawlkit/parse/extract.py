"""Backend-independent page extraction driven by start/end/text events.

A backend walks its tree once and calls ``start(tag, attrs)`` (returns
whether to visit the children), ``text(data)`` and ``end(tag)``. Everything
is collected in that single pass; link URLs are resolved only afterwards
because ``<base href>`` governs the whole document wherever it appears.

Visible text is kept as one raw buffer with offsets, so a link's anchor text
and its surrounding text are slices of that buffer instead of extra walks.
"""

from __future__ import annotations

import re

# Subtrees whose content is never visible text nor links (iframe children
# are fallback content, parsed as text by HTML5 parsers but not by libxml2).
_NO_CHILDREN = frozenset({"script", "style", "template", "iframe"})
# Elements that break text flow and delimit a link's surrounding context.
_BLOCKS = frozenset(
    """address article aside blockquote body caption center dd details dialog
    dir div dl dt fieldset figcaption figure footer form frameset h1 h2 h3 h4
    h5 h6 head header hgroup hr html legend li main menu nav ol option p pre
    section select summary table tbody td textarea tfoot th thead tr ul""".split()
)

SURROUNDING_WORDS = 20
# Raw-buffer window scanned first on each side of a link, widened only while
# it yields too few words (raw text still holds markup indentation); the cap
# bounds the cost per link in huge blocks.
_WINDOW = 240
_MAX_WINDOW = 4 * 4 * _WINDOW

_VALUED_DIRECTIVES = frozenset(
    {"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}
)

_QUOTED = re.compile(r"""["']([^"'\s<>]{1,2048})["']""")
_STATIC_SUFFIXES = (
    ".gif", ".jpg", ".jpeg", ".png", ".webp", ".svg", ".bmp", ".ico", ".css", ".js",
)


def urls_in_script(code: str) -> list[str]:
    """Quoted strings in an event-handler attribute that look like URLs.

    Only reads string literals (``location='/x.html'``, ``this.src='b.gif'``);
    nothing is evaluated.
    """
    return [c for c in _QUOTED.findall(code) if _looks_like_url(c)]


# Extensions of files a web server serves, for a bare relative name in a script literal.
# Any short extension let in property paths and versions ('nav.open', 'v1.2') and host
# names ('www.example.org'), which resolve to junk relative URLs.
_WEB_EXTENSIONS = frozenset(
    """html htm shtml xhtml xml php php3 php4 phtml asp aspx jsp jspx do cfm cgi pl py txt
    pdf""".split()) | frozenset(s[1:] for s in _STATIC_SUFFIXES)


def _looks_like_url(candidate: str) -> bool:
    if candidate.startswith(("http://", "https://", "/", "./", "../")):
        return True
    path = candidate.partition("?")[0].partition("#")[0]
    head, dot, ext = path.rpartition(".")
    if "/" in head.rstrip("/") and dot and "/" not in ext:
        return ext.isalnum() and len(ext) <= 5     # dir/page.ext: a path
    return bool(dot and head and "/" not in ext and ext.lower() in _WEB_EXTENSIONS)


def is_static_resource(url: str) -> bool:
    """Rollover images and scripts: not pages worth crawling."""
    return url.lower().partition("?")[0].endswith(_STATIC_SUFFIXES)


def anchor_text(link: LinkCandidate, raw: str) -> str:
    """Link text, then the alt text of images inside the link."""
    words = raw[link.start : link.end].split()
    words.extend(alt for alt in link.image_alts if alt)
    return " ".join(words)


def surrounding_text(link: LinkCandidate, raw: str) -> str:
    """Up to 20 words each side of the link within its context block."""
    ctx_end = link.ctx_end if link.ctx_end is not None else len(raw)
    before = _words_before(raw, link.ctx_start, link.start)
    after = _words_after(raw, link.end, ctx_end)
    return " ".join(before + after)


def _words_before(raw: str, lo_bound: int, pos: int) -> list[str]:
    window = _WINDOW
    while True:
        lo = max(lo_bound, pos - window)
        words = raw[lo:pos].split()
        if lo == lo_bound or len(words) > SURROUNDING_WORDS:
            return words[-SURROUNDING_WORDS:]
        if window >= _MAX_WINDOW:
            return words[1:]  # the first word may be cut by the window
        window *= 4


def _words_after(raw: str, pos: int, hi_bound: int) -> list[str]:
    window = _WINDOW
    while True:
        hi = min(hi_bound, pos + window)
        words = raw[pos:hi].split()
        if hi == hi_bound or len(words) > SURROUNDING_WORDS:
            return words[:SURROUNDING_WORDS]
        if window >= _MAX_WINDOW:
            return words[:-1]  # the last word may be cut by the window
        window *= 4


def _tokens(value: str | None) -> set[str]:
    return set(value.lower().replace(",", " ").split()) if value else set()


def _clean(value: str | None) -> str:
    return " ".join(value.split()) if value else ""


class LinkCandidate:
    """A link seen during the walk, before URL resolution and dedup."""

    __slots__ = (
        "kind", "target", "href", "nofollow", "meta",
        "start", "end", "ctx_start", "ctx_end", "image_alts",
    )

    def __init__(self, kind, target, href, nofollow, meta, pos, ctx_start):
        self.kind = kind
        self.target = target  # the string to resolve
        self.href = href  # the raw href attribute, if the link had one
        self.nofollow = nofollow
        self.meta = meta  # attribute-derived metadata (title, name, src...)
        self.start = self.end = pos
        self.ctx_start = ctx_start
        self.ctx_end = None
        self.image_alts: list[str] = []


class PageExtractor:
    """Collects text, title, robots directives and link candidates."""

    def __init__(self):
        self._parts: list[str] = []
        self._pos = 0
        self._hidden = 0
        self._svg = 0
        self._title_parts: list[str] | None = None
        self._open_links: list[LinkCandidate | None] = []
        # Open context blocks: [start offset, links that started inside].
        self._blocks: list[list] = [[0, []]]
        self.title: str | None = None
        self.lang: str | None = None
        self.base_href: str | None = None
        self.canonical_href: str | None = None
        self.refresh_href: str | None = None
        self.noindex = False
        self.nofollow = False
        self.links: list[LinkCandidate] = []

    # -- events -------------------------------------------------------------

    def start(self, tag: str, attrs: dict) -> bool:
        if tag in _BLOCKS:
            self._separate()
            self._blocks.append([self._pos, []])
        elif tag == "br":
            self._separate()
        handler = _START_HANDLERS.get(tag)
        link = handler(self, attrs) if handler is not None else None
        if "onmouseover" in attrs:
            self._mouseover(attrs["onmouseover"], link)
        return tag not in _NO_CHILDREN

    def end(self, tag: str) -> None:
        if tag in _BLOCKS:
            self._separate()
            for link in self._blocks.pop()[1]:
                link.ctx_end = self._pos
        handler = _END_HANDLERS.get(tag)
        if handler is not None:
            handler(self)

    def text(self, data: str) -> None:
        if self._title_parts is not None:
            self._title_parts.append(data)
        elif not self._hidden:
            self._parts.append(data)
            self._pos += len(data)

    def raw_text(self) -> str:
        """The visible text buffer that link offsets point into."""
        return "".join(self._parts)

    # -- helpers ------------------------------------------------------------

    def _separate(self) -> None:
        self._parts.append(" ")
        self._pos += 1

    def _add_link(self, kind, target, href=None, nofollow=False, **meta) -> LinkCandidate:
        block = self._blocks[-1]
        link = LinkCandidate(
            kind, target, href, nofollow,
            {key: value for key, value in meta.items() if value},
            self._pos, block[0],
        )
        block[1].append(link)
        self.links.append(link)
        return link

    def _mouseover(self, code: str | None, link: LinkCandidate | None) -> None:
        """Record the first URL of an onmouseover on the element's own link
        (or the enclosing anchor); add each URL as a link of its own (kind
        "onmouseover") unless it is a rollover image or a script."""
        found = urls_in_script(code or "")
        if not found:
            return
        current = link or (self._open_links[-1] if self._open_links else None)
        if current is not None:
            current.meta.setdefault("onmouseover", found[0])
        for url in found:
            if not is_static_resource(url):
                self._add_link("onmouseover", url, onmouseover=url)

    def _start_a(self, attrs):
        href = attrs.get("href")
        link = None
        if href is not None:
            link = self._add_link(
                "a", href, href,
                "nofollow" in _tokens(attrs.get("rel")),
                title=_clean(attrs.get("title")), name=_clean(attrs.get("name")),
            )
        self._open_links.append(link)
        return link

    def _end_a(self):
        if self._open_links:
            link = self._open_links.pop()
            if link is not None:
                link.end = self._pos

    def _start_img(self, attrs):
        link = self._open_links[-1] if self._open_links else None
        if link is not None:
            link.image_alts.append(_clean(attrs.get("alt")))
            if attrs.get("src"):
                link.meta.setdefault("src", attrs["src"].strip())

    def _start_area(self, attrs):
        href = attrs.get("href")
        if href is not None:
            alt = _clean(attrs.get("alt"))
            link = self._add_link(
                "area", href, href,
                "nofollow" in _tokens(attrs.get("rel")),
                title=_clean(attrs.get("title")), name=_clean(attrs.get("name")), area=alt,
            )
            link.image_alts.append(alt)  # an area's alt is its link text
            return link
        return None

    def _start_frame(self, attrs, kind="frame"):
        src = attrs.get("src")
        if src:
            name, title = _clean(attrs.get("name")), _clean(attrs.get("title"))
            return self._add_link(
                kind, src, src=src.strip(), name=name, title=title, frame=name or title
            )
        return None

    def _start_iframe(self, attrs):
        return self._start_frame(attrs, "iframe")

    def _start_base(self, attrs):
        if self.base_href is None and attrs.get("href"):
            self.base_href = attrs["href"]

    def _start_link(self, attrs):
        if self.canonical_href is None and "canonical" in _tokens(attrs.get("rel")):
            self.canonical_href = attrs.get("href") or None

    def _start_meta(self, attrs):
        name = (attrs.get("name") or "").strip().lower()
        if name == "robots":
            self.apply_robots(attrs.get("content"))
        elif (attrs.get("http-equiv") or "").strip().lower() == "refresh":
            target = refresh_target(attrs.get("content"))
            if target and self.refresh_href is None:
                self.refresh_href = target
                self._add_link("refresh", target, target)

    def apply_robots(self, directives: str | None) -> None:
        """Apply robots directives (meta content or X-Robots-Tag value)."""
        tokens = robots_directives(directives)
        if "none" in tokens:
            tokens |= {"noindex", "nofollow"}
        self.noindex = self.noindex or "noindex" in tokens
        self.nofollow = self.nofollow or "nofollow" in tokens

    def _start_html(self, attrs):
        if self.lang is None and attrs.get("lang"):
            self.lang = attrs["lang"].strip() or None

    def _start_title(self, attrs):
        if self.title is None and not self._svg:
            self._title_parts = []

    def _end_title(self):
        if self._title_parts is not None:
            self.title = " ".join("".join(self._title_parts).split()) or None
            self._title_parts = None

    def _start_hidden(self, attrs):
        self._hidden += 1

    def _end_hidden(self):
        self._hidden -= 1

    def _start_svg(self, attrs):
        self._svg += 1

    def _end_svg(self):
        self._svg -= 1


def robots_directives(value: str | None) -> set[str]:
    """Directive names addressed to every crawler.

    In ``X-Robots-Tag: googlebot: noindex, nofollow`` everything after a
    ``agent:`` prefix is for that crawler only, so it is skipped;
    ``unavailable_after: <date>`` is a directive with a value, not an agent.
    """
    found: set[str] = set()
    for item in (value or "").lower().split(","):
        name, colon, _ = item.partition(":")
        if colon and name.strip() not in _VALUED_DIRECTIVES:
            break
        found.update(item.split())
    return found


def refresh_target(content: str | None) -> str | None:
    """URL of a meta refresh ``content`` like ``5; url='/next'``, if any (the HTML Standard's
    parse: a time of digits and dots, then ``;``, ``,`` or whitespace, so ``0 url=/next``
    and ``0 /next`` count too)."""
    rest = (content or "").lstrip(_SPACES)
    time = len(rest) - len(rest.lstrip("0123456789."))
    if time == 0:
        return None
    rest = rest[time:]
    if not rest or rest[0] not in ";," + _SPACES:
        return None
    rest = rest.lstrip(_SPACES)
    if rest[:1] in (";", ","):
        rest = rest[1:].lstrip(_SPACES)
    if rest[:3].lower() == "url":
        after = rest[3:].lstrip(_SPACES)
        if after.startswith("="):
            rest = after[1:].lstrip(_SPACES)
    if rest[:1] in ("'", '"'):
        rest = rest[1:].split(rest[0], 1)[0]
    return rest.strip() or None


_SPACES = " \t\n\f\r"


_START_HANDLERS = {
    "a": PageExtractor._start_a,
    "img": PageExtractor._start_img,
    "area": PageExtractor._start_area,
    "frame": PageExtractor._start_frame,
    "iframe": PageExtractor._start_iframe,
    "base": PageExtractor._start_base,
    "link": PageExtractor._start_link,
    "meta": PageExtractor._start_meta,
    "html": PageExtractor._start_html,
    "title": PageExtractor._start_title,
    # Text not shown on the page; links inside still count (a crawler is a
    # no-JavaScript client, so <noscript> navigation is what it can follow).
    "head": PageExtractor._start_hidden,
    "noscript": PageExtractor._start_hidden,
    "svg": PageExtractor._start_svg,
}
_END_HANDLERS = {
    "a": PageExtractor._end_a,
    "title": PageExtractor._end_title,
    "head": PageExtractor._end_hidden,
    "noscript": PageExtractor._end_hidden,
    "svg": PageExtractor._end_svg,
}
