"""``filesystem=`` with filesystem objects that are not local (fsspec's memory filesystem,
pyarrow's ``PyFileSystem`` and ``S3FileSystem``) and URIs that fsspec resolves ("memory://"):
every writer and reader, datasets, large files (multipart writes, ranged reads), and
filesystems that fail part-way."""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
import zstdpool
import zstdpool.dataset as zd
import zstdpool.feather as zf
import zstdpool.ipc as zipc
import zstdpool.parquet as zpq
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import MotoServer, Proxy, keys
from .test_store_datasets import by_id, pyarrow_fs, table

fsspec = pytest.importorskip("fsspec")

TABLE = pa.table({"a": list(range(1000)), "b": [f"s{i}" for i in range(1000)]})


@pytest.fixture
def mem() -> Iterator[Any]:
    """fsspec's memory filesystem, under a directory of this test's own (it is one per
    process)."""
    fs = fsspec.filesystem("memory")
    root = "/t" + uuid.uuid4().hex[:12]
    fs.mkdir(root)
    yield fs, root
    fs.rm(root, recursive=True)


def files(fs: Any, root: str) -> list[str]:
    return sorted(p[len(root) + 1 :] for p in fs.find(root))


# Every writer and reader, with a filesystem object: (write, read), each taking the path and
# the keywords that say where it is.
Writer = Callable[[str, dict[str, Any]], None]
Reader = Callable[[str, dict[str, Any]], pa.Table]


def _parquet_writer(path: str, at: dict[str, Any]) -> None:
    with zpq.ParquetWriter(path, TABLE.schema, **at) as w:
        w.write_table(TABLE)


def _ipc_file_writer(path: str, at: dict[str, Any]) -> None:
    with zipc.new_file(path, TABLE.schema, **at) as w:
        w.write_table(TABLE)


def _ipc_stream_writer(path: str, at: dict[str, Any]) -> None:
    with zipc.new_stream(path, TABLE.schema, **at) as w:
        w.write_table(TABLE)


PAIRS: dict[str, tuple[Writer, Reader, Callable[[Any], pa.Table]]] = {
    "parquet.write_table/read_table": (
        lambda p, at: zpq.write_table(TABLE, p, **at),
        lambda p, at: zpq.read_table(p, **at),
        pq.read_table,
    ),
    "ParquetWriter/ParquetFile": (
        _parquet_writer,
        lambda p, at: zpq.ParquetFile(p, **at).read(),
        pq.read_table,
    ),
    "ipc.write_file/open_file": (
        lambda p, at: zipc.write_file(TABLE, p, **at),
        lambda p, at: zipc.open_file(p, **at).read_all(),
        lambda f: pa.ipc.open_file(f).read_all(),
    ),
    "ipc.new_file/read_file": (
        _ipc_file_writer,
        lambda p, at: zipc.read_file(p, **at),
        lambda f: pa.ipc.open_file(f).read_all(),
    ),
    "ipc.write_stream/open_stream": (
        lambda p, at: zipc.write_stream(TABLE, p, **at),
        lambda p, at: zipc.open_stream(p, **at).read_all(),
        lambda f: pa.ipc.open_stream(f).read_all(),
    ),
    "ipc.new_stream/read_stream": (
        _ipc_stream_writer,
        lambda p, at: zipc.read_stream(p, **at),
        lambda f: pa.ipc.open_stream(f).read_all(),
    ),
    "feather": (
        lambda p, at: zf.write_feather(TABLE, p, **at),
        lambda p, at: zf.read_table(p, **at),
        lambda f: pa.ipc.open_file(f).read_all(),
    ),
}


@pytest.mark.parametrize("pair", sorted(PAIRS))
@pytest.mark.parametrize("how", ["fsspec", "pyarrow", "uri"])
def test_every_writer_and_reader_takes_a_filesystem(pair: str, how: str, mem: Any) -> None:
    fs, root = mem
    write, read, read_by_pyarrow = PAIRS[pair]
    path = f"{root}/sub/f.bin"
    at: dict[str, Any] = {
        "fsspec": {"filesystem": fs},
        "pyarrow": {"filesystem": pafs.PyFileSystem(pafs.FSSpecHandler(fs))},
        "uri": {},
    }[how]
    target = "memory:/" + path if how == "uri" else path
    write(target, at)
    assert files(fs, root) == ["sub/f.bin"]
    assert read(target, at).equals(TABLE)
    with fs.open(path, "rb") as f:
        assert read_by_pyarrow(pa.BufferReader(f.read())).equals(TABLE)


def test_datasets_on_a_filesystem_object_read_back_in_pyarrow(mem: Any) -> None:
    fs, root = mem
    t = table(3000, 5)
    written = zd.write_dataset(
        t, f"{root}/ds", partitioning=["part"], partitioning_flavor="hive", filesystem=fs
    )
    assert sorted(f["path"] for f in written) == sorted(f"{root}/{k}" for k in files(fs, root))
    assert len(written) == 5
    pa_fs = pafs.PyFileSystem(pafs.FSSpecHandler(fs))
    theirs = pds.dataset(f"{root}/ds", filesystem=pa_fs, partitioning="hive").to_table()
    assert by_id(theirs).equals(by_id(t))
    ours = zd.dataset(f"{root}/ds", filesystem=fs)
    assert sorted(ours.files) == sorted(f["path"] for f in written)
    assert by_id(ours.to_table()).equals(by_id(t))
    assert zd.dataset("memory:/" + root + "/ds").count_rows() == 3000
    assert (
        zpq.read_table(f"{root}/ds", filesystem=pa_fs, filters=[("part", "=", 2)]).num_rows == 600
    )
    # A list of paths, and what pyarrow wrote.
    pds.write_dataset(t, f"{root}/theirs", format="parquet", filesystem=pa_fs)
    listed = fs.ls(f"{root}/theirs", detail=False)
    assert len(listed) == 1
    assert zd.dataset(listed, filesystem=fs).count_rows() == 3000


def test_the_dataset_scanner_takes_the_readers_filesystem_keyword(mem: Any, tmp_path: Any) -> None:
    # The keywords every reader shares reach the scanner under zstdpool.dataset too: a
    # filesystem object's directory, list of paths, and a local filesystem's path.
    from zstdpool._zstdpool import DatasetScanner

    fs, root = mem
    t = table(600, 3)
    zd.write_dataset(
        t, f"{root}/ds", partitioning=["part"], partitioning_flavor="hive", filesystem=fs
    )
    scanner = DatasetScanner(f"{root}/ds", partitioning="hive", filesystem=fs)
    assert len(scanner.files) == 3
    assert scanner.read().num_rows == 600
    listed = sorted(fs.find(f"{root}/ds"))
    assert DatasetScanner(listed[:2], filesystem=fs).read().num_rows == 400
    zd.write_dataset(t, tmp_path / "local", partitioning=["part"], partitioning_flavor="hive")
    local = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    scanner = DatasetScanner("local", partitioning="hive", filesystem=local)
    assert [f.startswith(str(tmp_path)) for f in scanner.files] == [True] * 3
    assert by_id(scanner.read()).equals(by_id(t))
    with pytest.raises(zstdpool.ParameterError, match="storage_options"):
        DatasetScanner(str(tmp_path / "local"), storage_options={"region": "x"})
    # A list of object store URLs is the store's keys: with a filesystem too, refused as a
    # single URL with one is.
    with pytest.raises(ValueError, match="filesystem"):
        DatasetScanner(["s3://bucket/a.parquet"], filesystem=fs)
    with pytest.raises(ValueError, match="filesystem"):
        DatasetScanner("s3://bucket/a.parquet", filesystem=fs)


def test_existing_data_behaviors_on_a_filesystem_object(mem: Any) -> None:
    fs, root = mem
    t = table(300, 3)
    zd.write_dataset(
        t, f"{root}/ds", partitioning=["part"], partitioning_flavor="hive", filesystem=fs
    )
    with pytest.raises(FileExistsError):
        zd.write_dataset(
            t, f"{root}/ds", partitioning=["part"], partitioning_flavor="hive", filesystem=fs
        )
    fs.pipe(f"{root}/ds/part=1/stale.parquet", b"old")
    fs.pipe(f"{root}/ds/part=9/kept.parquet", b"other")
    zd.write_dataset(
        t.filter(pc.equal(t["part"], 1)),
        f"{root}/ds",
        partitioning=["part"],
        partitioning_flavor="hive",
        filesystem=fs,
        existing_data_behavior="delete_matching",
    )
    assert files(fs, root) == [
        "ds/part=0/part-0.parquet",
        "ds/part=1/part-0.parquet",
        "ds/part=2/part-0.parquet",
        "ds/part=9/kept.parquet",
    ]


class _FailingFile(io.RawIOBase):
    """A file that raises once more than ``limit`` bytes were written to it."""

    def __init__(self, inner: Any, limit: int) -> None:
        self.inner, self.limit, self.written = inner, limit, 0

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        self.written += len(b)
        if self.written > self.limit:
            raise OSError(28, "No space left on device (injected)")
        return int(self.inner.write(b))

    def close(self) -> None:
        if not self.closed:
            self.inner.close()
        super().close()


class _FailingHandler(pafs.FSSpecHandler):
    """fsspec's memory filesystem, where files whose path contains ``marker`` fail after
    ``limit`` bytes."""

    def __init__(self, fs: Any, marker: str, limit: int = 0) -> None:
        super().__init__(fs)
        self.marker, self.limit = marker, limit

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        if self.marker in path:
            return pa.PythonFile(_FailingFile(self.fs.open(path, "wb"), self.limit), mode="w")
        return super().open_output_stream(path, metadata)


def test_a_failing_filesystem_leaves_only_completed_files(mem: Any) -> None:
    fs, root = mem
    pool = zstdpool.ContextPool()
    failing = pafs.PyFileSystem(_FailingHandler(fs, "part=3"))
    with pytest.raises(OSError, match="No space left on device") as raised:
        zd.write_dataset(
            table(3000, 5),
            f"{root}/ds",
            partitioning=["part"],
            partitioning_flavor="hive",
            filesystem=failing,
            pool=pool,
        )
    completed = sorted(f["path"] for f in raised.value.completed_files)  # type: ignore[attr-defined]
    assert completed == [f"{root}/{k}" for k in files(fs, root)]
    assert not any("part=3" in p for p in completed)
    assert pool.stats()["leased"] == 0
    with pytest.raises(OSError, match="No space left on device"):
        zpq.write_table(TABLE, f"{root}/part=3.parquet", filesystem=failing)
    assert "part=3.parquet" not in files(fs, root)


def test_files_of_a_dataset_go_to_a_filesystem_object_several_at_once(mem: Any) -> None:
    """Each file's calls are made on a thread of their own, so a slow filesystem (a remote
    one's latency) is waited for by several files at once, not one after another."""
    import threading
    import time

    fs, root = mem
    lock = threading.Lock()
    active = [0, 0]  # now, most at once

    class Slow(pafs.FSSpecHandler):
        def open_output_stream(self, path: str, metadata: Any) -> Any:
            with lock:
                active[0] += 1
                active[1] = max(active[1], active[0])
            time.sleep(0.05)
            with lock:
                active[0] -= 1
            return super().open_output_stream(path, metadata)

    data = pa.table({"k": [i % 24 for i in range(2400)], "v": list(range(2400))})
    zd.write_dataset(
        data,
        f"{root}/ds",
        partitioning=["k"],
        partitioning_flavor="hive",
        filesystem=pafs.PyFileSystem(Slow(fs)),
    )
    assert len(files(fs, root)) == 24
    # The store's bound is 8 files at once; the runtime's two workers alone gave 2.
    assert active[1] > 2, active


def _big() -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table({"x": rng.integers(0, 2**62, 1_600_000), "y": rng.random(1_600_000)})


def test_large_files_go_in_parts_and_are_read_by_ranges(mem: Any) -> None:
    fs, root = mem
    big = _big()  # 25 MB of random numbers: three parts of 10 MiB
    zpq.write_table(big, f"{root}/big.parquet", filesystem=fs, compression="none")
    assert fs.size(f"{root}/big.parquet") > 20 << 20
    reads: list[tuple[int, int]] = []

    class Counting(pafs.FSSpecHandler):
        def open_input_file(self, path: str) -> Any:
            f = super().open_input_file(path)
            reads.append((0, f.size()))
            return f

    counting = pafs.PyFileSystem(Counting(fs))
    got = zpq.read_table(f"{root}/big.parquet", filesystem=counting, columns=["y"])
    assert got.column("y").equals(big.column("y"))
    assert 1 < len(reads) < 20, "the footer, then the column's pages, by ranges"
    # A write that fails after its first part: the file is removed.
    failing = pafs.PyFileSystem(_FailingHandler(fs, "bad", limit=15 << 20))
    with pytest.raises(OSError, match="No space left on device"):
        zpq.write_table(big, f"{root}/bad.parquet", filesystem=failing, compression="none")
    assert files(fs, root) == ["big.parquet"]


def test_s3_filesystem_objects_through_their_own_api(
    moto: MotoServer, bucket: str, proxy: Proxy
) -> None:
    s3 = pyarrow_fs(moto.endpoint)
    t = table(2000, 4)
    written = zd.write_dataset(
        t, f"{bucket}/ds", partitioning=["part"], partitioning_flavor="hive", filesystem=s3
    )
    assert sorted(f["path"] for f in written) == [
        f"{bucket}/{k}" for k in keys(moto.endpoint, bucket) if k.endswith(".parquet")
    ]
    assert by_id(pds.dataset(f"{bucket}/ds", filesystem=s3, partitioning="hive").to_table()).equals(
        by_id(t)
    )
    assert by_id(zd.dataset(f"{bucket}/ds", filesystem=s3).to_table()).equals(by_id(t))
    zpq.write_table(TABLE, f"{bucket}/one.parquet", filesystem=s3)
    assert zpq.read_table(f"{bucket}/one.parquet", filesystem=s3).equals(TABLE)
    assert pq.read_table(f"{bucket}/one.parquet", filesystem=s3).equals(TABLE)
    with pytest.raises(FileNotFoundError, match="nothing.parquet"):
        zpq.read_table(f"{bucket}/nothing.parquet", filesystem=s3)
    # Through the test proxy too, which passes a HEAD's length on (pyarrow sizes objects by it).
    proxied = pyarrow_fs(proxy.endpoint)
    assert zpq.read_table(f"{bucket}/one.parquet", filesystem=proxied).equals(TABLE)
    assert by_id(zd.dataset(f"{bucket}/ds", filesystem=proxied).to_table()).equals(by_id(t))


def test_bad_filesystems_and_uris_are_named(mem: Any, tmp_path: Any) -> None:
    fs, root = mem
    with pytest.raises(TypeError, match="filesystem must be a pyarrow.fs.FileSystem"):
        zpq.write_table(TABLE, str(tmp_path / "f.parquet"), filesystem=object())
    with pytest.raises(TypeError, match="filesystem must be a pyarrow.fs.FileSystem"):
        zd.dataset(str(tmp_path), filesystem=object())
    with pytest.raises(ValueError, match="storage_options are for URLs"):
        zpq.read_table(f"{root}/x", filesystem=fs, storage_options={"a": 1})
    with pytest.raises(ValueError, match="a filesystem was given too"):
        zpq.read_table("memory://x/y", filesystem=fs)
    with pytest.raises(ValueError, match="nosuchscheme"):
        zpq.read_table("nosuchscheme://x/y")
    with pytest.raises(zstdpool.ParameterError, match="the sink is None"):
        zpq.write_table(TABLE, None, filesystem=fs)
    with pytest.raises(FileNotFoundError, match="nothing.arrow"):
        zipc.open_file(f"{root}/nothing.arrow", filesystem=fs)
    assert files(fs, root) == []
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=25, deadline=None)
@given(
    chunks=st.lists(st.binary(max_size=3000), max_size=12),
    split=st.integers(min_value=1, max_value=5000),
)
def test_bytes_come_back_as_written(chunks: list[bytes], split: int) -> None:
    """An IPC stream of binary values through fsspec's memory filesystem, read whole and in
    batches of ``split`` rows, is what went in."""
    fs = fsspec.filesystem("memory")
    path = "/h" + uuid.uuid4().hex[:12] + "/v.arrows"
    t = pa.table({"v": pa.array(chunks, pa.binary())})
    try:
        local = io.BytesIO()
        for sink, at in ((path, {"filesystem": fs}), (local, {})):
            with zipc.new_stream(sink, t.schema, **at) as w:
                for batch in t.to_batches(max_chunksize=split):
                    w.write_batch(batch)
        assert zipc.read_stream(path, filesystem=fs).equals(t)
        assert fs.cat(path) == local.getvalue(), "the same bytes as to a file object"
    finally:
        fs.rm(path.rsplit("/", 1)[0], recursive=True)
