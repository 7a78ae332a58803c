"""Readers and threads: threads= gives equal tables and refuses what one thread refuses;
many threads read shared bytes at once.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.ipc
import pytest
import zstdpool
from zstdpool import ipc

from tests.helpers.ipc_reader import (
    compressible_table,
    leased,
    table_of,
    write_pyarrow,
    write_zstdpool,
)
from tests.helpers.peers import np


def test_threads_give_equal_tables():
    table = compressible_table(1_500_000)
    data = ipc.write_stream(table, compression="zstd")
    one = ipc.read_stream(data, threads=1)
    two = ipc.read_stream(data, threads=2)
    assert one.equals(two)
    assert one.equals(table)
    file = ipc.write_file(table, compression="zstd")
    assert ipc.read_file(file, threads=2).equals(ipc.read_file(file, threads=1))


def _large_batch_with(bad: str) -> pa.RecordBatch:
    """A batch of 2 MiB of valid columns and one string column that is invalid as `bad` says
    (pyarrow writes it without validating)."""
    n = 200_000
    rng = np.random.default_rng(3)
    offsets = np.arange(n + 1, dtype=np.int32) * 4
    data = bytearray(rng.integers(97, 123, 4 * n, dtype=np.uint8).tobytes())
    if bad == "utf8":
        data[4 * (n // 2)] = 0xFF
    elif bad == "offsets":
        offsets[n // 2] = offsets[n // 2 + 1] + 1  # decreasing in the middle
    strings = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(bytes(data)))
    return pa.record_batch(
        {
            "i": pa.array(np.arange(n, dtype=np.int64)),
            "f": pa.array(rng.random(n)),
            "s": strings,
        }
    )


@pytest.mark.parametrize("bad", ["utf8", "offsets"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("fmt", ["stream", "file"])
def test_invalid_values_in_a_large_batch_are_refused_whatever_the_threads(bad, threads, fmt):
    # Batches are decoded unvalidated and then validated column by column, a large one on
    # several threads: one thread or two, they must refuse what a full validation refuses.
    batch = _large_batch_with(bad)
    assert batch.nbytes > 2 << 20
    data = write_pyarrow([batch], fmt=fmt, compression="zstd")
    read = ipc.read_stream if fmt == "stream" else ipc.read_file
    with pytest.raises(zstdpool.IpcError, match="(?i)utf-8|utf8|offset") as raised:
        read(data, threads=threads)
    assert "column 2 ('s')" in str(raised.value)
    assert "Invalid argument error" not in str(raised.value)
    assert leased() == 0
    good = _large_batch_with("none")
    assert read(write_pyarrow([good], fmt=fmt, compression="zstd"), threads=threads).equals(
        pa.Table.from_batches([good])
    )


def test_sixteen_threads_read_shared_bytes():
    batches = compressible_table(60_000).to_batches(max_chunksize=20_000)
    stream = write_zstdpool(batches, compression="zstd")
    file = write_zstdpool(batches, fmt="file", compression="lz4")
    expected = table_of(batches)
    barrier = threading.Barrier(16)

    def read(i):
        barrier.wait(30)
        if i % 2:
            with ipc.open_file(file, threads=1 + i % 3) as r:
                return pa.Table.from_batches([r.get_batch(j) for j in range(len(r))])
        with ipc.open_stream(stream, threads=1 + i % 3) as r:
            return pa.Table.from_batches(list(r), schema=r.schema)

    with ThreadPoolExecutor(16) as pool:
        tables = list(pool.map(read, range(16)))
    assert all(t.equals(expected) for t in tables)
    assert leased() == 0
