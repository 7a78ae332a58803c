"""Where the writers write: bytes, paths, file objects, sockets, and sinks that fail, write
partially or accept nothing.
"""

from __future__ import annotations

import io
import pathlib
import socket
import threading

import pyarrow as pa
import pytest
import zstdpool.ipc as zi
from zstdpool.errors import ClosedError, IpcError

from tests.helpers.arrow_data import typed_table
from tests.helpers.ipc_writer import (
    FORMATS,
    INPUT_TABLE,
    THREAD_TIMEOUT,
    assert_tables_equal,
    leased,
    leftovers,
    new_writer,
    pa_read,
    small_table,
    write_one,
)
from tests.helpers.peers import np


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
