"""write_dataset: Hive datasets read back by pyarrow.dataset and polars, every key type, the
existing-data behaviours, failures half-way, and the pool's contexts."""

from __future__ import annotations

import datetime
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
import zstdpool
import zstdpool.dataset as zd

N = 3000
KEYS = {
    "int": pa.array([i % 7 - 3 for i in range(N)], pa.int32()),
    "int64": pa.array([(i % 5) * 10**12 for i in range(N)], pa.int64()),
    "string": pa.array([["a b", "x/y", "é%", "="][i % 4] for i in range(N)]),
    "dictionary": pa.array([["red", "green"][i % 2] for i in range(N)]).dictionary_encode(),
    "date": pa.array([datetime.date(2024, 1, 1 + i % 3) for i in range(N)]),
    "bool": pa.array([i % 2 == 0 for i in range(N)]),
    "nulls": pa.array([None if i % 3 == 0 else i % 2 for i in range(N)], pa.int16()),
}


def table(key: str) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(N), pa.int64()),
            "k": KEYS[key],
            "value": pa.array([f"v{i}" for i in range(N)]),
        }
    )


def leftovers(base: Path) -> list[str]:
    return [n for _, _, names in os.walk(base) for n in names if n.endswith(".tmp")]


def read_back(base: Path, fmt: str, schema: pa.Schema) -> pa.Table:
    key = schema.field("k")
    if pa.types.is_dictionary(key.type):  # read as its values (a dictionary needs them given)
        key = pa.field("k", key.type.value_type)
    part = ds.partitioning(pa.schema([key]), flavor="hive")
    got = ds.dataset(base, format=fmt, partitioning=part).to_table()
    return got.sort_by("id").select(schema.names)


@pytest.mark.parametrize("fmt", ["parquet", "ipc"])
@pytest.mark.parametrize("key", sorted(KEYS))
def test_every_key_type_round_trips_through_pyarrow(key: str, fmt: str, tmp_path: Path) -> None:
    t = table(key)
    files = zd.write_dataset(
        t, tmp_path, partitioning=["k"], partitioning_flavor="hive", format=fmt
    )
    assert sum(f["num_rows"] for f in files) == N
    assert all(Path(f["path"]).exists() and f["size"] > 0 for f in files)
    got = read_back(tmp_path, "parquet" if fmt == "parquet" else "arrow", t.schema)
    want = t
    if key == "dictionary":  # the path holds the values; pyarrow reads them as the schema says
        want = t.set_column(
            1, "k", t.column("k").cast(pa.string()).cast(got.schema.field("k").type)
        )
    assert got.column("id").equals(want.column("id")) and got.column("value").equals(
        want.column("value")
    )
    assert got.column("k").to_pylist() == want.column("k").to_pylist()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("fmt", ["parquet", "ipc"])
def test_polars_reads_the_hive_dataset(fmt: str, tmp_path: Path) -> None:
    pl = pytest.importorskip("polars")
    t = table("string")
    zd.write_dataset(t, tmp_path, partitioning=["k"], partitioning_flavor="hive", format=fmt)
    pattern = str(tmp_path / "**" / ("*.parquet" if fmt == "parquet" else "*.arrow"))
    scan = pl.scan_parquet if fmt == "parquet" else pl.scan_ipc
    got = scan(pattern, hive_partitioning=True).collect().sort("id")
    assert got["id"].to_list() == list(range(N))
    assert got["k"].to_list() == t.column("k").to_pylist()


def test_escaped_values_nulls_and_several_partition_columns(tmp_path: Path) -> None:
    t = pa.table(
        {
            "a": ["x/y", "x/y", None, "p q"],
            "b": pa.array([1, 2, 1, None], pa.int8()),
            "v": [1, 2, 3, 4],
        }
    )
    files = zd.write_dataset(t, tmp_path, partitioning=["a", "b"], partitioning_flavor="hive")
    dirs = sorted(str(Path(f["path"]).parent.relative_to(tmp_path)) for f in files)
    assert dirs == [
        "a=__HIVE_DEFAULT_PARTITION__/b=1",
        "a=p%20q/b=__HIVE_DEFAULT_PARTITION__",
        "a=x%2Fy/b=1",
        "a=x%2Fy/b=2",
    ]
    got = ds.dataset(tmp_path, partitioning="hive").to_table().sort_by("v")
    assert got.column("a").to_pylist() == ["x/y", "x/y", None, "p q"]
    assert got.column("b").to_pylist() == [1, 2, 1, None]


def test_no_partitioning_one_partition_and_empty_input(tmp_path: Path) -> None:
    t = table("int")
    files = zd.write_dataset(t, tmp_path / "flat")
    assert [Path(f["path"]).name for f in files] == ["part-0.parquet"]
    assert ds.dataset(tmp_path / "flat").to_table().equals(t)
    one = t.filter(pc.equal(t.column("k"), 0))
    assert (
        len(zd.write_dataset(one, tmp_path / "one", partitioning=["k"], partitioning_flavor="hive"))
        == 1
    )
    assert (
        zd.write_dataset(
            t.slice(0, 0), tmp_path / "empty", partitioning=["k"], partitioning_flavor="hive"
        )
        == []
    )
    assert (tmp_path / "empty").is_dir()


def test_existing_data_behaviour(tmp_path: Path) -> None:
    t = table("int")
    zd.write_dataset(
        t, tmp_path, partitioning=["k"], partitioning_flavor="hive", max_rows_per_file=200
    )
    before = sorted(p for p in tmp_path.rglob("*.parquet"))
    assert len(before) > 7
    with pytest.raises(FileExistsError, match="not empty"):
        zd.write_dataset(t, tmp_path, partitioning=["k"], partitioning_flavor="hive")
    small = t.slice(0, 7)
    zd.write_dataset(
        small,
        tmp_path,
        partitioning=["k"],
        partitioning_flavor="hive",
        existing_data_behavior="overwrite_or_ignore",
    )
    assert sorted(tmp_path.rglob("*.parquet")) == before  # part-0 files replaced, others kept
    assert ds.dataset(tmp_path, partitioning="hive").count_rows() < N + 7
    zd.write_dataset(
        small,
        tmp_path,
        partitioning=["k"],
        partitioning_flavor="hive",
        existing_data_behavior="delete_matching",
    )
    assert len(list(tmp_path.rglob("*.parquet"))) == 7
    assert ds.dataset(tmp_path, partitioning="hive").count_rows() == 7


def test_a_stream_is_written_batch_by_batch_within_max_pending_bytes(tmp_path: Path) -> None:
    t = pa.concat_tables([table("int")] * 20)
    reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=1000))
    files = zd.write_dataset(
        reader,
        tmp_path,
        partitioning=["k"],
        partitioning_flavor="hive",
        max_pending_bytes=64 << 10,
        max_open_files=2,
    )
    assert sum(f["num_rows"] for f in files) == t.num_rows
    assert ds.dataset(tmp_path, partitioning="hive").count_rows() == t.num_rows


def test_an_input_that_fails_half_way_reports_the_complete_files(tmp_path: Path) -> None:
    t = table("int")

    def batches():  # type: ignore[no-untyped-def]
        yield from t.to_batches(max_chunksize=500)[:3]
        raise RuntimeError("the source broke")

    reader = pa.RecordBatchReader.from_batches(t.schema, batches())
    with pytest.raises(Exception, match="the source broke") as info:
        zd.write_dataset(
            reader, tmp_path, partitioning=["k"], partitioning_flavor="hive", max_pending_bytes=1
        )
    completed = info.value.completed_files  # type: ignore[attr-defined]
    assert completed == [] or all(Path(f["path"]).exists() for f in completed)
    assert leftovers(tmp_path) == []


def test_a_partition_that_cannot_be_written_fails_clearly(tmp_path: Path) -> None:
    t = table("int")
    (tmp_path / "k=0").mkdir()
    (tmp_path / "k=0" / "part-0.parquet").mkdir()  # a directory where the file goes
    with pytest.raises(IsADirectoryError, match="k=0") as info:
        zd.write_dataset(
            t,
            tmp_path,
            partitioning=["k"],
            partitioning_flavor="hive",
            existing_data_behavior="overwrite_or_ignore",
        )
    assert len(info.value.completed_files) == 6  # type: ignore[attr-defined]
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("behavior", ["overwrite_or_ignore", "delete_matching"])
@pytest.mark.parametrize("where", ["partition", "nested partition", "file"])
def test_a_planted_link_is_refused_and_nothing_is_written_outside(
    tmp_path: Path, behavior: str, where: str
) -> None:
    base, outside = tmp_path / "base", tmp_path / "outside"
    base.mkdir()
    outside.mkdir()
    (outside / "keep").write_text("mine")
    t = pa.table({"k": [0, 0, 1], "j": [5, 5, 5], "v": [1, 2, 3]})
    if where == "partition":
        (base / "k=0").symlink_to(outside)
        partitioning = ["k"]
    elif where == "nested partition":
        (base / "k=0").mkdir()
        (base / "k=0" / "j=5").symlink_to(outside)
        partitioning = ["k", "j"]
    else:
        (base / "k=0").mkdir()
        (base / "k=0" / "part-0.parquet").symlink_to(outside / "keep")
        partitioning = ["k"]
    if behavior == "delete_matching":
        # The partition is replaced: the link is removed, not followed.
        zd.write_dataset(
            t,
            base,
            partitioning=partitioning,
            partitioning_flavor="hive",
            existing_data_behavior=behavior,
        )
        assert ds.dataset(base, partitioning="hive").to_table().num_rows == 3
        assert not any(p.is_symlink() for p in base.rglob("*"))
    else:
        with pytest.raises(OSError, match="symbolic link is not followed"):
            zd.write_dataset(
                t,
                base,
                partitioning=partitioning,
                partitioning_flavor="hive",
                existing_data_behavior=behavior,
            )
    # Nothing written, replaced or deleted where the link points.
    assert sorted(p.name for p in outside.iterdir()) == ["keep"]
    assert (outside / "keep").read_text() == "mine"
    assert leftovers(base) == []


def test_a_link_as_base_dir_is_the_callers_and_is_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    zd.write_dataset(
        table("int"), tmp_path / "link", partitioning=["k"], partitioning_flavor="hive"
    )
    assert any(real.rglob("*.parquet"))


def test_a_read_only_base_dir_fails_clearly(tmp_path: Path) -> None:
    base = tmp_path / "ro"
    base.mkdir()
    if os.geteuid() == 0:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "ro", "tmpfs", str(base)], capture_output=True
        )
        if done.returncode != 0:
            pytest.skip("mounting a read-only tmpfs failed")
    else:
        base.chmod(0o555)
    try:
        with pytest.raises(OSError, match="cannot"):
            zd.write_dataset(table("int"), base, partitioning=["k"], partitioning_flavor="hive")
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", str(base)], check=True)


def test_a_thousand_partitions_make_about_as_many_contexts_as_threads(tmp_path: Path) -> None:
    t = pa.table({"id": list(range(20_000)), "k": [i % 1000 for i in range(20_000)]})
    for fmt in ("parquet", "ipc"):
        pool = zstdpool.ContextPool()
        files = zd.write_dataset(
            t,
            tmp_path / fmt,
            partitioning=["k"],
            partitioning_flavor="hive",
            format=fmt,
            threads=2,
            pool=pool,
        )
        assert len(files) == 1000
        stats = pool.stats()
        assert stats["created"] <= 3 and stats["leased"] == 0, stats


def test_partitioning_objects_and_bad_arguments(tmp_path: Path) -> None:
    t = table("int")
    part = ds.partitioning(pa.schema([("k", pa.int32())]), flavor="hive")
    assert len(zd.write_dataset(t, tmp_path / "p", partitioning=part)) == 7
    with pytest.raises(ValueError, match="PartitioningFactory"):
        zd.write_dataset(t, tmp_path / "q", partitioning=ds.partitioning(field_names=["k"]))
    with pytest.raises(ValueError, match="partitioning_flavor with a Partitioning"):
        zd.write_dataset(t, tmp_path / "q", partitioning=part, partitioning_flavor="hive")
    with pytest.raises(ValueError, match="partitioning_flavor must be"):
        zd.write_dataset(t, tmp_path / "q", partitioning=["k"], partitioning_flavor="dir")
    with pytest.raises(TypeError, match="partitioning must be"):
        zd.write_dataset(t, tmp_path / "q", partitioning="k")
    for kwargs, match in [
        ({"partitioning": ["nope"]}, "nope"),
        ({"partitioning": ["value", "id", "k"]}, "no data"),
        ({"format": "csv"}, "format must be"),
        ({"existing_data_behavior": "merge"}, "existing_data_behavior"),
        ({"basename_template": "part.parquet"}, r"\{i\}"),
        ({"basename_template": "a/{i}.parquet"}, r"\{i\}"),
        ({"max_open_files": 0}, "max_open_files"),
        ({"compression": "lzo"}, "compression must be"),
    ]:
        with pytest.raises(zstdpool.ParameterError, match=match):
            zd.write_dataset(t, tmp_path / "r", **kwargs)
    float_keys = pa.table({"f": [1.5], "v": [1]})
    with pytest.raises(zstdpool.ParameterError, match="double|Float64"):
        zd.write_dataset(float_keys, tmp_path / "s", partitioning=["f"], partitioning_flavor="hive")
    with pytest.raises(TypeError, match="base_dir"):
        zd.write_dataset(t, 3)  # type: ignore[arg-type]
