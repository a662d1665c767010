"""Body limits and decompression on in-memory data."""
import gzip
import zlib

import pytest

from crawlkit.fetch.decode import RATIO_GRACE_BYTES, BodyBuffer, DecodeError


def collect(buffer: BodyBuffer, data: bytes, chunk: int = 4096) -> bytes:
    for start in range(0, len(data), chunk):
        if not buffer.feed(data[start:start + chunk]):
            break
    return buffer.body()


def raw_deflate(data: bytes) -> bytes:
    """Deflate without the zlib wrapper, as some servers send under ``deflate``."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush()


def test_plain_body_below_the_limit_is_kept_whole():
    buffer = BodyBuffer(None, 1000, 100.0)
    assert collect(buffer, b"x" * 1000, chunk=300) == b"x" * 1000
    assert not buffer.truncated and buffer.error is None


def test_plain_body_is_cut_at_the_limit():
    buffer = BodyBuffer("identity", 1000, 100.0)
    assert collect(buffer, b"x" * 5000, chunk=300) == b"x" * 1000
    assert buffer.truncated and buffer.error is None


@pytest.mark.parametrize("encoding, compress", [
    ("gzip", gzip.compress),
    ("x-gzip", gzip.compress),
    ("deflate", zlib.compress),
    ("deflate", raw_deflate),
])
def test_compressed_bodies_are_inflated(encoding, compress):
    page = b"<html>" + bytes(range(256)) * 40 + b"</html>"
    buffer = BodyBuffer(encoding, 1 << 20, 100.0)
    assert collect(buffer, compress(page), chunk=100) == page
    assert not buffer.truncated


def test_gzip_bomb_is_cut_by_the_ratio():
    bomb = gzip.compress(bytes(50 << 20))          # 50 MiB of zeros in ~50 KB
    buffer = BodyBuffer("gzip", 10 << 20, 100.0)
    body = collect(buffer, bomb, chunk=1024)
    assert buffer.truncated and buffer.error == "decompression limit"
    assert len(body) <= 10 << 20


def test_gzip_bomb_never_exceeds_max_content():
    buffer = BodyBuffer("gzip", 1000, 1e9)          # ratio guard off: the size limit holds
    body = collect(buffer, gzip.compress(bytes(10 << 20)), chunk=65536)
    assert len(body) == 1000 and buffer.truncated and buffer.error is None


def test_ordinary_compression_ratio_is_not_a_bomb():
    page = (b"<tr><td>row</td><td>value</td></tr>\n" * 20000)   # ~700 KB, compresses well
    ratio = len(page) / len(gzip.compress(page))
    buffer = BodyBuffer("gzip", 1 << 20, ratio * 2)
    assert collect(buffer, gzip.compress(page)) == page and buffer.error is None


def test_small_bodies_are_exempt_from_the_ratio():
    page = b"a" * (RATIO_GRACE_BYTES // 2)
    buffer = BodyBuffer("gzip", 1 << 20, 2.0)
    assert collect(buffer, gzip.compress(page)) == page and not buffer.truncated


def test_broken_and_unknown_encodings_raise():
    with pytest.raises(DecodeError):
        collect(BodyBuffer("gzip", 1000, 100.0), b"this is not gzip at all")
    with pytest.raises(DecodeError):
        BodyBuffer("br", 1000, 100.0)


def test_every_member_of_a_gzip_body_is_inflated():
    members = gzip.compress(b"<p>first member</p>") + gzip.compress(b"<p>second member</p>")
    for padding in (b"", b"\0\0\0\n"):   # some servers pad after the last member
        buffer = BodyBuffer("gzip", 1 << 20, 100.0)
        assert collect(buffer, members + padding, chunk=7) == (
            b"<p>first member</p><p>second member</p>")
        assert not buffer.truncated
