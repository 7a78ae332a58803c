"""The reader's pooled decompression context: leased while reading and returned on close,
errors, collection and exceptions; closed and busy readers.
"""

from __future__ import annotations

import io
import threading

import pyarrow as pa
import pyarrow.ipc
import pytest
import zstdpool
from zstdpool import ipc

from tests.helpers.ipc_reader import frames, leased, patched, write_zstdpool


def test_context_is_leased_while_reading_and_returned_at_the_end(compressed):
    batches, data = compressed
    assert leased() == 0
    reader = ipc.open_stream(data, threads=1)
    next(reader)
    assert leased() == 1
    assert reader.read_all().num_rows == sum(b.num_rows for b in batches[1:])
    assert leased() == 0
    with pytest.raises(StopIteration):
        reader.read_next_batch()
    assert next(reader, None) is None  # exhausted, not closed
    assert not reader.closed
    reader.close()
    assert reader.closed


def test_context_returns_on_close(compressed):
    _, data = compressed
    reader = ipc.open_stream(data)
    next(reader)
    reader.close()
    assert leased() == 0
    reader.close()  # idempotent


def test_context_returns_after_an_error_mid_stream(compressed):
    _, data = compressed
    _, prefix, _ = frames(data)[-1]
    bad = patched(data, prefix, "<q", 1)
    with ipc.open_stream(bad, threads=1) as reader:
        next(reader)
        assert leased() == 1
        with pytest.raises(zstdpool.DecompressionError):
            list(reader)
        assert leased() == 0


def test_context_returns_when_the_with_block_raises(compressed):
    _, data = compressed
    with pytest.raises(KeyError), ipc.open_stream(data) as reader:
        next(reader)
        raise KeyError("boom")
    assert reader.closed
    assert leased() == 0
    file = write_zstdpool(compressed[0], fmt="file", compression="zstd")
    with pytest.raises(KeyError), ipc.open_file(file, threads=1) as f:
        f.get_batch(0)
        assert leased() == 1
        raise KeyError("boom")
    assert f.closed
    assert leased() == 0


def test_context_returns_when_an_unexhausted_reader_is_collected(compressed):
    batches, data = compressed
    reader = ipc.open_stream(data, threads=1)
    next(reader)
    file = write_zstdpool(batches, fmt="file", compression="zstd")
    file_reader = ipc.open_file(file, threads=1)
    file_reader.get_batch(1)
    it = iter(file_reader)
    next(it)
    assert leased() == 2
    del reader, file_reader, it
    assert leased() == 0


def test_file_reader_keeps_its_context_between_batches(compressed):
    batches, _ = compressed
    file = write_zstdpool(batches, fmt="file", compression="zstd")
    with ipc.open_file(file, threads=1) as r:
        r.read_all()
        assert leased() == 1  # kept for the next get_batch
        r.get_batch(0)
        assert leased() == 1
    assert leased() == 0


def test_private_pool(compressed):
    _, data = compressed
    pool = zstdpool.ContextPool()
    with ipc.open_stream(data, pool=pool, threads=1) as r:
        next(r)
        assert pool.stats()["leased"] == 1
        assert zstdpool.pool_stats()["leased"] == 0
    assert pool.stats()["leased"] == 0
    assert (
        ipc.read_file(
            write_zstdpool(compressed[0], fmt="file", compression="zstd"), pool=pool
        ).num_rows
        == 30_000
    )
    assert pool.stats()["leased"] == 0 and pool.stats()["created"] >= 1


def test_use_after_close_raises_closed_error(compressed):
    batches, data = compressed
    reader = ipc.open_stream(data)
    reader.close()
    for use in (
        lambda: next(reader),
        reader.read_next_batch,
        reader.read_all,
        reader.read_pandas,
        reader.__arrow_c_stream__,
        lambda: pa.table(reader),
        reader.__enter__,
    ):
        with pytest.raises(zstdpool.ClosedError, match="closed"):
            use()
    assert reader.schema.equals(batches[0].schema)
    file_reader = ipc.open_file(write_zstdpool(batches, fmt="file"))
    file_reader.close()
    for use in (
        lambda: file_reader.get_batch(0),
        file_reader.read_all,
        lambda: list(file_reader),
        file_reader.__enter__,
    ):
        with pytest.raises(zstdpool.ClosedError):
            use()
    # What the footer says is known from open, like the schema (None: it says nothing).
    assert file_reader.metadata is None
    assert file_reader.schema.equals(batches[0].schema)


class BlockingFile(io.RawIOBase):
    """A seekable file whose reads block, once `block` is set, until `release` is set."""

    def __init__(self, data: bytes) -> None:
        self._b = io.BytesIO(data)
        self.block = False
        self.entered, self.release = threading.Event(), threading.Event()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._b.seek(offset, whence)

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
        if self.block:
            self.entered.set()
            self.release.wait(10)
        chunk = self._b.read(len(b))
        b[: len(chunk)] = chunk
        return len(chunk)


def test_file_metadata_is_readable_while_another_thread_reads(compressed):
    batches, _ = compressed
    source = BlockingFile(write_zstdpool(batches, fmt="file", metadata={"origin": "test"}))
    reader = ipc.open_file(source)
    source.block = True
    worker = threading.Thread(target=reader.read_all)
    worker.start()
    try:
        assert source.entered.wait(10)
        assert reader.metadata == {b"origin": b"test"}
    finally:
        source.release.set()
        worker.join(10)
    reader.close()
    assert reader.metadata == {b"origin": b"test"}


def test_two_threads_iterating_one_file_reader_get_busy_error(compressed):
    batches, _ = compressed
    source = BlockingFile(write_zstdpool(batches, fmt="file"))
    reader = ipc.open_file(source)
    batches_iter = iter(reader)
    source.block = True
    got = []
    worker = threading.Thread(target=lambda: got.append(next(batches_iter)))
    worker.start()
    try:
        assert source.entered.wait(10)
        with pytest.raises(zstdpool.BusyError):
            next(batches_iter)
    finally:
        source.release.set()
        worker.join(10)
    assert got and got[0].equals(batches[0])
    source.block = False
    assert [b.num_rows for b in batches_iter] == [b.num_rows for b in batches[1:]]
    reader.close()


def test_closed_error_is_a_value_error():
    assert issubclass(zstdpool.ClosedError, ValueError)
    for cls in (zstdpool.IpcError, zstdpool.DecompressionError, zstdpool.OutputLimitError):
        assert issubclass(cls, zstdpool.ZstdError) and issubclass(cls, ValueError)


def test_busy_reader_and_close_while_busy(compressed):
    """One reader, two threads: the second gets BusyError; close() from it takes effect when
    the running call ends, and the context comes back."""
    batches, data = compressed
    entered, release = threading.Event(), threading.Event()

    class Blocking(io.RawIOBase):
        def __init__(self):
            self._b = io.BytesIO(data)
            self.block = False

        def readable(self):
            return True

        def readinto(self, b):
            if self.block:
                entered.set()
                release.wait(10)
            chunk = self._b.read(len(b))
            b[: len(chunk)] = chunk
            return len(chunk)

    source = Blocking()
    reader = ipc.open_stream(source)
    next(reader)
    source.block = True
    results = []
    worker = threading.Thread(target=lambda: results.append(reader.read_all()))
    worker.start()
    try:
        assert entered.wait(10)
        with pytest.raises(zstdpool.BusyError):
            next(reader)
        reader.close()
        assert reader.closed
    finally:
        release.set()
        worker.join(10)
    assert results and results[0].num_rows == sum(b.num_rows for b in batches[1:])
    with pytest.raises(zstdpool.ClosedError):
        next(reader)
    assert leased() == 0
