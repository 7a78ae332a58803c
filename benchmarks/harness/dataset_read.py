"""The dataset-reading workloads of ``python -m benchmarks``: the ``dataset_read`` group.

The datasets are those the ``dataset`` group writes (iceberg-go's shape: ``id``, ``ts``,
``partition_key``, ``value``; Hive partitions by ``partition_key``; zstd level 3), written once
by zstdpool (or by pyarrow, for the last workload) on a tmpfs where there is one, then read
whole, with one partition's filter, with a range filter on ``value`` that keeps about 1% of
the rows, and counted. Every contender discovers the directory on each call, as a script
reading a dataset does. ``file system floor`` reads every file's bytes from Python: what the
files alone cost, below which no reader goes.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from benchmarks.harness.data import have_numpy, partitioned_table
from benchmarks.harness.dataset import LEVEL, bench_root
from benchmarks.harness.runner import Contender, Profile, Timed, Workload, register_source

#: (rows, partitions) per profile.
SHAPES: dict[str, tuple[tuple[int, int], ...]] = {
    "tiny": ((2_000, 10),),
    "quick": ((100_000, 1000),),
    "full": ((100_000, 1000), (1_000_000, 1000)),
}

#: ``value`` is uniform over [0, 2**40): below this, about 1% of the rows.
RANGE_LIMIT = (1 << 40) // 100
#: The partition the one-partition reads keep.
PARTITION = 7


@dataclass(frozen=True)
class ReadCase:
    rows: int
    partitions: int
    #: "all", "partition", "range" or "count".
    read: str
    #: Who wrote the dataset: "zstdpool" or "pyarrow".
    writer: str = "zstdpool"

    @property
    def name(self) -> str:
        what = {
            "all": "read all",
            "partition": "one partition",
            "range": "1% by value",
            "count": "count_rows",
        }[self.read]
        by = "" if self.writer == "zstdpool" else f", written by {self.writer}"
        return f"dataset {what}, {self.rows} rows, {self.partitions} partitions{by}"

    def expected_rows(self) -> int:
        import pyarrow.compute as pc

        table = partitioned_table(self.rows, self.partitions)
        if self.read == "partition":
            return int(pc.sum(pc.equal(table.column("partition_key"), PARTITION)).as_py())
        if self.read == "range":
            return int(pc.sum(pc.less(table.column("value"), RANGE_LIMIT)).as_py())
        return self.rows


@functools.cache
def written(rows: int, partitions: int, writer: str) -> str:
    """The dataset's directory, written once per process (removed at exit)."""
    base = tempfile.mkdtemp(prefix="zstdpool-bench-read-", dir=bench_root())
    atexit.register(shutil.rmtree, base, ignore_errors=True)
    out = os.path.join(base, "data")
    table = partitioned_table(rows, partitions)
    if writer == "zstdpool":
        import zstdpool.dataset

        zstdpool.dataset.write_dataset(
            table, out, partitioning=["partition_key"], partitioning_flavor="hive", level=LEVEL
        )
    else:
        import pyarrow.dataset as ds

        fmt = ds.ParquetFileFormat()
        ds.write_dataset(
            table,
            out,
            format=fmt,
            file_options=fmt.make_write_options(compression="zstd", compression_level=LEVEL),
            partitioning=["partition_key"],
            partitioning_flavor="hive",
            max_partitions=100_000,
        )
    return out


def _zstdpool(case: ReadCase) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        import zstdpool.dataset as zd

        d = written(case.rows, case.partitions, case.writer)
        if case.read == "count":
            return lambda: zd.dataset(d).count_rows()
        f: Any = {
            "all": None,
            "partition": [("partition_key", "=", PARTITION)],
            "range": [("value", "<", RANGE_LIMIT)],
        }[case.read]
        return lambda: zd.dataset(d).to_table(filter=f)

    return setup


def _pyarrow(case: ReadCase) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        import pyarrow.compute as pc
        import pyarrow.dataset as ds

        d = written(case.rows, case.partitions, case.writer)
        if case.read == "count":
            return lambda: ds.dataset(d, partitioning="hive").count_rows()
        f: Any = {
            "all": None,
            "partition": pc.field("partition_key") == PARTITION,
            "range": pc.field("value") < RANGE_LIMIT,
        }[case.read]
        return lambda: ds.dataset(d, partitioning="hive").to_table(filter=f)

    return setup


def _polars(case: ReadCase) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        import polars as pl

        d = written(case.rows, case.partitions, case.writer)
        pattern = os.path.join(d, "**", "*.parquet")

        def scan() -> Any:
            return pl.scan_parquet(pattern, hive_partitioning=True)

        if case.read == "count":
            return lambda: scan().select(pl.len()).collect().item()
        if case.read == "all":
            return lambda: scan().collect()
        f = (
            pl.col("partition_key") == PARTITION
            if case.read == "partition"
            else pl.col("value") < RANGE_LIMIT
        )
        return lambda: scan().filter(f).collect()

    return setup


def _zstdpool_polars(case: ReadCase) -> Callable[[ExitStack], Timed]:
    """polars reading through zstdpool (``zstdpool.polars.scan_dataset``), the same query as
    polars' own scan_parquet."""

    def setup(stack: ExitStack) -> Timed:
        import polars as pl
        import zstdpool.polars as zpl

        d = written(case.rows, case.partitions, case.writer)
        if case.read == "count":
            return lambda: zpl.scan_dataset(d).select(pl.len()).collect().item()
        if case.read == "all":
            return lambda: zpl.scan_dataset(d).collect()
        f = (
            pl.col("partition_key") == PARTITION
            if case.read == "partition"
            else pl.col("value") < RANGE_LIMIT
        )
        return lambda: zpl.scan_dataset(d).filter(f).collect()

    return setup


def _duckdb(case: ReadCase) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        import duckdb

        d = written(case.rows, case.partitions, case.writer)
        con = duckdb.connect()
        stack.callback(con.close)
        source = f"read_parquet('{d}/**/*.parquet', hive_partitioning = true)"
        if case.read == "count":
            return lambda: con.sql(f"select count(*) from {source}").fetchall()[0][0]
        where = {
            "all": "",
            "partition": f" where partition_key = {PARTITION}",
            "range": f" where value < {RANGE_LIMIT}",
        }[case.read]
        query = f"select * from {source}{where}"

        def call() -> Any:
            result = con.sql(query)
            # to_arrow_table since duckdb 1.4; fetch_arrow_table before (now deprecated).
            fetch = getattr(result, "to_arrow_table", None) or result.fetch_arrow_table
            return fetch()

        return call

    return setup


def _floor(case: ReadCase) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        d = written(case.rows, case.partitions, case.writer)

        def call() -> int:
            total = 0
            for root, _, names in os.walk(d):
                for name in names:
                    with open(os.path.join(root, name), "rb") as fh:
                        total += len(fh.read())
            return total

        return call

    return setup


def _rows(out: Any) -> int:
    if isinstance(out, int):
        return out
    height = getattr(out, "height", None)
    return int(height if height is not None else out.num_rows)


def check_read(case: ReadCase, out: object) -> None:
    """Raises AssertionError unless the read returned the rows it should."""
    if isinstance(out, int) and case.read != "count":
        return  # the floor returns bytes
    want = case.expected_rows()
    if _rows(out) != want:
        raise AssertionError(f"{_rows(out)} rows read, {want} expected")


def read_workload(case: ReadCase) -> Workload:
    contenders = [
        ("zstdpool", _zstdpool(case), ()),
        ("pyarrow.dataset", _pyarrow(case), ("pyarrow",)),
        ("polars", _polars(case), ("polars",)),
        ("polars via zstdpool.polars", _zstdpool_polars(case), ("polars",)),
        ("duckdb", _duckdb(case), ("duckdb",)),
    ]
    if case.read == "all":
        contenders.append(("file system floor", _floor(case), ()))
    return Workload(
        name=case.name,
        group="dataset_read",
        description=(
            f"{case.name}: a Hive dataset of {case.rows} rows in {case.partitions} partitions "
            f"(iceberg-go's shape, zstd level {LEVEL}), discovered and read on each call."
        ),
        contenders=tuple(
            Contender(label, setup, check=functools.partial(check_read, case), requires=req)
            for label, setup, req in contenders
        ),
        nbytes=partitioned_table(case.rows, case.partitions).nbytes,
        settle=True,
    )


@register_source
def dataset_read_workloads(profile: Profile) -> Iterator[Workload]:
    """The dataset-reading workloads (none without numpy)."""
    if not have_numpy():
        print(
            "note: the dataset workloads need numpy: pip install 'zstdpool[bench]'", file=sys.stderr
        )
        return
    for rows, partitions in SHAPES.get(profile.name, SHAPES["quick"]):
        for read in ("all", "partition", "range", "count"):
            yield read_workload(ReadCase(rows, partitions, read))
    rows, partitions = SHAPES.get(profile.name, SHAPES["quick"])[0]
    yield read_workload(ReadCase(rows, partitions, "all", writer="pyarrow"))
