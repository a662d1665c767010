"""Content signatures for change and near-duplicate detection.

Raw-byte hashes change whenever a page's markup carries a timestamp, a
rotating ad or a session token, so every refetch would look "changed" and
mirrors with different templates would never look alike. The default is a
text profile (after Nutch's TextProfileSignature): it hashes which words the
visible text uses and roughly how often, so whitespace, markup and small
edits of rare words leave it unchanged while real content changes move it.
"""

from __future__ import annotations

import hashlib
import string
from collections import Counter

SIGNATURES = ("text_profile", "md5")

# Tokens are what remains between whitespace and punctuation; str.translate
# + split is an order of magnitude faster than a Unicode regex here.
_SEPARATORS = str.maketrans(dict.fromkeys(string.punctuation + "“”‘’„‚«»‹›–—…·•¡¿", " "))
_MIN_TOKEN = 2
_QUANT_RATE = 0.01


def md5_signature(body: bytes) -> str:
    return hashlib.md5(body).hexdigest()


def text_profile_signature(text: str, body: bytes) -> str:
    """Hash of quantised token counts; falls back to MD5 of ``body`` when the
    page has no words (otherwise every empty page would be a duplicate).

    Counts are rounded down to a multiple of ``quant`` (1% of the top count,
    at least 2 when any word repeats) and words below ``quant`` are dropped,
    so only the page's frequent vocabulary decides the signature.
    """
    counts = Counter(text.lower().translate(_SEPARATORS).split())
    for token in [token for token in counts if len(token) < _MIN_TOKEN]:
        del counts[token]
    if not counts:
        return md5_signature(body)
    max_count = max(counts.values())
    quant = max(round(max_count * _QUANT_RATE), 2 if max_count > 1 else 1)
    profile = sorted(
        ((count // quant * quant, token) for token, count in counts.items() if count >= quant),
        key=lambda item: (-item[0], item[1]),
    )
    digest = hashlib.md5()
    for count, token in profile:
        digest.update(f"{token} {count}\n".encode())
    return digest.hexdigest()


def text_digest(text: str) -> str | None:
    """MD5 of the visible text (whitespace collapsed, before any truncation); None for a page
    without text. The key of exact-duplicate detection (crawlkit.stages.dedup), which the
    signature cannot be: a text profile is built to stay put under small edits, so short
    pages that share only their frequent words share it (68 of the 1,694 WebKB pages, most
    of them different people's home pages, against 0 with the same text)."""
    return hashlib.md5(text.encode("utf-8", "surrogatepass")).hexdigest() if text else None


def signature_of(kind: str, text: str, body: bytes) -> str:
    if kind == "md5":
        return md5_signature(body)
    return text_profile_signature(text, body)
