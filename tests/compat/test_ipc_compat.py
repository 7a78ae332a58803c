"""Code written for ``pyarrow.ipc`` runs on ``zstdpool.ipc`` unchanged: every test here runs
once against each module (the ``ipc`` fixture), and where the two must report the same thing
the test compares them. Where zstdpool deliberately differs, the test says so."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc
import pytest
import zstdpool
import zstdpool.ipc

from tests.helpers.env import subprocess_env

TABLE = pa.table(
    {
        "i": pa.array(range(1000), pa.int64()),
        "s": pa.array([f"value {i % 17}" for i in range(1000)]),
        "d": pa.array([f"k{i % 5}" for i in range(1000)]).dictionary_encode(),
        "l": pa.array([[i, i + 1] if i % 3 else None for i in range(1000)]),
    }
)
ZSTD = pa.ipc.IpcWriteOptions(compression="zstd")


@pytest.fixture(params=["pyarrow", "zstdpool"])
def ipc(request: pytest.FixtureRequest) -> Any:
    return pyarrow.ipc if request.param == "pyarrow" else zstdpool.ipc


def _stream(ipc: Any, table: pa.Table = TABLE, **write: Any) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, table.schema, options=ZSTD) as w:
        w.write_table(table, **write)
    return sink.getvalue()


def _file(ipc: Any, table: pa.Table = TABLE, **new: Any) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema, options=ZSTD, **new) as w:
        w.write_table(table)
    return sink.getvalue()


def _dicts(*chunks: list[str]) -> pa.Table:
    return pa.table({"d": pa.chunked_array([pa.array(c).dictionary_encode() for c in chunks])})


def test_classes_are_constructed_as_pyarrows_are(ipc: Any) -> None:
    sink = pa.BufferOutputStream()
    writer = ipc.RecordBatchStreamWriter(sink, TABLE.schema, options=ZSTD)
    writer.write_table(TABLE)
    writer.close()
    reader = ipc.RecordBatchStreamReader(sink.getvalue())
    assert isinstance(reader, ipc.RecordBatchStreamReader)
    assert reader.read_all().equals(TABLE)
    sink = pa.BufferOutputStream()
    with ipc.RecordBatchFileWriter(sink, TABLE.schema, options=ZSTD, metadata={"a": "b"}) as w:
        w.write(TABLE)
    reader = ipc.RecordBatchFileReader(sink.getvalue())
    assert reader.read_all().equals(TABLE) and reader.metadata == {b"a": b"b"}
    assert isinstance(
        ipc.new_stream(pa.BufferOutputStream(), TABLE.schema), ipc.RecordBatchStreamWriter
    )


def test_both_read_what_each_writes(ipc: Any) -> None:
    for other in (pyarrow.ipc, zstdpool.ipc):
        assert other.open_stream(_stream(ipc)).read_all().equals(TABLE)
        assert other.open_file(_file(ipc)).read_all().equals(TABLE)


def test_write_stats_equal_pyarrows() -> None:
    """The same writes report the same stats (zstdpool adds the body sizes)."""

    def stats(ipc: Any, new: Any, table: pa.Table, **options: Any) -> tuple[int, ...]:
        w = new(ipc)(
            pa.BufferOutputStream(), table.schema, options=pa.ipc.IpcWriteOptions(**options)
        )
        w.write_table(table, max_chunksize=300)
        if table is TABLE:
            w.write_batch(table.to_batches()[0], custom_metadata={"k": "v"})
        w.close()
        # The records themselves compare equal, as pyarrow's do with each other.
        return w.stats  # type: ignore[no-any-return]

    cases = [
        (lambda m: m.new_stream, TABLE, {}),
        (lambda m: m.new_file, TABLE, {}),
        # Dictionary replacement in a stream, and deltas.
        (lambda m: m.new_stream, _dicts(["a"], ["b"]), {}),
        (lambda m: m.new_stream, _dicts(["a"], ["a", "b"]), {"emit_dictionary_deltas": True}),
        # A file cannot replace a dictionary: unified first, as pyarrow does.
        (lambda m: m.new_file, _dicts(["a"], ["b"]), {"unify_dictionaries": True}),
    ]
    for new, table, options in cases:
        assert stats(zstdpool.ipc, new, table, **options) == stats(
            pyarrow.ipc, new, table, **options
        ), options
    # Nothing is written before the first batch, in both.
    for ipc in (pyarrow.ipc, zstdpool.ipc):
        w = ipc.new_stream(pa.BufferOutputStream(), TABLE.schema)
        assert w.stats.num_messages == 0
        w.close()
        assert w.stats.num_messages == 1
    zw = zstdpool.ipc.new_stream(pa.BufferOutputStream(), TABLE.schema)
    zw.write_table(TABLE)
    zw.close()
    assert 0 < zw.stats.total_serialized_body_size < zw.stats.total_raw_body_size


def test_stats_are_pyarrows_records() -> None:
    w = zstdpool.ipc.new_stream(pa.BufferOutputStream(), TABLE.schema)
    w.write_table(TABLE)
    w.close()
    s = w.stats
    assert isinstance(s, pa.ipc.WriteStats) and len(s) == 5
    assert s == pa.ipc.WriteStats(*s)
    assert s.total_raw_body_size > 0 and "total_raw_body_size=" in repr(s)
    assert pickle.loads(pickle.dumps(s)).total_raw_body_size == s.total_raw_body_size
    data = _stream(zstdpool.ipc)
    r, p = zstdpool.ipc.open_stream(data), pyarrow.ipc.open_stream(data)
    r.read_all(), p.read_all()
    assert isinstance(r.stats, pa.ipc.ReadStats) and r.stats == p.stats
    assert isinstance(zstdpool.ipc.WriteStats, type) and zstdpool.ipc.ReadStats is type(r.stats)


def test_a_file_refuses_a_replaced_dictionary_unless_unified(ipc: Any) -> None:
    table = _dicts(["a"], ["b"])
    with pytest.raises(pa.ArrowInvalid, match="(?i)dictionary"):
        with ipc.new_file(pa.BufferOutputStream(), table.schema) as w:
            w.write_table(table)
    sink = pa.BufferOutputStream()
    with ipc.new_file(
        sink, table.schema, options=pa.ipc.IpcWriteOptions(unify_dictionaries=True)
    ) as w:
        w.write_table(table)
    assert ipc.open_file(sink.getvalue()).read_all().column(0).to_pylist() == ["a", "b"]


def test_deltas_and_replacements_are_read_back_and_counted(ipc: Any) -> None:
    for chunks, options, counts in [
        ((["a"], ["b"]), {}, (2, 0, 1)),
        ((["a"], ["a", "b"]), {"emit_dictionary_deltas": True}, (2, 1, 0)),
    ]:
        table = _dicts(*chunks)
        sink = pa.BufferOutputStream()
        with ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(**options)) as w:
            w.write_table(table)
        reader = ipc.open_stream(sink.getvalue())
        assert reader.read_all().column(0).to_pylist() == table.column(0).to_pylist()
        s = reader.stats
        assert (
            s.num_dictionary_batches,
            s.num_dictionary_deltas,
            s.num_replaced_dictionaries,
        ) == counts


def test_custom_metadata_per_batch(ipc: Any) -> None:
    batches = TABLE.to_batches(max_chunksize=400)
    for new, open_ in ((ipc.new_stream, ipc.open_stream), (ipc.new_file, ipc.open_file)):
        sink = pa.BufferOutputStream()
        with new(sink, TABLE.schema, options=ZSTD) as w:
            w.write_batch(batches[0], custom_metadata={"part": "0"})
            w.write_batch(batches[1])
            w.write_batch(batches[2], custom_metadata=pa.KeyValueMetadata({b"part": b"2"}))
        reader = open_(sink.getvalue())
        if open_ is ipc.open_stream:
            got = list(reader.iter_batches_with_custom_metadata())
        else:
            got = [reader.get_batch_with_custom_metadata(i) for i in range(3)]
        assert [g.batch.equals(b) for g, b in zip(got, batches[:3], strict=True)] == [True] * 3
        assert [g.custom_metadata for g in got] == [
            pa.KeyValueMetadata({"part": "0"}),
            None,
            pa.KeyValueMetadata({"part": "2"}),
        ]
        # The metadata is the batch's message's, not the schema's.
        assert got[0].batch.schema.metadata is None


def test_read_next_batch_with_custom_metadata_ends_in_stop_iteration(ipc: Any) -> None:
    reader = ipc.open_stream(_stream(ipc))
    found = reader.read_next_batch_with_custom_metadata()
    assert found.batch.num_rows == TABLE.num_rows and found.custom_metadata is None
    with pytest.raises(StopIteration):
        reader.read_next_batch_with_custom_metadata()


def test_max_chunksize(ipc: Any) -> None:
    reader = ipc.open_stream(_stream(ipc, max_chunksize=300))
    assert [b.num_rows for b in reader] == [300, 300, 300, 100]


def test_included_fields(ipc: Any) -> None:
    options = pa.ipc.IpcReadOptions(included_fields=[3, 0])
    for data, open_ in ((_stream(ipc), ipc.open_stream), (_file(ipc), ipc.open_file)):
        reader = open_(data, options=options)
        # In schema order, whatever order they are named in.
        assert reader.schema.names == ["i", "l"]
        assert reader.read_all().equals(TABLE.select(["i", "l"]))
    with pytest.raises(pa.ArrowInvalid, match="(?i)out of (range|bounds)"):
        ipc.open_stream(_stream(ipc), options=pa.ipc.IpcReadOptions(included_fields=[7])).read_all()


def test_count_rows(ipc: Any) -> None:
    if not hasattr(ipc.RecordBatchFileReader, "count_rows"):
        pytest.skip(f"pyarrow {pa.__version__} has no RecordBatchFileReader.count_rows")
    assert ipc.open_file(_file(ipc)).count_rows() == TABLE.num_rows
    empty = pa.BufferOutputStream()
    ipc.new_file(empty, TABLE.schema).close()
    assert ipc.open_file(empty.getvalue()).count_rows() == 0


def test_stream_count_rows_is_zstdpools_own() -> None:
    """pyarrow's stream reader has no count_rows; zstdpool's counts from the headers and is
    consumed by it."""
    reader = zstdpool.ipc.open_stream(_stream(zstdpool.ipc, max_chunksize=128))
    assert reader.count_rows() == TABLE.num_rows
    assert list(reader) == []


def test_read_stats_equal_pyarrows() -> None:
    def stats(ipc: Any) -> list[tuple[int, ...]]:
        seen = []
        reader = ipc.open_stream(_stream(pyarrow.ipc, max_chunksize=500))
        seen.append(tuple(reader.stats))
        for _ in reader:
            seen.append(tuple(reader.stats))
        file = ipc.open_file(_file(pyarrow.ipc))
        seen.append(tuple(file.stats))
        file.get_batch(0)
        seen.append(tuple(file.stats))
        return seen

    assert stats(zstdpool.ipc) == stats(pyarrow.ipc)


def test_footer_metadata_as_pyarrow_gives_it(ipc: Any) -> None:
    assert ipc.open_file(_file(ipc)).metadata is None
    assert ipc.open_file(_file(ipc, metadata={"k": "v"})).metadata == {b"k": b"v"}


def test_footer_offset(ipc: Any) -> None:
    data = _file(ipc).to_pybytes()
    embedded = data + b"\0" * 64
    reader = ipc.RecordBatchFileReader(embedded, footer_offset=len(data))
    assert reader.read_all().equals(TABLE)
    assert ipc.open_file(pa.py_buffer(embedded), len(data)).read_all().equals(TABLE)


def test_read_pandas_and_iteration(ipc: Any) -> None:
    assert ipc.open_stream(_stream(ipc)).read_pandas().equals(TABLE.to_pandas())
    assert ipc.open_file(_file(ipc)).read_pandas().equals(TABLE.to_pandas())
    batches = list(ipc.open_stream(_stream(ipc, max_chunksize=250)))
    assert pa.Table.from_batches(batches).equals(TABLE) and len(batches) == 4


def _sinks(tmp_path: Path) -> list[tuple[str, Any, Any]]:
    """(name, sink, how to get the bytes back) for each of pyarrow's sink kinds."""
    path = tmp_path / "out.arrow"
    fixed = pa.allocate_buffer(1 << 20)
    return [
        ("BufferOutputStream", pa.BufferOutputStream(), None),
        ("OSFile", pa.OSFile(str(path), "wb"), path),
        ("PythonFile", pa.PythonFile(open(path, "wb")), path),
        ("FixedSizeBufferWriter", pa.FixedSizeBufferWriter(fixed), fixed),
    ]


def test_every_pyarrow_sink(ipc: Any, tmp_path: Path) -> None:
    for name, sink, back in _sinks(tmp_path):
        with ipc.new_stream(sink, TABLE.schema, options=ZSTD) as w:
            w.write_table(TABLE)
        if back is None:
            data = sink.getvalue()
        elif isinstance(back, Path):
            sink.close()
            data = pa.py_buffer(back.read_bytes())
        else:
            data = back
        assert pyarrow.ipc.open_stream(data).read_all().equals(TABLE), name


def test_every_pyarrow_source(ipc: Any, tmp_path: Path) -> None:
    data = _file(ipc)
    path = tmp_path / "in.arrow"
    path.write_bytes(data.to_pybytes())
    for make in (
        lambda: data,
        lambda: pa.BufferReader(data),
        lambda: pa.OSFile(str(path)),
        lambda: pa.PythonFile(open(path, "rb")),
        lambda: pa.memory_map(str(path)),
        lambda: str(path),
    ):
        source = make()
        assert ipc.open_file(source).read_all().equals(TABLE), source
    stream = _stream(ipc)
    path.write_bytes(stream.to_pybytes())
    for source in (stream, pa.BufferReader(stream), pa.memory_map(str(path)), pa.OSFile(str(path))):
        assert ipc.open_stream(source).read_all().equals(TABLE), source


@pytest.mark.parametrize(
    "data",
    [b"", b"\xff\xff\xff\xff\x10\x00\x00\x00garbage!", b"ARROW1\0\0 not really"],
    ids=["empty", "garbage", "magic"],
)
def test_malformed_input_is_arrow_invalid(ipc: Any, data: bytes) -> None:
    with pytest.raises(pa.ArrowInvalid):
        ipc.open_stream(pa.py_buffer(data)).read_all()
    with pytest.raises(pa.ArrowInvalid):
        ipc.open_file(pa.py_buffer(data)).read_all()


def test_truncated_input_is_caught_as_pyarrows_is(ipc: Any) -> None:
    """pyarrow raises ArrowInvalid or, for a body cut short, OSError; code that catches both
    catches zstdpool's, which is always an ArrowInvalid."""
    data = _stream(ipc).to_pybytes()
    for cut in (5, 200, len(data) // 2, len(data) - 9):
        with pytest.raises((pa.ArrowInvalid, OSError)) as info:
            ipc.open_stream(pa.py_buffer(data[:cut])).read_all()
        if ipc is zstdpool.ipc:
            assert isinstance(info.value, pa.ArrowInvalid) and "truncated" in str(info.value)


def test_io_errors_stay_os_errors(ipc: Any, tmp_path: Path) -> None:
    with pytest.raises(OSError):
        ipc.open_file(str(tmp_path / "missing.arrow"))


def test_zstdpool_differs_deliberately() -> None:
    """zstd is the default codec (pyarrow writes uncompressed), metadata V5 only."""
    sink = pa.BufferOutputStream()
    with zstdpool.ipc.new_stream(sink, TABLE.schema) as w:
        w.write_table(TABLE)
    assert zstdpool._zstdpool.inspect_ipc(sink.getvalue())["codecs"] == ["zstd"]
    v4 = pa.ipc.IpcWriteOptions(metadata_version=pa.ipc.MetadataVersion.V4)
    pyarrow.ipc.new_stream(pa.BufferOutputStream(), TABLE.schema, options=v4).close()
    with pytest.raises(zstdpool.ParameterError, match="V5 only"):
        zstdpool.ipc.new_stream(pa.BufferOutputStream(), TABLE.schema, options=v4)
    legacy = pa.ipc.IpcWriteOptions(use_legacy_format=True)
    with pytest.raises(zstdpool.ParameterError, match="0.15"):
        zstdpool.ipc.new_file(pa.BufferOutputStream(), TABLE.schema, options=legacy)


def test_keywords_and_options_must_agree() -> None:
    sink = pa.BufferOutputStream()
    lz4 = pa.ipc.IpcWriteOptions(compression="lz4")
    # A keyword at its default yields to the options; an explicit one that agrees is fine.
    assert zstdpool.ipc.new_stream(sink, TABLE.schema, options=lz4).compression == "lz4"
    assert (
        zstdpool.ipc.new_stream(
            sink, TABLE.schema, options=lz4, compression="lz4_frame"
        ).compression
        == "lz4"
    )
    assert (
        zstdpool.ipc.new_stream(sink, TABLE.schema, options=pa.ipc.IpcWriteOptions()).compression
        is None
    )
    with pytest.raises(zstdpool.ParameterError, match="compression"):
        zstdpool.ipc.new_stream(sink, TABLE.schema, options=lz4, compression=None)
    single = pa.ipc.IpcWriteOptions(use_threads=False)
    with pytest.raises(zstdpool.ParameterError, match="threads"):
        zstdpool.ipc.new_stream(sink, TABLE.schema, options=single, threads=2)
    with pytest.raises(zstdpool.ParameterError, match="threads"):
        zstdpool.ipc.open_stream(
            _stream(zstdpool.ipc), options=pa.ipc.IpcReadOptions(use_threads=False), threads=2
        )
    # The level of a zstd codec is zstdpool's keyword (pyarrow does not expose the one inside
    # IpcWriteOptions).
    assert zstdpool.ipc.new_stream(sink, TABLE.schema, options=ZSTD, level=7).level == 7
    with pytest.raises(TypeError, match="IpcWriteOptions"):
        zstdpool.ipc.new_stream(sink, TABLE.schema, options={"compression": "zstd"})
    with pytest.raises(TypeError, match="IpcReadOptions"):
        zstdpool.ipc.open_stream(_stream(zstdpool.ipc), options=ZSTD)
    with pytest.raises(zstdpool.ParameterError, match="At64Byte"):
        zstdpool.ipc.open_stream(
            _stream(zstdpool.ipc),
            options=pa.ipc.IpcReadOptions(ensure_alignment=pa.ipc.Alignment.At64Byte),
        )


def test_memory_pool_is_accepted_and_checked() -> None:
    data = _stream(zstdpool.ipc)
    assert (
        zstdpool.ipc.open_stream(data, memory_pool=pa.default_memory_pool())
        .read_all()
        .equals(TABLE)
    )
    with pytest.raises(TypeError, match="memory_pool"):
        zstdpool.ipc.open_stream(data, memory_pool="big")


def test_a_file_truncated_under_its_mapping_fails_cleanly(tmp_path: Path) -> None:
    """Reading a memory map goes through its read calls, so a file truncated while mapped
    raises instead of killing the process with SIGBUS (run in a child to see either)."""
    path = tmp_path / "mapped.arrow"
    path.write_bytes(_file(zstdpool.ipc, pa.concat_tables([TABLE] * 50)).to_pybytes())
    code = (
        "import os, sys, pyarrow as pa, zstdpool.ipc as ipc\n"
        "path = sys.argv[1]\n"
        "m = pa.memory_map(path)\n"
        "reader = ipc.open_file(m)\n"
        "os.truncate(path, 4096)\n"
        "try:\n"
        "    reader.read_all()\n"
        "except (ValueError, OSError) as e:\n"
        "    print('refused:', type(e).__name__)\n"
        "else:\n"
        "    print('read')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=120,
    )
    assert result.returncode == 0, (result.returncode, result.stderr)
    assert result.stdout.startswith(("refused:", "read")), result.stdout
    assert os.path.getsize(path) == 4096


def test_the_option_classes_are_pyarrows_under_zstdpool_ipc() -> None:
    """`ipc.IpcWriteOptions(...)` keeps working after `import zstdpool.ipc as ipc`."""
    assert zstdpool.ipc.IpcWriteOptions is pyarrow.ipc.IpcWriteOptions
    assert zstdpool.ipc.IpcReadOptions is pyarrow.ipc.IpcReadOptions
    assert {"IpcWriteOptions", "IpcReadOptions"} <= set(zstdpool.ipc.__all__)
    with pytest.raises(AttributeError, match="no attribute 'Message'"):
        zstdpool.ipc.Message  # noqa: B018
