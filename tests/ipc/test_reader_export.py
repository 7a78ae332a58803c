"""Readers as Arrow C stream sources (__arrow_c_stream__): to pyarrow and polars."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.ipc
import pytest
import zstdpool
from zstdpool import ipc

from tests.helpers.ipc_reader import frames, leased, table_of, zstd_block_header


def test_arrow_c_stream_to_pyarrow_table(compressed):
    batches, data = compressed
    reader = ipc.open_stream(data)
    table = pa.table(reader)
    assert table.equals(table_of(batches))
    assert reader.closed  # consumed by the export
    with pytest.raises(zstdpool.ClosedError):
        next(reader)
    assert leased() == 0


def test_arrow_c_stream_exports_the_remaining_batches(compressed):
    batches, data = compressed
    reader = ipc.open_stream(data, threads=1)
    assert next(reader).equals(batches[0])
    exported = pa.RecordBatchReader.from_stream(reader)
    assert exported.schema.equals(batches[0].schema)
    assert exported.read_next_batch().equals(batches[1])
    assert leased() == 1
    assert exported.read_all().equals(table_of(batches[2:]))
    assert leased() == 0


def test_arrow_c_stream_dropped_unread(compressed):
    _, data = compressed
    reader = ipc.open_stream(data)
    next(reader)
    exported = pa.RecordBatchReader.from_stream(reader)
    del exported, reader
    assert leased() == 0


def test_arrow_c_stream_error_mid_stream(compressed):
    _, data = compressed
    bad = bytearray(data)
    bad[zstd_block_header(data, frames(data)[-1][2])] |= 0b110
    exported = pa.RecordBatchReader.from_stream(ipc.open_stream(bytes(bad)))
    exported.read_next_batch()
    with pytest.raises(pa.ArrowException, match="corrupt"):
        exported.read_all()
    del exported
    assert leased() == 0


def test_polars(compressed):
    pl = pytest.importorskip("polars")
    batches, data = compressed
    expected = pl.from_arrow(table_of(batches))
    assert pl.from_arrow(ipc.read_stream(data)).equals(expected)
    assert pl.from_arrow(pa.table(ipc.open_stream(data))).equals(expected)
    # polars takes the Arrow PyCapsule stream directly.
    assert pl.DataFrame(ipc.open_stream(data)).equals(expected)
    assert leased() == 0
