"""zstdpool.ipc readers: open_stream / open_file / read_stream / read_file.

Round trips against pyarrow (both writing), every source kind, lazy and random access,
zero-copy reads from memory, size limits, hostile input (truncations, byte flips, forged
lengths and frames), the lifecycle of the pooled decompression context, the Arrow C stream
export and threads.
"""

from __future__ import annotations

import gc
import io
import pathlib
import random
import struct
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.ipc
import pytest
import zstdpool
from zstdpool import ipc

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
LZ4_MAGIC = b"\x04\x22\x4d\x18"
CODECS = [None, "zstd", "lz4"]
WRITERS = ["pyarrow", "zstdpool"]


def leased() -> int:
    gc.collect()
    return zstdpool.pool_stats()["leased"]


# --- Data and writers ----------------------------------------------------------------------


def sample_batches(sizes=(300, 0, 250, 7), seed=0) -> list[pa.RecordBatch]:
    """Batches of several types (nulls, strings, a dictionary column, a list column) that
    share one dictionary, so that the file format accepts them too."""
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon"])
    dictionary = pa.array(words)
    indices = rng.integers(0, len(words), n).astype(np.int32)
    table = pa.table(
        {
            "i": pa.array(np.arange(n, dtype=np.int64) // 3),
            "f": pa.array(rng.random(n), mask=rng.random(n) < 0.1),
            "s": pa.array([f"s{i % 17}" if i % 5 else None for i in range(n)]),
            "d": pa.DictionaryArray.from_arrays(pa.array(indices), dictionary),
            "l": pa.array([list(range(i % 4)) for i in range(n)], pa.list_(pa.int32())),
            "b": pa.array(rng.random(n) < 0.5),
        },
        metadata={"origin": "test_ipc_reader"},
    )
    whole = table.combine_chunks().to_batches()[0] if n else _empty_batch(table.schema)
    batches, start = [], 0
    for size in sizes:
        batches.append(whole.slice(start, size))
        start += size
    return batches


def _empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)


def write_pyarrow(batches, fmt="stream", compression=None, deltas=False, schema=None) -> bytes:
    schema = schema if schema is not None else batches[0].schema
    options = pa.ipc.IpcWriteOptions(compression=compression, emit_dictionary_deltas=deltas)
    sink = pa.BufferOutputStream()
    new = pa.ipc.new_stream if fmt == "stream" else pa.ipc.new_file
    with new(sink, schema, options=options) as w:
        for b in batches:
            w.write_batch(b)
    return sink.getvalue().to_pybytes()


def write_zstdpool(batches, fmt="stream", compression=None, deltas=False, schema=None) -> bytes:
    schema = schema if schema is not None else batches[0].schema
    sink = io.BytesIO()
    new = ipc.new_stream if fmt == "stream" else ipc.new_file
    w = new(sink, schema, compression=compression, dictionary_deltas=deltas)
    for b in batches:
        w.write_batch(b)
    w.close()
    return sink.getvalue()


def write(writer, batches, **kw) -> bytes:
    return (write_pyarrow if writer == "pyarrow" else write_zstdpool)(batches, **kw)


def table_of(batches) -> pa.Table:
    return pa.Table.from_batches(batches, schema=batches[0].schema)


def compressible_table(n=200_000) -> pa.Table:
    idx = np.arange(n)
    return pa.table(
        {
            "slow": pa.array(idx // 100, pa.int64()),
            "word": pa.array(np.array(["north", "south", "east", "west"])[idx % 4]),
            "noise": pa.array(np.random.default_rng(3).integers(0, 1 << 20, n)),
        }
    )


def messages(data: bytes) -> list[tuple[str, int, int, int]]:
    """Each message of an IPC stream: (type, start, body start, body length)."""
    out, pos = [], 0
    while pos + 8 <= len(data):
        (n,) = struct.unpack_from("<i", data, pos)
        header = 4
        if n == -1:
            (n,) = struct.unpack_from("<i", data, pos + 4)
            header = 8
        if n == 0:
            break
        msg = pa.ipc.read_message(pa.py_buffer(data[pos:]))
        body_start = pos + header + n
        body_len = msg.body.size if msg.body is not None else 0
        out.append((msg.type, pos, body_start, body_len))
        pos = body_start + body_len
    return out


def _fb_field(buf: bytes, table: int, index: int) -> int | None:
    """The position of field `index` of the flatbuffer table at `table`, None if absent."""
    (back,) = struct.unpack_from("<i", buf, table)
    vtable = table - back
    (vtable_len,) = struct.unpack_from("<H", buf, vtable)
    if 4 + 2 * index >= vtable_len:
        return None
    (offset,) = struct.unpack_from("<H", buf, vtable + 4 + 2 * index)
    return table + offset if offset else None


def _fb_deref(buf: bytes, at: int) -> int:
    return at + struct.unpack_from("<I", buf, at)[0]


def buffer_list(meta: bytes) -> list[tuple[int, int]]:
    """The (offset, length) of each buffer of a RecordBatch or DictionaryBatch message, read
    from its flatbuffer (Message.header is field 2; DictionaryBatch.data field 1;
    RecordBatch.buffers field 2, a vector of 16-byte structs)."""
    message = _fb_deref(meta, 0)
    (header_type,) = struct.unpack_from("<B", meta, _fb_field(meta, message, 1))
    header = _fb_deref(meta, _fb_field(meta, message, 2))
    if header_type == 2:  # DictionaryBatch
        header = _fb_deref(meta, _fb_field(meta, header, 1))
    vector = _fb_deref(meta, _fb_field(meta, header, 2))
    (count,) = struct.unpack_from("<I", meta, vector)
    return [struct.unpack_from("<qq", meta, vector + 4 + 16 * i) for i in range(count)]


def frames(data: bytes, magic=ZSTD_MAGIC) -> list[tuple[int, int, int]]:
    """(batch number, prefix offset, frame offset) of each compressed buffer (a frame that
    starts with `magic`) of an IPC stream; the batch number is -1 for dictionaries."""
    out, batch = [], 0
    for kind, start, body, _ in messages(data):
        if kind not in ("record batch", "dictionary"):
            continue
        meta = pa.ipc.read_message(pa.py_buffer(data[start:])).metadata.to_pybytes()
        for offset, length in buffer_list(meta):
            at = body + offset + 8
            if length > 8 and data[at : at + 4] == magic:
                out.append((batch if kind == "record batch" else -1, at - 8, at))
        batch += kind == "record batch"
    return out


def buffer_number(stream: bytes, prefix: int) -> int:
    """The index, in its message's buffer list, of the buffer whose prefix is at `prefix`."""
    for _, start, body, length in messages(stream):
        if body <= prefix < body + length:
            msg = pa.ipc.read_message(pa.py_buffer(stream[start:]))
            spans = buffer_list(msg.metadata.to_pybytes())
            # Empty buffers may share the offset of the next one: match a non-empty buffer.
            return next(i for i, (o, n) in enumerate(spans) if o == prefix - body and n > 0)
    raise AssertionError("prefix outside every body")


def zstd_block_header(data: bytes, frame: int) -> int:
    """The offset of a zstd frame's first block header (after the frame header)."""
    fhd = data[frame + 4]
    single_segment = (fhd >> 5) & 1
    fcs = [1 if single_segment else 0, 2, 4, 8][fhd >> 6]
    did = [0, 1, 2, 4][fhd & 3]
    return frame + 4 + 1 + (0 if single_segment else 1) + did + fcs


def patched(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    b = bytearray(data)
    struct.pack_into(fmt, b, offset, value)
    return bytes(b)


def read_stream_batches(data, **kw) -> list[pa.RecordBatch]:
    with ipc.open_stream(data, **kw) as r:
        return list(r)


# --- Round trips ---------------------------------------------------------------------------


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
    """Every type of tests/_arrow_data.py (when that module is there), written by pyarrow
    with zstd, read by zstdpool."""
    try:
        from _arrow_data import typed_table
    except ImportError:
        pytest.skip("tests/_arrow_data.py is not available")
    table = typed_table(60, seed=5)
    batches = table.to_batches(max_chunksize=25)
    data = write_pyarrow(batches, fmt=fmt, compression="zstd", schema=table.schema)
    got = ipc.read_stream(data) if fmt == "stream" else ipc.read_file(data)
    got.validate(full=True)
    reader = pa.ipc.open_stream(data) if fmt == "stream" else pa.ipc.open_file(data)
    assert got.equals(reader.read_all(), check_metadata=True)


def _dictionary_batches():
    """Three batches whose dictionary grows (a delta), then is replaced."""
    first = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int32()), pa.array(["a", "b"]))
    grown = pa.DictionaryArray.from_arrays(
        pa.array([0, 2, 3], pa.int32()), pa.array(["a", "b", "c", "d"])
    )
    replaced = pa.DictionaryArray.from_arrays(pa.array([1, 0], pa.int32()), pa.array(["z", "y"]))
    return [
        pa.record_batch({"d": d, "n": pa.array(range(len(d)), pa.int16())})
        for d in (first, grown, replaced)
    ]


@pytest.mark.parametrize("compression", CODECS, ids=str)
@pytest.mark.parametrize("deltas", [False, True], ids=["replacements", "deltas"])
def test_stream_dictionary_deltas_and_replacements(deltas, compression):
    batches = _dictionary_batches()
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
    batches = _dictionary_batches()
    data = write_zstdpool(batches, compression=compression, deltas=True)
    expected = pa.ipc.open_stream(data).read_all()
    assert expected.equals(table_of(batches))
    assert ipc.read_stream(data).equals(expected)
    for g, b in zip(read_stream_batches(data), batches, strict=True):
        assert g.equals(b)


@pytest.mark.parametrize("compression", CODECS, ids=str)
def test_file_dictionary_deltas(compression):
    batches = _dictionary_batches()[:2]
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
    with ipc.open_file(sink.getvalue()) as r:
        assert r.metadata == {"k": "v", "ü": "✓"}
    with ipc.open_file(write_pyarrow(batches, fmt="file")) as r:
        assert r.metadata == {}


# --- Sources -------------------------------------------------------------------------------


class PathLike:
    def __init__(self, path):
        self.path = path

    def __fspath__(self):
        return str(self.path)


class Trickle(io.RawIOBase):
    """A raw binary stream that returns at most `step` bytes a call (as sockets do)."""

    def __init__(self, data: bytes, step: int = 7):
        self._data = io.BytesIO(data)
        self._step = step
        self.bytes_read = 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def seek(self, offset, whence=0):
        return self._data.seek(offset, whence)

    def tell(self):
        return self._data.tell()

    def readinto(self, b):
        chunk = self._data.read(min(len(b), self._step))
        b[: len(chunk)] = chunk
        self.bytes_read += len(chunk)
        return len(chunk)


SOURCE_KINDS = [
    "bytes",
    "bytearray",
    "memoryview",
    "numpy",
    "pa.Buffer",
    "str",
    "pathlib",
    "PathLike",
    "BytesIO",
    "open file",
    "unbuffered file",
    "trickle",
]


def make_source(kind: str, data: bytes, tmp_path: pathlib.Path):
    path = tmp_path / "data.arrow"
    path.write_bytes(data)
    if kind == "bytes":
        return data
    if kind == "bytearray":
        return bytearray(data)
    if kind == "memoryview":
        return memoryview(data)
    if kind == "numpy":
        return np.frombuffer(data, dtype=np.uint8).copy()
    if kind == "pa.Buffer":
        return pa.py_buffer(data)
    if kind == "str":
        return str(path)
    if kind == "pathlib":
        return path
    if kind == "PathLike":
        return PathLike(path)
    if kind == "BytesIO":
        return io.BytesIO(data)
    if kind == "open file":
        return open(path, "rb")  # noqa: SIM115 - closed by the test
    if kind == "unbuffered file":
        return open(path, "rb", buffering=0)  # noqa: SIM115
    if kind == "trickle":
        return Trickle(data)
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", SOURCE_KINDS)
def test_stream_sources(kind, tmp_path):
    batches = sample_batches()
    data = write_zstdpool(batches, compression="zstd")
    source = make_source(kind, data, tmp_path)
    try:
        assert ipc.read_stream(source).equals(table_of(batches))
        if hasattr(source, "seek"):
            source.seek(0)
        got = read_stream_batches(source)
        assert [b.num_rows for b in got] == [b.num_rows for b in batches]
    finally:
        if hasattr(source, "close"):
            source.close()


@pytest.mark.parametrize("kind", SOURCE_KINDS)
def test_file_sources(kind, tmp_path):
    batches = sample_batches()
    data = write_zstdpool(batches, fmt="file", compression="zstd")
    source = make_source(kind, data, tmp_path)
    try:
        with ipc.open_file(source) as r:
            assert r.get_batch(-1).equals(batches[-1])
            assert r.get_batch(0).equals(batches[0])
            assert r.read_all().equals(table_of(batches))
        assert ipc.read_file(source).equals(table_of(batches))
    finally:
        if hasattr(source, "close"):
            source.close()


def test_non_contiguous_buffer_is_refused():
    data = write_zstdpool(sample_batches())
    with pytest.raises(BufferError, match="contiguous"):
        ipc.open_stream(memoryview(data + data)[::2])


@pytest.mark.parametrize("bad", [1, 2.5, None, ["x"], {"a": 1}, object()], ids=repr)
@pytest.mark.parametrize("opener", [ipc.open_stream, ipc.open_file, ipc.read_stream, ipc.read_file])
def test_non_sources_raise_type_error(opener, bad):
    with pytest.raises(TypeError, match="source must be"):
        opener(bad)


@pytest.mark.parametrize("opener", [ipc.open_stream, ipc.open_file])
def test_missing_path_and_directory(opener, tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        opener(tmp_path / "nope")
    with pytest.raises(IsADirectoryError):
        opener(tmp_path)


def test_stream_is_read_lazily():
    """Iteration yields batches one by one: after each, the source has been read through that
    batch's message and not through the next one's."""
    batches = sample_batches(sizes=(100, 100, 100, 100))
    data = write_zstdpool(batches, compression="zstd")
    ends = [body + n for kind, _, body, n in messages(data) if kind == "record batch"]
    source = Trickle(data, step=1 << 20)
    with ipc.open_stream(source) as r:
        assert source.tell() < ends[0]  # the schema only
        for i, expected in enumerate(batches):
            assert next(r).equals(expected)
            assert ends[i] <= source.tell() < (ends + [len(data) + 1])[i + 1], f"batch {i}"
        with pytest.raises(StopIteration):
            next(r)


def test_file_random_access_reads_only_what_it_needs():
    batches = sample_batches(sizes=(200,) * 8)
    data = write_zstdpool(batches, fmt="file", compression="zstd")
    source = Trickle(data, step=1 << 20)
    with ipc.open_file(source) as r:
        opened = source.bytes_read
        assert r.get_batch(5).equals(batches[5])
        one = source.bytes_read - opened
        assert one < len(data) / 4, (one, len(data))
        assert r.get_batch(-1).equals(batches[-1])
        assert r.get_batch(-8).equals(batches[0])


@pytest.mark.parametrize("index", [8, 9, 100, -9, -100, 2**40, -(2**40)])
def test_get_batch_out_of_range(index):
    data = write_zstdpool(sample_batches(sizes=(3,) * 8), fmt="file")
    with ipc.open_file(data) as r, pytest.raises(IndexError, match="out of range"):
        r.get_batch(index)


def test_get_batch_index_type():
    with ipc.open_file(write_zstdpool(sample_batches(), fmt="file")) as r:
        with pytest.raises(TypeError):
            r.get_batch("0")
        with pytest.raises(OverflowError):
            r.get_batch(2**70)


def test_file_without_seek_is_refused():
    data = write_zstdpool(sample_batches(), fmt="file")

    class ReadOnly:
        def __init__(self):
            self._b = io.BytesIO(data)

        def read(self, n=-1):
            return self._b.read(n)

    with pytest.raises(TypeError, match="seekable"):
        ipc.open_file(ReadOnly())

    class Unseekable(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, b):
            return 0

    with pytest.raises(TypeError, match="seekable"):
        ipc.open_file(Unseekable())


def test_stream_from_an_object_with_read_only():
    batches = sample_batches()
    data = write_zstdpool(batches, compression="lz4")

    class ReadOnly:
        def __init__(self):
            self._b = io.BytesIO(data)

        def read(self, n=-1):
            return self._b.read(n)

    assert ipc.read_stream(ReadOnly()).equals(table_of(batches))


def test_read_pandas():
    batches = sample_batches()
    data = write_zstdpool(batches, compression="zstd")
    expected = table_of(batches).to_pandas()
    with ipc.open_stream(data) as r:
        assert r.read_pandas().equals(expected)
    with ipc.open_file(write_zstdpool(batches, fmt="file")) as r:
        assert r.read_pandas().equals(expected)


def test_repr():
    data = write_zstdpool(sample_batches())
    with ipc.open_stream(data) as r:
        assert "IpcStreamReader" in repr(r) and "6 columns" in repr(r)
    with ipc.open_file(write_zstdpool(sample_batches(), fmt="file")) as r:
        assert "IpcFileReader" in repr(r) and "4 batches" in repr(r)


# --- Zero copy -----------------------------------------------------------------------------


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


# --- Limits --------------------------------------------------------------------------------


def _one_big_buffer(compression="zstd", n=40_000, fmt="stream"):
    """A stream (or file) of one int64 column of `n` values: its data buffer is 8n bytes."""
    batch = pa.record_batch({"a": pa.array(np.arange(n, dtype=np.int64))})
    return batch, write_zstdpool([batch], fmt=fmt, compression=compression)


@pytest.mark.parametrize("fmt", ["stream", "file"])
@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_max_buffer_size(compression, fmt):
    batch, data = _one_big_buffer(compression, fmt=fmt)
    size = 8 * batch.num_rows
    read = ipc.read_stream if fmt == "stream" else ipc.read_file
    with pytest.raises(zstdpool.OutputLimitError, match=rf"max_buffer_size \({size - 1} bytes\)"):
        read(data, max_buffer_size=size - 1)
    assert read(data, max_buffer_size=size).column(0).chunk(0).equals(batch.column(0))


@pytest.mark.parametrize("fmt", ["stream", "file"])
@pytest.mark.parametrize("compression", [None, "zstd", "lz4"], ids=str)
def test_max_batch_size(compression, fmt):
    batch, data = _one_big_buffer(compression, fmt=fmt)
    size = 8 * batch.num_rows
    read = ipc.read_stream if fmt == "stream" else ipc.read_file
    with pytest.raises(zstdpool.OutputLimitError, match="max_batch_size") as info:
        read(data, max_batch_size=size - 1)
    assert "record batch 0" in str(info.value)
    # The limit counts the batch's uncompressed buffers (with padding), nothing else.
    assert read(data, max_batch_size=size).num_rows == batch.num_rows


def test_max_batch_size_bounds_message_headers():
    data = write_zstdpool(sample_batches())
    with pytest.raises(zstdpool.OutputLimitError, match="message header.*max_batch_size"):
        ipc.open_stream(data, max_batch_size=16)


def test_max_batch_size_counts_all_buffers_together():
    """Each buffer under max_buffer_size, together over max_batch_size."""
    n = 20_000
    batch = pa.record_batch({f"c{i}": pa.array(np.arange(n, dtype=np.int64)) for i in range(4)})
    data = write_zstdpool([batch], compression="zstd")
    with pytest.raises(zstdpool.OutputLimitError, match="max_batch_size"):
        ipc.read_stream(data, max_buffer_size=8 * n, max_batch_size=3 * 8 * n)
    assert ipc.read_stream(data, max_buffer_size=8 * n, max_batch_size=4 * 8 * n).num_rows == n


def test_default_limits_accept_normal_data():
    table = compressible_table(300_000)
    for codec in CODECS:
        data = ipc.write_stream(table, compression=codec)
        assert ipc.read_stream(data).equals(table)
        assert ipc.read_stream(data, max_buffer_size=None, max_batch_size=None).equals(table)


@pytest.mark.parametrize("declared", [1 << 40, (1 << 63) - 1, 1 << 31])
@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_huge_declared_size_is_refused_before_allocating(compression, declared):
    """A prefix that declares terabytes is refused by the limit, not by a failed (or, worse, a
    successful) allocation."""
    _, data = _one_big_buffer(compression)
    magic = ZSTD_MAGIC if compression == "zstd" else LZ4_MAGIC
    (_, prefix, _), *_ = frames(data, magic)
    with pytest.raises(zstdpool.OutputLimitError, match=rf"declares {declared} bytes.*max_buffer"):
        ipc.read_stream(patched(data, prefix, "<q", declared))


def test_zstd_frame_size_is_checked_before_allocating_even_with_no_limits():
    """With the limits out of the way, a prefix that disagrees with the zstd frame's own
    content size is still caught before anything is allocated."""
    _, data = _one_big_buffer("zstd")
    (_, prefix, _), *_ = frames(data)
    with pytest.raises(zstdpool.DecompressionError, match="frame holds 320000 bytes"):
        ipc.read_stream(
            patched(data, prefix, "<q", 1 << 45), max_buffer_size=1 << 62, max_batch_size=1 << 62
        )


def test_zero_threads_is_a_parameter_error():
    stream = write_zstdpool(sample_batches())
    file = write_zstdpool(sample_batches(), fmt="file")
    for opener, data in [
        (ipc.open_stream, stream),
        (ipc.read_stream, stream),
        (ipc.open_file, file),
        (ipc.read_file, file),
    ]:
        with pytest.raises(zstdpool.ParameterError, match="threads"):
            opener(data, threads=0)


# --- Hostile input -------------------------------------------------------------------------


def small_hostile_sample():
    """Several small batches with a dictionary column and strings, that compress (so that the
    body holds real zstd frames): a stream of a few KB."""
    return sample_batches(sizes=(40, 0, 30, 25), seed=7)


def _read_or_error(data: bytes, fmt: str, how: str):
    """Reads `data` fully; returns the batches, or the zstdpool error. Any other exception
    propagates (and fails the test)."""
    try:
        if fmt == "stream":
            with ipc.open_stream(data) as r:
                _ = r.schema
                batches = list(r)
        else:
            with ipc.open_file(data) as r:
                _ = r.schema, r.metadata
                batches = [r.get_batch(i) for i in reversed(range(len(r)))][::-1]
    except zstdpool.ZstdError as e:
        return e
    except Exception as e:
        known = ("C Data interface error", "Invalid or unsupported format string")
        hint = " (the known bug of SCHEMA_EXPORT_BUG)" if any(k in str(e) for k in known) else ""
        raise AssertionError(f"{how}: {type(e).__name__}: {e}{hint}") from e
    for i, b in enumerate(batches):
        try:
            b.validate(full=True)
        except Exception as e:
            raise AssertionError(f"{how}: batch {i} is invalid: {e}") from e
    return batches


def _assert_prefix(batches, expected, how):
    assert len(batches) <= len(expected), how
    for i, (g, e) in enumerate(zip(batches, expected, strict=False)):
        assert g.equals(e), f"{how}: batch {i} differs"


@pytest.mark.parametrize(
    "writer, sample",
    [("pyarrow", "sample"), ("zstdpool", "sample"), ("pyarrow", "deltas"), ("zstdpool", "deltas")],
)
def test_every_truncation_of_a_stream(writer, sample):
    if sample == "sample":
        expected = small_hostile_sample()
        data = write(writer, expected, compression="zstd")
        assert 1000 < len(data) < 8000, len(data)
        assert frames(data), "the sample must hold zstd frames"
    else:  # a dictionary that grows (a delta), then is replaced
        expected = _dictionary_batches()
        data = write(writer, expected, compression="zstd", deltas=True)
    whole = 0
    for cut in range(len(data)):
        got = _read_or_error(data[:cut], "stream", f"cut at {cut}")
        if not isinstance(got, Exception):
            _assert_prefix(got, expected, f"cut at {cut}")
            whole += len(got) == len(expected)
    assert whole >= 1  # the cut that only drops the end-of-stream marker
    assert leased() == 0


def test_truncations_through_a_file_object():
    expected = small_hostile_sample()
    data = write_zstdpool(expected, compression="zstd")
    for cut in range(0, len(data), 5):
        try:
            got = read_stream_batches(io.BytesIO(data[:cut]))
        except zstdpool.ZstdError:
            continue
        _assert_prefix(got, expected, f"cut at {cut}")


@pytest.mark.parametrize("writer", WRITERS)
def test_every_truncation_of_a_file(writer):
    expected = small_hostile_sample()
    data = write(writer, expected, fmt="file", compression="zstd")
    for cut in range(len(data)):
        got = _read_or_error(data[:cut], "file", f"cut at {cut}")
        assert isinstance(got, zstdpool.IpcError), f"cut at {cut}: {got!r}"
    assert leased() == 0


def _flips(data: bytes, seed: int, count: int):
    """`count` corruptions of `data`: mostly one byte xor-ed, some several bytes."""
    rng = random.Random(seed)
    for k in range(count):
        bad = bytearray(data)
        spots = [rng.randrange(len(data)) for _ in range(1 if k % 4 else rng.randint(2, 6))]
        for at in spots:
            bad[at] ^= rng.choice([0x01, 0x80, 0xFF, rng.randint(1, 255)])
        yield spots, bytes(bad)


@pytest.mark.parametrize("fmt", ["stream", "file"])
@pytest.mark.parametrize("compression", ["zstd", "lz4", None], ids=str)
def test_random_byte_flips(fmt, compression):
    expected = small_hostile_sample()
    data = write_zstdpool(expected, fmt=fmt, compression=compression)
    outcomes = {"table": 0, "error": 0}
    seed = 10 * ["stream", "file"].index(fmt) + CODECS.index(compression)
    for spots, bad in _flips(data, seed=seed, count=300):
        got = _read_or_error(bad, fmt, f"flips at {spots}")
        outcomes["error" if isinstance(got, Exception) else "table"] += 1
    assert outcomes["error"] > 0
    assert leased() == 0


def test_random_byte_flips_pyarrow_written_zstd():
    expected = small_hostile_sample()
    for fmt in ("stream", "file"):
        data = write_pyarrow(expected, fmt=fmt, compression="zstd")
        for spots, bad in _flips(data, seed=11, count=200):
            _read_or_error(bad, fmt, f"{fmt}: flips at {spots}")


def test_zstd_content_size_disagreeing_with_prefix():
    expected = small_hostile_sample()
    data = write_zstdpool(expected, compression="zstd")
    for _, prefix, _ in frames(data):
        (n,) = struct.unpack_from("<q", data, prefix)
        for wrong in (n - 1, n + 1, n + 8, 0):
            with pytest.raises(zstdpool.DecompressionError, match="prefix declares"):
                ipc.read_stream(patched(data, prefix, "<q", wrong))
    assert leased() == 0


@pytest.mark.parametrize("fmt", ["stream", "file"])
def test_corrupt_zstd_frame_names_batch_and_buffer(fmt):
    batches = sample_batches(sizes=(500, 500, 500))
    data = write_zstdpool(batches, fmt=fmt, compression="zstd")
    offset = 8 if fmt == "file" else 0  # a file's messages follow "ARROW1\0\0"
    messages_part = data[offset:]
    prefix, frame = next((p, f) for b, p, f in frames(messages_part) if b == 1)
    bad = bytearray(data)
    bad[offset + zstd_block_header(messages_part, frame)] |= 0b110  # block type 3: reserved
    pattern = rf"record batch 1: buffer {buffer_number(messages_part, prefix)}: .*corrupt"
    if fmt == "stream":
        with ipc.open_stream(bytes(bad)) as r:
            assert next(r).equals(batches[0])  # batch 0 is intact and read first
            with pytest.raises(zstdpool.DecompressionError, match=pattern):
                next(r)
            assert leased() == 0  # an error ends the reader and returns its context
            assert next(r, None) is None
    else:
        with ipc.open_file(bytes(bad)) as r:
            assert r.get_batch(2).equals(batches[2])
            assert r.get_batch(0).equals(batches[0])
            with pytest.raises(zstdpool.DecompressionError, match=pattern):
                r.get_batch(1)
            assert r.get_batch(-1).equals(batches[2])  # the file reader reads on


def test_corrupt_lz4_frame():
    batch, data = _one_big_buffer("lz4")
    (_, _, frame), *_ = frames(data, LZ4_MAGIC)
    bad = bytearray(data)
    for i in range(frame + 12, frame + 40):
        bad[i] ^= 0x5A
    with pytest.raises(zstdpool.DecompressionError, match="record batch 0: buffer"):
        ipc.read_stream(bytes(bad))
    (n,) = struct.unpack_from("<q", data, frame - 8)
    with pytest.raises(zstdpool.DecompressionError):
        ipc.read_stream(patched(data, frame - 8, "<q", n + 8))


def test_corrupt_dictionary_frame():
    batches = sample_batches(sizes=(50,), seed=2)
    # A dictionary big enough to compress.
    words = pa.array([f"word-{i:05d}" for i in range(2000)])
    d = pa.DictionaryArray.from_arrays(pa.array(np.arange(50, dtype=np.int32)), words)
    batch = pa.record_batch({"d": d, "i": batches[0].column(0)})
    for fmt in ("stream", "file"):
        data = write_zstdpool([batch], fmt=fmt, compression="zstd")
        offset = 8 if fmt == "file" else 0
        messages_part = data[offset:]
        prefix, frame = next((p, f) for b, p, f in frames(messages_part) if b == -1)
        bad = bytearray(data)
        bad[offset + zstd_block_header(messages_part, frame)] |= 0b110
        read = ipc.read_stream if fmt == "stream" else ipc.read_file
        number = buffer_number(messages_part, prefix)
        with pytest.raises(zstdpool.DecompressionError, match=f"buffer {number}: ") as info:
            read(bytes(bad))
        if fmt == "file":
            assert "dictionary 0" in str(info.value)


def _message_body_length_field(data: bytes, start: int) -> int:
    """The position of Message.bodyLength (field 3) of the message framed at `start`."""
    (n,) = struct.unpack_from("<i", data, start)
    meta_start = start + (8 if n == -1 else 4)
    meta = data[meta_start:]
    return meta_start + _fb_field(meta, _fb_deref(meta, 0), 3)


@pytest.mark.parametrize("declared", [1 << 31, (4 << 30) - 8, (4 << 30) + 8, -8])
@pytest.mark.parametrize("source", ["bytes", "BytesIO"])
def test_huge_body_length_on_a_short_input(source, declared):
    """A message that declares gigabytes of body on a small input: refused (by the limit, or
    as truncated input) without reserving the declared size."""
    batches = sample_batches()
    data = write_zstdpool(batches, compression="zstd")
    _, start, _, _ = next(m for m in messages(data) if m[0] == "record batch")
    bad = patched(data, _message_body_length_field(data, start), "<q", declared)
    src = bad if source == "bytes" else io.BytesIO(bad)
    error = zstdpool.OutputLimitError if declared > 4 << 30 else zstdpool.IpcError
    with ipc.open_stream(src) as r, pytest.raises(error):
        list(r)
    # A lower limit turns each positive one into an OutputLimitError.
    if declared > 0:
        src = bad if source == "bytes" else io.BytesIO(bad)
        with pytest.raises(zstdpool.OutputLimitError, match="max_batch_size"):
            ipc.read_stream(src, max_batch_size=1 << 20)


def test_trailing_bytes_after_the_end_of_stream_marker():
    batches = sample_batches()
    data = write_zstdpool(batches, compression="zstd")
    assert ipc.read_stream(data + b"trailing garbage").equals(table_of(batches))


def test_second_schema_message():
    batches = sample_batches()
    data = write_zstdpool(batches)
    (_, start, body, length), (_, second, _, _) = messages(data)[:2]
    schema_message = data[start : body + length]
    bad = data[:second] + schema_message + data[second:]
    with ipc.open_stream(bad) as r, pytest.raises(zstdpool.IpcError, match="second schema"):
        next(r)


def _footer_blocks(data: bytes) -> tuple[list[int], list[int]]:
    """The positions of the footer's dictionary and record batch Block structs (offset i64,
    metaDataLength i32, padding, bodyLength i64)."""
    (footer_len,) = struct.unpack_from("<i", data, len(data) - 10)
    footer_start = len(data) - 10 - footer_len
    footer = data[footer_start:]
    table = _fb_deref(footer, 0)
    out = []
    for field in (2, 3):  # Footer.dictionaries, Footer.recordBatches
        at = _fb_field(footer, table, field)
        if at is None:
            out.append([])
            continue
        vector = _fb_deref(footer, at)
        (count,) = struct.unpack_from("<I", footer, vector)
        out.append([footer_start + vector + 4 + 24 * i for i in range(count)])
    return out[0], out[1]


@pytest.mark.parametrize(
    "field, value",
    [
        ("offset", 1 << 40),
        ("offset", -8),
        ("offset", 0),
        ("metaDataLength", -1),
        ("metaDataLength", 1 << 30),
        ("bodyLength", -1),
        ("bodyLength", 1 << 40),
        ("bodyLength", 0),
    ],
)
def test_footer_block_that_lies(field, value):
    batches = sample_batches()
    data = write_zstdpool(batches, fmt="file", compression="zstd")
    dictionaries, records = _footer_blocks(data)
    assert len(dictionaries) == 1 and len(records) == 4
    layout = {"offset": (0, "<q"), "metaDataLength": (8, "<i"), "bodyLength": (16, "<q")}
    at, fmt = layout[field]
    bad = patched(data, records[2] + at, fmt, value)
    with ipc.open_file(bad) as r:
        assert r.get_batch(0).equals(batches[0])
        with pytest.raises(zstdpool.IpcError, match="record batch 2"):
            r.get_batch(2)
        assert r.get_batch(3).equals(batches[3])
    # The dictionary's block: every batch needs it.
    bad = patched(data, dictionaries[0] + at, fmt, value)
    with ipc.open_file(bad) as r, pytest.raises(zstdpool.IpcError, match="dictionary 0"):
        r.get_batch(0)


@pytest.mark.parametrize("where", ["head", "tail"])
def test_bad_magic_for_open_file(where):
    data = bytearray(write_zstdpool(sample_batches(), fmt="file"))
    at = 0 if where == "head" else len(data) - 6
    data[at : at + 6] = b"ARROW2"
    with pytest.raises(zstdpool.IpcError, match="magic"):
        ipc.open_file(bytes(data))


def test_bad_footer_length():
    data = bytearray(write_zstdpool(sample_batches(), fmt="file"))
    for length in (-1, len(data), 2**31 - 1):
        struct.pack_into("<i", data, len(data) - 10, length)
        with pytest.raises(zstdpool.IpcError, match="footer"):
            ipc.open_file(bytes(data))


def test_stream_to_open_file_and_file_to_open_stream():
    batches = sample_batches()
    stream = write_zstdpool(batches, compression="zstd")
    file = write_zstdpool(batches, fmt="file", compression="zstd")
    with pytest.raises(zstdpool.IpcError, match="open_stream"):
        ipc.open_file(stream)
    with pytest.raises(zstdpool.IpcError):
        ipc.read_file(stream)
    with pytest.raises(zstdpool.IpcError):
        ipc.open_stream(file)
    with pytest.raises(zstdpool.IpcError):
        ipc.read_stream(io.BytesIO(file))


@pytest.mark.parametrize("size", [0, 1, 3, 4, 7, 8, 17, 100, 1000, 5000])
def test_non_ipc_input(size):
    rng = random.Random(size)
    for _ in range(20 if size else 1):
        junk = rng.randbytes(size)
        for opener in (ipc.open_stream, ipc.open_file, ipc.read_stream, ipc.read_file):
            with pytest.raises(zstdpool.IpcError):
                opener(junk)
    for text in (b"ARROW1", b"ARROW1\0\0ARROW1", b"\xff\xff\xff\xff", b"\xff\xff\xff\xff\0\0\0\0"):
        with pytest.raises(zstdpool.IpcError):
            ipc.read_stream(text)
        with pytest.raises(zstdpool.IpcError):
            ipc.read_file(text)


SCHEMA_EXPORT_BUG = (
    "bug: the reader accepts a schema that it cannot hand to pyarrow; open_stream/open_file "
    "succeed, then reader.schema, next(reader), get_batch and read_all raise whatever the "
    "pyarrow export raises (pyarrow.lib.ArrowInvalid, or a bare Exception 'C Data interface "
    "error: ...') instead of a zstdpool error (IpcError at open)"
)


def _schema_message_field_type(data: bytes, meta_start: int) -> int:
    """The position of the first field's type table in the schema message at `meta_start`."""
    meta = data[meta_start:]
    message = _fb_deref(meta, 0)
    schema = _fb_deref(meta, _fb_field(meta, message, 2))
    fields = _fb_deref(meta, _fb_field(meta, schema, 1))
    field = _fb_deref(meta, fields + 4)
    return meta_start + _fb_deref(meta, _fb_field(meta, field, 3))


def _decimal_precision_zero() -> bytes:
    """A stream of decimal128(1, 0) values whose schema says precision 0 (invalid: pyarrow
    refuses it with 'Decimal precision out of range [1, 38]: 0')."""
    table = pa.table({"x": pa.array([1, 2], pa.decimal128(1, 0))})
    data = bytearray(write_pyarrow(table.to_batches()))
    # The schema message's flatbuffer follows the continuation marker and length.
    type_table = _schema_message_field_type(bytes(data), 8)
    precision = _fb_field(bytes(data), type_table, 0)  # Decimal.precision
    assert struct.unpack_from("<i", data, precision) == (1,)
    struct.pack_into("<i", data, precision, 0)
    return bytes(data)


class SchemaExportBug(Exception):
    """The known bug above, recognized by its message (so that other failures fail)."""


def _read_everything(data: bytes, fmt: str):
    """Every way to get at `data`'s schema and batches; returns the table. Raises
    SchemaExportBug for the known bug, zstdpool errors as they are."""
    try:
        if fmt == "stream":
            with ipc.open_stream(data) as r:
                _ = r.schema
                list(r)
            return ipc.read_stream(data)
        with ipc.open_file(data) as r:
            _ = r.schema
            [r.get_batch(i) for i in range(len(r))]
        return ipc.read_file(data)
    except zstdpool.ZstdError:
        raise
    except Exception as e:
        known = ("C Data interface error", "Invalid or unsupported format string")
        if any(k in str(e) for k in known):
            raise SchemaExportBug(f"{type(e).__module__}.{type(e).__qualname__}: {e}") from e
        raise


def test_invalid_decimal_precision_is_an_ipc_error():
    """A pyarrow-written stream of decimal128(1, 0) with the schema's precision set to 0 (as in
    arrow-testing's data/arrow-ipc-stream/crash-5e88bae6...) is refused with an IpcError at
    open, as pyarrow refuses it."""
    with pytest.raises(zstdpool.IpcError):
        _read_everything(_decimal_precision_zero(), "stream")


@pytest.mark.parametrize("fmt", ["stream", "file"])
def test_field_name_with_a_nul_byte(fmt):
    """pa.table({"a\\x00b": [1, 2, 3]}) written by pyarrow, which reads it back. The Arrow C
    data interface cannot carry the name, so zstdpool must refuse it at open with its own
    error (never pyarrow's, and never a bare Exception later)."""
    table = pa.table({"a\x00b": [1, 2, 3]})
    data = write_pyarrow(table.to_batches(), fmt=fmt)
    if fmt == "stream":
        assert pa.ipc.open_stream(data).read_all().equals(table)  # pyarrow reads it back
        ways = (ipc.open_stream, ipc.read_stream)
    else:
        assert pa.ipc.open_file(data).read_all().equals(table)
        ways = (ipc.open_file, ipc.read_file)
    for read in ways:
        with pytest.raises(zstdpool.IpcError, match="C data interface"):
            read(data)


class Boom(Exception):
    pass


class FailingReader(io.RawIOBase):
    """Reads `data` but raises Boom once `fail_after` bytes have been read (or on seek)."""

    def __init__(self, data, fail_after, fail_seek=False):
        self._b = io.BytesIO(data)
        self._fail_after = fail_after
        self._fail_seek = fail_seek

    def readable(self):
        return True

    def seekable(self):
        return True

    def seek(self, offset, whence=0):
        if self._fail_seek:
            raise Boom("seek failed")
        return self._b.seek(offset, whence)

    def readinto(self, b):
        if self._b.tell() >= self._fail_after:
            raise Boom(f"read failed at {self._b.tell()}")
        chunk = self._b.read(min(len(b), self._fail_after - self._b.tell()))
        b[: len(chunk)] = chunk
        return len(chunk)


def test_file_object_exceptions_propagate():
    batches = sample_batches()
    data = write_zstdpool(batches, compression="zstd")
    ends = [body + n for kind, _, body, n in messages(data) if kind == "record batch"]
    with pytest.raises(Boom):
        ipc.open_stream(FailingReader(data, 0))
    with pytest.raises(Boom):
        ipc.read_stream(FailingReader(data, ends[1] + 3))
    with ipc.open_stream(FailingReader(data, ends[1])) as r:
        assert next(r).equals(batches[0])
        assert next(r).equals(batches[1])
        with pytest.raises(Boom, match="read failed"):
            next(r)
    assert leased() == 0
    file = write_zstdpool(batches, fmt="file", compression="zstd")
    with pytest.raises(Boom):
        ipc.open_file(FailingReader(file, 10**9, fail_seek=True))
    with pytest.raises(Boom):
        ipc.read_file(FailingReader(file, len(file) // 2))
    assert leased() == 0


def test_read_returning_text_is_an_os_error():
    class Text:
        def read(self, n=-1):
            return "ARROW1"

    with pytest.raises(OSError, match="str"):
        ipc.open_stream(Text())


# --- Lifecycle -----------------------------------------------------------------------------


@pytest.fixture
def compressed():
    """Batches whose buffers compress (so that reading leases a decompression context)."""
    table = compressible_table(30_000)
    batches = table.to_batches(max_chunksize=10_000)
    return batches, write_zstdpool(batches, compression="zstd")


def test_context_is_leased_while_reading_and_returned_at_the_end(compressed):
    batches, data = compressed
    assert leased() == 0
    reader = ipc.open_stream(data, threads=1)
    next(reader)
    assert leased() == 1
    assert reader.read_all().num_rows == sum(b.num_rows for b in batches[1:])
    assert leased() == 0
    with pytest.raises(StopIteration):
        reader.read_next_batch()
    assert next(reader, None) is None  # exhausted, not closed
    assert not reader.closed
    reader.close()
    assert reader.closed


def test_context_returns_on_close(compressed):
    _, data = compressed
    reader = ipc.open_stream(data)
    next(reader)
    reader.close()
    assert leased() == 0
    reader.close()  # idempotent


def test_context_returns_after_an_error_mid_stream(compressed):
    _, data = compressed
    _, prefix, _ = frames(data)[-1]
    bad = patched(data, prefix, "<q", 1)
    with ipc.open_stream(bad, threads=1) as reader:
        next(reader)
        assert leased() == 1
        with pytest.raises(zstdpool.DecompressionError):
            list(reader)
        assert leased() == 0


def test_context_returns_when_the_with_block_raises(compressed):
    _, data = compressed
    with pytest.raises(KeyError), ipc.open_stream(data) as reader:
        next(reader)
        raise KeyError("boom")
    assert reader.closed
    assert leased() == 0
    file = write_zstdpool(compressed[0], fmt="file", compression="zstd")
    with pytest.raises(KeyError), ipc.open_file(file, threads=1) as f:
        f.get_batch(0)
        assert leased() == 1
        raise KeyError("boom")
    assert f.closed
    assert leased() == 0


def test_context_returns_when_an_unexhausted_reader_is_collected(compressed):
    batches, data = compressed
    reader = ipc.open_stream(data, threads=1)
    next(reader)
    file = write_zstdpool(batches, fmt="file", compression="zstd")
    file_reader = ipc.open_file(file, threads=1)
    file_reader.get_batch(1)
    it = iter(file_reader)
    next(it)
    assert leased() == 2
    del reader, file_reader, it
    assert leased() == 0


def test_file_reader_keeps_its_context_between_batches(compressed):
    batches, _ = compressed
    file = write_zstdpool(batches, fmt="file", compression="zstd")
    with ipc.open_file(file, threads=1) as r:
        r.read_all()
        assert leased() == 1  # kept for the next get_batch
        r.get_batch(0)
        assert leased() == 1
    assert leased() == 0


def test_private_pool(compressed):
    _, data = compressed
    pool = zstdpool.ContextPool()
    with ipc.open_stream(data, pool=pool, threads=1) as r:
        next(r)
        assert pool.stats()["leased"] == 1
        assert zstdpool.pool_stats()["leased"] == 0
    assert pool.stats()["leased"] == 0
    assert (
        ipc.read_file(
            write_zstdpool(compressed[0], fmt="file", compression="zstd"), pool=pool
        ).num_rows
        == 30_000
    )
    assert pool.stats()["leased"] == 0 and pool.stats()["created"] >= 1


def test_use_after_close_raises_closed_error(compressed):
    batches, data = compressed
    reader = ipc.open_stream(data)
    reader.close()
    for use in (
        lambda: next(reader),
        reader.read_next_batch,
        reader.read_all,
        reader.read_pandas,
        reader.__arrow_c_stream__,
        lambda: pa.table(reader),
        reader.__enter__,
    ):
        with pytest.raises(zstdpool.ClosedError, match="closed"):
            use()
    assert reader.schema.equals(batches[0].schema)
    file_reader = ipc.open_file(write_zstdpool(batches, fmt="file"))
    file_reader.close()
    for use in (
        lambda: file_reader.get_batch(0),
        file_reader.read_all,
        lambda: list(file_reader),
        lambda: file_reader.metadata,
        file_reader.__enter__,
    ):
        with pytest.raises(zstdpool.ClosedError):
            use()


def test_closed_error_is_a_value_error():
    assert issubclass(zstdpool.ClosedError, ValueError)
    for cls in (zstdpool.IpcError, zstdpool.DecompressionError, zstdpool.OutputLimitError):
        assert issubclass(cls, zstdpool.ZstdError) and issubclass(cls, ValueError)


def test_busy_reader_and_close_while_busy(compressed):
    """One reader, two threads: the second gets BusyError; close() from it takes effect when
    the running call ends, and the context comes back."""
    batches, data = compressed
    entered, release = threading.Event(), threading.Event()

    class Blocking(io.RawIOBase):
        def __init__(self):
            self._b = io.BytesIO(data)
            self.block = False

        def readable(self):
            return True

        def readinto(self, b):
            if self.block:
                entered.set()
                release.wait(10)
            chunk = self._b.read(len(b))
            b[: len(chunk)] = chunk
            return len(chunk)

    source = Blocking()
    reader = ipc.open_stream(source)
    next(reader)
    source.block = True
    results = []
    worker = threading.Thread(target=lambda: results.append(reader.read_all()))
    worker.start()
    try:
        assert entered.wait(10)
        with pytest.raises(zstdpool.BusyError):
            next(reader)
        reader.close()
        assert reader.closed
    finally:
        release.set()
        worker.join(10)
    assert results and results[0].num_rows == sum(b.num_rows for b in batches[1:])
    with pytest.raises(zstdpool.ClosedError):
        next(reader)
    assert leased() == 0


# --- Arrow C stream export -----------------------------------------------------------------


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


# --- Threads -------------------------------------------------------------------------------


def test_threads_give_equal_tables():
    table = compressible_table(1_500_000)
    data = ipc.write_stream(table, compression="zstd")
    one = ipc.read_stream(data, threads=1)
    two = ipc.read_stream(data, threads=2)
    assert one.equals(two)
    assert one.equals(table)
    file = ipc.write_file(table, compression="zstd")
    assert ipc.read_file(file, threads=2).equals(ipc.read_file(file, threads=1))


def _large_batch_with(bad: str) -> pa.RecordBatch:
    """A batch of 2 MiB of valid columns and one string column that is invalid as `bad` says
    (pyarrow writes it without validating)."""
    n = 200_000
    rng = np.random.default_rng(3)
    offsets = np.arange(n + 1, dtype=np.int32) * 4
    data = bytearray(rng.integers(97, 123, 4 * n, dtype=np.uint8).tobytes())
    if bad == "utf8":
        data[4 * (n // 2)] = 0xFF
    elif bad == "offsets":
        offsets[n // 2] = offsets[n // 2 + 1] + 1  # decreasing in the middle
    strings = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(bytes(data)))
    return pa.record_batch(
        {
            "i": pa.array(np.arange(n, dtype=np.int64)),
            "f": pa.array(rng.random(n)),
            "s": strings,
        }
    )


@pytest.mark.parametrize("bad", ["utf8", "offsets"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("fmt", ["stream", "file"])
def test_invalid_values_in_a_large_batch_are_refused_whatever_the_threads(bad, threads, fmt):
    # Batches are decoded unvalidated and then validated column by column, a large one on
    # several threads: one thread or two, they must refuse what a full validation refuses.
    batch = _large_batch_with(bad)
    assert batch.nbytes > 2 << 20
    data = write_pyarrow([batch], fmt=fmt, compression="zstd")
    read = ipc.read_stream if fmt == "stream" else ipc.read_file
    with pytest.raises(zstdpool.IpcError, match="(?i)utf-8|utf8|offset") as raised:
        read(data, threads=threads)
    assert "column 2 ('s')" in str(raised.value)
    assert "Invalid argument error" not in str(raised.value)
    assert leased() == 0
    good = _large_batch_with("none")
    assert read(write_pyarrow([good], fmt=fmt, compression="zstd"), threads=threads).equals(
        pa.Table.from_batches([good])
    )


def test_sixteen_threads_read_shared_bytes():
    batches = compressible_table(60_000).to_batches(max_chunksize=20_000)
    stream = write_zstdpool(batches, compression="zstd")
    file = write_zstdpool(batches, fmt="file", compression="lz4")
    expected = table_of(batches)
    barrier = threading.Barrier(16)

    def read(i):
        barrier.wait(30)
        if i % 2:
            with ipc.open_file(file, threads=1 + i % 3) as r:
                return pa.Table.from_batches([r.get_batch(j) for j in range(len(r))])
        with ipc.open_stream(stream, threads=1 + i % 3) as r:
            return pa.Table.from_batches(list(r), schema=r.schema)

    with ThreadPoolExecutor(16) as pool:
        tables = list(pool.map(read, range(16)))
    assert all(t.equals(expected) for t in tables)
    assert leased() == 0
