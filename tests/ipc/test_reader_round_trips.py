"""The IPC readers read what pyarrow and zstdpool write, stream and file, every codec:
every type, dictionary deltas and replacements, empty inputs and footer metadata.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.ipc
import pytest
from zstdpool import ipc

from tests.helpers.arrow_data import typed_table
from tests.helpers.ipc_reader import (
    CODECS,
    WRITERS,
    dictionary_batches,
    read_stream_batches,
    sample_batches,
    table_of,
    write,
    write_pyarrow,
    write_zstdpool,
)


@pytest.mark.parametrize("compression", CODECS, ids=str)
@pytest.mark.parametrize("writer", WRITERS)
def test_stream_round_trip(writer, compression):
    batches = sample_batches()
    data = write(writer, batches, compression=compression)
    table = ipc.read_stream(data)
    table.validate(full=True)
    assert table.equals(table_of(batches), check_metadata=True)
    assert table.equals(pa.ipc.open_stream(data).read_all(), check_metadata=True)
    got = read_stream_batches(data)
    assert [b.num_rows for b in got] == [b.num_rows for b in batches]  # the empty one too
    for g, b in zip(got, batches, strict=True):
        assert g.equals(b, check_metadata=True)


@pytest.mark.parametrize("compression", CODECS, ids=str)
@pytest.mark.parametrize("writer", WRITERS)
def test_file_round_trip(writer, compression):
    batches = sample_batches()
    data = write(writer, batches, fmt="file", compression=compression)
    table = ipc.read_file(data)
    table.validate(full=True)
    assert table.equals(table_of(batches), check_metadata=True)
    with ipc.open_file(data) as r:
        assert r.num_record_batches == len(r) == len(batches)
        assert r.schema.equals(batches[0].schema, check_metadata=True)
        for i in [2, 0, 3, 1, -1, -4]:
            assert r.get_batch(i).equals(batches[i], check_metadata=True)
        assert r.get_record_batch(1).equals(batches[1])
        assert [b.num_rows for b in r] == [b.num_rows for b in batches]
        assert r.read_all().equals(table_of(batches))


@pytest.mark.parametrize("fmt", ["stream", "file"])
def test_every_type_from_shared_test_data(fmt):
    """Every type of tests/helpers/arrow_data.py, written by pyarrow with zstd, read by
    zstdpool."""
    table = typed_table(60, seed=5)
    batches = table.to_batches(max_chunksize=25)
    data = write_pyarrow(batches, fmt=fmt, compression="zstd", schema=table.schema)
    got = ipc.read_stream(data) if fmt == "stream" else ipc.read_file(data)
    got.validate(full=True)
    reader = pa.ipc.open_stream(data) if fmt == "stream" else pa.ipc.open_file(data)
    assert got.equals(reader.read_all(), check_metadata=True)


@pytest.mark.parametrize("compression", CODECS, ids=str)
@pytest.mark.parametrize("deltas", [False, True], ids=["replacements", "deltas"])
def test_stream_dictionary_deltas_and_replacements(deltas, compression):
    batches = dictionary_batches()
    data = write_pyarrow(batches, compression=compression, deltas=deltas)
    reference = pa.ipc.open_stream(data)
    expected = reference.read_all()
    stats = reference.stats
    # The stream really holds what the test is about.
    assert stats.num_dictionary_deltas == (1 if deltas else 0)
    assert stats.num_replaced_dictionaries == (1 if deltas else 2)
    got = read_stream_batches(data)
    assert len(got) == 3
    for g, b in zip(got, batches, strict=True):
        g.validate(full=True)
        assert g.equals(b)
        assert g.column(0).dictionary.equals(b.column(0).dictionary)
    assert ipc.read_stream(data).equals(expected)


@pytest.mark.parametrize("compression", CODECS, ids=str)
def test_stream_dictionary_deltas_written_by_zstdpool(compression):
    batches = dictionary_batches()
    data = write_zstdpool(batches, compression=compression, deltas=True)
    expected = pa.ipc.open_stream(data).read_all()
    assert expected.equals(table_of(batches))
    assert ipc.read_stream(data).equals(expected)
    for g, b in zip(read_stream_batches(data), batches, strict=True):
        assert g.equals(b)


@pytest.mark.parametrize("compression", CODECS, ids=str)
def test_file_dictionary_deltas(compression):
    batches = dictionary_batches()[:2]
    data = write_pyarrow(batches, fmt="file", compression=compression, deltas=True)
    reader = pa.ipc.open_file(data)
    expected = reader.read_all()
    assert reader.stats.num_dictionary_deltas == 1
    with ipc.open_file(data) as r:
        # The last batch first: the dictionaries (base and delta) load on first access.
        assert r.get_batch(1).equals(reader.get_batch(1))
        assert r.get_batch(0).equals(reader.get_batch(0))
    assert ipc.read_file(data).equals(expected)


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("compression", [None, "zstd"], ids=str)
def test_empty_stream_and_file(writer, compression):
    schema = sample_batches()[0].schema
    stream = write(writer, [], compression=compression, schema=schema)
    with ipc.open_stream(stream) as r:
        assert r.schema.equals(schema, check_metadata=True)
        assert list(r) == []
        with pytest.raises(StopIteration):
            r.read_next_batch()
    table = ipc.read_stream(stream)
    assert table.num_rows == 0 and table.schema.equals(schema, check_metadata=True)

    file = write(writer, [], fmt="file", compression=compression, schema=schema)
    with ipc.open_file(file) as r:
        assert len(r) == r.num_record_batches == 0
        assert list(r) == []
        for i in (0, -1):
            with pytest.raises(IndexError):
                r.get_batch(i)
        assert r.read_all().num_rows == 0
    assert ipc.read_file(file).schema.equals(schema, check_metadata=True)


def test_zero_row_batches_only():
    batch = sample_batches(sizes=(0,))[0]
    for writer in WRITERS:
        data = write(writer, [batch, batch], compression="zstd")
        got = read_stream_batches(data)
        assert [b.num_rows for b in got] == [0, 0]
        assert ipc.read_file(write(writer, [batch], fmt="file")).num_rows == 0


def test_file_footer_metadata():
    batches = sample_batches()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, batches[0].schema, metadata={"k": "v", "ü": "✓"}) as w:
        w.write_batch(batches[0])
    # As pyarrow gives it: bytes keys and values, None when the footer has none.
    with ipc.open_file(sink.getvalue()) as r:
        assert r.metadata == {b"k": b"v", "ü".encode(): "✓".encode()}
        assert r.metadata == pa.ipc.open_file(sink.getvalue()).metadata
    with ipc.open_file(write_pyarrow(batches, fmt="file")) as r:
        assert r.metadata is None


def _nulls_under_null_ancestors() -> pa.Table:
    # A non-nullable child holding a null where its parent is valid and the grandparent (a
    # struct, a list) is null: the value is null as a whole, and pyarrow writes and reads it.
    field = pa.field("c", pa.int64(), nullable=False)
    inner = pa.StructArray.from_arrays([pa.array([1, None, 3])], fields=[field])
    outer = pa.StructArray.from_arrays(
        [inner], fields=[pa.field("in", inner.type)], mask=pa.array([False, True, False])
    )
    listed = pa.ListArray.from_arrays(
        pa.array([0, 1, 2, 3], pa.int32()), inner, mask=pa.array([False, True, False])
    )
    return pa.table({"s": outer, "l": listed})


@pytest.mark.parametrize("fmt", ["stream", "file"])
def test_nulls_in_non_nullable_children_under_null_ancestors_round_trip(fmt):
    table = _nulls_under_null_ancestors()
    data = ipc.write_stream(table) if fmt == "stream" else ipc.write_file(table)
    opened = ipc.open_stream if fmt == "stream" else ipc.open_file
    assert opened(data).read_all().equals(table)
    theirs = pyarrow.ipc.open_stream if fmt == "stream" else pyarrow.ipc.open_file
    assert theirs(data).read_all().equals(table)
    # And what pyarrow writes of it.
    sink = pa.BufferOutputStream()
    new = pyarrow.ipc.new_stream if fmt == "stream" else pyarrow.ipc.new_file
    with new(sink, table.schema) as w:
        w.write_table(table)
    assert opened(sink.getvalue()).read_all().equals(table)
