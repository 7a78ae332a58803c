"""Writer errors and options: schema mismatches that leave the writer usable, invalid
options, codec names, and closed writers.
"""

from __future__ import annotations

import io

import pyarrow as pa
import pytest
import zstdpool.ipc as zi
from zstdpool.errors import ClosedError, IpcError, ParameterError

from tests.helpers.arrow_data import ScaledType
from tests.helpers.ipc_writer import (
    FORMATS,
    INPUT_TABLE,
    assert_tables_equal,
    new_writer,
    pa_read,
    write_one,
)


def test_schema_mismatch_names_both_schemas_and_leaves_the_writer_usable():
    schema = pa.schema([("x", pa.int64())])
    good = pa.table({"x": [1, 2, 3]})
    # each bad table, and how the error describes its schema
    mismatches = [
        (pa.table({"y": ["a"]}), "y: Utf8"),  # name and type
        (pa.table({"y": [1]}), "y: Int64"),  # name
        (pa.table({"x": ["a"]}), "x: Utf8"),  # type
        (pa.table({"x": [1], "z": [2]}), "x: Int64, z: Int64"),  # column count
        (
            pa.Table.from_pydict({"x": [1]}, pa.schema([pa.field("x", pa.int64(), False)])),
            "x: Int64 not null",  # nullability
        ),
    ]
    for fmt in FORMATS:
        sink = io.BytesIO()
        w = new_writer(fmt, sink, schema)
        with pytest.raises(IpcError):  # before any batch (and before the header)
            w.write(mismatches[0][0])
        assert sink.getvalue() == b"" and w.bytes_written == 0
        w.write(good)
        for bad, described in mismatches:
            with pytest.raises(IpcError) as excinfo:
                w.write(bad)
            message = str(excinfo.value)
            assert "writer: x: Int64\n" in message, message
            assert message.endswith(f"batch:  {described}"), message
            assert not w.closed
        assert w.num_batches == 1
        w.write(good)
        w.close()
        assert_tables_equal(pa_read(fmt, sink.getvalue()), pa.concat_tables([good, good]))


def test_nested_type_mismatch_is_refused():
    schema = pa.schema([("s", pa.struct([("a", pa.int64())]))])
    w = zi.new_stream(io.BytesIO(), schema)
    with pytest.raises(IpcError):
        w.write(pa.table({"s": pa.array([{"b": 1}])}))
    with pytest.raises(IpcError):
        w.write(pa.table({"s": pa.array([{"a": "text"}])}))
    w.close()


def test_metadata_may_differ_and_the_writers_schema_wins():
    schema = pa.schema([pa.field("x", pa.int64(), metadata={"f": "writer"})], metadata={"k": "w"})
    other = pa.table({"x": [1, 2]}).replace_schema_metadata({"k": "batch"})
    for fmt in FORMATS:
        sink = io.BytesIO()
        with new_writer(fmt, sink, schema) as w:
            w.write(other)
        got = pa_read(fmt, sink.getvalue())
        assert got.schema.equals(schema, check_metadata=True)
        assert got["x"].to_pylist() == [1, 2]


EXTENSION_MISMATCHES = {
    "scaled-1000-vs-10": (
        ScaledType(1000),
        pa.ExtensionArray.from_storage(ScaledType(10), pa.array([1, 2])),
    ),
    "uuid-vs-storage": (pa.uuid(), pa.array([b"0123456789abcdef"], pa.binary(16))),
    "storage-vs-uuid": (
        pa.binary(16),
        pa.array([b"0123456789abcdef"], pa.binary(16)).cast(pa.uuid()),
    ),
}


def test_extension_type_mismatch_is_refused():
    accepted = []
    for case, (writer_type, batch_array) in EXTENSION_MISMATCHES.items():
        schema = pa.schema([("e", writer_type)])
        batch = pa.table({"e": batch_array})
        with pytest.raises(pa.ArrowInvalid):  # pyarrow's own writer refuses it
            pa.ipc.new_stream(io.BytesIO(), schema).write(batch)
        with zi.new_stream(io.BytesIO(), schema) as w:
            try:
                w.write(batch)
            except IpcError:
                continue
            accepted.append(case)
    assert not accepted, f"accepted and relabeled: {accepted}"


def test_invalid_options():
    t = INPUT_TABLE
    sink = io.BytesIO()
    for fmt in FORMATS:
        with pytest.raises(ParameterError, match="level"):
            new_writer(fmt, sink, t.schema, level=99)
        with pytest.raises(ParameterError, match="gzip"):
            new_writer(fmt, sink, t.schema, compression="gzip")
        with pytest.raises(ParameterError, match="zstd only"):
            new_writer(fmt, sink, t.schema, compression=None, level=3)
        with pytest.raises(ParameterError, match="zstd only"):
            new_writer(fmt, sink, t.schema, compression="lz4", level=1)
        with pytest.raises(ParameterError, match="threads"):
            new_writer(fmt, sink, t.schema, threads=0)
        with pytest.raises((OverflowError, ValueError)):
            new_writer(fmt, sink, t.schema, threads=-1)
        with pytest.raises(TypeError, match="schema"):
            new_writer(fmt, sink, "not a schema")
        with pytest.raises(ParameterError):
            write_one(fmt, t, level=-(10**6))
        with pytest.raises(ParameterError):
            write_one(fmt, t, compression="snappy")
    assert sink.getvalue() == b""  # nothing reached the sink
    # ParameterError is also a ValueError, as the errors module promises.
    with pytest.raises(ValueError):
        zi.write_stream(t, level=99)
    # Footer metadata belongs to the file format only.
    with pytest.raises(TypeError, match="metadata"):
        zi.new_stream(sink, t.schema, metadata={"k": "v"})
    with pytest.raises(TypeError, match="metadata"):
        zi.write_stream(t, metadata={"k": "v"})


def test_level_error_message_is_python_flavoured():
    with pytest.raises(ParameterError) as excinfo:
        zi.write_stream(INPUT_TABLE, compression="lz4", level=1)
    assert "Some(" not in str(excinfo.value), str(excinfo.value)


def test_codec_names_are_case_insensitive_with_aliases():
    for name, expected in [("ZSTD", "zstd"), ("Lz4", "lz4"), ("lz4_frame", "lz4"), ("none", None)]:
        w = zi.new_stream(io.BytesIO(), INPUT_TABLE.schema, compression=name)
        assert w.compression == expected
        w.close()


def test_closed_writers():
    for fmt in FORMATS:
        sink = io.BytesIO()
        w = new_writer(fmt, sink, INPUT_TABLE.schema)
        w.write(INPUT_TABLE)
        w.close()
        size = len(sink.getvalue())
        w.close()  # idempotent
        w.abort()  # and abort after close changes nothing
        assert len(sink.getvalue()) == size
        with pytest.raises(ClosedError):
            w.write(INPUT_TABLE)
        with pytest.raises(ClosedError):
            w.write_batch(INPUT_TABLE.to_batches()[0])
        with pytest.raises(ClosedError):
            w.write_table(INPUT_TABLE)
        with pytest.raises(ClosedError):
            with w:
                pass
        assert pa_read(fmt, sink.getvalue()).num_rows == INPUT_TABLE.num_rows
        aborted = new_writer(fmt, io.BytesIO(), INPUT_TABLE.schema)
        aborted.abort()
        with pytest.raises(ClosedError):
            aborted.write(INPUT_TABLE)
