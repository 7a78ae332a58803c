"""Helpers shared by the IPC writer tests (tests/ipc/test_writer_*.py): writing through
zstdpool, reading back through pyarrow, comparing tables, and sinks that fail on purpose.
"""

from __future__ import annotations

import functools
import pathlib

import pyarrow as pa
import zstdpool
import zstdpool.ipc as zi
from hypothesis import HealthCheck, settings

from tests.helpers.arrow_data import SLICE_PANICS, typed_table
from tests.helpers.peers import np

FORMATS = ("stream", "file")
CODECS = ("zstd", "lz4", None)
# (compression, level) pairs: the default level, explicit levels, a negative (fast) level.
CODEC_LEVELS = [
    ("zstd", None),
    ("zstd", 1),
    ("zstd", 3),
    ("zstd", 9),
    ("zstd", -1),
    ("lz4", None),
    (None, None),
]
TEMP_GLOB = "*.zstdpool-*.tmp"
THREAD_TIMEOUT = 120  # seconds; only a deadlock guard, never a performance assertion

quick = settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def write_one(fmt: str, data, sink=None, **kwargs):
    """write_stream or write_file."""
    fn = zi.write_stream if fmt == "stream" else zi.write_file
    return fn(data, sink, **kwargs)


def new_writer(fmt: str, sink, schema: pa.Schema, **kwargs) -> zi.IpcWriter:
    """new_stream or new_file."""
    fn = zi.new_stream if fmt == "stream" else zi.new_file
    return fn(sink, schema, **kwargs)


def pa_reader(fmt: str, source):
    return pa.ipc.open_stream(source) if fmt == "stream" else pa.ipc.open_file(source)


def pa_read(fmt: str, source) -> pa.Table:
    """What pyarrow's own reader makes of `source`."""
    return pa_reader(fmt, source).read_all()


def pa_batches(fmt: str, source) -> list[pa.RecordBatch]:
    """Every record batch of `source`, in order, as pyarrow reads them."""
    if fmt == "stream":
        return list(pa.ipc.open_stream(source))
    reader = pa.ipc.open_file(source)
    return [reader.get_batch(i) for i in range(reader.num_record_batches)]


def assert_tables_equal(got: pa.Table, expected: pa.Table, *, check_metadata: bool = True):
    """Table.equals, with a message that names the first column that differs."""
    if got.equals(expected, check_metadata=check_metadata):
        return
    assert got.schema.equals(expected.schema, check_metadata=check_metadata), (
        f"schemas differ:\n{got.schema}\n-- expected --\n{expected.schema}"
    )
    assert got.num_rows == expected.num_rows, (got.num_rows, expected.num_rows)
    for name in expected.column_names:
        assert got[name].equals(expected[name]), (
            f"column {name!r} differs:\n{got[name]}\n-- expected --\n{expected[name]}"
        )
    raise AssertionError("tables differ")


def leftovers(directory: pathlib.Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def leased() -> int:
    return zstdpool.pool_stats()["leased"]


@functools.cache
def sliceable_table(n: int, seed: int) -> pa.Table:
    """typed_table without the columns arrow-rs cannot import once sliced (SLICE_PANICS)."""
    return typed_table(n, seed=seed).drop_columns(sorted(SLICE_PANICS))


def small_table(n: int = 100, offset: int = 0) -> pa.Table:
    """A few ordinary columns, for tests about plumbing rather than types."""
    idx = np.arange(offset, offset + n)
    return pa.table(
        {
            "i": pa.array(idx, pa.int64()),
            "s": pa.array([f"row {i}" if i % 7 else None for i in idx]),
            "l": pa.array([[int(i)] * int(i % 3) for i in idx], pa.list_(pa.int32())),
        }
    )


INPUT_TABLE = small_table(50)


def failing_reader(schema, batches, exc):
    def gen():
        yield from batches
        raise exc

    return pa.RecordBatchReader.from_batches(schema, gen())
