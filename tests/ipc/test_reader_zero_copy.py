"""Zero copy: uncompressed buffers are read in place from memory, decompressed ones into
one aligned body, and the source stays alive as long as a table uses it.
"""

from __future__ import annotations

import gc
import weakref

import pyarrow as pa
import pyarrow.ipc
import pytest
from zstdpool import ipc

from tests.helpers.ipc_reader import (
    WRITERS,
    make_source,
    sample_batches,
    table_of,
    write,
    write_zstdpool,
)
from tests.helpers.peers import np


def _data_buffers(table: pa.Table):
    for column in table.columns:
        for chunk in column.chunks:
            if chunk.type in (pa.int64(), pa.string()):
                for buf in chunk.buffers()[1:]:
                    if buf is not None and buf.size:
                        yield buf


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "numpy", "pa.Buffer"])
@pytest.mark.parametrize("fmt", ["stream", "file"])
@pytest.mark.parametrize("writer", WRITERS)
def test_uncompressed_bytes_are_read_without_copying(writer, fmt, kind, tmp_path):
    batches = sample_batches()
    data = write(writer, batches, fmt=fmt)
    source = make_source(kind, data, tmp_path)
    base = pa.py_buffer(source).address
    table = ipc.read_stream(source) if fmt == "stream" else ipc.read_file(source)
    assert table.equals(table_of(batches))
    buffers = list(_data_buffers(table))
    assert len(buffers) >= 6
    for buf in buffers:
        assert base <= buf.address and buf.address + buf.size <= base + len(data), (
            "a column buffer is not a view of the source"
        )


def test_compressed_bytes_are_decompressed_into_new_memory():
    batches = sample_batches(sizes=(2000,))
    data = write_zstdpool(batches, compression="zstd")
    base = pa.py_buffer(data).address
    table = ipc.read_stream(data)
    assert table.equals(table_of(batches))
    assert any(not (base <= b.address < base + len(data)) for b in _data_buffers(table))


@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_decompressed_buffers_are_aligned_in_one_body(compression):
    # decimal128 values need 16-byte alignment in arrow-rs, which copies a buffer that lacks
    # it; in a body laid out on 64-byte boundaries no buffer is copied, so every buffer of the
    # batch lies inside one allocation of the body's size.
    n = 1000
    batch = pa.record_batch(
        {
            "i32": pa.array(range(n), pa.int32()),
            "d": pa.array([i * 7 for i in range(n)], pa.decimal128(15, 2)),
            "flag": pa.array([i % 2 == 0 for i in range(n)]),
            "d2": pa.array([i for i in range(n)], pa.decimal128(20, 3)),
            "s": pa.array([f"row {i}" for i in range(n)]),
        }
    )
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_stream(sink, batch.schema, options=options) as w:
        w.write_batch(batch)
    table = ipc.read_stream(sink.getvalue().to_pybytes())
    assert table.equals(pa.Table.from_batches([batch]))
    buffers = [
        buf
        for column in table.columns
        for chunk in column.chunks
        for buf in chunk.buffers()
        if buf is not None and buf.size
    ]
    assert len(buffers) == 6  # no nulls: values, offsets and string data
    for buf in buffers:
        assert buf.address % 64 == 0, "a buffer does not start on a 64-byte boundary"
    start = min(b.address for b in buffers)
    end = max(b.address + b.size for b in buffers)
    assert end - start <= sum(b.size + 63 for b in buffers), "a buffer was copied elsewhere"


def test_source_stays_alive_while_the_table_lives():
    batches = sample_batches()
    source = np.frombuffer(write_zstdpool(batches), dtype=np.uint8).copy()
    alive = weakref.ref(source)
    table = ipc.read_stream(source)
    del source
    gc.collect()
    assert alive() is not None, "the table's buffers must keep the source alive"
    # Scribble over freed memory, if any: the table must still read its own values.
    junk = [bytes([0xAB]) * len(alive()) for _ in range(8)]
    assert table.equals(table_of(batches))
    table.validate(full=True)
    del table, junk
    gc.collect()
    assert alive() is None, "the source must be released with the table"


def test_source_export_is_held_until_the_table_and_reader_are_gone():
    batches = sample_batches()
    source = bytearray(write_zstdpool(batches))
    reader = ipc.open_stream(source)
    with pytest.raises(BufferError):
        source.extend(b"x")  # exported to the reader
    table = reader.read_all()
    reader.close()
    del reader
    gc.collect()
    with pytest.raises(BufferError):
        source.extend(b"x")  # still exported to the table's buffers
    assert table.equals(table_of(batches))
    del table
    gc.collect()
    source.extend(b"x")  # released
