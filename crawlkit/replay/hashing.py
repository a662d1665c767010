"""Stable hashing: every "random" choice the replay web makes per URL goes through here.

Python's ``hash()`` is salted per process, so it cannot tie a page's text, change
times or faults to its URL across runs; BLAKE2b of the parts can, and is fast enough
to call a few times per request.
"""

from __future__ import annotations

import struct
from hashlib import blake2b

_SCALE = 1.0 / 2**64
_SIXTEEN_INTS = struct.Struct("<16I")
_MASK64 = 2**64 - 1


def stable_hash(*parts: object) -> int:
    """A 64-bit integer fixed by ``parts`` (their ``str`` forms), the same in every process."""
    key = "\x1f".join(map(str, parts)).encode("utf-8", "surrogatepass")
    return int.from_bytes(blake2b(key, digest_size=8).digest(), "little")


def unit(*parts: object) -> float:
    """A number in [0, 1) fixed by ``parts``: a seeded coin for per-URL decisions."""
    return (stable_hash(*parts) + 0.5) * _SCALE


def hash_ints(count: int, *parts: object) -> list[int]:
    """``count`` 32-bit integers fixed by ``parts``: a seeded stream without a generator object.

    Seeding ``random.Random`` costs about 20 us, more than rendering a page should;
    each 64-byte BLAKE2b digest here gives 16 numbers for about 1 us.
    """
    key = "\x1f".join(map(str, parts)).encode("utf-8", "surrogatepass")
    out: list[int] = []
    block = 0
    while len(out) < count:
        out.extend(_SIXTEEN_INTS.unpack(blake2b(key, digest_size=64, salt=block.to_bytes(16, "little")).digest()))
        block += 1
    del out[count:]
    return out


def mix64(x: int) -> int:
    """A 64-bit integer scrambled (SplitMix64's finaliser): a per-id hash at a fraction of BLAKE2b's cost."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)
