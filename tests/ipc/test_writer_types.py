"""The IPC writers round-trip every Arrow type pyarrow writes to IPC, through pyarrow's own
readers (stream, file and memory-mapped file): nulls, slices, chunks, extension types,
metadata, and dictionaries that change between batches.
"""

from __future__ import annotations

import functools
import io

import pyarrow as pa
import pytest
import zstdpool.ipc as zi
from hypothesis import given, settings
from hypothesis import strategies as st
from zstdpool.errors import IpcError

from tests.helpers.arrow_data import (
    ScaledType,
    chunked,
    null_arrays,
    type_names,
    typed_arrays,
    typed_table,
)
from tests.helpers.ipc_writer import (
    CODECS,
    FORMATS,
    assert_tables_equal,
    leftovers,
    new_writer,
    pa_batches,
    pa_read,
    pa_reader,
    quick,
    sliceable_table,
    write_one,
)

few = settings(quick, max_examples=10)


@functools.cache
def arrays_by_name(n: int, seed: int) -> dict[str, pa.Array]:
    return dict(typed_arrays(n, seed=seed))


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
