"""Column names with a NUL byte. The Arrow C data interface carries names as C strings, so
without care `x\\0y` is written as `x` and two such columns collapse into duplicates; pyarrow
keeps the whole name in IPC and Parquet, and so must zstdpool, in both directions."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.feather as pf
import pyarrow.parquet as pq
import pytest
import zstdpool
import zstdpool.dataset as zd
import zstdpool.feather as zf
import zstdpool.ipc as zi
import zstdpool.parquet as zp

TABLE = pa.table({"x\0y": [1, 2, None], "x\0z": ["a", None, "c"], "x": [1.5, 2.5, 3.5]})
NAMES = ["x\0y", "x\0z", "x"]


def _inputs():
    """The same table as each kind of pyarrow object a writer takes."""
    return {
        "table": TABLE,
        "batch": TABLE.combine_chunks().to_batches()[0],
        "reader": pa.RecordBatchReader.from_batches(TABLE.schema, TABLE.to_batches()),
    }


@pytest.mark.parametrize("kind", ["table", "batch", "reader"])
@pytest.mark.parametrize("fmt", ["stream", "file"])
def test_ipc_keeps_the_names_both_ways(kind: str, fmt: str) -> None:
    data = _inputs()[kind]
    written = zi.write_stream(data) if fmt == "stream" else zi.write_file(data)
    theirs = (pa.ipc.open_stream if fmt == "stream" else pa.ipc.open_file)(written).read_all()
    assert theirs.equals(TABLE) and theirs.schema.names == NAMES
    ours = (zi.read_stream if fmt == "stream" else zi.read_file)(written)
    assert ours.equals(TABLE) and ours.schema.names == NAMES


def test_ipc_writer_objects_and_reader_objects_keep_the_names() -> None:
    sink = io.BytesIO()
    with zi.new_file(sink, TABLE.schema) as w:
        w.write(TABLE)
        w.write_batch(TABLE.to_batches()[0])
    with zi.open_file(sink.getvalue()) as r:
        assert r.schema.names == NAMES
        assert r.get_batch(0).schema.names == NAMES
        assert r.read_all().schema.names == NAMES
    sink = io.BytesIO()
    with zi.new_stream(sink, TABLE.schema) as w:
        w.write(TABLE)
    with zi.open_stream(sink.getvalue()) as r:
        assert r.schema.names == NAMES
        assert r.read_next_batch().schema.names == NAMES


@pytest.mark.parametrize("kind", ["table", "batch", "reader"])
def test_parquet_keeps_the_names_both_ways(kind: str) -> None:
    sink = io.BytesIO()
    zp.write_table(_inputs()[kind] if kind != "reader" else TABLE, sink)
    theirs = pq.read_table(io.BytesIO(sink.getvalue()))
    assert theirs.schema.names == NAMES and theirs.equals(TABLE)
    with zp.ParquetFile(sink.getvalue()) as f:
        assert f.schema_arrow.names == NAMES
        assert f.read().equals(TABLE)
        assert f.read_row_group(0).schema.names == NAMES
    sink = io.BytesIO()
    pq.write_table(TABLE, sink)
    assert zp.read_table(sink.getvalue()).equals(TABLE)


def test_feather_and_datasets_keep_the_names(tmp_path) -> None:
    zf.write_feather(TABLE, tmp_path / "t.feather")
    assert pf.read_table(tmp_path / "t.feather").equals(TABLE)
    assert zf.read_table(tmp_path / "t.feather").equals(TABLE)
    zd.write_dataset(TABLE, tmp_path / "ds", format="parquet")
    (written,) = (tmp_path / "ds").iterdir()
    assert pq.read_table(written).equals(TABLE)


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    zp.write_table(table, sink)
    return sink.getvalue()


@pytest.mark.parametrize(
    ("write", "read"),
    [
        (zi.write_stream, lambda b: pa.ipc.open_stream(b).read_all()),
        (zi.write_file, lambda b: pa.ipc.open_file(b).read_all()),
        (_parquet_bytes, lambda b: pq.read_table(io.BytesIO(b))),
    ],
)
def test_a_nested_name_with_a_nul_is_refused_not_cut(write, read) -> None:
    nested = pa.table({"s": pa.array([{"a\0b": 1, "a": 2}])})
    with pytest.raises(zstdpool.ParameterError, match=r'nested field named "a\\0b"'):
        write(nested)
    # The same names without the NUL are written as they are.
    fine = pa.table({"s": pa.array([{"ab": 1, "a": 2}])})
    assert read(write(fine)).equals(fine)


@pytest.mark.parametrize(
    "write",
    [zi.write_stream, zi.write_file, _parquet_bytes],
)
def test_extension_types_with_nested_storage_are_written(write) -> None:
    # Their pyarrow type has no fields of its own; the walk for nested names goes through the
    # storage type, as the C data interface exports it.
    tensor = pa.fixed_shape_tensor(pa.int32(), (2, 2))
    storage = pa.array([[1, 2, 3, 4], [5, 6, 7, 8]], pa.list_(pa.int32(), 4))
    table = pa.table({"t": pa.ExtensionArray.from_storage(tensor, storage), "x\0y": [1, 2]})
    data = write(table)
    assert data is not None
    back = (
        pq.read_table(io.BytesIO(data))
        if write is _parquet_bytes
        else pa.ipc.open_stream(data).read_all()
        if write is zi.write_stream
        else pa.ipc.open_file(data).read_all()
    )
    assert back.column_names == ["t", "x\0y"]
    assert back.equals(table)


def test_a_read_with_restored_names_keeps_the_schema_metadata() -> None:
    table = TABLE.replace_schema_metadata({"pandas": "{}", "k": "v"})
    for read in (
        lambda: zi.read_stream(zi.write_stream(table)),
        lambda: zi.open_file(zi.write_file(table)).get_batch(0),
        lambda: zp.read_table(_parquet_bytes(table)),
    ):
        got = read()
        assert got.schema.names == NAMES
        assert got.schema.metadata is not None and got.schema.metadata[b"k"] == b"v"
