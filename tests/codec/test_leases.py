"""Compressor and decompressor leases: their properties and lifecycle, reuse of a pooled
context, and leases and pools used from many threads.
"""

from __future__ import annotations

import gc
import random
import threading

import pytest
import zstdpool
from zstdpool import BusyError, ClosedError, DecompressionError, OutputLimitError

from tests.helpers.codec import assert_balanced, frame_size, make_data, no_size_frame

THREAD_TIMEOUT = 120  # seconds; only a deadlock guard, never a performance assertion


def test_compressor_properties():
    with zstdpool.compressor(7, checksum=True, window_log=15) as c:
        assert (c.level, c.checksum, c.window_log, c.closed) == (7, True, 15, False)
        assert "level=7" in repr(c)
    assert c.closed and "closed" in repr(c)
    with zstdpool.compressor() as c:
        assert (c.level, c.checksum, c.window_log) == (3, False, None)
    with zstdpool.decompressor(max_output_size=1234) as d:
        assert d.max_output_size == 1234 and not d.closed
    assert d.closed
    with zstdpool.decompressor() as d:
        assert d.max_output_size == zstdpool.DEFAULT_MAX_OUTPUT_SIZE


def test_compressor_matches_one_shot():
    data = [make_data("mixed", n, n) for n in (0, 1, 1000, 200_000)]
    for level, checksum in ((1, False), (19, True), (-5, False)):
        with zstdpool.compressor(level, checksum=checksum) as c:
            for d in data:
                frame = c.compress(d)
                assert frame == zstdpool.compress(d, level, checksum=checksum)
                assert frame_size(frame) == len(frame)


def test_compressor_lease_lifecycle(pool):
    c = zstdpool.compressor(5, pool=pool)
    assert pool.stats()["leased"] == 1
    frame = c.compress(b"abc" * 100)
    assert zstdpool.decompress(frame) == b"abc" * 100
    c.close()
    s = pool.stats()
    assert (s["leased"], s["returned"], s["idle"], c.closed) == (0, 1, 1, True)
    c.close()  # idempotent
    assert pool.stats() == s
    with pytest.raises(ClosedError, match="closed"):
        c.compress(b"abc")
    with pytest.raises(ValueError):
        c.compress(b"abc")
    with pytest.raises(ClosedError):
        with c:
            pass
    assert pool.stats() == s


def test_decompressor_lease_lifecycle(pool):
    frame = zstdpool.compress(b"xyz" * 100)
    d = zstdpool.decompressor(pool=pool)
    assert pool.stats()["leased"] == 1
    assert d.decompress(frame) == b"xyz" * 100
    d.close()
    s = pool.stats()
    assert (s["leased"], s["returned"], d.closed) == (0, 1, True)
    d.close()
    assert pool.stats() == s
    with pytest.raises(ClosedError):
        d.decompress(frame)
    with pytest.raises(ClosedError):
        d.decompress_into(frame, bytearray(300))
    with pytest.raises(ClosedError):
        with d:
            pass


def test_context_manager_returns_lease_when_block_raises(pool):
    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with zstdpool.compressor(pool=pool) as c:
            c.compress(b"data")
            raise Boom
    assert c.closed
    with pytest.raises(Boom):
        with zstdpool.decompressor(pool=pool) as d:
            raise Boom
    assert d.closed
    s = pool.stats()
    assert (s["leased"], s["returned"], s["created"]) == (0, 2, 2)


def test_context_manager_enter_returns_self(pool):
    c = zstdpool.compressor(pool=pool)
    with c as entered:
        assert entered is c
    d = zstdpool.decompressor(pool=pool)
    with d as entered:
        assert entered is d


def test_exit_after_a_failed_call_returns_the_context(pool):
    with pytest.raises(DecompressionError):
        with zstdpool.decompressor(pool=pool) as d:
            d.decompress(b"garbage!")
    with pytest.raises(TypeError):
        with zstdpool.compressor(pool=pool) as c:
            c.compress("text")
    assert_balanced(pool)
    assert pool.stats()["returned"] == 2


def test_garbage_collection_returns_the_lease(pool):
    c = zstdpool.compressor(pool=pool)
    c.compress(b"abc")
    d = zstdpool.decompressor(pool=pool)
    assert pool.stats()["leased"] == 2
    del c, d
    gc.collect()
    s = pool.stats()
    assert (s["leased"], s["returned"], s["idle"]) == (0, 2, 2)
    # also from inside a reference cycle
    holder: list = [zstdpool.compressor(pool=pool)]
    holder.append(holder)
    del holder
    gc.collect()
    assert pool.stats()["leased"] == 0


def test_one_shot_calls_return_their_context(pool):
    frame = zstdpool.compress(b"abc" * 1000, pool=pool)
    zstdpool.decompress(frame, pool=pool)
    zstdpool.decompress_into(frame, bytearray(3000), pool=pool)
    for bad in (b"", b"junk", frame[:-3]):
        with pytest.raises(DecompressionError):
            zstdpool.decompress(bad, pool=pool)
        with pytest.raises(DecompressionError):
            zstdpool.decompress_into(bad, bytearray(3000), pool=pool)
    with pytest.raises(OutputLimitError):
        zstdpool.decompress_into(frame, bytearray(10), pool=pool)
    with pytest.raises(TypeError):
        zstdpool.compress("str", pool=pool)
    s = assert_balanced(pool)
    assert s["created"] == 2  # one compressor, one decompressor, reused throughout
    assert s["reused"] > 0


@pytest.mark.parametrize(
    "params",
    [
        {"level": 1},
        {"level": 3, "checksum": True},
        {"level": -5},
        {"level": 9, "window_log": 14},
        {"level": 19},
    ],
)
def test_reused_context_output_equals_fresh(params):
    small = make_data("text", 3000, 18)
    large = make_data("mixed", 1 << 20, 19)
    fresh = zstdpool.compress(small, pool=zstdpool.ContextPool(), **params)
    fresh_large = zstdpool.compress(large, pool=zstdpool.ContextPool(), **params)
    shared = zstdpool.ContextPool(max_idle_per_key=1)
    with zstdpool.compressor(pool=shared, **params) as c:
        assert c.compress(small) == fresh
        assert c.compress(large) == fresh_large
        assert c.compress(small) == fresh
        assert c.compress(b"") == zstdpool.compress(b"", **params)
        assert c.compress(small) == fresh
    # through the pool: the context that compressed `large` is reused
    assert zstdpool.compress(large, pool=shared, **params) == fresh_large
    assert zstdpool.compress(small, pool=shared, **params) == fresh
    s = shared.stats()
    assert s["created"] == 1 and s["reused"] == 2


def test_reused_decompressor_after_failures():
    good = make_data("text", 100_000, 20)
    cases = [
        (zstdpool.compress(good), good),
        (no_size_frame(good), good),
        (zstdpool.compress(good) * 2, good * 2),
    ]
    with zstdpool.decompressor() as d:
        for frame, expected in cases:
            # leave the context mid-frame in every way we can, then use it again
            for bad in (frame[: len(frame) // 3], frame[:-1], b"\x28\xb5\x2f\xfd" + b"\0" * 20):
                with pytest.raises(DecompressionError):
                    d.decompress(bad)
                assert d.decompress(frame) == expected
                with pytest.raises(DecompressionError):
                    d.decompress_into(bad, bytearray(len(expected)))
                out = bytearray(len(expected))
                assert d.decompress_into(frame, out) == len(expected)
                assert out == expected
            with pytest.raises(OutputLimitError):
                d.decompress(frame, max_output_size=1000)
            assert d.decompress(frame) == expected


def run_threads(target, n: int) -> list[BaseException]:
    errors: list[BaseException] = []

    def wrapped(i):
        try:
            target(i)
        except BaseException as e:  # noqa: BLE001 - reported by the caller
            errors.append(e)

    threads = [threading.Thread(target=wrapped, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(THREAD_TIMEOUT)
    assert not any(t.is_alive() for t in threads), "threads deadlocked"
    return errors


def test_sixteen_threads_share_one_pool():
    pool = zstdpool.ContextPool(max_idle_bytes=1 << 40)
    levels = [-3, 1, 3, 5, 9]
    sizes = [0, 1, 100, 5000, 70_000, 400_000]
    barrier = threading.Barrier(16)

    def work(i):
        rng = random.Random(i)
        barrier.wait(THREAD_TIMEOUT)
        for j in range(12):
            data = make_data(
                rng.choice(["text", "mixed", "random"]), rng.choice(sizes), i * 100 + j
            )
            level = rng.choice(levels)
            checksum = rng.random() < 0.3
            mode = j % 3
            if mode == 0:
                frame = zstdpool.compress(data, level, checksum=checksum, pool=pool)
                assert zstdpool.decompress(frame, pool=pool) == data
            elif mode == 1:
                with zstdpool.compressor(level, checksum=checksum, pool=pool) as c:
                    frame = c.compress(data)
                with zstdpool.decompressor(pool=pool) as d:
                    out = bytearray(len(data))
                    assert d.decompress_into(frame, out) == len(data)
                    assert out == data
            else:
                frames = zstdpool.compress_many(
                    [data, data[::-1]], level, checksum=checksum, pool=pool, threads=2
                )
                assert zstdpool.decompress_many(frames, pool=pool) == [data, data[::-1]]
                frame = frames[0]
            assert frame == zstdpool.compress(data, level, checksum=checksum)

    errors = run_threads(work, 16)
    assert not errors, errors[:3]
    s = pool.stats()
    assert s["leased"] == 0
    # No byte cap was reached, so nothing idle was evicted: every lease ended in a
    # return or a drop, and every context created is idle or dropped.
    assert s["created"] + s["reused"] == s["returned"] + s["dropped"], s
    assert s["created"] == s["idle"] + s["dropped"], s
    assert s["reused"] > 0


def test_one_compressor_from_two_threads_never_corrupts():
    data = make_data("mixed", 1 << 20, 21)
    expected = zstdpool.compress(data, 3)
    pool = zstdpool.ContextPool()
    results: list[bytes] = []
    busy: list[BusyError] = []
    c = zstdpool.compressor(3, pool=pool)

    def work(_):
        for _ in range(15):
            try:
                results.append(c.compress(data))
            except BusyError as e:
                busy.append(e)

    errors = run_threads(work, 2)
    c.close()
    assert not errors, errors
    assert len(results) + len(busy) == 30
    assert results, "every call was refused"
    assert all(r == expected for r in results)
    for e in busy:
        assert "thread" in str(e)
    assert_balanced(pool)


def test_one_decompressor_from_two_threads_never_corrupts():
    data = make_data("mixed", 1 << 20, 22)
    frame = no_size_frame(data)
    pool = zstdpool.ContextPool()
    d = zstdpool.decompressor(pool=pool)
    outcomes: list[bool] = []

    def work(_):
        for _ in range(15):
            try:
                outcomes.append(d.decompress(frame) == data)
            except BusyError:
                pass

    errors = run_threads(work, 2)
    d.close()
    assert not errors, errors
    assert outcomes and all(outcomes)
    assert_balanced(pool)


def test_close_from_another_thread_while_in_use():
    data = make_data("mixed", 1 << 20, 23)
    pool = zstdpool.ContextPool()
    c = zstdpool.compressor(pool=pool)
    started = threading.Event()
    outcome: list[str] = []

    def work(_):
        n = 0
        while True:
            try:
                frame = c.compress(data)
            except ClosedError:
                outcome.append(f"closed after {n}")
                return
            assert zstdpool.decompress(frame) == data
            n += 1
            started.set()

    t = threading.Thread(target=work, args=(0,), daemon=True)
    t.start()
    assert started.wait(THREAD_TIMEOUT)
    c.close()
    t.join(THREAD_TIMEOUT)
    assert not t.is_alive()
    assert outcome and outcome[0].startswith("closed")
    assert c.closed
    gc.collect()
    assert_balanced(pool)
