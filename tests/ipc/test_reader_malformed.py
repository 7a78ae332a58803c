"""Malformed input: messages and footers that lie, input that is not Arrow IPC, schemas
that cannot reach pyarrow, and file objects that fail, refused with zstdpool's errors.
"""

from __future__ import annotations

import io
import random
import struct

import pyarrow as pa
import pyarrow.ipc
import pytest
import zstdpool
from zstdpool import ipc

from tests.helpers.ipc_reader import (
    fb_deref,
    fb_field,
    leased,
    messages,
    patched,
    sample_batches,
    table_of,
    write_pyarrow,
    write_zstdpool,
)


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
    table = fb_deref(footer, 0)
    out = []
    for field in (2, 3):  # Footer.dictionaries, Footer.recordBatches
        at = fb_field(footer, table, field)
        if at is None:
            out.append([])
            continue
        vector = fb_deref(footer, at)
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


def _schema_message_field_type(data: bytes, meta_start: int) -> int:
    """The position of the first field's type table in the schema message at `meta_start`."""
    meta = data[meta_start:]
    message = fb_deref(meta, 0)
    schema = fb_deref(meta, fb_field(meta, message, 2))
    fields = fb_deref(meta, fb_field(meta, schema, 1))
    field = fb_deref(meta, fields + 4)
    return meta_start + fb_deref(meta, fb_field(meta, field, 3))


def _decimal_precision_zero() -> bytes:
    """A stream of decimal128(1, 0) values whose schema says precision 0 (invalid: pyarrow
    refuses it with 'Decimal precision out of range [1, 38]: 0')."""
    table = pa.table({"x": pa.array([1, 2], pa.decimal128(1, 0))})
    data = bytearray(write_pyarrow(table.to_batches()))
    # The schema message's flatbuffer follows the continuation marker and length.
    type_table = _schema_message_field_type(bytes(data), 8)
    precision = fb_field(bytes(data), type_table, 0)  # Decimal.precision
    assert struct.unpack_from("<i", data, precision) == (1,)
    struct.pack_into("<i", data, precision, 0)
    return bytes(data)


class SchemaExportBug(Exception):
    """The known bug of SCHEMA_EXPORT_BUG (tests/helpers/ipc_reader.py), recognized by its
    message (so that other failures fail)."""


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
    """A column named "a\\x00b", written by pyarrow, which reads it back. The Arrow C data
    interface cannot carry the name; zstdpool hands the column over under a placeholder and
    renames it, so the name comes back whole. A nested field's name cannot be restored that
    way: it is refused at open with zstdpool's own error (never pyarrow's, never cut)."""
    table = pa.table({"a\x00b": [1, 2, 3], "a": [4, 5, 6]})
    nested = pa.table({"s": pa.array([{"a\x00b": 1}])})
    if fmt == "stream":
        ways = (ipc.open_stream, ipc.read_stream)
    else:
        ways = (ipc.open_file, ipc.read_file)
    data = write_pyarrow(table.to_batches(), fmt=fmt)
    for read in ways:
        got = read(data)
        got = got if isinstance(got, pa.Table) else got.read_all()
        assert got.equals(table) and got.schema.names == ["a\x00b", "a"]
    data = write_pyarrow(nested.to_batches(), fmt=fmt)
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
