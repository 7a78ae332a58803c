"""write_dataset as pyarrow's is called: every input pyarrow takes (datasets and scanners
streamed), the three partitioning flavors and pyarrow's Partitioning objects, each format's
file extension, row group bounds, file_visitor and max_partitions; each compared with what
pyarrow.dataset.write_dataset writes or refuses."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pds
import pyarrow.parquet as pq
import pytest
import zstdpool
import zstdpool.dataset as zd

N = 1000


def data() -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(N), pa.int64()),
            "year": pa.array([2024 + i % 3 for i in range(N)], pa.int32()),
            "country": pa.array([["DE", "FR", "a b"][i % 3 if i % 5 else 0] for i in range(N)]),
            "v": [f"v{i}" for i in range(N)],
        }
    )


def rows(t: pa.Table) -> list[dict[str, Any]]:
    return t.sort_by("id").select(sorted(t.schema.names)).to_pylist()


def relative(base: Path) -> list[str]:
    return sorted(
        str(Path(root, n).relative_to(base)) for root, _, names in os.walk(base) for n in names
    )


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """data() as a flat dataset of 10 Parquet files."""
    d = tmp_path_factory.mktemp("source")
    t = data()
    for i in range(10):
        pq.write_table(t.slice(i * 100, 100), d / f"f{i}.parquet")
    return d


INPUTS: dict[str, Callable[[Path], tuple[Any, dict[str, Any]]]] = {
    "table": lambda s: (data(), {}),
    "record batch": lambda s: (data().combine_chunks().to_batches()[0], {}),
    "reader": lambda s: (
        pa.RecordBatchReader.from_batches(data().schema, data().to_batches(100)),
        {},
    ),
    "list of tables": lambda s: ([data().slice(0, 400), data().slice(400)], {}),
    "list of batches": lambda s: (data().to_batches(max_chunksize=300), {}),
    "iterable with schema": lambda s: (
        iter(data().to_batches(max_chunksize=70)),
        {"schema": data().schema},
    ),
    "pyarrow dataset": lambda s: (pds.dataset(s), {}),
    "pyarrow scanner": lambda s: (pds.dataset(s).scanner(batch_size=64), {}),
    "zstdpool dataset": lambda s: (zd.dataset(s, partitioning=None), {}),
    "zstdpool scanner": lambda s: (zd.dataset(s, partitioning=None).scanner(batch_size=64), {}),
}


@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_every_input_pyarrow_takes_is_written(kind: str, source: Path, tmp_path: Path) -> None:
    given, kwargs = INPUTS[kind](source)
    files = zd.write_dataset(
        given, tmp_path / "z", partitioning=["year"], partitioning_flavor="hive", **kwargs
    )
    assert sum(f["num_rows"] for f in files) == N
    part = pds.partitioning(pa.schema([("year", pa.int32())]), flavor="hive")
    got = pds.dataset(tmp_path / "z", partitioning=part).to_table()
    assert rows(got) == rows(data())
    if kind.startswith("zstdpool"):
        return
    again, kwargs = INPUTS[kind](source)
    pds.write_dataset(again, tmp_path / "p", format="parquet", partitioning=part, **kwargs)
    assert relative(tmp_path / "z") == relative(tmp_path / "p")


def test_a_dataset_is_streamed_not_read_whole(tmp_path: Path) -> None:
    """Batches reach the writer as the input gives them: with max_pending_bytes small, the
    first files are written before the input is exhausted."""
    seen: list[int] = []

    def batches() -> Iterator[pa.RecordBatch]:
        for i, b in enumerate(data().to_batches(max_chunksize=100)):
            seen.append(len(list((tmp_path / "z").rglob("*.parquet"))) if i else 0)
            yield b

    zd.write_dataset(
        batches(),
        tmp_path / "z",
        schema=data().schema,
        partitioning=["year"],
        max_pending_bytes=1,
        max_open_files=1,
    )
    assert seen[-1] > 0, seen


def test_a_dataset_keeps_its_format(tmp_path: Path) -> None:
    pds.write_dataset(data(), tmp_path / "src", format="ipc")
    zd.write_dataset(pds.dataset(tmp_path / "src", format="ipc"), tmp_path / "z")
    pds.write_dataset(pds.dataset(tmp_path / "src", format="ipc"), tmp_path / "p")
    assert relative(tmp_path / "z") == relative(tmp_path / "p") == ["part-0.arrow"]
    zd.write_dataset(zd.dataset(tmp_path / "src", format="ipc"), tmp_path / "z2")
    assert relative(tmp_path / "z2") == ["part-0.arrow"]


@pytest.mark.parametrize(
    ("given", "kwargs", "error", "match"),
    [
        ([], {}, ValueError, "empty list"),
        ([data(), pa.table({"b": [1]})], {}, TypeError, "does not match"),
        ([data(), 3], {}, TypeError, r"data\[1\] must be"),
        (iter(data().to_batches()), {}, ValueError, "schema="),
        (3, {}, TypeError, "data must be"),
        ("a string", {}, TypeError, "data must be"),
    ],
    ids=["empty list", "two schemas", "not a table", "iterable without schema", "int", "str"],
)
def test_inputs_pyarrow_refuses_are_refused(
    tmp_path: Path, given: Any, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        zd.write_dataset(given, tmp_path / "z", **kwargs)
    assert not (tmp_path / "z").exists() or relative(tmp_path / "z") == []


def test_a_scanner_with_a_schema_is_refused_as_pyarrow_refuses_it(
    source: Path, tmp_path: Path
) -> None:
    scanner = pds.dataset(source).scanner()
    with pytest.raises(ValueError, match="Cannot specify a schema when writing a Scanner"):
        pds.write_dataset(scanner, tmp_path / "p", format="parquet", schema=data().schema)
    with pytest.raises(ValueError, match="Cannot specify a schema when writing a Scanner"):
        zd.write_dataset(scanner, tmp_path / "z", schema=data().schema)


FLAVORS = [None, "hive", "filename"]


@pytest.mark.parametrize("flavor", FLAVORS, ids=str)
@pytest.mark.parametrize("as_object", [False, True], ids=["names", "Partitioning"])
def test_each_flavor_is_written_as_pyarrow_writes_it(
    tmp_path: Path, flavor: str | None, as_object: bool
) -> None:
    t = data().filter(pa.compute.field("country") != "a b")  # values no flavor escapes
    schema = pa.schema([("year", pa.int32()), ("country", pa.string())])
    part = pds.partitioning(schema, flavor=flavor)
    given: dict[str, Any] = (
        {"partitioning": part}
        if as_object
        else {"partitioning": ["year", "country"], "partitioning_flavor": flavor}
    )
    zd.write_dataset(t, tmp_path / "z", **given)
    pds.write_dataset(t, tmp_path / "p", format="parquet", **given)
    assert relative(tmp_path / "z") == relative(tmp_path / "p")
    got = pds.dataset(tmp_path / "z", partitioning=part).to_table()
    assert rows(got) == rows(t)
    # zstdpool's reader reads each flavor back too.
    assert rows(zd.dataset(tmp_path / "z", partitioning=part).to_table()) == rows(t)


@pytest.mark.parametrize("flavor", FLAVORS, ids=str)
def test_values_are_escaped_in_every_flavor(tmp_path: Path, flavor: str | None) -> None:
    t = pa.table(
        {
            "k": ["a/b", "..", ".", "x_y", "é %", "plain"],
            "v": range(6),
        }
    )
    zd.write_dataset(t, tmp_path, partitioning=["k"], partitioning_flavor=flavor)
    # Every file is inside the base directory, and one partition per value.
    paths = relative(tmp_path)
    assert len(paths) == 6
    assert all(not p.startswith("..") and Path(tmp_path, p).is_file() for p in paths)
    part = pds.partitioning(pa.schema([("k", pa.string())]), flavor=flavor)
    got = pds.dataset(tmp_path, partitioning=part).to_table()
    assert sorted(got.to_pylist(), key=lambda r: r["v"]) == t.to_pylist()
    assert rows_by_v(zd.dataset(tmp_path, partitioning=part).to_table()) == t.to_pylist()


def rows_by_v(t: pa.Table) -> list[dict[str, Any]]:
    return sorted(t.select(["k", "v"]).to_pylist(), key=lambda r: r["v"])


@pytest.mark.parametrize("flavor", [None, "filename"], ids=str)
def test_nulls_without_hive_may_only_trail(tmp_path: Path, flavor: str | None) -> None:
    trailing = pa.table({"a": ["x", "y"], "b": pa.array([1, None], pa.int32()), "v": [1, 2]})
    zd.write_dataset(trailing, tmp_path / "t", partitioning=["a", "b"], partitioning_flavor=flavor)
    part = pds.partitioning(pa.schema([("a", pa.string()), ("b", pa.int32())]), flavor=flavor)
    got = pds.dataset(tmp_path / "t", partitioning=part).to_table()
    assert sorted(got.to_pylist(), key=lambda r: r["v"]) == [
        {"v": 1, "a": "x", "b": 1},
        {"v": 2, "a": "y", "b": None},
    ]
    inner = pa.table({"a": pa.array([None], pa.string()), "b": [1], "v": [1]})
    with pytest.raises(pa.ArrowInvalid):
        pds.write_dataset(
            inner,
            tmp_path / "p",
            format="parquet",
            partitioning=["a", "b"],
            partitioning_flavor=flavor,
        )
    with pytest.raises(zstdpool.ParameterError, match='column "a" is null where .* "b" is not'):
        zd.write_dataset(inner, tmp_path / "i", partitioning=["a", "b"], partitioning_flavor=flavor)
    empty = pa.table({"a": [""], "v": [1]})
    with pytest.raises(zstdpool.ParameterError, match="empty string"):
        zd.write_dataset(empty, tmp_path / "e", partitioning=["a"], partitioning_flavor=flavor)


def test_filename_partitioning_refuses_delete_matching(tmp_path: Path) -> None:
    with pytest.raises(zstdpool.ParameterError, match="filename partitioning writes none"):
        zd.write_dataset(
            data(),
            tmp_path,
            partitioning=["year"],
            partitioning_flavor="filename",
            existing_data_behavior="delete_matching",
        )


@pytest.mark.parametrize(
    ("fmt", "extension"),
    [("parquet", "parquet"), ("ipc", "arrow"), ("arrow", "arrow"), ("feather", "feather")],
)
def test_files_are_named_with_pyarrows_extensions(tmp_path: Path, fmt: str, extension: str) -> None:
    zd.write_dataset(data(), tmp_path / "z", format=fmt)
    pds.write_dataset(data(), tmp_path / "p", format=fmt)
    assert relative(tmp_path / "z") == relative(tmp_path / "p") == [f"part-0.{extension}"]
    read_as = "parquet" if fmt == "parquet" else "ipc"
    assert rows(pds.dataset(tmp_path / "z", format=read_as).to_table()) == rows(data())


@pytest.mark.parametrize("fmt", ["parquet", "ipc"])
def test_row_groups_are_bounded(tmp_path: Path, fmt: str) -> None:
    # Batches of 70 rows, written out at every batch (max_pending_bytes=1): the rows of a
    # group are held until min_rows_per_group wait.
    batches = data().to_batches(max_chunksize=70)
    zd.write_dataset(
        iter(batches),
        tmp_path,
        schema=data().schema,
        format=fmt,
        min_rows_per_group=200,
        max_rows_per_group=300,
        max_pending_bytes=1,
    )
    [path] = [tmp_path / p for p in relative(tmp_path)]
    if fmt == "parquet":
        meta = pq.read_metadata(path)
        sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    else:
        with pa.ipc.open_file(path) as f:
            sizes = [f.get_batch(i).num_rows for i in range(f.num_record_batches)]
    assert sum(sizes) == N
    assert all(200 <= s <= 300 for s in sizes[:-1]) and 0 < sizes[-1] <= 300, sizes
    # Without a minimum, each flush of pending rows is a group of its own.
    zd.write_dataset(
        iter(batches), tmp_path / "m", schema=data().schema, format=fmt, max_pending_bytes=1
    )
    [path] = [tmp_path / "m" / p for p in relative(tmp_path / "m")]
    if fmt == "parquet":
        assert pq.read_metadata(path).num_row_groups == len(batches)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"min_rows_per_group": 10, "max_rows_per_group": 5}, "min_rows_per_group must be"),
        ({"max_rows_per_file": 5, "max_rows_per_group": 10}, "max_rows_per_group must be"),
    ],
)
def test_row_group_bounds_pyarrow_refuses_are_refused(
    tmp_path: Path, kwargs: dict[str, Any], match: str
) -> None:
    with pytest.raises(pa.ArrowInvalid, match=match):
        pds.write_dataset(data(), tmp_path / "p", format="parquet", **kwargs)
    with pytest.raises(ValueError, match=match):
        zd.write_dataset(data(), tmp_path / "z", **kwargs)


def test_max_partitions(tmp_path: Path) -> None:
    with pytest.raises(pa.ArrowInvalid, match="max_partitions|maximum"):
        pds.write_dataset(
            data(), tmp_path / "p", format="parquet", partitioning=["id"], max_partitions=10
        )
    with pytest.raises(
        zstdpool.ParameterError, match=r"into 1000 partitions, more than max_partitions \(10\)"
    ):
        zd.write_dataset(data(), tmp_path / "z", partitioning=["id"], max_partitions=10)
    files = zd.write_dataset(data(), tmp_path / "y", partitioning=["year"], max_partitions=3)
    assert len(files) == 3


@pytest.mark.parametrize("fmt", ["parquet", "feather"])
def test_file_visitor_sees_every_file(tmp_path: Path, fmt: str) -> None:
    visited: list[zd.WrittenFile] = []
    files = zd.write_dataset(
        data(), tmp_path, format=fmt, partitioning=["year"], file_visitor=visited.append
    )
    assert sorted(v.path for v in visited) == sorted(f["path"] for f in files)
    for v in visited:
        assert v.size == os.path.getsize(v.path)
        if fmt == "parquet":
            assert v.metadata is not None
            assert v.metadata.num_rows == pq.read_metadata(v.path).num_rows
        else:
            assert v.metadata is None


def test_create_dir_use_threads_and_preserve_order(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="create_dir=False"):
        zd.write_dataset(data(), tmp_path / "missing", create_dir=False)
    (tmp_path / "there").mkdir()
    zd.write_dataset(
        data(), tmp_path / "there", create_dir=False, existing_data_behavior="overwrite_or_ignore"
    )
    zd.write_dataset(data(), tmp_path / "one", use_threads=False, preserve_order=True)
    got = pds.dataset(tmp_path / "one").to_table()
    assert got["id"].to_pylist() == list(range(N))
    with pytest.raises(TypeError, match="file_options must be a dict"):
        zd.write_dataset(
            data(), tmp_path / "fo", file_options=pds.ParquetFileFormat().make_write_options()
        )


@pytest.mark.parametrize("layout", ["flat", "hive", "directory"])
def test_a_pyarrow_dataset_is_compacted_as_pyarrow_compacts_it(tmp_path: Path, layout: str) -> None:
    """A pyarrow dataset of local files is read with zstdpool's own reader (flat and Hive;
    directories through pyarrow's scanner): the same rows, schema and partition values as
    pyarrow's scanner gives, filters kept."""
    t = data()
    # An ancestor directory that looks like a partition of the same key: only the dataset's
    # own directories are its partitions.
    base = tmp_path / "year=1999"
    if layout == "flat":
        pds.write_dataset(
            t, base / "src", format="parquet", max_rows_per_file=100, max_rows_per_group=100
        )
        src = pds.dataset(base / "src")
    else:
        flavor = "hive" if layout == "hive" else None
        pds.write_dataset(
            t, base / "src", format="parquet", partitioning=["year"], partitioning_flavor=flavor
        )
        part = pds.partitioning(pa.schema([("year", pa.int32())]), flavor=flavor)
        src = pds.dataset(base / "src", partitioning=part)
    bounds = {"max_rows_per_file": 300, "max_rows_per_group": 300}
    zd.write_dataset(src, tmp_path / "z", **bounds)
    pds.write_dataset(src, tmp_path / "p", format="parquet", **bounds)
    assert (zd._own_reading(src) is not None) == (layout != "directory")
    got, want = pds.dataset(tmp_path / "z"), pds.dataset(tmp_path / "p")
    assert got.schema == want.schema == src.schema
    assert rows(got.to_table()) == rows(want.to_table())
    # A filtered dataset keeps its filter.
    kept = src.filter(pa.compute.field("id") < 100)
    zd.write_dataset(kept, tmp_path / "zf")
    assert rows(pds.dataset(tmp_path / "zf").to_table()) == rows(kept.to_table())
