"""zstdpool.ray on a local Ray (two CPUs): partitioned writes through DatasetDatasink read
back by pyarrow equal to what was written, reads through DatasetDatasource equal to pyarrow's
with Ray's select_columns and filter pushed into the reader (Ray's own Filter and Project
dropped) and partitions pruned before tasks are planned, the save modes, and a write whose
task fails part-way leaving nothing of it behind."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pyarrow.parquet as pq
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

import zstdpool.dataset as zd  # noqa: E402
import zstdpool.ray as zr  # noqa: E402
from ray.data.expressions import col  # noqa: E402

from tests.helpers.local_ray import local_ray  # noqa: E402, F401

N = 4000


def table() -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(N), pa.int64()),
            "k": pa.array([i % 5 for i in range(N)], pa.int32()),
            "s": [None if i % 11 == 0 else f"s{i % 13}" for i in range(N)],
            "x": [i / 7 for i in range(N)],
        }
    )


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())


def by_id(t: pa.Table) -> pa.Table:
    return t.sort_by("id")


@pytest.mark.parametrize("format", ["parquet", "ipc"])
def test_a_partitioned_write_reads_back_as_written(tmp_path: Path, format: str) -> None:
    ds = ray.data.from_arrow(table()).repartition(4)
    written = zr.write_dataset(ds, tmp_path, format=format, partition_cols=["k"])
    names = files_under(tmp_path)
    assert sorted(os.path.relpath(p, tmp_path) for p in written) == names
    # Hive directories, one file per partition and task, named after the write and the task.
    assert {n.split("/")[0] for n in names} == {f"k={k}" for k in range(5)}
    assert len({os.path.basename(n).split("-")[0] for n in names}) == 4
    fmt = "parquet" if format == "parquet" else "ipc"
    back = pds.dataset(tmp_path, format=fmt, partitioning="hive").to_table()
    expected = table()
    assert by_id(back.select(expected.column_names).cast(expected.schema)).equals(expected)


def test_the_write_options_reach_write_dataset(tmp_path: Path) -> None:
    ds = ray.data.from_arrow(table()).repartition(2)
    zr.write_dataset(ds, tmp_path, compression="lz4", max_rows_per_file=500)

    for name in files_under(tmp_path):
        meta = pq.ParquetFile(tmp_path / name).metadata
        assert meta.num_rows <= 500
        assert meta.row_group(0).column(0).compression in ("LZ4", "LZ4_RAW")
    with pytest.raises(TypeError, match="no_such_option"):
        zr.DatasetDatasink(tmp_path, no_such_option=1)
    with pytest.raises(TypeError, match="basename_template"):
        zr.DatasetDatasink(tmp_path, basename_template="x-{i}.parquet")
    with pytest.raises(ValueError, match="format"):
        zr.DatasetDatasink(tmp_path, format="csv")
    with pytest.raises(TypeError, match="pool: a ContextPool cannot travel"):
        zr.DatasetDatasink(tmp_path, pool=object())
    with pytest.raises(ValueError, match="mode"):
        zr.DatasetDatasink(tmp_path, mode="upsert")


def test_save_modes(tmp_path: Path) -> None:
    first = ray.data.from_arrow(table().slice(0, 100))
    zr.write_dataset(first, tmp_path)
    before = files_under(tmp_path)
    with pytest.raises(ValueError, match="mode='error'"):
        zr.write_dataset(first, tmp_path, mode="error")
    assert zr.write_dataset(first, tmp_path, mode="ignore") == []
    assert files_under(tmp_path) == before
    zr.write_dataset(first, tmp_path, mode="append")
    assert len(files_under(tmp_path)) == 2 * len(before)
    from ray.data import SaveMode

    zr.write_dataset(ray.data.from_arrow(table().slice(0, 10)), tmp_path, mode=SaveMode.OVERWRITE)
    assert pds.dataset(tmp_path).count_rows() == 10


def test_a_failed_write_leaves_none_of_its_files(tmp_path: Path) -> None:
    (tmp_path / "k=0").mkdir()
    keep = tmp_path / "k=0" / "earlier.parquet"
    pq.write_table(table().slice(0, 5).drop(["k"]), keep)
    # Another write's file, named as this datasink names its own: not this write's to remove.
    other = tmp_path / "k=0" / f"{'a' * 32}_000000-0.parquet"
    pq.write_table(table().slice(0, 5).drop(["k"]), other)

    def fail_late(batch: dict[str, Any]) -> dict[str, Any]:
        if 3500 in batch["id"]:
            raise RuntimeError("a task fails part-way")
        return batch

    ds = ray.data.from_arrow(table()).repartition(8).map_batches(fail_late)
    with pytest.raises(Exception, match="a task fails part-way"):
        zr.write_dataset(ds, tmp_path, partition_cols=["k"])
    # Whatever the other tasks wrote is gone again; what was there before is not.
    assert files_under(tmp_path) == ["k=0/" + other.name, "k=0/earlier.parquet"]
    assert pq.read_table(keep).num_rows == 5


@pytest.fixture(scope="module")
def hive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ray-read")
    zd.write_dataset(
        table(), d, partitioning=["k"], partitioning_flavor="hive", max_rows_per_group=300
    )
    return d


def pyarrows(hive: Path, columns: list[str] | None, filter: Any) -> pa.Table:
    return pds.dataset(hive, partitioning="hive").to_table(columns=columns, filter=filter)


def same(ours: pa.Table, theirs: pa.Table) -> None:
    assert ours.column_names == theirs.column_names
    assert by_id(ours.cast(theirs.schema)).equals(by_id(theirs))


def test_a_read_equals_pyarrows(hive: Path) -> None:
    ours = zr.read_dataset(hive).to_arrow_refs()
    got = pa.concat_tables(ray.get(ours))
    same(got, pyarrows(hive, None, None))


FILTERS = [
    (col("k") == 3, pc.field("k") == 3),
    ((col("id") > 1000) & (col("k") != 2), (pc.field("id") > 1000) & (pc.field("k") != 2)),
    ((col("s") == "s4") | (col("id") < 10), (pc.field("s") == "s4") | (pc.field("id") < 10)),
    (col("s").is_null(), pc.field("s").is_null()),
    (col("s").is_in(["s1", "s2"]), pc.field("s").isin(["s1", "s2"])),
]


@pytest.mark.parametrize("i", range(len(FILTERS)))
def test_filters_and_columns_are_pushed_into_the_reader(
    hive: Path, i: int, capsys: pytest.CaptureFixture[str]
) -> None:
    ray_expr, arrow_expr = FILTERS[i]
    ds = zr.read_dataset(hive).filter(expr=ray_expr).select_columns(["id", "x"])
    got = pa.concat_tables(ray.get(ds.to_arrow_refs()))
    same(got, pyarrows(hive, ["id", "x"], arrow_expr))
    # Ray's optimized plan reads and does nothing else: the reader filtered and projected.
    capsys.readouterr()
    ds.explain()
    optimized = capsys.readouterr().out.split("Physical Plan (Optimized)")[1]
    assert "ReadZstdpoolDataset" in optimized, optimized
    assert "Filter" not in optimized and "Project" not in optimized, optimized


def test_partitions_are_pruned_before_tasks_are_planned(hive: Path) -> None:
    source = zr.DatasetDatasource(hive).apply_predicate(col("k") == 1)
    tasks = source.get_read_tasks(8)
    read = [f for t in tasks for f in t.metadata.input_files]
    assert read and all("/k=1/" in f for f in read)
    # The datasource's own filter and columns, in zstdpool's forms, combine with Ray's.
    source = zr.DatasetDatasource(hive, columns=["id", "k"], filter=[("k", "in", [1, 2])])
    tasks = source.apply_predicate(col("id") < 100).get_read_tasks(3)
    assert len(tasks) <= 3
    assert all("/k=1/" in f or "/k=2/" in f for t in tasks for f in t.metadata.input_files)
    got = pa.concat_tables([pa.concat_tables(list(t())) for t in tasks])
    theirs = pyarrows(hive, ["id", "k"], pc.field("k").isin([1, 2]) & (pc.field("id") < 100))
    same(got, theirs)


def test_count_reads_no_column_and_counts_every_row(hive: Path) -> None:
    assert zr.read_dataset(hive).count() == N
    assert zr.read_dataset(hive).filter(expr=col("k") == 2).count() == N // 5


def test_bad_read_arguments_are_named(hive: Path) -> None:
    with pytest.raises(ValueError, match="partitioning: zstdpool.ray reads Hive"):
        zr.DatasetDatasource(hive, partitioning=["k"])
    with pytest.raises(ValueError, match="columns: no column 'nope'"):
        zr.DatasetDatasource(hive, columns=["nope"])
    with pytest.raises(TypeError, match="columns"):
        zr.DatasetDatasource(hive, columns="id")
    with pytest.raises(FileNotFoundError):
        zr.DatasetDatasource(hive / "missing")
