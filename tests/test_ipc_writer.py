"""The IPC writers (new_stream, new_file, write_stream, write_file), checked against pyarrow.

Everything zstdpool writes here is read back by pyarrow's own readers (stream, file and
memory-mapped file) and compared with the input, for every Arrow type pyarrow writes to IPC,
every codec and several levels, every kind of input and sink. The conftest fixture checks that
every pooled context comes back after each test.
"""

from __future__ import annotations

import functools
import gc
import io
import pathlib
import socket
import struct
import threading

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import zstdpool
import zstdpool.ipc as zi
from _arrow_data import (
    SLICE_PANICS,
    ScaledType,
    chunked,
    compressible_table,
    null_arrays,
    random_bytes_table,
    type_names,
    typed_arrays,
    typed_table,
)
from arro3 import core as arro3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zstdpool.errors import ClosedError, IpcError, ParameterError

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
few = settings(quick, max_examples=10)


# --------------------------------------------------------------------------------------
# Helpers


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


def record_batch_bodies(out: bytes, fmt: str) -> list[bytes]:
    """The body of every record batch message in `out`, read with pyarrow's message reader."""
    stream = pa.BufferReader(out[8:] if fmt == "file" else out)  # a file starts ARROW1\0\0
    bodies = []
    while True:
        try:
            message = pa.ipc.read_message(stream)
        except EOFError:
            return bodies
        if message.type == "record batch":
            bodies.append(message.body.to_pybytes())


def leftovers(directory: pathlib.Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def leased() -> int:
    return zstdpool.pool_stats()["leased"]


@functools.cache
def arrays_by_name(n: int, seed: int) -> dict[str, pa.Array]:
    return dict(typed_arrays(n, seed=seed))


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


class Boom(Exception):
    """What the failing sinks raise."""


class FailingSink:
    """A binary sink whose write() raises on call number `fail_on` (1-based)."""

    def __init__(self, fail_on: int):
        self.fail_on = fail_on
        self.calls = 0
        self.data = bytearray()
        self.raised: Boom | None = None

    def write(self, b) -> int:
        self.calls += 1
        if self.calls >= self.fail_on:
            self.raised = Boom(f"disk on fire at write {self.calls}")
            raise self.raised
        self.data += b
        return len(b)


class PartialRaw(io.RawIOBase):
    """A raw sink that takes at most `limit(len(b))` bytes per call and says so."""

    def __init__(self, limit):
        self.limit = limit
        self.data = bytearray()
        self.calls = 0

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        self.calls += 1
        n = max(1, min(len(b), self.limit(len(b))))
        self.data += bytes(b[:n])
        return n


class StreamOnly:
    """Exposes a table only through __arrow_c_stream__."""

    def __init__(self, obj):
        self._obj = obj

    def __arrow_c_stream__(self, requested_schema=None):
        return self._obj.__arrow_c_stream__(requested_schema)


class ArrayOnly:
    """Exposes a record batch only through __arrow_c_array__."""

    def __init__(self, obj):
        self._obj = obj

    def __arrow_c_array__(self, requested_schema=None):
        return self._obj.__arrow_c_array__(requested_schema)


# --------------------------------------------------------------------------------------
# Every Arrow type round-trips through pyarrow's readers


def test_every_type_round_trips_through_pyarrow(subtests):
    for name, array in arrays_by_name(40, 7).items():
        table = pa.table({name: array})
        for fmt in FORMATS:
            for codec in CODECS:
                with subtests.test(type=name, fmt=fmt, codec=codec):
                    out = write_one(fmt, table, compression=codec)
                    assert isinstance(out, bytes)
                    got = pa_read(fmt, out)
                    assert got.schema.field(name).type == array.type
                    assert_tables_equal(got, table)


def test_wide_table_round_trips_with_metadata(subtests):
    table = typed_table(120, seed=11)
    ordinal = str(type_names().index("uuid")).encode()
    for fmt in FORMATS:
        for codec in CODECS:
            with subtests.test(fmt=fmt, codec=codec):
                got = pa_read(fmt, write_one(fmt, table, compression=codec))
                assert_tables_equal(got, table)
                assert got.schema.metadata == {b"source": b"zstdpool tests"}
                assert got.schema.field("uuid").metadata == {
                    b"column": b"uuid",
                    b"ordinal": ordinal,
                }


def test_memory_mapped_reads(tmp_path, subtests):
    table = typed_table(60, seed=5)
    for fmt in FORMATS:
        for codec in CODECS:
            with subtests.test(fmt=fmt, codec=codec):
                path = tmp_path / f"wide-{codec}.{fmt}"
                assert write_one(fmt, table, path, compression=codec) is None
                with pa.memory_map(str(path)) as source:
                    assert_tables_equal(pa_read(fmt, source), table)


def test_extension_types_come_back_as_their_classes():
    table = pa.table(
        {
            "uuid": arrays_by_name(20, 3)["uuid"],
            "scaled": pa.ExtensionArray.from_storage(ScaledType(250), pa.array(range(20))),
        }
    )
    for fmt in FORMATS:
        got = pa_read(fmt, write_one(fmt, table))
        assert got.schema.field("uuid").type == pa.uuid()
        scaled = got.schema.field("scaled").type
        assert isinstance(scaled, ScaledType) and scaled.scale == 250
        assert_tables_equal(got, table)


def test_nested_field_metadata_and_dictionary_order_survive():
    child = pa.field("x", pa.int32(), metadata={"unit": "m"})
    item = pa.field("item", pa.string(), metadata={"lang": "fr"})
    schema = pa.schema(
        [
            pa.field("s", pa.struct([child]), metadata={"outer": "1"}),
            pa.field("l", pa.list_(item)),
            pa.field("d", pa.dictionary(pa.int8(), pa.string(), ordered=True)),
            pa.field("req", pa.int64(), nullable=False),
        ],
        metadata={"b": "2", "a": "1"},
    )
    table = pa.Table.from_pydict(
        {
            "s": [{"x": 1}, None, {"x": None}],
            "l": [["un"], None, []],
            "d": pa.DictionaryArray.from_arrays(
                pa.array([1, None, 0], pa.int8()), ["lo", "hi"], ordered=True
            ),
            "req": [1, 2, 3],
        },
        schema=schema,
    )
    for fmt in FORMATS:
        got = pa_read(fmt, write_one(fmt, table))
        assert got.schema.equals(schema, check_metadata=True)
        assert got.schema.field("s").type.field("x").metadata == {b"unit": b"m"}
        assert got.schema.field("l").type.value_field.metadata == {b"lang": b"fr"}
        assert got.schema.field("d").type.ordered
        assert not got.schema.field("req").nullable
        assert_tables_equal(got, table)


def test_nulls_everywhere(subtests):
    all_null = pa.table(dict(null_arrays(9)))
    # and nulls sprinkled in every column of every type
    sprinkled = typed_table(50, seed=4)
    assert all(sprinkled[k].null_count > 0 for k in ("int8", "struct", "list", "map", "uuid"))
    for fmt in FORMATS:
        for codec in CODECS:
            with subtests.test(fmt=fmt, codec=codec):
                for table in (all_null, sprinkled):
                    got = pa_read(fmt, write_one(fmt, table, compression=codec))
                    assert_tables_equal(got, table)


@pytest.mark.parametrize("fmt", FORMATS)
def test_empty_tables_and_zero_row_batches(fmt):
    empty = typed_table(0)
    # A table without batches: only the schema (and the footer) are written.
    no_batches = pa.Table.from_batches([], schema=empty.schema)
    out = write_one(fmt, no_batches)
    assert pa_batches(fmt, out) == []
    got = pa_read(fmt, out)
    assert got.num_rows == 0 and got.schema.equals(empty.schema, check_metadata=True)

    # Zero-row batches of every type, between real ones, are written and read as such. The
    # file format keeps one dictionary per field, so there they are slices of the full batch.
    if fmt == "stream":
        zero = pa.RecordBatch.from_arrays(
            [c.combine_chunks() for c in empty.columns], schema=empty.schema
        )
        full = typed_table(10, seed=9).combine_chunks().to_batches()[0]
        batches = [zero, full, zero]
    else:
        full = sliceable_table(10, 9).combine_chunks().to_batches()[0]
        batches = [full.slice(0, 0), full, full.slice(10, 0)]
    sink = io.BytesIO()
    with new_writer(fmt, sink, full.schema) as w:
        for batch in batches:
            w.write(batch)
        assert w.num_batches == 3
    got = pa_batches(fmt, sink.getvalue())
    assert [b.num_rows for b in got] == [0, 10, 0]
    for g, e in zip(got, batches, strict=True):
        assert g.equals(e)


@quick
@given(
    offset=st.integers(0, 80),
    length=st.integers(0, 80),
    fmt=st.sampled_from(FORMATS),
    codec=st.sampled_from(CODECS),
)
def test_sliced_tables_round_trip(offset, length, fmt, codec):
    """Arrays with non-zero offsets (every buffer starts mid-way) are written as their slice."""
    table = sliceable_table(80, 21)
    sliced = table.slice(offset, length)
    got = pa_read(fmt, write_one(fmt, sliced, compression=codec))
    assert_tables_equal(got, sliced)


def test_sliced_record_batch_round_trips():
    batch = sliceable_table(80, 21).combine_chunks().to_batches()[0].slice(3, 50)
    for fmt in FORMATS:
        got = pa_read(fmt, write_one(fmt, batch))
        assert_tables_equal(got, pa.Table.from_batches([batch]))


@few
@given(chunk_rows=st.integers(1, 40), fmt=st.sampled_from(FORMATS))
def test_many_chunks_become_as_many_batches(chunk_rows, fmt):
    table = chunked(sliceable_table(80, 22), chunk_rows)
    expected = table.to_batches()
    assert len(expected) == -(-80 // chunk_rows)
    got = pa_batches(fmt, write_one(fmt, table))
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.equals(e)


@pytest.mark.parametrize("fmt", FORMATS)
def test_table_of_independent_chunks(fmt):
    """Chunks built separately (their own dictionaries): a stream replaces dictionaries; a file
    needs them unified first."""
    table = pa.concat_tables(
        [typed_table(n, seed=i) for i, n in enumerate([5, 0, 17, 1, 30, 8, 3, 12])]
    )
    assert table["int8"].num_chunks == 8
    if fmt == "file":
        with pytest.raises(IpcError, match="cannot replace a dictionary"):
            write_one(fmt, table)
        table = table.unify_dictionaries()
    assert_tables_equal(pa_read(fmt, write_one(fmt, table)), table)


# Known bug (arrow-rs, apache/arrow-rs#9235): a struct directly inside a struct, fixed-size list
# or sparse union cannot be imported through the C data interface once sliced.
SLICED_STRUCT_SHAPES = {
    "struct_of_struct": pa.array([{"a": {"b": i}} if i % 4 else None for i in range(10)]),
    "fixed_size_list_of_struct": pa.array(
        [[{"a": i}, {"a": -i}] for i in range(10)], pa.list_(pa.struct([("a", pa.int32())]), 2)
    ),
    "sparse_union_of_struct": pa.UnionArray.from_sparse(
        pa.array([0, 1] * 5, pa.int8()),
        [pa.array([{"a": i} for i in range(10)]), pa.array(range(10))],
    ),
}


def test_sliced_struct_in_struct_is_written_or_refused_cleanly():
    """arrow-rs's C data import panics on these slices (apache/arrow-rs#9235). Until it is
    fixed upstream they must be refused with an IpcError that says how to write them, never a
    PanicException; once fixed, they must round-trip."""
    failures = {}
    for shape, array in SLICED_STRUCT_SHAPES.items():
        # Unsliced, every shape is fine.
        unsliced = pa.table({"c": array})
        assert_tables_equal(pa_read("stream", zi.write_stream(unsliced)), unsliced)
        table = unsliced.slice(1, 5)
        try:
            assert_tables_equal(pa_read("stream", zi.write_stream(table)), table)
        except IpcError as e:
            assert "apache/arrow-rs#9235" in str(e)
            # The workaround the message gives works.
            copy = table.take(list(range(table.num_rows)))
            assert_tables_equal(pa_read("stream", zi.write_stream(copy)), table)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # pyo3's PanicException derives from BaseException
            failures[shape] = f"{type(e).__name__}: {e}"
    assert not failures, failures


# --------------------------------------------------------------------------------------
# Dictionaries that change between batches


def dict_batch(schema: pa.Schema, indices: list, values: list) -> pa.RecordBatch:
    array = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(values))
    return pa.record_batch([array], schema=schema)


DICT_SCHEMA = pa.schema([("d", pa.dictionary(pa.int32(), pa.string()))])


def test_stream_replaces_a_changed_dictionary():
    batches = [
        dict_batch(DICT_SCHEMA, [0, 1, 0], ["a", "b"]),
        dict_batch(DICT_SCHEMA, [1, 1, None], ["c", "d"]),
        dict_batch(DICT_SCHEMA, [0, 1], ["a", "b"]),
    ]
    sink = io.BytesIO()
    with zi.new_stream(sink, DICT_SCHEMA) as w:
        for b in batches:
            w.write(b)
    reader = pa.ipc.open_stream(sink.getvalue())
    got = list(reader)
    assert len(got) == 3
    for g, e in zip(got, batches, strict=True):
        assert g.equals(e)
    assert reader.stats.num_replaced_dictionaries == 2
    assert reader.stats.num_dictionary_deltas == 0


@pytest.mark.parametrize("fmt", FORMATS)
def test_growing_dictionary_is_sent_as_deltas(fmt):
    batches = [
        dict_batch(DICT_SCHEMA, [0, 1, 0], ["a", "b"]),
        dict_batch(DICT_SCHEMA, [2, 0, None], ["a", "b", "c"]),
        dict_batch(DICT_SCHEMA, [3, 2, 1], ["a", "b", "c", "d"]),
        dict_batch(DICT_SCHEMA, [3], ["a", "b", "c", "d"]),  # unchanged: nothing sent
    ]
    sink = io.BytesIO()
    with new_writer(fmt, sink, DICT_SCHEMA, dictionary_deltas=True) as w:
        for b in batches:
            w.write(b)
    out = sink.getvalue()
    got = pa_batches(fmt, out)
    assert [g.column(0).to_pylist() for g in got] == [b.column(0).to_pylist() for b in batches]
    reader = pa_reader(fmt, out)
    if fmt == "stream":
        list(reader)
    else:
        reader.read_all()
    assert reader.stats.num_dictionary_deltas == 2
    assert reader.stats.num_replaced_dictionaries == 0


def test_growing_dictionary_without_deltas_is_resent_whole():
    batches = [
        dict_batch(DICT_SCHEMA, [0, 1], ["a", "b"]),
        dict_batch(DICT_SCHEMA, [2, 0], ["a", "b", "c"]),
    ]
    out = zi.write_stream(pa.Table.from_batches(batches))
    reader = pa.ipc.open_stream(out)
    assert [b.column(0).to_pylist() for b in reader] == [["a", "b"], ["c", "a"]]
    assert reader.stats.num_dictionary_deltas == 0
    assert reader.stats.num_replaced_dictionaries == 1


@pytest.mark.parametrize("deltas", [False, True])
def test_file_refuses_to_replace_a_dictionary(deltas):
    first = dict_batch(DICT_SCHEMA, [0, 1, 0], ["a", "b"])
    same_values = dict_batch(DICT_SCHEMA, [1, 0], ["a", "b"])  # equal, separately built
    changed = dict_batch(DICT_SCHEMA, [0], ["z", "a"])
    sink = io.BytesIO()
    w = zi.new_file(sink, DICT_SCHEMA, dictionary_deltas=deltas)
    w.write(first)
    w.write(same_values)
    with pytest.raises(IpcError, match="file format cannot replace a dictionary"):
        w.write(changed)
    assert not w.closed
    # The writer refuses anything more, even a batch that would fit...
    with pytest.raises(IpcError, match="cannot continue after an earlier error"):
        w.write(first)
    assert w.num_batches == 2
    # ...but close() still gives a valid file of the batches before the error.
    w.close()
    got = pa_batches("file", sink.getvalue())
    assert len(got) == 2
    assert got[0].equals(first) and got[1].equals(same_values)


def test_file_refuses_a_changed_dictionary_in_one_call(tmp_path):
    table = pa.Table.from_batches(
        [dict_batch(DICT_SCHEMA, [0], ["a"]), dict_batch(DICT_SCHEMA, [0], ["b"])]
    )
    path = tmp_path / "dict.arrow"
    with pytest.raises(IpcError, match="cannot replace a dictionary"):
        zi.write_file(table, path)
    assert leftovers(tmp_path) == []
    # The stream format has no such limit.
    assert_tables_equal(pa_read("stream", zi.write_stream(table)), table)


# --------------------------------------------------------------------------------------
# Compression: codecs, levels, what the body buffers hold


def test_codecs_and_levels(subtests):
    table = compressible_table()
    for fmt in FORMATS:
        plain = write_one(fmt, table, compression=None)
        for codec, level in CODEC_LEVELS:
            with subtests.test(fmt=fmt, codec=codec, level=level):
                out = write_one(fmt, table, compression=codec, level=level)
                assert_tables_equal(pa_read(fmt, out), table)
                if codec is None:
                    assert out == plain
                else:
                    assert len(out) * 4 < len(plain), (len(out), len(plain))


@pytest.mark.parametrize("fmt", FORMATS)
def test_body_buffers_are_compressed_frames(fmt):
    values = np.arange(8192, dtype=np.int64) // 1000  # 64 KiB that compress very well
    table = pa.table({"v": values})
    magic = {"zstd": b"\x28\xb5\x2f\xfd", "lz4": b"\x04\x22\x4d\x18"}
    for codec in CODECS:
        (body,) = record_batch_bodies(write_one(fmt, table, compression=codec), fmt)
        if codec is None:
            assert body[: values.nbytes] == values.tobytes()
            continue
        # The validity buffer is empty (no nulls); the values buffer is an 8-byte
        # uncompressed length, then one frame.
        (size,) = struct.unpack_from("<q", body)
        assert size == values.nbytes, codec
        assert body[8:12] == magic[codec]
        assert len(body) < values.nbytes // 10, codec


@pytest.mark.parametrize("fmt", FORMATS)
def test_incompressible_buffers_are_stored_raw(fmt):
    table = random_bytes_table(64 * 1024)
    raw = table["noise"].chunk(0).buffers()[1].to_pybytes()
    for codec in CODECS:
        out = write_one(fmt, table, compression=codec)
        (body,) = record_batch_bodies(out, fmt)
        if codec is None:
            assert body[: len(raw)] == raw
        else:
            (prefix,) = struct.unpack_from("<q", body)
            assert prefix == -1, codec  # stored uncompressed inside a compressed body
            assert body[8 : 8 + len(raw)] == raw
        assert_tables_equal(pa_read(fmt, out), table)


@quick
@given(
    values=st.lists(
        st.one_of(
            st.none(),
            st.binary(max_size=300),
            st.builds(lambda b, k: b * k, st.binary(min_size=1, max_size=8), st.integers(1, 200)),
        ),
        max_size=60,
    ),
    level=st.sampled_from([-5, -1, 1, 3, 6]),
    fmt=st.sampled_from(FORMATS),
)
def test_any_binary_data_round_trips(values, level, fmt):
    table = pa.table({"b": pa.array(values, pa.binary()), "n": pa.array(range(len(values)))})
    out = write_one(fmt, table, level=level)
    assert_tables_equal(pa_read(fmt, out), table)


# --------------------------------------------------------------------------------------
# Inputs


INPUT_TABLE = small_table(50)


def make_input(kind: str):
    """`INPUT_TABLE` as `kind` of input, and the pyarrow table it should come back as."""
    t = INPUT_TABLE
    if kind == "table":
        return t, t
    if kind == "record_batch":
        return t.combine_chunks().to_batches()[0], t
    if kind == "reader":
        return pa.RecordBatchReader.from_stream(t), t
    if kind == "generator_reader":
        batches = t.to_batches(max_chunksize=7)
        return pa.RecordBatchReader.from_batches(t.schema, (b for b in batches)), t
    if kind == "c_stream_only":
        return StreamOnly(t), t
    if kind == "c_array_only":
        return ArrayOnly(t.combine_chunks().to_batches()[0]), t
    if kind == "arro3_table":
        return arro3.Table.from_arrow(t), t
    if kind == "arro3_batch":
        return arro3.RecordBatch.from_arrow(t.combine_chunks().to_batches()[0]), t
    raise AssertionError(kind)


INPUT_KINDS = [
    "table",
    "record_batch",
    "reader",
    "generator_reader",
    "c_stream_only",
    "c_array_only",
    "arro3_table",
    "arro3_batch",
]


def test_every_input_kind_one_shot(subtests):
    for kind in INPUT_KINDS:
        for fmt in FORMATS:
            with subtests.test(kind=kind, fmt=fmt):
                data, expected = make_input(kind)
                assert_tables_equal(pa_read(fmt, write_one(fmt, data)), expected)


def test_every_input_kind_through_a_writer(subtests):
    for kind in INPUT_KINDS:
        for method in ("write", "write_batch", "write_table"):
            for fmt in FORMATS:
                with subtests.test(kind=kind, method=method, fmt=fmt):
                    sink = io.BytesIO()
                    with new_writer(fmt, sink, INPUT_TABLE.schema) as w:
                        data, expected = make_input(kind)
                        getattr(w, method)(data)
                        data, _ = make_input(kind)  # readers are consumed: make another
                        getattr(w, method)(data)
                    got = pa_read(fmt, sink.getvalue())
                    assert_tables_equal(got, pa.concat_tables([expected] * 2))


def test_pandas_dataframe_keeps_its_index():
    df = pd.DataFrame(
        {
            "x": [1, 2, 3, 4],
            "f": [0.5, None, 2.5, 3.0],
            "s": ["a", "b", None, "d"],
            "cat": pd.Categorical(["u", "v", "u", "w"]),
            "when": pd.date_range("2024-01-01", periods=4, freq="h", tz="Europe/Paris"),
        },
        index=pd.Index([10, 20, 30, 40], name="idx"),
    )
    for fmt in FORMATS:
        got = pa_read(fmt, write_one(fmt, df))
        assert b"pandas" in got.schema.metadata
        pd.testing.assert_frame_equal(got.to_pandas(), df)
        # through a writer too, with the schema pyarrow derives
        sink = io.BytesIO()
        with new_writer(fmt, sink, pa.Schema.from_pandas(df)) as w:
            w.write(df)
            w.write(df)
        pd.testing.assert_frame_equal(
            pa_read(fmt, sink.getvalue()).to_pandas(), pd.concat([df, df])
        )


def test_pandas_range_index_round_trips():
    df = pd.DataFrame({"a": range(5)}, index=pd.RangeIndex(3, 13, 2, name="r"))
    got = pa_read("stream", zi.write_stream(df)).to_pandas()
    pd.testing.assert_frame_equal(got, df)


def test_polars_dataframe():
    import datetime as dt

    df = pl.DataFrame(
        {
            "i": [1, None, 3],
            "s": ["a", None, "c"],
            "l": [[1, 2], None, []],
            "st": [{"x": 1, "y": "q"}, None, {"x": 3, "y": None}],
            "cat": pl.Series(["u", "v", "u"], dtype=pl.Categorical),
            "ts": pl.Series(
                [dt.datetime(2020, 1, 1), None, dt.datetime(2021, 5, 6)]
            ).dt.replace_time_zone("UTC"),
            "d": [dt.date(2020, 1, 1), None, dt.date(1900, 2, 3)],
            "bin": [b"x", None, b"\x00\xff"],
        }
    )
    for fmt in FORMATS:
        got = pa_read(fmt, write_one(fmt, df))
        back = pl.from_arrow(got)
        assert back.schema == df.schema
        assert back.equals(df)


def test_unsupported_objects_raise_type_error():
    bad_objects = [1, "abc", [1, 2], {"a": [1]}, None, b"bytes", object()]
    for bad in bad_objects:
        with pytest.raises(TypeError, match="cannot write"):
            zi.write_stream(bad)
        with pytest.raises(TypeError, match="cannot write"):
            zi.write_file(bad)
    sink = io.BytesIO()
    with zi.new_stream(sink, INPUT_TABLE.schema) as w:
        for bad in bad_objects:
            with pytest.raises(TypeError, match="cannot write"):
                w.write(bad)
        w.write(INPUT_TABLE)  # still usable
    assert_tables_equal(pa_read("stream", sink.getvalue()), INPUT_TABLE)


def test_array_only_object_must_hold_a_record_batch():
    with pytest.raises(TypeError):
        zi.write_stream(ArrayOnly(pa.array([1, 2, 3])))


class BrokenExport:
    """Claims the stream interface; its export raises or returns the wrong capsule."""

    def __init__(self, result):
        self._result = result

    def __arrow_c_stream__(self, requested_schema=None):
        if isinstance(self._result, BaseException):
            raise self._result
        return self._result


class BrokenArrayExport:
    """Claims the array interface; its export raises."""

    def __arrow_c_array__(self, requested_schema=None):
        raise ValueError("array export failed in the producer")


class RaisingLookup:
    """Attribute lookup fails with an error other than AttributeError."""

    def __getattr__(self, name):
        raise RuntimeError(f"lookup of {name} failed")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_failed_export_says_why_and_writes_nothing(fmt, tmp_path):
    schema_capsule = pa.schema([("a", pa.int32())]).__arrow_c_schema__()
    cases = [
        (BrokenExport(ValueError("export failed in the producer")), ValueError, "in the producer"),
        (BrokenExport(schema_capsule), ValueError, "arrow_array_stream"),
        (BrokenExport(42), TypeError, "PyCapsule"),
    ]
    for obj, cause_type, cause_text in cases:
        path = tmp_path / f"out.{fmt}"
        with pytest.raises(TypeError, match="cannot write 'BrokenExport'") as info:
            write_one(fmt, obj, path)
        assert isinstance(info.value.__cause__, cause_type), info.value.__cause__
        assert cause_text in str(info.value.__cause__)
        assert list(tmp_path.iterdir()) == []
    # Streams of something other than record batches cannot be written either.
    for obj in (pa.chunked_array([[1, 2], [3]]), pl.Series("a", [1, 2])):
        path = tmp_path / f"out.{fmt}"
        with pytest.raises(TypeError, match="cannot write") as info:
            write_one(fmt, obj, path)
        assert isinstance(info.value.__cause__, ValueError), info.value.__cause__
        assert list(tmp_path.iterdir()) == []
        with new_writer(fmt, io.BytesIO(), INPUT_TABLE.schema) as w:
            with pytest.raises(TypeError, match="cannot write"):
                w.write(obj)
            w.write(INPUT_TABLE)  # still usable
    with pytest.raises(TypeError, match="cannot write 'BrokenArrayExport'") as info:
        write_one(fmt, BrokenArrayExport())
    assert "array export failed" in str(info.value.__cause__)
    # An error raised while looking the interface up is the error reported.
    with pytest.raises(RuntimeError, match="lookup of __arrow_c_array__ failed"):
        write_one(fmt, RaisingLookup())
    # An object without the interface gets no cause: there is nothing more to say.
    with pytest.raises(TypeError, match="cannot write 'object'") as info:
        write_one(fmt, object())
    assert info.value.__cause__ is None


def failing_reader(schema, batches, exc):
    def gen():
        yield from batches
        raise exc

    return pa.RecordBatchReader.from_batches(schema, gen())


def test_reader_that_fails_midway():
    t = INPUT_TABLE
    batches = t.to_batches(max_chunksize=10)[:2]
    # One shot: nothing is returned.
    with pytest.raises(IpcError, match="boom from the generator"):
        zi.write_stream(failing_reader(t.schema, batches, ValueError("boom from the generator")))
    # Through a writer: the batches before the error were written, the writer goes on.
    sink = io.BytesIO()
    w = zi.new_stream(sink, t.schema)
    with pytest.raises(IpcError, match="boom from the generator"):
        w.write(failing_reader(t.schema, batches, ValueError("boom from the generator")))
    assert not w.closed
    assert w.num_batches == 2
    w.write(t)
    w.close()
    assert_tables_equal(
        pa_read("stream", sink.getvalue()), pa.concat_tables([pa.Table.from_batches(batches), t])
    )


# --------------------------------------------------------------------------------------
# Sinks


def test_none_sink_gives_bytes_but_writers_need_a_sink():
    out = zi.write_stream(INPUT_TABLE, None)
    assert type(out) is bytes
    assert type(zi.write_file(INPUT_TABLE)) is bytes
    for fmt in FORMATS:
        with pytest.raises(TypeError, match="sink"):
            new_writer(fmt, None, INPUT_TABLE.schema)


def test_path_sinks(tmp_path):
    path = tmp_path / "out.arrow"
    for as_path in (str, pathlib.Path):
        for fmt in FORMATS:
            assert write_one(fmt, INPUT_TABLE, as_path(path)) is None
            assert leftovers(tmp_path) == ["out.arrow"]
            with pa.memory_map(str(path)) as source:
                assert_tables_equal(pa_read(fmt, source), INPUT_TABLE)
            # A writer on the same path replaces the file.
            with new_writer(fmt, as_path(path), INPUT_TABLE.schema, compression="lz4") as w:
                w.write(INPUT_TABLE)
                w.write(INPUT_TABLE)
            assert leftovers(tmp_path) == ["out.arrow"]
            assert pa_read(fmt, str(path)).num_rows == 2 * INPUT_TABLE.num_rows


def test_path_objects_with_a_write_method_are_paths(tmp_path):
    class LocalPath:
        """Like py.path.local (pytest's tmpdir): os.PathLike, with a text write() of its own."""

        def __init__(self, path):
            self.path = path

        def __fspath__(self):
            return str(self.path)

        def write(self, data, mode="w"):
            raise AssertionError("a path was written through its write() method")

    path = tmp_path / "out.arrow"
    for fmt in FORMATS:
        assert write_one(fmt, INPUT_TABLE, LocalPath(path)) is None
        assert_tables_equal(pa_read(fmt, str(path)), INPUT_TABLE)
        assert leftovers(tmp_path) == ["out.arrow"]


def test_file_objects_registered_with_iobase_are_file_objects(tmp_path):
    """A class registered with io.IOBase (not derived from io's classes) is written through
    write(), even if it also looks like a path."""

    class Registered:
        def __init__(self):
            self.chunks = []

        def __fspath__(self):
            raise AssertionError("a file object was opened as a path")

        def write(self, data):
            self.chunks.append(bytes(data))
            return len(data)

    io.IOBase.register(Registered)
    for fmt in FORMATS:
        sink = Registered()
        assert write_one(fmt, INPUT_TABLE, sink) is None
        assert_tables_equal(pa_read(fmt, b"".join(sink.chunks)), INPUT_TABLE)
    assert list(tmp_path.iterdir()) == []


def test_writers_opened_with_schema_objects_in_turn_get_each_ones_schema():
    """Writers opened one after another with different (and the same) schema objects."""
    a = pa.table({"x": pa.array([1, 2], pa.int32())})
    b = pa.table({"y": pa.array(["p", "q"]), "z": pa.array([1.5, 2.5])}).replace_schema_metadata(
        {"k": "v"}
    )
    # Kept schema objects (the same object again is remembered) and fresh ones (table.schema).
    kept = {id(a): a.schema, id(b): b.schema}
    for table, schema_of in [(t, s) for t in (a, b, a, a, b, b) for s in ("kept", "fresh")]:
        schema = kept[id(table)] if schema_of == "kept" else table.schema
        sink = io.BytesIO()
        with zi.new_stream(sink, schema) as w:
            assert w.schema.equals(table.schema, check_metadata=True)
            w.write(table)
        assert_tables_equal(pa_read("stream", sink.getvalue()), table)
        with zi.new_stream(io.BytesIO(), schema) as w, pytest.raises(IpcError):
            w.write(b if table is a else a)


def test_a_schema_object_that_changes_is_asked_each_time():
    """Only pyarrow's immutable Schema objects are remembered between writers."""

    class Changing:
        def __init__(self):
            self.schemas = [pa.schema([("x", pa.int32())]), pa.schema([("y", pa.string())])]
            self.calls = 0

        def __arrow_c_schema__(self):
            schema = self.schemas[self.calls % 2]
            self.calls += 1
            return schema.__arrow_c_schema__()

    changing = Changing()
    for expected in ("x", "y", "x"):
        with zi.new_stream(io.BytesIO(), changing) as w:
            assert w.schema.names == [expected]


def test_bytesio_and_open_files(tmp_path):
    for fmt in FORMATS:
        sink = io.BytesIO(b"prefix")
        sink.seek(0, io.SEEK_END)
        write_one(fmt, INPUT_TABLE, sink)
        assert sink.getvalue().startswith(b"prefix")
        assert_tables_equal(pa_read(fmt, sink.getvalue()[len(b"prefix") :]), INPUT_TABLE)

        buffered = tmp_path / f"buffered.{fmt}"
        with open(buffered, "wb") as f:
            with new_writer(fmt, f, INPUT_TABLE.schema) as w:
                w.write(INPUT_TABLE)
            assert not f.closed  # the writer does not close a file it did not open
        raw = tmp_path / f"raw.{fmt}"
        with open(raw, "wb", buffering=0) as f:
            write_one(fmt, INPUT_TABLE, f)
        for path in (buffered, raw):
            assert_tables_equal(pa_read(fmt, str(path)), INPUT_TABLE)


@pytest.mark.parametrize("fmt", FORMATS)
def test_socket_sink_read_by_another_thread(fmt):
    """A non-seekable sink: even the file format is written without seeking."""
    table = small_table(5000)
    a, b = socket.socketpair()
    result = {}

    def read():
        with b.makefile("rb") as rf:
            if fmt == "stream":
                result["table"] = pa.ipc.open_stream(rf).read_all()
            else:
                result["table"] = pa.ipc.open_file(pa.py_buffer(rf.read())).read_all()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        with a.makefile("wb") as wf:
            with new_writer(fmt, wf, table.schema) as w:
                for batch in table.to_batches(max_chunksize=700):
                    w.write(batch)
            # Like pyarrow's writers, close() does not flush a file object it was given.
            wf.flush()
        a.shutdown(socket.SHUT_WR)
        reader.join(THREAD_TIMEOUT)
        assert not reader.is_alive()
    finally:
        a.close()
        reader.join(THREAD_TIMEOUT)
        b.close()
    assert_tables_equal(result["table"], table)


def test_closed_read_only_and_directory_sinks(tmp_path):
    schema = INPUT_TABLE.schema
    closed = io.BytesIO()
    closed.close()
    with pytest.raises(OSError, match="closed"):
        zi.new_stream(closed, schema)
    with pytest.raises(OSError):
        zi.write_file(INPUT_TABLE, closed)

    existing = tmp_path / "existing"
    existing.write_bytes(b"keep")
    with open(existing, "rb") as f:
        with pytest.raises(OSError, match="not writable"):
            zi.new_file(f, schema)
    assert existing.read_bytes() == b"keep"

    with pytest.raises(IsADirectoryError):
        zi.new_file(tmp_path, schema)
    with pytest.raises(OSError):
        zi.write_stream(INPUT_TABLE, str(tmp_path))
    with pytest.raises(FileNotFoundError):
        zi.new_stream(tmp_path / "missing" / "out.arrow", schema)
    assert leftovers(tmp_path) == ["existing"]
    with pytest.raises(TypeError, match="sink"):
        zi.new_stream(12, schema)


def test_sink_that_raises_during_a_write():
    for fmt in FORMATS:
        sink = FailingSink(fail_on=2)  # the header goes with the first batch: one write
        w = new_writer(fmt, sink, INPUT_TABLE.schema)
        w.write(INPUT_TABLE)
        assert sink.calls == 1
        assert leased() == 1
        with pytest.raises(Boom) as excinfo:
            w.write(INPUT_TABLE)
        assert excinfo.value is sink.raised  # the sink's own exception, unchanged
        assert w.closed
        assert leased() == 0  # the context came back at once, not at garbage collection
        with pytest.raises(ClosedError):
            w.write(INPUT_TABLE)
        w.close()  # nothing more to do, and no error
        w.abort()
        assert w.closed
        assert sink.calls == 2


def test_sink_that_raises_at_the_first_write_or_at_close():
    # Opening a writer does not touch the sink; the header goes out with the first batch.
    sink = FailingSink(fail_on=1)
    w = zi.new_file(sink, INPUT_TABLE.schema)
    assert sink.calls == 0
    with pytest.raises(Boom) as excinfo:
        w.write(INPUT_TABLE)
    assert excinfo.value is sink.raised
    assert w.closed and leased() == 0

    sink = FailingSink(fail_on=2)  # the header and one batch, then the footer fails
    w = zi.new_file(sink, INPUT_TABLE.schema)
    w.write(INPUT_TABLE)
    with pytest.raises(Boom) as excinfo:
        w.close()
    assert excinfo.value is sink.raised
    assert w.closed and leased() == 0
    w.close()

    # A writer closed without batches writes its header at close: that can fail too.
    sink = FailingSink(fail_on=1)
    w = zi.new_stream(sink, INPUT_TABLE.schema)
    with pytest.raises(Boom):
        w.close()
    assert w.closed and leased() == 0

    for fail_on in (1, 2):
        sink = FailingSink(fail_on=fail_on)
        with pytest.raises(Boom):
            zi.write_stream(INPUT_TABLE, sink)
        assert leased() == 0

    # The same inside a with-block: the exception goes through __exit__ unchanged.
    sink = FailingSink(fail_on=2)
    with pytest.raises(Boom) as excinfo:
        with zi.new_stream(sink, INPUT_TABLE.schema) as w:
            w.write(INPUT_TABLE)
            w.write(INPUT_TABLE)
    assert excinfo.value is sink.raised and w.closed and leased() == 0


def test_sinks_that_write_partially():
    table = typed_table(200, seed=8)
    for fmt in FORMATS:
        # at most 7 bytes a call
        tiny = PartialRaw(lambda n: 7)
        write_one(fmt, INPUT_TABLE.slice(0, 10), tiny)
        assert tiny.calls > 50
        assert_tables_equal(pa_read(fmt, bytes(tiny.data)), INPUT_TABLE.slice(0, 10))
        # half of what it is given, on a larger table
        half = PartialRaw(lambda n: n // 2)
        write_one(fmt, table, half)
        assert_tables_equal(pa_read(fmt, bytes(half.data)), table)


def test_python_sinks_get_large_batches_in_pieces():
    # A batch of several MiB reaches a file object in writes of at most 1 MiB, not as one more
    # copy of the whole batch.
    rng = np.random.default_rng(3)
    table = pa.table({"x": rng.integers(0, 2**62, 1_000_000, dtype=np.int64)})  # incompressible

    class Recording(io.BytesIO):
        sizes: list[int] = []

        def write(self, b):
            self.sizes.append(len(b))
            return super().write(b)

    for fmt in FORMATS:
        sink = Recording()
        sink.sizes = []
        write_one(fmt, table, sink, compression=None)
        assert max(sink.sizes) <= 1 << 20, max(sink.sizes)
        assert sum(sink.sizes) > 8_000_000
        assert_tables_equal(pa_read(fmt, sink.getvalue()), table)


def test_sink_that_accepts_nothing_or_returns_none():
    class Stuck(io.RawIOBase):
        def writable(self):
            return True

        def write(self, b):
            return 0

    with pytest.raises(OSError, match="no bytes"):
        zi.write_stream(INPUT_TABLE, Stuck())
    assert leased() == 0

    class NoCount:
        """A write() that returns None (old-style file-likes): taken as all written."""

        def __init__(self):
            self.data = bytearray()

        def write(self, b):
            self.data += b

    sink = NoCount()
    zi.write_file(INPUT_TABLE, sink)
    assert_tables_equal(pa_read("file", bytes(sink.data)), INPUT_TABLE)


# --------------------------------------------------------------------------------------
# Path sinks appear whole or not at all


def test_path_appears_only_at_close(tmp_path):
    path = tmp_path / "out.arrow"
    w = zi.new_file(path, INPUT_TABLE.schema)
    w.write(INPUT_TABLE)
    assert not path.exists()
    temps = list(tmp_path.glob(TEMP_GLOB))
    assert len(temps) == 1 and temps[0].name.startswith("out.arrow.")
    w.close()
    assert leftovers(tmp_path) == ["out.arrow"]
    assert_tables_equal(pa_read("file", str(path)), INPUT_TABLE)


def abandon_a_path(tmp_path: pathlib.Path, fmt: str, how: str) -> None:
    path = tmp_path / f"out.{fmt}"
    schema = INPUT_TABLE.schema
    if how == "abort":
        w = new_writer(fmt, path, schema)
        w.write(INPUT_TABLE)
        w.abort()
        assert w.closed
        w.abort()
        w.close()  # after abort: nothing to do
    elif how == "with_raises":
        with pytest.raises(KeyError):
            with new_writer(fmt, path, schema) as w:
                w.write(INPUT_TABLE)
                raise KeyError("in the block")
        assert w.closed
    elif how == "failed_write_in_with":
        with pytest.raises(IpcError):
            with new_writer(fmt, path, schema) as w:
                w.write(INPUT_TABLE)
                w.write(pa.table({"other": [1]}))
    elif how == "gc":
        w = new_writer(fmt, path, schema)
        w.write(INPUT_TABLE)
        assert list(tmp_path.glob(TEMP_GLOB))
        del w
        gc.collect()
    elif how == "one_shot":
        batches = INPUT_TABLE.to_batches(max_chunksize=10)
        with pytest.raises(IpcError, match="stop"):
            write_one(fmt, failing_reader(schema, batches, RuntimeError("stop")), path)
    else:
        raise AssertionError(how)


def test_abandoned_paths_leave_nothing(tmp_path, subtests):
    for fmt in FORMATS:
        for how in ("abort", "with_raises", "failed_write_in_with", "gc", "one_shot"):
            with subtests.test(fmt=fmt, how=how):
                abandon_a_path(tmp_path, fmt, how)
                assert leftovers(tmp_path) == []
                assert leased() == 0


def test_abandoned_path_keeps_the_previous_file(tmp_path):
    path = tmp_path / "out.arrow"
    path.write_bytes(b"previous contents")
    w = zi.new_file(path, INPUT_TABLE.schema)
    w.write(INPUT_TABLE)
    w.abort()
    assert path.read_bytes() == b"previous contents"
    with zi.new_file(path, INPUT_TABLE.schema) as w:
        w.write(INPUT_TABLE)
        assert path.read_bytes() == b"previous contents"
    assert_tables_equal(pa_read("file", str(path)), INPUT_TABLE)
    assert leftovers(tmp_path) == ["out.arrow"]


def test_bad_options_with_a_path_leave_nothing(tmp_path):
    path = tmp_path / "out.arrow"
    with pytest.raises(ParameterError):
        zi.new_file(path, INPUT_TABLE.schema, level=99)
    with pytest.raises(ParameterError):
        zi.write_stream(INPUT_TABLE, path, compression="gzip")
    with pytest.raises(ParameterError):
        zi.new_stream(path, INPUT_TABLE.schema, threads=0)
    assert leftovers(tmp_path) == []


def blocking_reader(table: pa.Table, started: threading.Event, release: threading.Event):
    """A reader that yields one batch, then waits for `release` before the second."""

    def batches():
        yield table.to_batches()[0]
        started.set()
        release.wait(THREAD_TIMEOUT)
        yield table.to_batches()[0]

    return pa.RecordBatchReader.from_batches(table.schema, batches())


def test_a_writer_is_for_one_thread_at_a_time():
    table = INPUT_TABLE
    sink = io.BytesIO()
    w = zi.new_stream(sink, table.schema)
    started, release = threading.Event(), threading.Event()
    errors = []

    def write():
        try:
            w.write(blocking_reader(table, started, release))
        except BaseException as e:  # reported in the main thread
            errors.append(e)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    try:
        assert started.wait(THREAD_TIMEOUT)
        with pytest.raises(zstdpool.BusyError):
            w.write(table)
        assert not w.closed
    finally:
        release.set()
        thread.join(THREAD_TIMEOUT)
    assert not thread.is_alive() and errors == []
    w.write(table)  # free again
    w.close()
    assert_tables_equal(pa_read("stream", sink.getvalue()), pa.concat_tables([table] * 3))


def test_close_from_another_thread_during_a_write(tmp_path):
    path = tmp_path / "out.arrow"
    table = INPUT_TABLE
    w = zi.new_file(path, table.schema)
    started, release = threading.Event(), threading.Event()
    errors = []

    def write(writer):
        try:
            writer.write(blocking_reader(table, started, release))
        except Exception as e:  # a deferred close may end the write: either is fine
            errors.append(e)

    thread = threading.Thread(target=write, args=(w,), daemon=True)
    thread.start()
    closed_during_the_write = False
    try:
        assert started.wait(THREAD_TIMEOUT)
        with pytest.raises(zstdpool.BusyError):
            w.write(table)
        try:
            w.close()
            closed_during_the_write = True
        except zstdpool.BusyError:
            pass  # refusing to close a busy writer would be fine too
    finally:
        release.set()
        thread.join(THREAD_TIMEOUT)
    assert not thread.is_alive()
    w.close()
    del w
    gc.collect()
    # Only a close that went through while the write ran may end it, and only as closed.
    if closed_during_the_write:
        assert all(isinstance(e, ClosedError) for e in errors), errors
    else:
        assert errors == [], errors
    # Either the file was completed, or nothing is left; never a stray temp file.
    assert list(tmp_path.glob(TEMP_GLOB)) == []
    if path.exists():
        pa_read("file", str(path))
    if not errors:  # the write ran to its end: the file holds both of its batches
        batch = table.to_batches()[0]
        assert_tables_equal(pa_read("file", str(path)), pa.Table.from_batches([batch] * 2))


# --------------------------------------------------------------------------------------
# Errors and options


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


# --------------------------------------------------------------------------------------
# File footer metadata


metadata_text = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=20)


@quick
@given(metadata=st.dictionaries(metadata_text, metadata_text, max_size=5))
def test_footer_metadata(metadata):
    out = zi.write_file(INPUT_TABLE.slice(0, 5), metadata=metadata)
    reader = pa.ipc.open_file(out)
    got = {k.decode(): v.decode() for k, v in (reader.metadata or {}).items()}
    assert got == metadata
    with zi.open_file(out) as ours:
        assert ours.metadata == metadata
    # Footer metadata is not schema metadata.
    assert reader.schema.metadata is None


def test_footer_metadata_through_a_writer(tmp_path):
    path = tmp_path / "meta.arrow"
    with zi.new_file(path, INPUT_TABLE.schema, metadata={"k": "v", "ключ": "значение"}) as w:
        w.write(INPUT_TABLE)
    assert pa.ipc.open_file(str(path)).metadata == {
        b"k": b"v",
        "ключ".encode(): "значение".encode(),
    }
    assert_tables_equal(pa_read("file", str(path)), INPUT_TABLE)


# --------------------------------------------------------------------------------------
# Threads


@functools.cache
def big_table() -> pa.Table:
    """About 6 MiB over several columns (so a batch has many buffers to spread)."""
    rng = np.random.default_rng(42)
    n = 150_000
    return pa.table(
        {
            "walk": pa.array(np.cumsum(rng.integers(-3, 4, n)), pa.int64()),
            "noise": pa.array(rng.random(n)),
            "small": pa.array(rng.integers(0, 100, n).astype(np.int32), mask=rng.random(n) < 0.1),
            "text": pa.array(np.array(["alpha", "beta", "gamma", "delta"])[rng.integers(0, 4, n)]),
            "raw": pa.array(rng.integers(0, 2**63, n, dtype=np.int64)),
        }
    )


def test_thread_count_does_not_change_the_bytes():
    table = big_table()
    assert table.nbytes > 5 * 2**20
    for fmt, codec in (("stream", "zstd"), ("file", "zstd"), ("stream", "lz4")):
        # one big batch, and the same table in four batches
        for data in (table, chunked(table, 40_000)):
            outputs = [write_one(fmt, data, compression=codec, threads=k) for k in (1, 2, None)]
            assert outputs[0] == outputs[1] == outputs[2], (fmt, codec)
        assert_tables_equal(pa_read(fmt, outputs[0]), table)


def test_sixteen_threads_write_concurrently():
    n_threads = 16
    jobs = []
    for i in range(n_threads):
        fmt = FORMATS[i % 2]
        codec, level = CODEC_LEVELS[i % len(CODEC_LEVELS)]
        if level == 9:
            level = 2
        if fmt == "stream":
            # tables built apart: dictionaries are replaced between them
            tables = [typed_table(20 + 7 * j, seed=100 * i + j) for j in range(3)]
        else:
            # slices of one table: one dictionary per field, as the file format needs
            whole = sliceable_table(60, 100 + i)
            tables = [whole.slice(0, 15 + i), whole.slice(15 + i, 30), whole.slice(45 + i)]
        jobs.append((fmt, codec, level, tables))
    barrier = threading.Barrier(n_threads)
    results: list = [None] * n_threads

    def work(i):
        fmt, codec, level, tables = jobs[i]
        try:
            barrier.wait(THREAD_TIMEOUT)
            sink = io.BytesIO()
            with new_writer(fmt, sink, tables[0].schema, compression=codec, level=level) as w:
                for t in tables:
                    w.write(t)
            results[i] = sink.getvalue()
        except BaseException as e:  # reported below, in the main thread
            results[i] = e

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(THREAD_TIMEOUT)
    assert not any(t.is_alive() for t in threads)
    for (fmt, _, _, tables), out in zip(jobs, results, strict=True):
        assert isinstance(out, bytes), out
        assert_tables_equal(pa_read(fmt, out), pa.concat_tables(tables))
    assert leased() == 0


def test_custom_pool_lends_and_takes_back():
    pool = zstdpool.ContextPool()
    sink = io.BytesIO()
    w = zi.new_stream(sink, INPUT_TABLE.schema, pool=pool, level=4)
    assert pool.stats()["leased"] == 1
    assert leased() == 0  # not the default pool
    w.write(INPUT_TABLE)
    w.close()
    assert pool.stats()["leased"] == 0
    zi.write_file(INPUT_TABLE, pool=pool)
    assert pool.stats()["leased"] == 0
    assert_tables_equal(pa_read("stream", sink.getvalue()), INPUT_TABLE)


# --------------------------------------------------------------------------------------
# Writer properties


WRITER_OPTIONS = [("zstd", None), ("zstd", 7), ("zstd", -3), ("lz4", None), (None, None)]


def test_writer_properties(subtests):
    for fmt in FORMATS:
        for codec, level in WRITER_OPTIONS:
            with subtests.test(fmt=fmt, codec=codec, level=level):
                check_writer_properties(fmt, codec, level)


def check_writer_properties(fmt, codec, level):
    schema = INPUT_TABLE.schema.with_metadata({"m": "1"})
    sink = io.BytesIO()
    w = new_writer(fmt, sink, schema, compression=codec, level=level)
    assert w.schema.equals(schema, check_metadata=True)
    assert w.format == fmt
    assert w.compression == codec
    assert w.level == (None if codec != "zstd" else (1 if level is None else level))
    assert not w.closed
    assert w.num_batches == 0
    assert w.bytes_written == len(sink.getvalue())
    r = repr(w)
    assert r.startswith("<zstdpool.ipc.IpcWriter") and f"format={fmt}" in r
    assert (codec or "none") in r and "closed" not in r
    for k, batch in enumerate(INPUT_TABLE.to_batches(max_chunksize=20), start=1):
        w.write(batch)
        assert w.num_batches == k
        assert w.bytes_written == len(sink.getvalue())
    w.close()
    assert w.closed and "closed" in repr(w)
    assert pa_read(fmt, sink.getvalue()).num_rows == INPUT_TABLE.num_rows


def test_one_shot_and_writer_give_the_same_bytes(tmp_path):
    table = chunked(sliceable_table(40, 3), 15)
    for fmt in FORMATS:
        kwargs = {"metadata": {"k": "v"}} if fmt == "file" else {}
        one_shot = write_one(fmt, table, **kwargs)
        sink = io.BytesIO()
        with new_writer(fmt, sink, table.schema, **kwargs) as w:
            for batch in table.to_batches():
                w.write(batch)
        assert sink.getvalue() == one_shot
        path = tmp_path / f"same.{fmt}"
        write_one(fmt, table, path, **kwargs)
        assert path.read_bytes() == one_shot


def test_writer_closed_without_batches_writes_a_valid_empty_output(tmp_path):
    schema = typed_table(0).schema  # dictionaries, extensions, metadata
    for fmt in FORMATS:
        sink = io.BytesIO()
        w = new_writer(fmt, sink, schema, **({"metadata": {"k": "v"}} if fmt == "file" else {}))
        w.close()
        assert w.closed
        for source in (sink.getvalue(), pa.BufferReader(sink.getvalue())):
            got = pa_read(fmt, source)
            assert got.num_rows == 0
            assert got.schema.equals(schema, check_metadata=True)
        assert pa_batches(fmt, sink.getvalue()) == []
        if fmt == "file":
            assert pa.ipc.open_file(sink.getvalue()).metadata == {b"k": b"v"}
        path = tmp_path / f"empty.{fmt}"
        with new_writer(fmt, path, schema):
            pass
        assert pa_read(fmt, str(path)).schema.equals(schema, check_metadata=True)


def test_writer_is_its_own_context_manager():
    sink = io.BytesIO()
    w = zi.new_stream(sink, INPUT_TABLE.schema)
    with w as entered:
        assert entered is w
        entered.write(INPUT_TABLE)
    assert w.closed


def test_counters_survive_close():
    for fmt in FORMATS:
        sink = io.BytesIO()
        w = new_writer(fmt, sink, INPUT_TABLE.schema)
        w.write(INPUT_TABLE)
        w.write(INPUT_TABLE)
        w.close()
        assert w.num_batches == 2
        assert w.bytes_written == len(sink.getvalue())
