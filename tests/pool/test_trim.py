"""Freeing what the pool keeps: trim, idle_timeout, clear, and the arguments that set them."""

from __future__ import annotations

import math
import time

import pytest
import zstdpool
from zstdpool import ContextPool

from tests.helpers.pool import check_consistent, compress_keys, text


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
    # Long enough that the first context is still fresh when the second call returns, on a
    # loaded machine or under emulation too (a use of the pool expires what has timed out).
    timeout = 1.0
    pool = ContextPool(idle_timeout=timeout)
    assert pool.idle_timeout == pytest.approx(timeout)
    zstdpool.compress(text(10_000), pool=pool)
    zstdpool.compress(text(10_000), 9, pool=pool)
    before = check_consistent(pool)
    assert before["idle"] == 2
    time.sleep(timeout * 1.5)  # past the timeout; no timing is asserted
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


@pytest.mark.parametrize(
    "kwargs",
    [
        {"idle_timeout": -1},
        {"spare_timeout": 0},
        {"max_idle_bytes": -1},
        {"max_scratch_bytes": -1},
        {"max_idle_per_key": -1},
        {"max_spare_bytes": -1},
    ],
    ids=lambda kw: next(iter(kw)),
)
def test_every_bad_pool_argument_is_a_parameter_error(kwargs):
    # The same kind of bad argument raises the same class, whichever argument it is.
    with pytest.raises(zstdpool.ParameterError, match=next(iter(kwargs))):
        ContextPool(**kwargs)


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
