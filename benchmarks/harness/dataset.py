"""The partitioned-dataset workloads of ``python -m benchmarks``: the ``dataset`` group.

iceberg-go's partitioned-write benchmark (apache/arrow-go #595): ``id`` int64, ``ts``
timestamp with time zone, ``partition_key`` int32 (``id % partitions``), ``value`` int64,
identity (Hive) partitioning by ``partition_key``, zstd level 3, Parquet and Arrow IPC files.
Every contender writes into an empty directory of its own, emptied before each call outside
the timing, as a new dataset is written. ``file system floor`` is
what the files alone cost: the same directories and the same bytes (zstdpool's files, read
once), each written under a temporary name and renamed into place from Python, as every
writer here does; the ratio to it is how close a writer gets to the file system.

The directories are made on a tmpfs (``/dev/shm``) where there is one, so that the figures
are the libraries' and not a disk's (a small file on a VM's disk costs hundreds of
microseconds, and how much varies with the writeback the previous call left); set
``ZSTDPOOL_BENCH_DIR`` to a directory on a disk to measure there.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchmarks.harness.data import have_numpy, partitioned_table
from benchmarks.harness.runner import (
    Contender,
    Profile,
    Timed,
    Unavailable,
    Workload,
    register_source,
)

if TYPE_CHECKING:
    import pyarrow as pa

#: zstd level of every contender (iceberg-go's benchmark).
LEVEL = 3

#: (rows, partitions) per profile.
SHAPES: dict[str, tuple[tuple[int, int], ...]] = {
    "tiny": ((2_000, 10),),
    "quick": ((100_000, 1000), (100_000, 10)),
    "full": ((100_000, 1000), (1_000_000, 1000), (100_000, 10)),
}


@dataclass(frozen=True)
class DatasetCase:
    rows: int
    partitions: int
    format: str  # "parquet" or "ipc"

    @property
    def name(self) -> str:
        return f"{self.format} {self.rows} rows, {self.partitions} partitions"

    def table(self) -> pa.Table:
        return partitioned_table(self.rows, self.partitions)


def bench_root() -> str | None:
    """Where the datasets are written: ``ZSTDPOOL_BENCH_DIR``, else a tmpfs, else the temp dir."""
    chosen = os.environ.get("ZSTDPOOL_BENCH_DIR")
    if chosen:
        return chosen
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def _directory(stack: ExitStack) -> str:
    base = tempfile.mkdtemp(prefix="zstdpool-bench-dataset-", dir=bench_root())
    stack.callback(shutil.rmtree, base, ignore_errors=True)
    return os.path.join(base, "out")


class FreshDirectory:
    """A call that writes `out` from nothing: ``before_each`` (untimed) removes it."""

    def __init__(self, out: str, write: Callable[[], object]) -> None:
        self.out, self.write = out, write

    def __call__(self) -> object:
        return self.write()

    def before_each(self) -> None:
        shutil.rmtree(self.out, ignore_errors=True)


def _zstdpool(case: DatasetCase) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        import zstdpool.dataset

        table, out = case.table(), _directory(stack)
        return FreshDirectory(
            out,
            functools.partial(
                zstdpool.dataset.write_dataset,
                table,
                out,
                partitioning=["partition_key"],
                partitioning_flavor="hive",
                format=case.format,
                level=LEVEL,
            ),
        )

    return setup


def _pyarrow(case: DatasetCase) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        import pyarrow as pa
        import pyarrow.dataset as ds

        table, out = case.table(), _directory(stack)
        if case.format == "parquet":
            fmt: Any = ds.ParquetFileFormat()
            options = fmt.make_write_options(compression="zstd", compression_level=LEVEL)
        else:
            fmt = ds.IpcFileFormat()
            options = fmt.make_write_options(compression=pa.Codec("zstd", LEVEL))

        def call() -> str:
            ds.write_dataset(
                table,
                out,
                format=fmt,
                file_options=options,
                partitioning=["partition_key"],
                partitioning_flavor="hive",
                max_partitions=100_000,
            )
            return out

        return FreshDirectory(out, call)

    return setup


def _polars(case: DatasetCase) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        import polars as pl

        if case.format != "parquet":
            raise Unavailable("polars writes partitioned datasets of Parquet files only")
        frame, out = pl.from_arrow(case.table()), _directory(stack)
        assert isinstance(frame, pl.DataFrame)

        def call() -> str:
            frame.write_parquet(
                out, compression="zstd", compression_level=LEVEL, partition_by=["partition_key"]
            )
            return out

        return FreshDirectory(out, call)

    return setup


def _floor(case: DatasetCase) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        import zstdpool.dataset

        source, out = _directory(stack), _directory(stack) + "-floor"
        files = zstdpool.dataset.write_dataset(
            case.table(),
            source,
            partitioning=["partition_key"],
            partitioning_flavor="hive",
            format=case.format,
            level=LEVEL,
        )
        contents = []
        for f in files:
            relative = os.path.relpath(f["path"], source)
            with open(f["path"], "rb") as fh:
                contents.append((os.path.join(out, relative), fh.read()))
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)

        def call() -> str:
            for path, data in contents:
                directory = os.path.dirname(path)
                os.makedirs(directory, exist_ok=True)
                temp = os.path.join(directory, ".floor.tmp")
                fd = os.open(temp, flags, 0o666)
                os.write(fd, data)
                os.close(fd)
                os.rename(temp, path)
            return out

        return FreshDirectory(out, call)

    return setup


def check_dataset(case: DatasetCase, out: object) -> None:
    """Raises AssertionError unless pyarrow reads the dataset under ``out`` as the input."""
    import pyarrow.dataset as ds

    assert isinstance(out, (str, list)), out
    path = out if isinstance(out, str) else os.path.dirname(os.path.dirname(out[0]["path"]))
    fmt = "parquet" if case.format == "parquet" else "arrow"
    got = ds.dataset(path, format=fmt, partitioning="hive").to_table()
    want = case.table()
    if got.num_rows != want.num_rows:
        raise AssertionError(f"{got.num_rows} rows read, {want.num_rows} written")
    if got.sort_by("id").column("value") != want.column("value"):
        raise AssertionError("the values read differ from those written")


def _bytes(case: DatasetCase, out: object) -> dict[str, float]:
    path = out if isinstance(out, str) else os.path.dirname(os.path.dirname(out[0]["path"]))  # type: ignore[index]
    total = sum(os.path.getsize(os.path.join(r, n)) for r, _, names in os.walk(path) for n in names)
    return {"bytes": total}


def dataset_workload(case: DatasetCase) -> Workload:
    contenders = [
        ("zstdpool write_dataset", _zstdpool(case), ()),
        ("pyarrow", _pyarrow(case), ("pyarrow",)),
        ("polars", _polars(case), ("polars",)),
        ("file system floor", _floor(case), ()),
    ]
    return Workload(
        name=f"dataset {case.name}",
        group="dataset",
        description=(
            f"Write {case.rows} rows as a Hive dataset of {case.partitions} partitions "
            f"(iceberg-go's shape), zstd level {LEVEL}, {case.format} files, into a directory "
            "emptied before each call. Bytes: the files."
        ),
        contenders=tuple(
            Contender(
                label,
                setup,
                check=functools.partial(check_dataset, case),
                extra=functools.partial(_bytes, case),
                requires=requires,
            )
            for label, setup, requires in contenders
        ),
        nbytes=case.table().nbytes,
    )


#: Files of the dataset compacted, and files it is compacted into, per profile.
COMPACTION: dict[str, tuple[int, int, int]] = {
    "tiny": (2_000, 20, 2),
    "quick": (100_000, 1000, 10),
    "full": (1_000_000, 1000, 10),
}


@functools.cache
def _small_files(rows: int, files: int) -> str:
    """``rows`` rows of the dataset table as ``files`` Parquet files, written by pyarrow,
    for the compaction workload to read."""
    import pyarrow.parquet as pq

    base = tempfile.mkdtemp(prefix="zstdpool-bench-compaction-", dir=bench_root())
    table = partitioned_table(rows, 1000)
    per = max(1, rows // files)
    for i in range(files):
        pq.write_table(
            table.slice(i * per, per),
            os.path.join(base, f"f{i:05}.parquet"),
            compression="zstd",
            compression_level=LEVEL,
        )
    return base


def compaction_workload(rows: int, files: int, into: int) -> Workload:
    """A dataset of many small files read with ``pyarrow.dataset.dataset`` and written back
    as a few large ones: ``write_dataset`` given the pyarrow Dataset, zstdpool's and
    pyarrow's."""
    per_file = rows // into

    def zstdpool_compact(stack: ExitStack) -> Timed:
        import pyarrow.dataset as ds
        import zstdpool.dataset

        source, out = _small_files(rows, files), _directory(stack)
        return FreshDirectory(
            out,
            lambda: zstdpool.dataset.write_dataset(
                ds.dataset(source),
                out,
                max_rows_per_file=per_file,
                max_rows_per_group=per_file,
                level=LEVEL,
            ),
        )

    def pyarrow_compact(stack: ExitStack) -> Timed:
        import pyarrow.dataset as ds

        source, out = _small_files(rows, files), _directory(stack)
        fmt = ds.ParquetFileFormat()
        options = fmt.make_write_options(compression="zstd", compression_level=LEVEL)

        def call() -> str:
            ds.write_dataset(
                ds.dataset(source),
                out,
                format=fmt,
                file_options=options,
                max_rows_per_file=per_file,
                max_rows_per_group=per_file,
            )
            return out

        return FreshDirectory(out, call)

    def check(out: object) -> None:
        import pyarrow.dataset as ds

        path = out if isinstance(out, str) else os.path.dirname(out[0]["path"])  # type: ignore[index]
        got = ds.dataset(path)
        if got.count_rows() != rows or len(got.files) != into:
            raise AssertionError(f"{got.count_rows()} rows in {len(got.files)} files")

    name = f"dataset compaction, {files} files into {into}, {rows} rows"
    return Workload(
        name=name,
        group="dataset",
        description=(
            f"{name}: a pyarrow Dataset of {files} small Parquet files (pyarrow's, zstd level "
            f"{LEVEL}) given to write_dataset and written back as {into} files of "
            f"{per_file} rows, zstd level {LEVEL}."
        ),
        contenders=(
            Contender("zstdpool write_dataset", zstdpool_compact, check, requires=("pyarrow",)),
            Contender("pyarrow", pyarrow_compact, check, requires=("pyarrow",)),
        ),
        nbytes=partitioned_table(rows, 1000).nbytes,
    )


@register_source
def dataset_workloads(profile: Profile) -> Iterator[Workload]:
    """The dataset workloads (none without numpy)."""
    if not have_numpy():
        print(
            "note: the dataset workloads need numpy: pip install 'zstdpool[bench]'", file=sys.stderr
        )
        return
    for rows, partitions in SHAPES.get(profile.name, SHAPES["quick"]):
        for fmt in ("parquet", "ipc"):
            yield dataset_workload(DatasetCase(rows, partitions, fmt))
    yield compaction_workload(*COMPACTION.get(profile.name, COMPACTION["quick"]))
