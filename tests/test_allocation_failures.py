"""Allocation failures: each reader, given an input that needs a large allocation (or, for
datasets, many small ones), runs under a sweep of address-space limits (RLIMIT_AS) from below
to above what the read needs. At every
limit it either reads the data or raises MemoryError (or a zstdpool error that says the memory
ran out); the process never dies by a signal, as Rust's infallible allocations would make it
(SIGABRT, "memory allocation of N bytes failed").

Each read runs in a child forked from a process that has imported everything and read the
input once, so that the limit is set a known distance above what that process already maps.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.feather
import pyarrow.parquet as pq
import pytest
import zstdpool

from tests.helpers.env import subprocess_env

FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))

# A page of this size is what the Parquet reader aborted on under limits 150-250 MB above the
# process's size: the sweep reaches from below one copy of it to above three.
PAGE_MIB = 140
SWEEP_MIB = list(range(0, 3 * PAGE_MIB + 120, 30))

# Forks a child per limit; prints "<extra MiB> <outcome>" per child, where the outcome is
# "read", "MemoryError", another exception's name, or "signal <n>".
SWEEP = """
import os, resource, sys
import zstdpool, zstdpool.dataset, zstdpool.ipc, zstdpool.parquet

path, warm_path, reader = sys.argv[1], sys.argv[2], sys.argv[3]

def read(data):
    if reader == "parquet":
        return zstdpool.parquet.read_table(data).num_rows
    if reader == "parquet-batches":
        f = zstdpool.parquet.ParquetFile(data)
        return sum(b.num_rows for b in f.iter_batches(batch_size=16))
    if reader == "ipc":
        return zstdpool.ipc.open_stream(data).read_all().num_rows
    if reader == "codec":
        return len(zstdpool.decompress(data, max_output_size=1 << 31))
    if reader.startswith("dataset-"):
        _, how, fmt = reader.split("-")
        ds = zstdpool.dataset.dataset(data, format=fmt, partitioning=None)
        if how == "table":
            return ds.to_table().num_rows
        if how == "batches":
            return sum(b.num_rows for b in ds.to_batches())
        return ds.count_rows(filter=[("x", ">", 10.0)])
    if reader == "abort" and os.getpid() != parent:
        os.abort()
    return 0

parent = os.getpid()
# Warmed on a small input of the same kind: imports done and the pool's contexts made, but no
# memory left over from a large read for the next one to reuse.
def load(path):
    # A file's bytes; a directory (a dataset) as its path.
    return path if os.path.isdir(path) else open(path, "rb").read()

read(load(warm_path))
data = load(path)

def mapped():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")

for extra in map(int, sys.argv[4:]):
    pid = os.fork()
    if pid == 0:
        limit = mapped() + extra * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        try:
            read(data)
            outcome = "read"
        except MemoryError:
            outcome = "MemoryError"
        except BaseException as e:
            outcome = type(e).__name__ + (
                "(memory)" if "alloc" in str(e) or "memory" in str(e).lower() else ""
            )
        os.write(1, f"{extra} {outcome}\\n".encode())
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        print(extra, "signal", os.WTERMSIG(status), flush=True)
"""


def sweep(
    tmp_path: Path,
    reader: str,
    write: Callable[[pa.Table, Path], object],
    table: Callable[[], pa.Table] | None = None,
    warm: pa.Table | None = None,
) -> dict[int, str]:
    """The outcome at each limit of the sweep, reading what `write` wrote of `table` (by
    default one with one large page), after a warm-up on what it wrote of `warm` (by default
    a small table of one binary value)."""
    big, small = tmp_path / "big", tmp_path / "small"
    write((table or one_big_page)(), big)
    write(warm if warm is not None else pa.table({"b": pa.array([b"x"], pa.binary())}), small)
    result = subprocess.run(
        [sys.executable, "-c", SWEEP, str(big), str(small), reader, *map(str, SWEEP_MIB)],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    outcomes = dict(line.split(" ", 1) for line in result.stdout.splitlines() if line.strip())
    return {int(k): v for k, v in outcomes.items()}


def check(outcomes: dict[int, str], *, reaches_below: bool = True) -> None:
    signalled = {k: v for k, v in outcomes.items() if v.startswith("signal")}
    assert not signalled, f"killed by a signal at these extra MiB: {signalled} (all: {outcomes})"
    assert set(outcomes) == set(SWEEP_MIB), outcomes
    # Below what the read needs it fails cleanly (where the sweep can reach below it); well
    # above, it reads.
    if reaches_below:
        assert outcomes[SWEEP_MIB[0]] != "read", outcomes
    assert outcomes[SWEEP_MIB[-1]] == "read", outcomes
    for extra, outcome in outcomes.items():
        assert outcome in ("read", "MemoryError") or outcome.endswith("(memory)"), (
            extra,
            outcome,
        )


def one_big_page() -> pa.Table:
    # Compressible, so that the file is small and every codec is quick, but not constant.
    value = bytes(range(256)) * 4096
    return pa.table({"b": pa.array([value] * PAGE_MIB, pa.binary())})


@pytest.mark.parametrize("codec", ["zstd", "snappy", "gzip", "brotli", "lz4"])
def test_the_parquet_reader_never_aborts_on_a_large_page(tmp_path: Path, codec: str) -> None:
    def write(table: pa.Table, path: Path) -> None:
        # One page for the column: no dictionary, and a data page as large as the column.
        pq.write_table(
            table,
            path,
            compression=codec,
            use_dictionary=False,
            data_page_size=1 << 30,
            write_statistics=False,
        )

    outcomes = sweep(tmp_path, "parquet", write)
    column = pq.ParquetFile(tmp_path / "big").metadata.row_group(0).column(0)
    assert column.total_uncompressed_size > PAGE_MIB << 20
    check(outcomes)


def test_the_parquet_batch_reader_never_aborts(tmp_path: Path) -> None:
    def write(table: pa.Table, path: Path) -> None:
        pq.write_table(table, path, use_dictionary=False, data_page_size=1 << 30)

    check(sweep(tmp_path, "parquet-batches", write))


def one_value_repeated() -> pa.Table:
    """PAGE_MIB rows of one 1 MiB value, as a dictionary of that value: written with its
    dictionary or as DELTA_BYTE_ARRAY (each value the whole of the one before as its prefix),
    a file of a few kilobytes whose values take PAGE_MIB MiB."""
    value = pa.array([bytes(range(256)) * 4096], pa.binary())
    indices = pa.array([0] * PAGE_MIB, pa.int32())
    return pa.table({"b": pa.DictionaryArray.from_arrays(indices, value)})


@pytest.mark.parametrize("reader", ["parquet", "parquet-batches"])
@pytest.mark.parametrize("encoding", ["dictionary", "delta"])
def test_the_parquet_reader_never_aborts_on_values_that_expand(
    tmp_path: Path, reader: str, encoding: str
) -> None:
    """Pages far smaller than the values they decode to: the reader's page and decode
    reservations see only the pages, and the crate builds the values infallibly."""

    def write(table: pa.Table, path: Path) -> None:
        if encoding == "delta":
            table = table.cast(pa.schema([("b", pa.binary())]))
            options = {"use_dictionary": False, "column_encoding": {"b": "DELTA_BYTE_ARRAY"}}
        else:
            options = {"use_dictionary": True}
        # Without the Arrow schema, the column is read as binary, its values built.
        pq.write_table(table, path, store_schema=False, **options)

    outcomes = sweep(tmp_path, reader, write, one_value_repeated)
    assert (tmp_path / "big").stat().st_size < 1 << 20
    check(outcomes)


def test_the_ipc_reader_never_aborts_on_a_large_body(tmp_path: Path) -> None:
    def write(table: pa.Table, path: Path) -> None:
        options = pa.ipc.IpcWriteOptions(compression="zstd")
        with (
            pa.OSFile(str(path), "wb") as f,
            pa.ipc.new_stream(f, table.schema, options=options) as w,
        ):
            w.write_table(table)

    check(sweep(tmp_path, "ipc", write))


def test_the_codec_never_aborts_on_a_large_frame(tmp_path: Path) -> None:
    def write(table: pa.Table, path: Path) -> None:
        path.write_bytes(zstdpool.compress(b"".join(table.column(0).to_pylist())))

    # The output is a Python bytes object: on a free-threaded CPython its allocator
    # (mimalloc) serves it from address space reserved before the limit, which no limit then
    # takes away, so the sweep cannot reach below what the read needs there.
    check(sweep(tmp_path, "codec", write), reaches_below=not FREE_THREADED)


def many_small_files() -> pa.Table:
    """1,000,000 rows of three columns, written as 1,000 files of 1,000 rows each: no one
    file's read asks for enough memory to meet a limit, so the many small allocations around
    them did, and aborted the process."""
    n = 1_000_000
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "s": pa.array([f"v{i % 1000}" for i in range(n)]),
            "x": pa.array([i / 3 for i in range(n)]),
        }
    )


@pytest.mark.parametrize("read", ["table", "batches", "count"])
@pytest.mark.parametrize("fmt", ["parquet", "ipc"])
def test_a_dataset_of_many_files_never_aborts(tmp_path: Path, read: str, fmt: str) -> None:
    def write(table: pa.Table, path: Path) -> None:
        path.mkdir()
        per_file = max(1, table.num_rows // 1000)
        for i, start in enumerate(range(0, table.num_rows, per_file)):
            part = table.slice(start, per_file)
            if fmt == "parquet":
                pq.write_table(part, path / f"f{i:04}.parquet")
            else:
                pa.feather.write_feather(part, path / f"f{i:04}.arrow", compression="zstd")

    outcomes = sweep(
        tmp_path, f"dataset-{read}-{fmt}", write, many_small_files, warm=many_small_files()[:1]
    )
    assert len(list((tmp_path / "big").iterdir())) == 1000
    # Counting reads footers, and what statistics leave: it may count at every limit.
    check(outcomes, reaches_below=read != "count")


def test_the_sweep_reports_a_child_killed_by_a_signal(tmp_path: Path) -> None:
    outcomes = sweep(tmp_path, "abort", lambda table, path: path.write_bytes(b""))
    assert outcomes == {extra: f"signal {int(signal.SIGABRT)}" for extra in SWEEP_MIB}
    with pytest.raises(AssertionError, match="killed by a signal"):
        check(outcomes)
