"""The engine workloads of ``python -m benchmarks``: the ``engines`` group.

pyiceberg's append of iceberg-go's partitioned table (``partition_key`` identity-partitioned:
one data file per partition) into a new table of a SQL catalog over sqlite with a local
warehouse on a tmpfs, through zstdpool's Parquet model (``zstdpool.iceberg``) against
pyiceberg's own writer; the catalog and the table are made before each call, untimed. Both
write zstd at pyiceberg's default level.
"""

from __future__ import annotations

import functools
import itertools
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from benchmarks.harness.data import have_numpy, partitioned_table
from benchmarks.harness.dataset import bench_root
from benchmarks.harness.runner import Contender, Profile, Timed, Workload, register_source

#: (rows, partitions) per profile.
SHAPES: dict[str, tuple[int, int]] = {
    "tiny": (2_000, 10),
    "quick": (100_000, 1000),
    "full": (100_000, 1000),
}


@dataclass(frozen=True)
class AppendCase:
    rows: int
    partitions: int

    @property
    def name(self) -> str:
        return f"iceberg append {self.rows} rows, {self.partitions} partitions"


class FreshTable:
    """An append into a new table: ``before_each`` (untimed) makes the table."""

    def __init__(self, catalog: Any, table: Any, zstdpool: bool) -> None:
        self.catalog, self.data, self.zstdpool = catalog, table, zstdpool
        self.names = (f"ns.t{i}" for i in itertools.count())
        self.table: Any = None

    def before_each(self) -> None:
        self.table = self.catalog.create_table(next(self.names), schema=self.data.schema)
        with self.table.update_spec() as update:
            update.add_identity("partition_key")

    def __call__(self) -> int:
        if self.table is None:
            self.before_each()
        if self.zstdpool:
            import zstdpool.iceberg

            with zstdpool.iceberg.installed():
                self.table.append(self.data)
        else:
            self.table.append(self.data)
        self.table = None
        return int(self.data.num_rows)


def _append(case: AppendCase, zstdpool: bool) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        from pyiceberg.catalog.sql import SqlCatalog

        base = tempfile.mkdtemp(prefix="zstdpool-bench-iceberg-", dir=bench_root())
        stack.callback(shutil.rmtree, base, ignore_errors=True)
        catalog = SqlCatalog(
            "bench", uri=f"sqlite:///{base}/catalog.db", warehouse=f"file://{base}/warehouse"
        )
        catalog.create_namespace("ns")
        table = partitioned_table(case.rows, case.partitions)
        return FreshTable(catalog, table, zstdpool)

    return setup


def _check(case: AppendCase, out: object) -> None:
    if out != case.rows:
        raise AssertionError(f"{out} rows appended, {case.rows} expected")


def append_workload(case: AppendCase) -> Workload:
    req = ("pyiceberg.io.fileformat", "sqlalchemy")
    check = functools.partial(_check, case)
    return Workload(
        name=case.name,
        group="engines",
        description=(
            f"{case.name}: pyiceberg appends iceberg-go's table (identity-partitioned by "
            "partition_key, a data file per partition) to a new table of a SQL catalog over "
            "sqlite, its data files written by zstdpool's Parquet model or pyiceberg's own."
        ),
        contenders=(
            Contender("zstdpool.iceberg (pyiceberg)", _append(case, True), check, requires=req),
            Contender("pyiceberg", _append(case, False), check, requires=req),
        ),
        nbytes=partitioned_table(case.rows, case.partitions).nbytes,
        slow=True,
    )


@register_source
def engine_workloads(profile: Profile) -> Iterator[Workload]:
    """The engine workloads (none without numpy)."""
    if not have_numpy():
        return
    rows, partitions = SHAPES.get(profile.name, SHAPES["quick"])
    yield append_workload(AppendCase(rows, partitions))
