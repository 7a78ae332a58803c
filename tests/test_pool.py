"""ContextPool: counters, per-key idle lists, caps, trimming, and the default pool."""

from __future__ import annotations

import functools
import math
import os
import random
import time

import numpy as np
import pyarrow as pa
import pytest
import zstdpool
from zstdpool import ContextPool, ipc

STAT_KEYS = {
    "created",
    "reused",
    "returned",
    "dropped",
    "leased",
    "idle",
    "idle_bytes",
    "scratch_bytes",
    "peak_idle_bytes",
    "per_key",
    "spare_blocks",
    "spare_bytes",
    "spare_reused",
}


def text(size: int, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    words = [rng.randbytes(rng.randint(1, 6)).hex().encode() for _ in range(300)]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words) + b" "
    return bytes(out[:size])


def check_consistent(pool: ContextPool) -> dict:
    """Invariants that hold between any two operations on a pool."""
    s = pool.stats()
    assert set(s) == STAT_KEYS
    assert s["idle"] == sum(k["idle"] for k in s["per_key"]), s
    assert s["idle_bytes"] == sum(k["bytes"] for k in s["per_key"]), s
    assert 0 <= s["scratch_bytes"] <= s["idle_bytes"] <= s["peak_idle_bytes"], s
    assert all(k["idle"] > 0 for k in s["per_key"]), s
    assert (s["idle"] == 0) == (s["idle_bytes"] == 0), s
    # every context created is out on lease, idle, or freed
    assert s["created"] == s["leased"] + s["idle"] + s["dropped"], s
    assert s["reused"] <= s["returned"], s
    assert (s["spare_blocks"] == 0) == (s["spare_bytes"] == 0), s
    assert s["spare_bytes"] <= pool.max_spare_bytes, s
    return s


def compress_keys(s: dict) -> dict:
    return {
        (k["level"], k["checksum"], k["window_log"]): k
        for k in s["per_key"]
        if k["kind"] == "compress"
    }


# --------------------------------------------------------------------------------------
# Counting


def test_fresh_pool_is_empty():
    s = ContextPool().stats()
    assert s == {
        "created": 0,
        "reused": 0,
        "returned": 0,
        "dropped": 0,
        "leased": 0,
        "idle": 0,
        "idle_bytes": 0,
        "scratch_bytes": 0,
        "peak_idle_bytes": 0,
        "per_key": [],
        "spare_blocks": 0,
        "spare_bytes": 0,
        "spare_reused": 0,
    }


def test_created_and_reused_counting():
    pool = ContextPool()
    data = text(20_000)
    frame = zstdpool.compress(data, pool=pool)
    s = check_consistent(pool)
    assert (s["created"], s["reused"], s["returned"], s["idle"]) == (1, 0, 1, 1)
    assert s["idle_bytes"] > 0
    for i in range(1, 6):
        assert zstdpool.compress(data, pool=pool) == frame
        s = check_consistent(pool)
        assert (s["created"], s["reused"], s["returned"], s["idle"]) == (1, i, 1 + i, 1)
    # a decompressor is another kind of context
    assert zstdpool.decompress(frame, pool=pool) == data
    assert zstdpool.decompress(frame, pool=pool) == data
    s = check_consistent(pool)
    assert (s["created"], s["reused"], s["idle"]) == (2, 6, 2)
    # two leases at once need two contexts
    with zstdpool.compressor(pool=pool) as a, zstdpool.compressor(pool=pool) as b:
        assert check_consistent(pool)["leased"] == 2
        assert a.compress(data) == b.compress(data) == frame
    s = check_consistent(pool)
    assert (s["created"], s["reused"], s["leased"]) == (3, 7, 0)
    assert compress_keys(s)[(3, False, 0)]["idle"] == 2


def test_leases_count_while_out():
    pool = ContextPool()
    leases = [zstdpool.compressor(pool=pool) for _ in range(3)]
    leases.append(zstdpool.decompressor(pool=pool))
    s = check_consistent(pool)
    assert (s["leased"], s["created"], s["idle"]) == (4, 4, 0)
    for i, lease in enumerate(leases, 1):
        lease.close()
        assert check_consistent(pool)["leased"] == 4 - i


def test_private_pool_leaves_default_pool_alone():
    before = zstdpool.pool_stats()
    pool = ContextPool()
    for level in (1, 2, 3):
        zstdpool.decompress(zstdpool.compress(b"abc" * 100, level, pool=pool), pool=pool)
    after = zstdpool.pool_stats()
    for key in ("created", "reused", "returned", "dropped", "leased"):
        assert after[key] == before[key], key


def test_per_key_separation():
    pool = ContextPool()
    data = text(10_000)
    params = [
        {"level": 1},
        {"level": 2},
        {"level": 1, "checksum": True},
        {"level": 1, "window_log": 12},
        {"level": -4},
    ]
    for p in params:
        zstdpool.compress(data, pool=pool, **p)
    zstdpool.decompress(zstdpool.compress(data, 1, pool=pool), pool=pool)
    s = check_consistent(pool)
    assert (s["created"], s["reused"], s["idle"]) == (6, 1, 6)
    keys = compress_keys(s)
    assert set(keys) == {(1, False, 0), (2, False, 0), (1, True, 0), (1, False, 12), (-4, False, 0)}
    assert all(k["idle"] == 1 and k["bytes"] > 0 for k in keys.values())
    dkeys = [k for k in s["per_key"] if k["kind"] == "decompress"]
    assert len(dkeys) == 1
    assert dkeys[0]["window_log_max"] == 0 and dkeys[0]["idle"] == 1
    # Each parameter set reuses only its own context.
    for p in params:
        zstdpool.compress(data, pool=pool, **p)
    s = check_consistent(pool)
    assert (s["created"], s["reused"], s["idle"]) == (6, 6, 6)
    assert compress_keys(s).keys() == keys.keys()
    # and a context never changes its parameters: output equals a fresh pool's
    for p in params:
        assert zstdpool.compress(data, pool=pool, **p) == zstdpool.compress(
            data, pool=ContextPool(), **p
        )


def test_stats_is_a_snapshot():
    pool = ContextPool()
    s = pool.stats()
    s["created"] = 99
    s["per_key"].append("junk")
    assert pool.stats()["created"] == 0 and pool.stats()["per_key"] == []
    assert "ContextPool" in repr(pool)


# --------------------------------------------------------------------------------------
# Caps


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


# --------------------------------------------------------------------------------------
# trim, idle_timeout, clear


def test_trim_without_timeout_frees_only_scratch():
    pool = ContextPool()
    zstdpool.compress(text(100_000), pool=pool)
    zstdpool.compress(text(100_000), 7, pool=pool)
    zstdpool.decompress(zstdpool.compress(b"x"), pool=pool)
    before = check_consistent(pool)
    assert before["scratch_bytes"] > 0
    freed = pool.trim()
    after = check_consistent(pool)
    assert freed == before["scratch_bytes"]
    assert after["scratch_bytes"] == 0
    assert after["idle_bytes"] == before["idle_bytes"] - freed
    assert (after["idle"], after["dropped"]) == (before["idle"], before["dropped"])
    assert after["peak_idle_bytes"] == before["peak_idle_bytes"]
    assert pool.trim() == 0
    # the trimmed contexts are reused and work
    data = text(50_000, 5)
    assert zstdpool.decompress(zstdpool.compress(data, 7, pool=pool), pool=pool) == data
    assert check_consistent(pool)["created"] == before["created"]


def test_trim_with_long_timeout_keeps_contexts():
    pool = ContextPool(idle_timeout=3600)
    assert pool.idle_timeout == 3600.0
    zstdpool.compress(text(10_000), pool=pool)
    before = check_consistent(pool)
    pool.trim()
    after = check_consistent(pool)
    assert after["idle"] == before["idle"] == 1
    assert after["dropped"] == 0


def test_idle_timeout_expires_contexts_on_trim():
    timeout = 0.01
    pool = ContextPool(idle_timeout=timeout)
    assert pool.idle_timeout == pytest.approx(timeout)
    zstdpool.compress(text(10_000), pool=pool)
    zstdpool.compress(text(10_000), 9, pool=pool)
    before = check_consistent(pool)
    assert before["idle"] == 2
    time.sleep(timeout * 10)  # well past the timeout; no timing is asserted
    freed = pool.trim()
    after = check_consistent(pool)
    assert freed == before["idle_bytes"]
    assert (after["idle"], after["idle_bytes"], after["dropped"]) == (0, 0, 2)
    assert after["per_key"] == []


def test_idle_timeout_expires_contexts_on_next_use():
    timeout = 0.01
    pool = ContextPool(idle_timeout=timeout)
    zstdpool.compress(b"abc", pool=pool)
    time.sleep(timeout * 10)
    zstdpool.compress(b"abc", pool=pool)
    s = check_consistent(pool)
    # the expired context was freed instead of reused
    assert (s["created"], s["reused"], s["dropped"], s["idle"]) == (2, 0, 1, 1), s


def test_zero_idle_timeout():
    pool = ContextPool(idle_timeout=0)
    assert pool.idle_timeout == 0.0
    zstdpool.compress(b"abc", pool=pool)
    time.sleep(0.01)
    pool.trim()
    s = check_consistent(pool)
    assert s["idle"] == 0 and s["dropped"] == 1, s


@pytest.mark.parametrize("bad", [-1, -0.001, math.nan, math.inf, -math.inf])
def test_invalid_idle_timeout(bad):
    with pytest.raises(ValueError, match="idle_timeout"):
        ContextPool(idle_timeout=bad)


@pytest.mark.parametrize("huge", [1e20, 1e300, float(2**64)])
def test_huge_idle_timeout_is_accepted_or_a_value_error(huge):
    # A finite, non-negative timeout too long to represent means "never" in practice; it
    # may be accepted or refused with ValueError, never crash (pyo3 PanicException).
    try:
        pool = ContextPool(idle_timeout=huge)
    except ValueError:
        return
    zstdpool.compress(b"abc", pool=pool)
    pool.trim()
    zstdpool.compress(b"abc", pool=pool)
    assert check_consistent(pool)["idle"] == 1


@pytest.mark.parametrize("bad", [0, 1e-12, -1, math.nan, math.inf, -math.inf, 1e300])
def test_invalid_spare_timeout(bad):
    with pytest.raises(ValueError, match="spare_timeout"):
        ContextPool(spare_timeout=bad)


def test_invalid_max_spare_bytes():
    with pytest.raises(ValueError, match="max_spare_bytes"):
        ContextPool(max_spare_bytes=-1)


def test_pool_arguments_are_keyword_only():
    with pytest.raises(TypeError):
        ContextPool(2)  # type: ignore[misc]


def test_clear():
    pool = ContextPool()
    for level in (1, 3, 5):
        zstdpool.compress(text(30_000), level, pool=pool)
    zstdpool.decompress(zstdpool.compress(b"abc", pool=pool), pool=pool)
    held = zstdpool.compressor(11, pool=pool)
    before = check_consistent(pool)
    assert before["idle"] == 4 and before["leased"] == 1
    freed = pool.clear()
    after = check_consistent(pool)
    assert freed == before["idle_bytes"]
    assert (after["idle"], after["idle_bytes"], after["scratch_bytes"]) == (0, 0, 0)
    assert after["per_key"] == []
    assert after["dropped"] == before["dropped"] + 4
    assert after["peak_idle_bytes"] == before["peak_idle_bytes"]
    assert after["leased"] == 1
    # the leased context is not affected and comes back afterwards
    assert zstdpool.decompress(held.compress(b"still works")) == b"still works"
    held.close()
    s = check_consistent(pool)
    assert s["idle"] == 1 and compress_keys(s).keys() == {(11, False, 0)}
    assert pool.clear() > 0
    assert pool.clear() == 0
    # the pool keeps working after a clear
    zstdpool.compress(b"abc", pool=pool)
    assert check_consistent(pool)["idle"] == 1


# --------------------------------------------------------------------------------------
# Spare bodies: a reader's freed decompressed bodies, kept for the next read


def zstd_stream(rows: int, seed: int) -> tuple[pa.Table, bytes]:
    """A one-batch zstd stream whose body decompresses to just over 10 bytes a row."""
    rng = np.random.default_rng(seed)
    table = pa.table(
        {
            "n": pa.array(np.arange(rows, dtype=np.int64) * 3 + rng.integers(0, 4, rows)),
            "b": pa.array(rng.integers(0, 3, rows).astype(bool)),
            "s": pa.array(rng.integers(0, 50, rows).astype(np.int16)),
        }
    )
    return table, ipc.write_stream(table, compression="zstd")


def test_a_freed_body_serves_the_next_read():
    pool = ContextPool(spare_timeout=600)
    first, data = zstd_stream(200_000, 0)
    got = ipc.read_stream(data, pool=pool)
    assert got.equals(first)
    assert check_consistent(pool)["spare_blocks"] == 0, "in use while the table lives"
    del got
    s = check_consistent(pool)
    assert s["spare_blocks"] == 1 and s["spare_bytes"] >= 200_000 * 10, s
    # Other contents, a few rows fewer: the same block, every byte rewritten.
    second, data = zstd_stream(199_000, 1)
    got = ipc.read_stream(data, pool=pool)
    s = check_consistent(pool)
    assert (s["spare_blocks"], s["spare_reused"]) == (0, 1), s
    got.validate(full=True)
    assert got.equals(second)
    # A batch much smaller than the block does not take it.
    del got
    small, data = zstd_stream(120_000, 2)
    got = ipc.read_stream(data, pool=pool)
    assert got.equals(small)
    s = check_consistent(pool)
    assert (s["spare_blocks"], s["spare_reused"]) == (1, 1), s
    del got
    assert check_consistent(pool)["spare_blocks"] == 2
    freed = check_consistent(pool)["spare_bytes"]
    assert pool.clear() >= freed
    assert check_consistent(pool)["spare_bytes"] == 0


def read_and_free(pool: ContextPool) -> float:
    """Reads a 2 MB body through ``pool`` and drops the table; returns when it was freed."""
    _, data = zstd_stream(200_000, 0)
    ipc.read_stream(data, pool=pool)
    return time.monotonic()


def test_a_body_comes_back_only_when_its_last_consumer_lets_go():
    # polars takes the columns zero-copy through the C data interface: the body is still in
    # use after the pyarrow table is gone, and comes back when the DataFrame goes.
    pl = pytest.importorskip("polars")
    pool = ContextPool(spare_timeout=600)
    table, data = zstd_stream(200_000, 0)
    got = ipc.read_stream(data, pool=pool)
    frame = pl.from_arrow(got)
    del got
    assert check_consistent(pool)["spare_blocks"] == 0
    assert frame.to_arrow().equals(table)
    del frame
    assert check_consistent(pool)["spare_blocks"] == 1


def test_trim_frees_spare_bodies():
    pool = ContextPool(spare_timeout=600)
    read_and_free(pool)
    spare = check_consistent(pool)["spare_bytes"]
    assert spare > 0
    assert pool.trim() >= spare
    assert check_consistent(pool)["spare_blocks"] == 0


def test_spare_bodies_expire_without_further_use():
    pool = ContextPool(spare_timeout=0.2)
    freed = read_and_free(pool)
    kept = check_consistent(pool)["spare_blocks"]
    if time.monotonic() - freed < 0.2:  # not yet due, unless this thread was descheduled
        assert kept == 1
    deadline = time.monotonic() + 10
    while pool.stats()["spare_blocks"]:
        assert time.monotonic() < deadline, "the spare body was never freed"
        time.sleep(0.01)
    assert check_consistent(pool)["spare_bytes"] == 0


@pytest.mark.parametrize("cap", [0, 1 << 20])
def test_max_spare_bytes_bounds_what_is_kept(cap):
    pool = ContextPool(max_spare_bytes=cap, spare_timeout=600)
    assert pool.max_spare_bytes == cap
    for _ in range(3):
        read_and_free(pool)
        s = check_consistent(pool)
        assert s["spare_blocks"] == 0 and s["spare_reused"] == 0, s


def test_small_bodies_are_not_kept():
    pool = ContextPool(spare_timeout=600)
    table, data = zstd_stream(50_000, 0)
    assert ipc.read_stream(data, pool=pool).equals(table)
    assert check_consistent(pool)["spare_blocks"] == 0


# --------------------------------------------------------------------------------------
# The default pool


def without_spares(s: dict) -> dict:
    """Stats without the spare-body counters, which a reaper thread or the collection of an
    earlier test's arrays may change between two calls."""
    return {k: v for k, v in s.items() if not k.startswith("spare_")}


def test_default_pool():
    pool = zstdpool.default_pool()
    assert isinstance(pool, ContextPool)
    assert zstdpool.default_pool() is pool
    s = zstdpool.pool_stats()
    assert set(s) == STAT_KEYS
    assert without_spares(s) == without_spares(pool.stats())
    check_consistent(pool)


def test_default_pool_is_what_module_functions_use():
    pool = zstdpool.default_pool()
    before = pool.stats()
    frame = zstdpool.compress(text(5000))
    zstdpool.decompress(frame, pool=pool)
    after = zstdpool.pool_stats()
    leases = lambda s: s["created"] + s["reused"]  # noqa: E731
    assert leases(after) == leases(before) + 2
    assert without_spares(after) == without_spares(pool.stats())
    check_consistent(pool)
