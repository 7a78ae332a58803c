"""Helpers shared by the IPC reader tests (tests/ipc/test_reader_*.py): sample batches,
writers of both libraries, and readers of the messages, buffers and frames of a stream.
"""

from __future__ import annotations

import gc
import io
import pathlib
import struct

import pyarrow as pa
import pyarrow.ipc
import zstdpool
from zstdpool import ipc

from tests.helpers.peers import np

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
LZ4_MAGIC = b"\x04\x22\x4d\x18"
CODECS = [None, "zstd", "lz4"]
WRITERS = ["pyarrow", "zstdpool"]


def leased() -> int:
    gc.collect()
    return zstdpool.pool_stats()["leased"]


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
    whole = table.combine_chunks().to_batches()[0] if n else empty_batch(table.schema)
    batches, start = [], 0
    for size in sizes:
        batches.append(whole.slice(start, size))
        start += size
    return batches


def empty_batch(schema: pa.Schema) -> pa.RecordBatch:
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


def write_zstdpool(
    batches, fmt="stream", compression=None, deltas=False, schema=None, metadata=None
) -> bytes:
    schema = schema if schema is not None else batches[0].schema
    sink = io.BytesIO()
    extra = {"metadata": metadata} if metadata is not None else {}
    new = ipc.new_stream if fmt == "stream" else ipc.new_file
    w = new(sink, schema, compression=compression, dictionary_deltas=deltas, **extra)
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


def fb_field(buf: bytes, table: int, index: int) -> int | None:
    """The position of field `index` of the flatbuffer table at `table`, None if absent."""
    (back,) = struct.unpack_from("<i", buf, table)
    vtable = table - back
    (vtable_len,) = struct.unpack_from("<H", buf, vtable)
    if 4 + 2 * index >= vtable_len:
        return None
    (offset,) = struct.unpack_from("<H", buf, vtable + 4 + 2 * index)
    return table + offset if offset else None


def fb_deref(buf: bytes, at: int) -> int:
    return at + struct.unpack_from("<I", buf, at)[0]


def buffer_list(meta: bytes) -> list[tuple[int, int]]:
    """The (offset, length) of each buffer of a RecordBatch or DictionaryBatch message, read
    from its flatbuffer (Message.header is field 2; DictionaryBatch.data field 1;
    RecordBatch.buffers field 2, a vector of 16-byte structs)."""
    message = fb_deref(meta, 0)
    (header_type,) = struct.unpack_from("<B", meta, fb_field(meta, message, 1))
    header = fb_deref(meta, fb_field(meta, message, 2))
    if header_type == 2:  # DictionaryBatch
        header = fb_deref(meta, fb_field(meta, header, 1))
    vector = fb_deref(meta, fb_field(meta, header, 2))
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


def dictionary_batches():
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


def one_big_buffer(compression="zstd", n=40_000, fmt="stream"):
    """A stream (or file) of one int64 column of `n` values: its data buffer is 8n bytes."""
    batch = pa.record_batch({"a": pa.array(np.arange(n, dtype=np.int64))})
    return batch, write_zstdpool([batch], fmt=fmt, compression=compression)


#: A bug these tests name when they meet it (readers raising pyarrow's errors, not their own).
SCHEMA_EXPORT_BUG = (
    "bug: the reader accepts a schema that it cannot hand to pyarrow; open_stream/open_file "
    "succeed, then reader.schema, next(reader), get_batch and read_all raise whatever the "
    "pyarrow export raises (pyarrow.lib.ArrowInvalid, or a bare Exception 'C Data interface "
    "error: ...') instead of a zstdpool error (IpcError at open)"
)
