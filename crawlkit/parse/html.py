"""Page parsing entry points: bytes in, one plain dict out, never an exception.

A parse runs inside Spark tasks over millions of arbitrary pages; one
exception would fail the task and retry it forever, so every failure is
reported in the result's ``error`` and whatever was extracted is kept.

Result (every parse function, every outcome)::

    title: str | None        first <title> outside <svg>, whitespace-collapsed
    text: str                visible text (no head/script/style/noscript/
                             template), whitespace-collapsed, <= max_text chars
    charset: str | None      Python codec name used to decode ("utf-8", "cp1252")
    lang: str | None         <html lang>
    outlinks: list[dict]     see below; unique by url, first occurrence wins
    outlinks_truncated: bool another distinct URL existed beyond max_outlinks
    noindex, nofollow: bool  page level: <meta name=robots>, X-Robots-Tag
    canonical: str | None    <link rel=canonical>, else Link header; normalised
    base: str | None         effective base URL (<base href> or the page URL)
    refresh: str | None      meta refresh target, normalised
    signature: str | None    32 hex chars (text_profile or md5 of the bytes)
    error: str | None        None, "empty_body", "binary_content",
                             "unsupported_content_type" or "<Exception>: msg"

Outlink::

    {"url": str,        absolute, normalised against the effective base
     "anchor": str,     link text + alt of images inside (area: its alt)
     "nofollow": bool,  rel=nofollow on the element (page level is separate)
     "meta": {"kind": "a" | "area" | "frame" | "iframe" | "onmouseover" | "refresh",
              # only when non-empty:
              "href", "anchor", "surrounding" (<= 20 words each side within
              the enclosing block, anchor excluded), "title", "name",
              "onmouseover" (first URL literal in the handler), "src" (frame
              src, or src of an image inside the link), "image_alt", "area"
              (area alt), "frame" (frame/iframe name, else title)}}

URLs in onmouseover handlers are read from string literals, never executed;
besides the metadata, each such URL that is not an image/CSS/JS file (a
rollover image is not a page) becomes an outlink of kind "onmouseover".
Duplicate URLs keep the first occurrence's anchor and metadata unmerged:
merging would make the metadata depend on link order in odd ways and cost a
dict merge per duplicate.
"""

from __future__ import annotations

import re
from typing import Callable
from urllib.parse import quote

from crawlkit import urls
from crawlkit.parse.backends import BACKENDS
from crawlkit.parse.charset import decode_body
from crawlkit.parse.extract import PageExtractor, anchor_text, surrounding_text
from crawlkit.parse.signature import SIGNATURES, md5_signature, signature_of, text_digest

__all__ = ["parse_html", "parse_text", "parse_document", "empty_result"]

Normalizer = Callable[[str, "str | None"], "str | None"]

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml", "application/vnd.wap.xhtml+xml"})
_TEXT_TYPES = frozenset({"text/plain"})
_HTML_SNIFF = (b"<!doctype html", b"<html", b"<head", b"<body", b"<title", b"<a ", b"<p>", b"<div")
_LINK_VALUE = re.compile(r"<([^>]*)>([^<]*)")          # <uri> and its parameters
_LINK_REL = re.compile(r"""(?:^|;)\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))""", re.I)
_BINARY_PROBE = 1024


def empty_result() -> dict:
    """The result shape every parse returns, with nothing extracted yet."""
    return {
        "title": None,
        "text": "",
        "charset": None,
        "lang": None,
        "outlinks": [],
        "outlinks_truncated": False,
        "noindex": False,
        "nofollow": False,
        "canonical": None,
        "base": None,
        "refresh": None,
        "signature": None,
        "digest": None,
        "error": None,
    }


def parse_html(
    url: str,
    body: bytes,
    content_type: str | None,
    headers: dict | None = None,
    *,
    max_outlinks: int = 5000,
    max_text: int = 65536,
    backend: str = "lxml",
    signature: str = "text_profile",
    normalizer: Normalizer | None = None,
) -> dict:
    """Parse an HTML page into text, metadata and outlinks (see empty_result).

    ``backend`` is "lxml" (libxml2's parse events, no tree: bs4's output
    ~5x faster), "bs4" (BeautifulSoup + lxml) or "selectolax" (lexbor, an
    HTML5 parser: fastest, other trees from malformed markup);
    ``signature`` "text_profile" or "md5" (raw bytes); ``normalizer(url,
    base)`` defaults to ``crawlkit.urls.normalize``.
    Unknown option values raise ValueError (a configuration bug, not a page
    problem); page problems never raise.
    """
    walk = _option(BACKENDS, backend, "backend")
    _option(SIGNATURES, signature, "signature")
    result = empty_result()
    try:
        _parse_html_into(result, url, body, content_type, headers, walk,
                         max_outlinks, max_text, signature, normalizer or urls.normalize)
    except Exception as exc:  # noqa: BLE001 - never fail the task on one page
        result["error"] = _describe(exc)
    return result


def parse_text(
    url: str,
    body: bytes,
    content_type: str | None,
    headers: dict | None = None,
    *,
    max_text: int = 65536,
    signature: str = "text_profile",
    normalizer: Normalizer | None = None,
    **_ignored,
) -> dict:
    """Plain text: charset, whitespace-collapsed text and signature only.

    Accepts and ignores the HTML-only options so parse_document can pass the
    same options to either parser.
    """
    _option(SIGNATURES, signature, "signature")
    result = empty_result()
    try:
        result["base"] = (normalizer or urls.normalize)(url, None)
        body = _as_bytes(body)
        text, result["charset"] = decode_body(
            body, _declared_type(content_type, _lower_keys(headers)), html=False)
        if _looks_binary(text):
            result["error"] = "binary_content"
            result["signature"] = md5_signature(body)
            return result
        text = " ".join(text.split())
        result["text"] = text[:max_text]
        result["signature"] = signature_of(signature, text, body)
        result["digest"] = text_digest(text)
        if not body:
            result["error"] = "empty_body"
    except Exception as exc:  # noqa: BLE001
        result["error"] = _describe(exc)
    return result


def parse_document(
    url: str, body: bytes, content_type: str | None, headers: dict | None = None, **opts
) -> dict:
    """Dispatch on the media type; a missing Content-Type is sniffed.

    HTML/XHTML go to parse_html, text/plain to parse_text; anything else
    returns the common shape with error "unsupported_content_type" and an
    MD5 signature of the bytes (still useful for change detection).
    """
    try:
        body = _as_bytes(body)
        media_type = (content_type or "").partition(";")[0].strip().lower() or _sniff(body)
    except Exception as exc:  # noqa: BLE001
        return {**empty_result(), "error": _describe(exc)}
    if media_type in _HTML_TYPES:
        return parse_html(url, body, content_type, headers, **opts)
    if media_type in _TEXT_TYPES:
        return parse_text(url, body, content_type, headers, **opts)
    return {**empty_result(), "signature": md5_signature(body), "error": "unsupported_content_type"}


def _parse_html_into(result, url, body, content_type, headers, walk,
                     max_outlinks, max_text, signature, normalize):
    headers = _lower_keys(headers)
    body = _as_bytes(body)
    markup, result["charset"] = decode_body(body, _declared_type(content_type, headers))
    if _looks_binary(markup):
        result["error"] = "binary_content"
        result["signature"] = md5_signature(body)
        return
    normalize = _queries_in(result["charset"], normalize)
    extractor = PageExtractor()
    for header in headers.get("x-robots-tag", ()):  # each header scopes its own agent:
        for value in header.split("\n"):              # the fetcher keeps repeats apart
            extractor.apply_robots(value)
    try:
        walk(markup, extractor)
    except Exception as exc:  # noqa: BLE001 - keep what the walk collected
        result["error"] = _describe(exc)
    raw = extractor.raw_text()
    text = " ".join(raw.split())
    base = _effective_base(url, extractor.base_href, normalize)
    result.update(
        title=extractor.title,
        text=text[:max_text],
        lang=extractor.lang,
        noindex=extractor.noindex,
        nofollow=extractor.nofollow,
        base=base,
        canonical=_canonical(extractor.canonical_href, _header(headers, "link"), base,
                             normalize(url, None), normalize),
        refresh=normalize(extractor.refresh_href, base) if extractor.refresh_href else None,
        signature=signature_of(signature, text, body),
        digest=text_digest(text),
    )
    result["outlinks"], result["outlinks_truncated"] = _outlinks(
        extractor, raw, base, normalize, max_outlinks
    )
    if not body and result["error"] is None:
        result["error"] = "empty_body"


def _outlinks(extractor, raw, base, normalize, max_outlinks):
    """Resolve, dedupe (first occurrence wins, anchors are not merged) and cap.

    Returns (outlinks, truncated); truncated is True only if a further
    distinct URL existed beyond ``max_outlinks``. Metadata is built only for
    kept links, so a page with 10^5 links costs little more than URL checks.
    """
    outlinks: list[dict] = []
    seen: set[str] = set()
    if base is None:
        return outlinks, False
    for link in extractor.links:
        target = normalize(link.target, base)
        if target is None or target in seen:
            continue
        if len(outlinks) >= max_outlinks:
            return outlinks, True
        seen.add(target)
        anchor = anchor_text(link, raw)
        meta = {"kind": link.kind}
        if link.href:
            meta["href"] = link.href
        if anchor:
            meta["anchor"] = anchor
        surrounding = surrounding_text(link, raw)
        if surrounding:
            meta["surrounding"] = surrounding
        meta.update(link.meta)
        image_alt = " ".join(alt for alt in link.image_alts if alt)
        if image_alt and link.kind == "a":
            meta["image_alt"] = image_alt
        outlinks.append({"url": target, "anchor": anchor, "nofollow": link.nofollow, "meta": meta})
    return outlinks, False


def _effective_base(url, base_href, normalize):
    """``<base href>`` resolved against the page URL, else the page URL."""
    page = normalize(url, None)
    if base_href and page:
        return normalize(base_href, page) or page
    return page


def _canonical(html_href, link_header, base, page_url, normalize):
    """``<link rel=canonical>`` first (resolved against the document's base), then the HTTP
    Link header (against the page's own URL: ``<base href>`` is the document's, not the
    response's)."""
    if html_href and base:
        resolved = normalize(html_href, base)
        if resolved:
            return resolved
    if link_header and page_url:
        for match in _LINK_VALUE.finditer(link_header):
            rel = _LINK_REL.search(match.group(2))
            if rel and "canonical" in (rel.group(1) or rel.group(2)).lower().split():
                return normalize(match.group(1).strip(), page_url)
    return None


def _option(choices, value, what):
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; expected one of {sorted(choices)}")
    return choices[value] if isinstance(choices, dict) else value


def _as_bytes(body) -> bytes:
    """Spark hands binary columns over as bytearray; tests pass str."""
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    return bytes(body)


_UTF_CODECS = frozenset({"utf-8", "utf-16-le", "utf-16-be"})


def _queries_in(charset: str, normalize: Normalizer) -> Normalizer:
    """``normalize`` for a page in ``charset``: as in browsers (the URL Standard), the query
    of a URL in a legacy-encoded page is percent-encoded in the page's encoding, so ``?q=é``
    in a latin-1 page is ``?q=%E9``, the URL the site's own forms and scripts produce; the
    path is always UTF-8. A character the encoding lacks becomes its ``&#N;`` reference,
    percent-encoded, as browsers send it."""
    if charset in _UTF_CODECS:
        return normalize

    def in_page_charset(href, base):
        if href and not href.isascii():
            href = _encode_query(href, charset)
        return normalize(href, base)
    return in_page_charset


def _encode_query(href: str, charset: str) -> str:
    start = href.find("?")
    if start < 0:
        return href
    end = href.find("#", start)
    end = len(href) if end < 0 else end
    query = "".join(ch if ch.isascii() else
                    quote(ch.encode(charset, "xmlcharrefreplace"), safe="")
                    for ch in href[start + 1:end])
    return href[:start + 1] + query + href[end:]


def _declared_type(content_type: str | None, headers: dict[str, list[str]]) -> str | None:
    """The Content-Type whose charset counts: ``content_type`` when it has one, else the
    response's header (its last value, as browsers take it): the crawl stores the bare media
    type and keeps the charset in the header."""
    if content_type and "charset" in content_type.lower():
        return content_type
    values = headers.get("content-type")
    # a repeated header comes one value per line (fetch/http.py LINE_PER_VALUE)
    return values[-1].rsplit("\n", 1)[-1] if values else content_type


def _lower_keys(headers: dict | None) -> dict[str, list[str]]:
    """Headers by lowercase name, each a list (a header may repeat)."""
    if not headers:
        return {}
    out: dict[str, list[str]] = {}
    for key, value in headers.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        out.setdefault(str(key).lower(), []).extend(str(v) for v in values if v is not None)
    return out


def _header(headers: dict[str, list[str]], name: str) -> str | None:
    """A header's value, repeats joined with ", " as HTTP allows."""
    values = headers.get(name)
    return ", ".join(values) if values else None


def _looks_binary(text: str) -> bool:
    """NUL characters never occur in real text in any decoded charset."""
    return "\x00" in text[:_BINARY_PROBE]


def _sniff(body: bytes) -> str:
    head = body[:512].lstrip().lower()
    if any(marker in head for marker in _HTML_SNIFF):
        return "text/html"
    if b"\x00" in head:
        return "application/octet-stream"
    return "text/plain"


def _describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"[:200]
