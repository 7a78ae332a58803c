"""What the readers read from: bytes and buffers, paths, file objects (also slow or
unseekable ones), lazily for streams and by random access for files.
"""

from __future__ import annotations

import io

import pytest
from zstdpool import ipc

from tests.helpers.ipc_reader import (
    Trickle,
    make_source,
    messages,
    read_stream_batches,
    sample_batches,
    table_of,
    write_zstdpool,
)

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


# Ids by type name where repr would show an address, which differs between pytest-xdist's
# workers (each must collect the same ids).
@pytest.mark.parametrize(
    "bad",
    [1, 2.5, None, ["x"], {"a": 1}, object()],
    ids=lambda v: "object" if type(v) is object else repr(v),
)
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
        assert "RecordBatchStreamReader" in repr(r) and "6 columns" in repr(r)
    with ipc.open_file(write_zstdpool(sample_batches(), fmt="file")) as r:
        assert "RecordBatchFileReader" in repr(r) and "4 batches" in repr(r)
