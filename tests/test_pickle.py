"""Nothing of zstdpool crosses processes by accident: a pool pickles to the receiving process's
pool with its settings, a dictionary to its content; leases, writers and readers, which hold
what only this process has, refuse with the reason; the exceptions pickle by reference."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys

import pyarrow as pa
import pytest
import zstdpool
import zstdpool.errors
import zstdpool.ipc
import zstdpool.parquet


def test_the_default_pool_is_the_default_pool_where_it_is_unpickled() -> None:
    blob = pickle.dumps(zstdpool.default_pool())
    assert pickle.loads(blob) is zstdpool.default_pool()
    # In another process too.
    code = (
        "import pickle, sys, zstdpool; "
        "assert pickle.loads(sys.stdin.buffer.read()) is zstdpool.default_pool()"
    )
    subprocess.run([sys.executable, "-c", code], input=blob, check=True)


def test_a_private_pool_is_the_receivers_pool_with_its_settings() -> None:
    pool = zstdpool.ContextPool(max_idle_per_key=3, max_idle_bytes=1 << 20, idle_timeout=5.0)
    back = pickle.loads(pickle.dumps(pool))
    assert back is not pool and back is not zstdpool.default_pool()
    settings = (
        "max_idle_per_key",
        "max_idle_bytes",
        "max_scratch_bytes",
        "idle_timeout",
        "max_spare_bytes",
        "spare_timeout",
    )
    assert [getattr(back, s) for s in settings] == [getattr(pool, s) for s in settings]
    # Everything unpickled with the same settings shares one pool there.
    assert pickle.loads(pickle.dumps(pool)) is back
    other = zstdpool.ContextPool(max_idle_per_key=4)
    assert pickle.loads(pickle.dumps(other)) is not back


def test_a_pool_is_shared_not_copied() -> None:
    pool = zstdpool.ContextPool()
    assert copy.copy(pool) is pool and copy.deepcopy(pool) is pool
    assert copy.deepcopy({"pool": pool})["pool"] is pool


def _lease() -> object:
    return zstdpool.compressor()


def _writer() -> object:
    return zstdpool.ipc.new_stream(pa.BufferOutputStream(), pa.schema([("x", pa.int64())]))


def _parquet_writer() -> object:
    return zstdpool.parquet.ParquetWriter(pa.BufferOutputStream(), pa.schema([("x", pa.int64())]))


TABLE = pa.table({"x": [1, 2, 3]})


@pytest.mark.parametrize(
    ("make", "what", "reason"),
    [
        (_lease, "Compressor", "leased from a pool of this process"),
        (zstdpool.decompressor, "Decompressor", "leased from a pool of this process"),
        (_writer, "IPC writer", "open sink"),
        (_parquet_writer, "ParquetWriter", "open sink"),
        (
            lambda: zstdpool.ipc.open_stream(zstdpool.ipc.write_stream(TABLE)),
            "RecordBatchStreamReader",
            "open source",
        ),
        (
            lambda: zstdpool.ipc.open_file(zstdpool.ipc.write_file(TABLE)),
            "RecordBatchFileReader",
            "open source",
        ),
        (
            lambda: zstdpool.parquet.ParquetFile(zstdpool.parquet.write_table(TABLE)),
            "ParquetFile",
            "open source",
        ),
    ],
    ids=["compressor", "decompressor", "ipc-writer", "parquet-writer", "stream", "file", "pq"],
)
def test_what_holds_this_process_refuses_with_the_reason(
    make: object, what: str, reason: str
) -> None:
    obj = make()  # type: ignore[operator]
    try:
        for attempt in (pickle.dumps, copy.copy, copy.deepcopy):
            with pytest.raises(TypeError, match=f"cannot pickle a zstdpool {what}: .*{reason}"):
                attempt(obj)
    finally:
        obj.close()  # type: ignore[attr-defined]


def test_the_exceptions_pickle_by_reference() -> None:
    for name in zstdpool.errors.__all__:
        cls = getattr(zstdpool.errors, name)
        err = cls("a message")
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is cls and str(back) == "a message"
