"""Spare bodies: a reader's freed decompressed bodies, kept by the pool for the next read."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest
from zstdpool import ContextPool, ipc

from tests.helpers.peers import np
from tests.helpers.pool import check_consistent


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
