"""Body accumulation with size limits, decompressing ``Content-Encoding`` ourselves.

We read the raw stream and inflate it here, chunk by chunk with an output cap, instead of
letting urllib3 decode: a 10 KB gzip bomb that inflates to gigabytes is cut as soon as its
output passes ``fetcher.max_content`` or inflates faster than ``fetcher.max_decompression_ratio``
— no more than ``max_content + 1`` decoded bytes ever exist in memory.
"""
from __future__ import annotations

import zlib

# Only these are advertised in Accept-Encoding, so only these should come back.
ACCEPT_ENCODING = "gzip, deflate"

# Small bodies cannot be bombs, and short, repetitive pages legitimately inflate well beyond
# the ratio; the ratio is judged only once this much output exists.
RATIO_GRACE_BYTES = 64 * 1024


class DecodeError(Exception):
    """The body cannot be decoded (unknown encoding or corrupt compressed data)."""


class BodyBuffer:
    """Collects a body: ``feed`` raw chunks until it returns False, then ``body()``.

    ``truncated`` tells that bytes were dropped; ``error`` is set ("decompression limit") when
    the cut was the decompression-ratio guard rather than the plain size limit.
    """

    def __init__(self, content_encoding: str | None, max_bytes: int, max_ratio: float):
        self.max_bytes = max_bytes
        self.max_ratio = max_ratio
        self.truncated = False
        self.error: str | None = None
        self._chunks: list[bytes] = []
        self._size = 0
        self._consumed = 0
        self._inflater = _inflater_for(content_encoding)

    def feed(self, raw: bytes) -> bool:
        """Add a raw chunk; False once a limit was hit (stop reading)."""
        if self._inflater is None:
            return self._keep(raw)
        room = self.max_bytes - self._size
        try:
            data = self._inflater.decompress(raw, room + 1)
        except zlib.error:
            if self._size == 0 and self._consumed == 0 and self._inflater.raw_fallback():
                return self.feed(raw)
            raise DecodeError("bad content-encoding") from None
        self._consumed += len(raw) - len(self._inflater.unconsumed_tail)
        produced = self._size + len(data)
        if produced > RATIO_GRACE_BYTES and produced > self.max_ratio * max(self._consumed, 1):
            self.error = "decompression limit"
            self.truncated = True
            self._keep(data[:room])
            return False
        return self._keep(data)

    def body(self) -> bytes:
        if self._inflater is not None and not self.truncated:
            try:
                self._keep(self._inflater.flush())
            except zlib.error:
                raise DecodeError("bad content-encoding") from None
        if len(self._chunks) == 1:
            return self._chunks[0]
        return b"".join(self._chunks)

    @property
    def size(self) -> int:
        return self._size

    def _keep(self, data: bytes) -> bool:
        room = self.max_bytes - self._size
        if len(data) > room:
            data = data[:room]
            self.truncated = True
        if data:
            self._chunks.append(data)
            self._size += len(data)
        return not self.truncated


class _Inflater:
    """zlib decompressobj that can restart as raw deflate: some servers label raw deflate
    streams ``deflate`` although the RFC says zlib-wrapped. A gzip body may be several
    members one after another (RFC 1952, e.g. concatenated log-style output): each is inflated
    in turn, and bytes after the last member that are not one (padding) are ignored, as
    browsers and urllib3 do."""

    def __init__(self, wbits: int, may_be_raw: bool, members: bool = False):
        self._wbits = wbits
        self._obj = zlib.decompressobj(wbits)
        self._may_be_raw = may_be_raw
        self._members = members
        self._later_member = False   # inflating a member after the first
        self._trailing = False   # past the last member: the rest of the body is ignored

    def decompress(self, data: bytes, max_length: int) -> bytes:
        if self._trailing:
            return b""
        out = self._inflate(data, max_length)
        while self._members and self._obj.eof and self._obj.unused_data and len(out) < max_length:
            rest = self._obj.unused_data
            self._obj, self._later_member = zlib.decompressobj(self._wbits), True
            out += self._inflate(rest, max_length - len(out))
        return out

    def _inflate(self, data: bytes, max_length: int) -> bytes:
        try:
            return self._obj.decompress(data, max_length)
        except zlib.error:
            if not self._later_member:
                raise
            self._trailing = True   # what follows the last whole member is not gzip
            return b""

    @property
    def unconsumed_tail(self) -> bytes:
        return self._obj.unconsumed_tail

    def flush(self) -> bytes:
        return b"" if self._trailing else self._obj.flush()

    def raw_fallback(self) -> bool:
        if not self._may_be_raw:
            return False
        self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
        self._may_be_raw = False
        return True


def _inflater_for(content_encoding: str | None) -> _Inflater | None:
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip"):
        return _Inflater(16 + zlib.MAX_WBITS, may_be_raw=False, members=True)
    if encoding == "deflate":
        return _Inflater(zlib.MAX_WBITS, may_be_raw=True)
    raise DecodeError(f"unsupported content-encoding {encoding}")
