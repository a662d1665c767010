"""Turn fetched bytes into text the way browsers do, without ever failing.

Order: byte-order mark, Content-Type charset, ``<meta>`` charset (HTML
only), strict UTF-8, then windows-1252 with replacement. The BOM goes first
because the HTML Standard puts it first and it is byte-level evidence, while
headers and meta tags are often copied from templates and wrong.
"""

from __future__ import annotations

import codecs
import functools
import re

import webencodings

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# Encodings that browsers decode with a superset's decoder (WHATWG Encoding Standard):
# GBK pages are read as GB18030, Shift_JIS as windows-31J, and so on.
_SUPERSETS = {
    "gbk": "gb18030",
    "shift_jis": "cp932",
    "euc_kr": "cp949",
    "big5": "big5hkscs",
}

# What the Encoding Standard decodes as U+FFFD only (a label that once let markup through)
# or with a decoder Python lacks: refused, so the body goes on to the next guess.
_REFUSED = frozenset({"iso2022_kr", "hz", "x-user-defined"})

# A UTF-16 label inside ASCII-compatible markup is a lie (it was readable).
_META_OVERRIDES = {"utf-16": "utf-8", "utf-16-le": "utf-8", "utf-16-be": "utf-8"}

_META_CHARSET = re.compile(
    rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([a-z0-9_:.+-]{1,40})""", re.I
)
_META_PRESCAN_BYTES = 4096


@functools.lru_cache(maxsize=256)
def codec_name(label: str | None) -> str | None:
    """Python codec for a charset label, or None: labels are the web's (the Encoding
    Standard's table, through ``webencodings``: "windows-874", "x-sjis", "latin1" meaning
    windows-1252), not Python's, so a page cannot ask for "utf-32", "cp037" (EBCDIC),
    "base64" or UTF-7, which browsers do not know."""
    if not label:
        return None
    encoding = webencodings.lookup(label.strip().strip("\"'"))
    if encoding is None:
        return None
    try:
        name = codecs.lookup(encoding.codec_info.name).name
    except LookupError:
        return None
    if name in _REFUSED:
        return None
    return _SUPERSETS.get(name, name)


def header_charset(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a Content-Type value, as a codec name."""
    if not content_type or "charset" not in content_type.lower():
        return None
    for param in content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            return codec_name(value)
    return None


def meta_charset(body: bytes) -> str | None:
    """Charset from ``<meta charset>`` / http-equiv in the first 4 KB."""
    match = _META_CHARSET.search(body, 0, _META_PRESCAN_BYTES)
    if match is None:
        return None
    name = codec_name(match.group(1).decode("ascii"))
    return _META_OVERRIDES.get(name, name)


def decode_body(body: bytes, content_type: str | None, *, html: bool = True) -> tuple[str, str]:
    """Decode ``body``; returns (text, codec name used). Never raises."""
    for bom, name in _BOMS:
        if body.startswith(bom):
            return body[len(bom) :].decode(name, errors="replace"), name
    declared = header_charset(content_type) or (meta_charset(body) if html else None)
    if declared:
        return body.decode(declared, errors="replace"), declared
    try:
        return body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return body.decode("cp1252", errors="replace"), "cp1252"
