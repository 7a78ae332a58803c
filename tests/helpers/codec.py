"""Test data and frame builders shared by the codec tests (tests/codec)."""

from __future__ import annotations

import random

import zstdpool
from hypothesis import HealthCheck, settings

from tests.helpers.peers import bzstd, zstandard

# Hypothesis: fast and reproducible; no example database written into the checkout.
quick = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
few = settings(
    max_examples=12,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def make_data(kind: str, size: int, seed: int) -> bytes:
    """Deterministic test data of `size` bytes: random, repetitive, zeros, text or mixed."""
    rng = random.Random(seed)
    if kind == "random":
        return rng.randbytes(size)
    if kind == "zeros":
        return bytes(size)
    if kind == "repeat":
        unit = rng.randbytes(rng.randint(1, 300)) or b"\0"
        return (unit * (size // len(unit) + 1))[:size]
    if kind == "text":
        words = [rng.randbytes(rng.randint(1, 8)).hex().encode() for _ in range(200)]
        out = bytearray()
        while len(out) < size:
            out += rng.choice(words) + b" "
        return bytes(out[:size])
    if kind == "mixed":
        out = bytearray()
        while len(out) < size:
            n = rng.randint(1, 65536)
            out += rng.randbytes(n) if rng.random() < 0.3 else bytes([rng.randrange(256)]) * n
        return bytes(out[:size])
    raise AssertionError(kind)


def frame_size(frame: bytes) -> int:
    """The size of the first zstd frame in `frame`, as another implementation reads it."""
    return bzstd.get_frame_size(frame)


def no_size_frame(data: bytes, level: int = 3, checksum: bool = False) -> bytes:
    """A frame without Frame_Content_Size, from python-zstandard."""
    cctx = zstandard.ZstdCompressor(level=level, write_content_size=False, write_checksum=checksum)
    frame = cctx.compress(data)
    assert zstandard.frame_content_size(frame) == -1
    return frame


def assert_balanced(pool: zstdpool.ContextPool) -> dict:
    s = pool.stats()
    assert s["leased"] == 0, s
    # Every context ever created is now idle or freed.
    assert s["created"] == s["idle"] + s["dropped"], s
    return s
