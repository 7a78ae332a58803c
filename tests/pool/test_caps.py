"""The pool's caps: idle contexts per key, idle bytes in all, and scratch bytes."""

from __future__ import annotations

import functools
import os
import random

import pytest
import zstdpool
from zstdpool import ContextPool

from tests.helpers.pool import check_consistent, compress_keys, text


@pytest.mark.parametrize("cap", [1, 2, 3])
def test_max_idle_per_key(cap):
    pool = ContextPool(max_idle_per_key=cap)
    assert pool.max_idle_per_key == cap
    leases = [zstdpool.compressor(1, pool=pool) for _ in range(5)]
    others = [zstdpool.compressor(2, pool=pool) for _ in range(5)]
    decs = [zstdpool.decompressor(pool=pool) for _ in range(5)]
    for lease in leases + others + decs:
        lease.close()
        check_consistent(pool)
    s = check_consistent(pool)
    assert s["idle"] == 3 * cap
    assert (s["returned"], s["dropped"]) == (3 * cap, 3 * (5 - cap))
    assert all(k["idle"] == cap for k in s["per_key"])


def test_max_idle_per_key_zero_keeps_nothing():
    pool = ContextPool(max_idle_per_key=0)
    zstdpool.compress(b"abc" * 1000, pool=pool)
    zstdpool.decompress(zstdpool.compress(b"abc", 5, pool=pool), pool=pool)
    s = check_consistent(pool)
    assert s["idle"] == 0 and s["per_key"] == [], s
    assert s["dropped"] == s["created"] == 3, s


def test_default_max_idle_per_key():
    pool = ContextPool()
    assert pool.max_idle_per_key >= 1
    assert pool.max_idle_per_key <= (os.cpu_count() or 1)
    assert pool.max_idle_bytes == 64 << 20
    assert pool.max_scratch_bytes == 4 << 20
    assert pool.idle_timeout is None
    assert pool.max_spare_bytes == 512 << 20
    assert pool.spare_timeout == 1.0


@functools.cache
def level_sizes() -> dict[int, int]:
    """Bytes a pool holds for one idle context per level, after compressing 64 KiB."""
    pool = ContextPool(max_idle_bytes=1 << 40, max_scratch_bytes=0)
    data = text(64 << 10, 1)
    for level in range(1, 23):
        zstdpool.compress(data, level, pool=pool)
    return {k["level"]: k["bytes"] for k in pool.stats()["per_key"]}


@pytest.mark.parametrize("cap", [1 << 20, 8 << 20])
def test_max_idle_bytes_is_never_exceeded(cap):
    pool = ContextPool(max_idle_bytes=cap)
    assert pool.max_idle_bytes == cap
    data = text(64 << 10, 1)
    for level in range(1, 23):
        frame = zstdpool.compress(data, level, pool=pool)
        s = check_consistent(pool)
        assert s["idle_bytes"] <= cap, (level, s)
        assert s["peak_idle_bytes"] <= cap, (level, s)
        assert zstdpool.decompress(frame, pool=pool) == data
        s = check_consistent(pool)
        assert s["idle_bytes"] <= cap, (level, s)
        # the context just returned is the one kept when it fits under the cap on its own
        mine = compress_keys(s).get((level, False, 0))
        if mine is None:
            assert s["dropped"] > 0
    # the contexts of all levels do not fit together: some were freed
    assert sum(level_sizes().values()) > cap
    assert check_consistent(pool)["dropped"] > 0
    # a second pass with other keys, still under the cap
    for level in (22, 12, 5, 1):
        zstdpool.compress(data, level, checksum=True, pool=pool)
        assert check_consistent(pool)["idle_bytes"] <= cap


def test_newest_context_survives_the_byte_cap():
    sizes = level_sizes()
    data = text(64 << 10, 1)
    # room for level 3's context, not for level 3's plus level 1's
    cap = sizes[3] + sizes[1] // 2
    pool = ContextPool(max_idle_bytes=cap, max_scratch_bytes=0)
    zstdpool.compress(data, 1, pool=pool)
    zstdpool.compress(data, 3, pool=pool)
    s = check_consistent(pool)
    assert set(compress_keys(s)) == {(3, False, 0)}, s
    assert s["dropped"] == 1


def test_context_larger_than_the_byte_cap_is_dropped():
    pool = ContextPool(max_idle_bytes=1000)
    for level in (1, 3, 19):
        zstdpool.decompress(zstdpool.compress(b"abc" * 1000, level, pool=pool), pool=pool)
        s = check_consistent(pool)
        assert s["idle"] == 0 and s["idle_bytes"] == 0 and s["peak_idle_bytes"] == 0, s
    assert s["created"] == s["dropped"] == 6


def test_max_scratch_bytes():
    cap = 1 << 20
    pool = ContextPool(max_scratch_bytes=cap)
    assert pool.max_scratch_bytes == cap
    small = random.Random(2).randbytes(64 << 10)
    large = random.Random(3).randbytes(2 << 20)
    assert zstdpool.decompress(zstdpool.compress(small, pool=pool)) == small
    s = check_consistent(pool)
    # the output scratch of a small input is kept (it is at least the frame's size)...
    assert len(small) <= s["scratch_bytes"] <= cap, s
    kept = s["scratch_bytes"]
    assert zstdpool.compress(small, pool=pool)
    assert check_consistent(pool)["scratch_bytes"] == kept
    # ...and the scratch of a large one is freed when the context comes back
    assert zstdpool.decompress(zstdpool.compress(large, pool=pool)) == large
    s = check_consistent(pool)
    assert s["idle"] == 1 and s["reused"] == 2
    assert s["scratch_bytes"] == 0, s
    # the context itself stays and still works
    assert zstdpool.decompress(zstdpool.compress(small, pool=pool)) == small
    assert check_consistent(pool)["scratch_bytes"] == kept


def test_max_scratch_bytes_through_a_lease():
    pool = ContextPool(max_scratch_bytes=256 << 10)
    large = random.Random(4).randbytes(1 << 20)
    with zstdpool.compressor(pool=pool) as c:
        c.compress(large)
        c.compress(b"tiny")
    s = check_consistent(pool)
    assert s["idle"] == 1 and s["scratch_bytes"] == 0, s


def test_zero_scratch_cap_keeps_no_scratch():
    pool = ContextPool(max_scratch_bytes=0)
    for size in (0, 10, 100_000):
        zstdpool.compress(text(size), pool=pool)
        s = check_consistent(pool)
        assert s["scratch_bytes"] == 0 and s["idle"] == 1, s
