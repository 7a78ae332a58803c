"""The engine workloads of ``python -m benchmarks``: the ``engines`` group.

pyiceberg's append of iceberg-go's partitioned table (``partition_key`` identity-partitioned:
one data file per partition) into a new table of a SQL catalog over sqlite with a local
warehouse on a tmpfs, through zstdpool's Parquet model (``zstdpool.iceberg``) against
pyiceberg's own writer; the catalog and the table are made before each call, untimed. Both
write zstd at pyiceberg's default level.

Ray Data on a local Ray of two CPUs (started once, untimed): a partitioned write of the same
table, spread over write tasks, through ``zstdpool.ray`` against ``Dataset.write_parquet``,
each into a new directory (made before each call, untimed; the dataset is materialized
before the timing), both zstd at level 1 in Hive directories; and a read of a
1000-partition Hive dataset through ``zstdpool.ray.read_dataset`` against
``ray.data.read_parquet``, each materialized.
"""

from __future__ import annotations

import functools
import itertools
import os
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

#: Ray's write tasks per profile: with SHAPES' partitions, 10,000 files in quick and full.
RAY_TASKS: dict[str, int] = {"tiny": 2, "quick": 10, "full": 10}


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
    tasks = RAY_TASKS.get(profile.name, RAY_TASKS["quick"])
    yield ray_write_workload(RayCase(rows, partitions, tasks))
    yield ray_read_workload(RayCase(rows, partitions, tasks))


# --- Ray Data -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RayCase:
    rows: int
    partitions: int
    tasks: int


def _local_ray() -> None:
    """A local Ray of two CPUs, started once for the run (and stopped at its end)."""
    import atexit

    import ray

    from tests.helpers import local_ray

    if local_ray.start():
        atexit.register(ray.shutdown)


class FreshDirectory:
    """A write into a new directory: ``before_each`` (untimed) empties it."""

    def __init__(self, base: str, write: Callable[[str], object]) -> None:
        self.base, self.write = base, write
        self.path = os.path.join(base, "out")

    def before_each(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def __call__(self) -> int:
        self.before_each()
        self.write(self.path)
        return sum(len(files) for _, _, files in os.walk(self.path))


def _ray_write(case: RayCase, ours: bool) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        import ray

        _local_ray()
        base = tempfile.mkdtemp(prefix="zstdpool-bench-ray-", dir=bench_root())
        stack.callback(shutil.rmtree, base, ignore_errors=True)
        ds = ray.data.from_arrow(partitioned_table(case.rows, case.partitions))
        ds = ds.repartition(case.tasks).materialize()
        if ours:
            import zstdpool.ray

            def write(path: str) -> object:
                return zstdpool.ray.write_dataset(ds, path, partition_cols=["partition_key"])

        else:

            def write(path: str) -> object:
                return ds.write_parquet(
                    path,
                    partition_cols=["partition_key"],
                    compression="zstd",
                    compression_level=1,
                )

        return FreshDirectory(base, write)

    return setup


def _check_files(case: RayCase, out: object) -> None:
    # Every task holds rows of every partition: a file per task and partition.
    if out != case.tasks * case.partitions:
        raise AssertionError(f"{out} files written, {case.tasks * case.partitions} expected")


def ray_write_workload(case: RayCase) -> Workload:
    name = f"ray write {case.rows} rows, {case.partitions} partitions x {case.tasks} tasks"
    check = functools.partial(_check_files, case)
    req = ("ray.data",)
    return Workload(
        name=name,
        group="engines",
        description=(
            f"{name}: a materialized Ray dataset of {case.tasks} blocks written as Hive "
            f"partitions by partition_key ({case.tasks * case.partitions} files), zstd level 1, "
            "through zstdpool.ray's datasink or Dataset.write_parquet."
        ),
        contenders=(
            Contender("zstdpool.ray write_dataset", _ray_write(case, True), check, requires=req),
            Contender("ray write_parquet", _ray_write(case, False), check, requires=req),
        ),
        nbytes=partitioned_table(case.rows, case.partitions).nbytes,
        slow=True,
    )


class RayRead:
    def __init__(self, read: Callable[[], Any]) -> None:
        self.read = read

    def __call__(self) -> int:
        return int(self.read().materialize().count())


def _ray_read(case: RayCase, ours: bool) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        import ray
        import zstdpool.dataset

        _local_ray()
        base = tempfile.mkdtemp(prefix="zstdpool-bench-ray-read-", dir=bench_root())
        stack.callback(shutil.rmtree, base, ignore_errors=True)
        zstdpool.dataset.write_dataset(
            partitioned_table(case.rows, case.partitions),
            base,
            partitioning=["partition_key"],
            partitioning_flavor="hive",
        )
        if ours:
            import zstdpool.ray

            return RayRead(lambda: zstdpool.ray.read_dataset(base))
        return RayRead(lambda: ray.data.read_parquet(base))

    return setup


def _check_rows(case: RayCase, out: object) -> None:
    if out != case.rows:
        raise AssertionError(f"{out} rows read, {case.rows} expected")


def ray_read_workload(case: RayCase) -> Workload:
    name = f"ray read {case.rows} rows, {case.partitions} files"
    check = functools.partial(_check_rows, case)
    req = ("ray.data",)
    return Workload(
        name=name,
        group="engines",
        description=(
            f"{name}: a Hive dataset of {case.partitions} Parquet files (one per partition) "
            "read and materialized by Ray through zstdpool.ray's datasource or "
            "ray.data.read_parquet."
        ),
        contenders=(
            Contender("zstdpool.ray read_dataset", _ray_read(case, True), check, requires=req),
            Contender("ray read_parquet", _ray_read(case, False), check, requires=req),
        ),
        nbytes=partitioned_table(case.rows, case.partitions).nbytes,
        slow=True,
    )
