"""Sitemap documents (sitemaps.org protocol 0.9) parsed into entries; pure Python, no Spark.

Three forms: a ``<urlset>`` (page URLs with ``lastmod``, ``changefreq`` and ``priority``), a
``<sitemapindex>`` (the URLs of more sitemaps), and a plain-text sitemap (one URL per line).
A gzip body (told by its magic bytes, whatever its name or Content-Type says) is inflated
first, at most ``max_bytes``.

Sitemaps come from servers we do not trust, so the XML parser is lxml with entities left
unresolved, no network, no DTD and no huge-tree mode (XXE and billion laughs do nothing), in
recover mode (a broken tail still yields the entries before it). Tags are matched by local
name: sitemaps in the wild use the old Google namespace, none, or a wrong one. The protocol's
limits, 50,000 entries and 50 MiB uncompressed per document, are the defaults of the caps.
"""
from __future__ import annotations

import io
import math
import re
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from lxml import etree

MAX_ENTRIES = 50_000
MAX_BYTES = 50 * 1024 * 1024
CHANGEFREQS = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})
GZIP_MAGIC = b"\x1f\x8b"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_BARE_AMP = re.compile(rb"<!\[CDATA\[.*?(?:\]\]>|$)|&(?!#?\w+;)", re.S)
_XML_ENCODING = re.compile(r"^(\s*<\?xml[^>]*?)\s+encoding\s*=\s*[\"'][^\"']*[\"']")

# W3C datetime (https://www.w3.org/TR/NOTE-datetime): YYYY[-MM[-DD[Thh:mm[:ss[.s]]TZD]]]
_W3C = re.compile(r"(\d{4})(?:-(\d{2})(?:-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?"
                  r"\s*(Z|z|[+-]\d{2}:?\d{2})?)?)?)?")


@dataclass(frozen=True, slots=True)
class SitemapUrl:
    loc: str
    lastmod: datetime | None = None   # naive UTC
    changefreq: str | None = None
    priority: float | None = None


@dataclass(slots=True)
class Sitemap:
    """One parsed document. ``kind``: urlset, index, text or invalid (``error`` says why);
    ``truncated``: a cap cut it (entries or inflated bytes), what came before is kept."""
    kind: str
    urls: list[SitemapUrl] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)
    truncated: bool = False
    error: str | None = None


def parse_sitemap(body: bytes, *, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES,
                  truncated: bool = False) -> Sitemap:
    """The entries of a sitemap document (see the module doc); never raises on bad input.
    ``truncated``: the body is cut (the HTTP client stopped reading it), so its last entry
    may be partial and is dropped, as for a body cut here."""
    if body[:2] == GZIP_MAGIC:
        try:
            body, cut = gunzip(body, max_bytes)
        except zlib.error as exc:
            return Sitemap("invalid", error=f"bad gzip: {exc}")
        truncated = truncated or cut
    elif len(body) > max_bytes:
        body, truncated = body[:max_bytes], True
    if body[:2] in UTF16_BOMS:   # UTF-16 XML: as UTF-8, so the rest reads it as any other
        body = _utf16_to_utf8(body)
    head = body.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if not head:
        return Sitemap("invalid", error="empty document")
    if head == b"<":
        result = _parse_xml(_escape_bare_amps(body), max_entries, truncated)
    else:
        result = _parse_text(body, max_entries, truncated)
    result.truncated = result.truncated or truncated
    return result


def gunzip(data: bytes, max_bytes: int) -> tuple[bytes, bool]:
    """``data`` inflated to at most ``max_bytes`` (a gzip bomb stops there); (bytes, cut).
    A stream without its end (a download cut short) is cut too."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = inflater.decompress(data, max_bytes)
    return out, bool(inflater.unconsumed_tail) or not inflater.eof


def _utf16_to_utf8(body: bytes) -> bytes:
    """A UTF-16 document re-encoded as UTF-8, its XML declaration's encoding dropped (it
    would name UTF-16 for bytes that no longer are)."""
    text = body.decode("utf-16", "replace")
    return _XML_ENCODING.sub(r"\1", text, count=1).encode("utf-8")


def _escape_bare_amps(body: bytes) -> bytes:
    """``&`` starting no entity or character reference escaped: sitemaps in the wild write
    ``?a=1&b=2`` unescaped, and recover mode would drop the ``&b=2``. CDATA is left as is."""
    return _BARE_AMP.sub(lambda m: m.group() if m.group().startswith(b"<") else b"&amp;", body)


def _parse_text(body: bytes, max_entries: int, cut: bool) -> Sitemap:
    """Plain-text sitemap: one absolute http(s) URL per line; other lines are ignored. In a
    cut body the last line may be partial: it is dropped."""
    result = Sitemap("text")
    lines = body.decode("utf-8", "replace").splitlines(keepends=True)
    if cut and lines and not lines[-1].endswith(("\n", "\r")):
        lines.pop()
    for line in lines:
        url = line.strip().lstrip("\ufeff")
        if not url.lower().startswith(("http://", "https://")):
            continue
        if len(result.urls) >= max_entries:
            result.truncated = True
            break
        result.urls.append(SitemapUrl(url))
    return result


def _local(tag) -> str | None:
    """An element's tag without its namespace, lower-case; None for comments and the like."""
    if not isinstance(tag, str):
        return None
    return tag.rsplit("}", 1)[-1].rsplit(":", 1)[-1].lower()


def _parse_xml(body: bytes, max_entries: int, cut: bool) -> Sitemap:
    """The entries of an XML sitemap: the root's direct children named ``url`` (urlset) or
    ``sitemap`` (index); elements nested deeper (extensions: image, video, news) are no
    entries. In a cut body the last entry may be partial: it is dropped."""
    events = etree.iterparse(io.BytesIO(body), events=("start", "end"), recover=True,
                             resolve_entities=False, no_network=True, huge_tree=False,
                             load_dtd=False, remove_comments=True, remove_pis=True)
    result: Sitemap | None = None
    root = None
    entry = {"url": "urlset", "sitemap": "index"}
    try:
        for event, element in events:
            if result is None:   # the root element says what the document is
                name = _local(element.tag)
                kind = {"urlset": "urlset", "sitemapindex": "index"}.get(name or "")
                if kind is None:
                    return Sitemap("invalid", error=f"not a sitemap: root element <{name}>")
                result, root = Sitemap(kind), element
                continue
            if event != "end" or element.getparent() is not root:
                continue
            if entry.get(_local(element.tag) or "") == result.kind:
                if len(result.urls) + len(result.sitemaps) >= max_entries:
                    result.truncated = True
                    break
                _add_entry(result, element)
            element.clear(keep_tail=False)   # the document is read as it streams: keep no tree
            while element.getprevious() is not None:
                del root[0]
    except etree.LxmlError as exc:   # recover mode raises only when nothing at all parses
        if result is None:
            return Sitemap("invalid", error=f"bad XML: {str(exc)[:200]}")
    if result is not None and cut:
        _drop_last(result)
    return result if result is not None else Sitemap("invalid", error="no XML element")


def _add_entry(result: Sitemap, element) -> None:
    """The entry of one ``<url>`` or ``<sitemap>``, from its direct children only (an
    extension's own ``<loc>`` is not the page's)."""
    fields: dict[str | None, str] = {}
    for child in element:
        fields.setdefault(_local(child.tag), (child.text or "").strip())
    loc = fields.get("loc")
    if not loc:
        return
    if result.kind == "index":
        result.sitemaps.append(loc)
    else:
        result.urls.append(SitemapUrl(loc, parse_lastmod(fields.get("lastmod")),
                                      _changefreq(fields.get("changefreq")),
                                      _priority(fields.get("priority"))))


def _drop_last(result: Sitemap) -> None:
    """Drop the last entry of a cut document: the cut may fall inside its ``<loc>``."""
    entries = result.sitemaps if result.kind == "index" else result.urls
    if entries:
        entries.pop()


def parse_lastmod(text: str | None) -> datetime | None:
    """A W3C datetime as naive UTC (a time without zone is taken as UTC); None if it is none."""
    match = _W3C.fullmatch((text or "").strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    try:
        value = datetime(int(year), int(month or 1), int(day or 1), int(hour or 0), int(minute or 0),
                         int(second or 0), int((fraction or "0")[:6].ljust(6, "0")))
    except ValueError:
        return None
    if zone and zone not in "Zz":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        try:
            value = (value.replace(tzinfo=timezone(sign * offset))
                     .astimezone(timezone.utc).replace(tzinfo=None))
        except (ValueError, OverflowError):
            return None
    return value


def _changefreq(text: str | None) -> str | None:
    value = (text or "").strip().lower()
    return value if value in CHANGEFREQS else None


def _priority(text: str | None) -> float | None:
    try:
        value = float(text) if text else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) and 0.0 <= value <= 1.0 else None
