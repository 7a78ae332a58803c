"""Reading datasets: zstdpool.dataset.dataset and zstdpool.parquet.read_table on directories,
compared with what pyarrow reads from the same files; every filter form against pyarrow's
result; pruning that never opens what it prunes; footers counted without decompressing; bounded
streams; IPC datasets; and the errors a read names."""

from __future__ import annotations

import datetime
import gc
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pyarrow.parquet as pq
import pytest
import zstdpool
import zstdpool.dataset as zd
import zstdpool.ipc as zipc
import zstdpool.parquet as zp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zstdpool.errors import ParameterError, ParquetError

from tests.dataset.test_write_dataset import KEYS, table

N = 600


def values_table() -> pa.Table:
    """Partition keys and value columns with nulls and NaN, ids in order."""
    return pa.table(
        {
            "id": pa.array(range(N), pa.int64()),
            "k": pa.array([i % 4 for i in range(N)], pa.int32()),
            "s": pa.array([[None, "a b", "x/y", "é"][i % 4 if i % 7 else 1] for i in range(N)]),
            "x": pa.array(
                [None if i % 11 == 0 else (math.nan if i % 13 == 0 else i / 4) for i in range(N)]
            ),
            "n": pa.array([None if i % 5 == 0 else i % 17 for i in range(N)], pa.int64()),
            "t": pa.array([None if i % 6 == 0 else f"t{i % 9}" for i in range(N)]),
        }
    )


@pytest.fixture(scope="module")
def hive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """values_table() in Hive directories by k and s, in row groups of 25 rows and pages of 4,
    with bloom filters on n, t and id (so that the filter tests check the pruning of pages and
    by bloom filters too)."""
    d = tmp_path_factory.mktemp("hive")
    blooms = {"n": True, "t": True, "id": True}
    zd.write_dataset(
        values_table(),
        d,
        partitioning=["k", "s"],
        partitioning_flavor="hive",
        file_options={
            "row_group_size": 25,
            "max_rows_per_page": 4,
            "bloom_filter_options": blooms,
        },
    )
    return d


def by_id(t: pa.Table) -> pa.Table:
    return t.sort_by("id")


def _rows(t: pa.Table) -> list[dict[str, Any]]:
    """The rows, NaN made comparable (NaN != NaN as a float)."""
    return [
        {k: "NaN" if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}
        for row in t.to_pylist()
    ]


def same(got: pa.Table, expected: pa.Table) -> bool:
    """The same schema and rows, in the same order (the chunks and dictionaries a column is
    held in may differ: pyarrow gives a null partition a dictionary holding a null)."""
    assert got.schema == expected.schema, (got.schema, expected.schema)
    assert _rows(got) == _rows(expected)
    return True


@pytest.mark.parametrize("key", sorted(KEYS))
def test_every_key_type_write_dataset_writes_reads_as_pyarrow_reads_it(
    tmp_path: Path, key: str
) -> None:
    zd.write_dataset(table(key), tmp_path, partitioning=["k"], partitioning_flavor="hive")
    got = zd.dataset(tmp_path).to_table()
    expected = pds.dataset(tmp_path, partitioning="hive").to_table()
    assert got.schema == expected.schema
    assert same(by_id(got), by_id(expected))
    # pyarrow.parquet.read_table types keys as dictionaries of every value: so does zstdpool's.
    assert same(zp.read_table(tmp_path), pq.read_table(tmp_path))


def test_datasets_pyarrow_and_polars_wrote_read_as_pyarrow_reads_them(tmp_path: Path) -> None:
    data = values_table()
    pq.write_to_dataset(data, tmp_path / "pa", partition_cols=["k", "s"], row_group_size=50)
    assert same(zp.read_table(tmp_path / "pa"), pq.read_table(tmp_path / "pa"))
    f = [("x", ">", 40.0), ("s", "!=", "x/y")]
    assert same(
        zp.read_table(tmp_path / "pa", filters=f), pq.read_table(tmp_path / "pa", filters=f)
    )
    pl = pytest.importorskip("polars")
    pl.from_arrow(data).write_parquet(tmp_path / "pl", partition_by=["k"])
    got = zd.dataset(tmp_path / "pl").to_table()
    expected = pds.dataset(tmp_path / "pl", partitioning="hive").to_table()
    assert same(by_id(got), by_id(expected))


def test_datasets_duckdb_wrote_read_as_pyarrow_reads_them(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    out = tmp_path / "dd"
    duckdb.from_arrow(values_table()).write_parquet(str(out), partition_by=["k"])
    expected = pds.dataset(out, partitioning="hive")
    got = zd.dataset(out)
    assert same(by_id(got.to_table()), by_id(expected.to_table()))
    f = [("k", "in", [1, 3]), ("n", ">", 4)]
    assert same(
        by_id(got.to_table(filter=f)),
        by_id(expected.to_table(filter=pq.filters_to_expression(f))),
    )


# --- filters ------------------------------------------------------------------------------

VALUES: dict[str, Any] = {
    "k": st.sampled_from([0, 1, 3, 7, -1]),
    "s": st.sampled_from(["a b", "x/y", "é", "zz", ""]),
    "x": st.sampled_from([0.0, 10.25, 40.0, 149.75, math.nan, -1.0]),
    "n": st.integers(-1, 18),
    "t": st.sampled_from(["t0", "t4", "t8", "u", ""]),
    "id": st.integers(-5, N + 5),
}
OPS = ["=", "==", "!=", "<", "<=", ">", ">="]


@st.composite
def predicates(draw: st.DrawFn) -> tuple[str, str, Any]:
    column = draw(st.sampled_from(sorted(VALUES)))
    op = draw(st.sampled_from([*OPS, "in", "not in"]))
    if op in ("in", "not in"):
        return (column, op, draw(st.lists(VALUES[column], min_size=1, max_size=3)))
    return (column, op, draw(VALUES[column]))


FILTERS = st.one_of(
    st.lists(predicates(), min_size=1, max_size=3),
    st.lists(st.lists(predicates(), min_size=1, max_size=2), min_size=1, max_size=3),
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(FILTERS)
def test_filters_keep_the_rows_pyarrow_keeps(hive: Path, filters: list[Any]) -> None:
    # pyarrow.parquet.read_table cannot read this dataset at all ("Cannot yet unify
    # dictionaries with nulls": s has a null partition); pyarrow.dataset can.
    expected = pds.dataset(hive, partitioning="hive").to_table(
        filter=pq.filters_to_expression(filters)
    )
    ds = zd.dataset(hive)
    assert same(by_id(ds.to_table(filter=filters)), by_id(expected)), filters
    assert ds.count_rows(filter=filters) == expected.num_rows
    # The same filter as an Expression, read through its Substrait form.
    expression = pq.filters_to_expression(filters)
    assert same(by_id(ds.to_table(filter=expression)), by_id(expected)), expression


@pytest.mark.parametrize(
    "expression",
    [
        pc.field("k") == 2,
        (pc.field("x") < 10) | pc.field("n").is_null(),
        pc.field("s").isin(["é", "x/y"]) & (pc.field("id") < 300),
        ~(pc.field("k") > 1) & pc.field("t").is_valid(),
    ],
    ids=str,
)
def test_expressions_keep_the_rows_pyarrow_keeps(hive: Path, expression: pc.Expression) -> None:
    expected = pds.dataset(hive, partitioning="hive").to_table(filter=expression)
    ds = zd.dataset(hive)
    assert same(by_id(ds.to_table(filter=expression)), by_id(expected))
    assert ds.count_rows(filter=expression) == expected.num_rows
    got = pa.Table.from_batches(
        list(ds.to_batches(["id", "k"], filter=expression)),
        schema=pa.schema([ds.schema.field("id"), ds.schema.field("k")]),
    )
    assert same(by_id(got), by_id(expected.select(["id", "k"])))


def test_a_bad_filter_is_refused_with_what_is_wrong(hive: Path) -> None:
    with pytest.raises(ValueError, match='"~" is not a valid operator in predicates'):
        zp.read_table(hive, filters=[("k", "~", 1)])
    with pytest.raises(ParameterError, match="filter: column 'nope' is not in the dataset"):
        zp.read_table(hive, filters=[("nope", "=", 1)])
    with pytest.raises(
        ParameterError,
        match=r"filter on column 'n': the value abc \(Utf8\) cannot be compared with values of "
        "type Int64",
    ):
        zp.read_table(hive, filters=[("n", "<", "abc")])
    with pytest.raises(TypeError, match="must be a collection of values"):
        zp.read_table(hive, filters=[("n", "in", 3)])
    with pytest.raises(ParameterError, match="column 'nope' is not in the dataset"):
        zd.dataset(hive).to_table(columns=["id", "nope"])


# --- pruning --------------------------------------------------------------------------------


def test_partitions_pruned_are_never_opened(tmp_path: Path) -> None:
    zd.write_dataset(values_table(), tmp_path, partitioning=["k"], partitioning_flavor="hive")
    (tmp_path / "k=9").mkdir()
    (tmp_path / "k=9" / "part-0.parquet").write_bytes(b"PAR1 this is not a Parquet file")
    ds = zd.dataset(tmp_path)
    for f in ([("k", "<", 9)], [("k", "in", [1, 2])], pc.field("k") != 9):
        assert ds.to_table(filter=f).num_rows == (N if "<" in str(f) or "!=" in str(f) else N // 2)
        ds.count_rows(filter=f)
    with pytest.raises(ParquetError, match="k=9/part-0.parquet"):
        ds.to_table()


def _corrupt_first_row_group(path: Path) -> None:
    """Overwrites the pages of row group 0 (the footer stays as it was)."""
    meta = pq.read_metadata(path)
    group = meta.row_group(0)
    data = bytearray(path.read_bytes())
    for c in range(group.num_columns):
        col = group.column(c)
        start = col.dictionary_page_offset or col.data_page_offset
        for i in range(start + 20, start + col.total_compressed_size):
            data[i] = 0xA5
    path.write_bytes(bytes(data))


def test_row_groups_pruned_by_statistics_are_never_read_and_counts_come_from_footers(
    tmp_path: Path,
) -> None:
    data = pa.table({"id": pa.array(range(100), pa.int64()), "v": [f"v{i}" for i in range(100)]})
    zp.write_table(data, tmp_path / "f.parquet", row_group_size=10)
    _corrupt_first_row_group(tmp_path / "f.parquet")
    ds = zd.dataset(tmp_path)
    assert ds.to_table(filter=[("id", ">=", 10)])["id"].to_pylist() == list(range(10, 100))
    # Counted from the footer alone: the corrupt row group is never decompressed.
    assert ds.count_rows() == 100
    assert ds.count_rows(filter=[("id", "<", 30)]) == 30
    # An Expression of the same comparisons prunes as the tuples do.
    assert ds.count_rows(filter=pc.field("id") >= 10) == 90
    assert ds.to_table(filter=(pc.field("id") > 95) | pc.field("id").isin([50])).num_rows == 5
    with pytest.raises(ParquetError, match="f.parquet"):
        ds.to_table(filter=[("id", "<", 5)])


# --- reads ----------------------------------------------------------------------------------


def test_streams_hold_a_bounded_amount_ahead(tmp_path: Path) -> None:
    if not zstdpool.memory_stats()["counting"]:
        pytest.skip("this build does not count its allocations")
    big = pa.table({"id": pa.array(range(200_000), pa.int64()), "v": pa.array(range(200_000))})
    for i in range(12):
        zp.write_table(big, tmp_path / f"f{i:02}.parquet")
    ds = zd.dataset(tmp_path)
    zstdpool.reset_peak_memory()
    whole = ds.to_table(threads=2)
    whole_peak = zstdpool.memory_stats()["peak_bytes"]
    assert whole.num_rows == 12 * 200_000
    del whole
    zstdpool.reset_peak_memory()
    rows = 0
    for batch in ds.to_reader(readahead_bytes=1, threads=2):
        rows += batch.num_rows
        del batch
    stream_peak = zstdpool.memory_stats()["peak_bytes"]
    assert rows == 12 * 200_000
    # A file (3.2 MB decoded) per thread in flight, against twelve held at once. Two files'
    # reads and their conversion overlap at the peak (15.8 MB against 61.9 MB measured).
    assert stream_peak < whole_peak / 3, (stream_peak, whole_peak)


@pytest.mark.parametrize("fmt", ["parquet", "ipc"])
def test_readahead_bounds_what_is_held_decoded_not_the_bytes_on_disk(
    tmp_path: Path, fmt: str
) -> None:
    """40 files of zeros: a few KiB each on disk, 4 MB each decoded, ten times the readahead
    bound in all. A window weighed by bytes on disk would take every file at once."""
    if not zstdpool.memory_stats()["counting"]:
        pytest.skip("this build does not count its allocations")
    rows, files, bound = 500_000, 40, 16 << 20
    zeros = pa.table({"z": pa.array(np.zeros(rows, dtype=np.int64))})
    for i in range(files):
        if fmt == "parquet":
            zp.write_table(zeros, tmp_path / f"f{i:02}.parquet")
        else:
            zipc.write_file(zeros, tmp_path / f"f{i:02}.arrow", compression="zstd")
    on_disk = sum(p.stat().st_size for p in tmp_path.iterdir())
    decoded = files * rows * 8
    assert on_disk * 100 < bound < decoded // 8
    ds = zd.dataset(tmp_path, format=fmt)
    gc.collect()
    before = zstdpool.memory_stats()["current_bytes"]
    zstdpool.reset_peak_memory()
    seen = 0
    for batch in ds.to_reader(readahead_bytes=bound, threads=2):
        seen += batch.num_rows
        del batch
    peak = zstdpool.memory_stats()["peak_bytes"] - before
    assert seen == files * rows
    one_batch = rows * 8
    assert peak < 2 * bound + one_batch, (peak, bound)


def test_head_counts_and_the_c_stream(hive: Path) -> None:
    ds = zd.dataset(hive)
    expected = pds.dataset(hive, partitioning="hive")
    assert ds.schema == expected.schema
    assert ds.count_rows() == expected.count_rows() == N
    head = ds.head(7, columns=["id", "k"], filter=[("k", "=", 2)])
    assert head.num_rows == 7 and head.column_names == ["id", "k"]
    assert head["k"].to_pylist() == [2] * 7
    assert ds.head(0).num_rows == 0
    assert pa.RecordBatchReader.from_stream(ds).read_all().num_rows == N
    assert sum(b.num_rows for b in ds.to_batches(batch_size=4)) == N
    assert all(b.num_rows <= 4 for b in ds.to_batches(batch_size=4))
    duckdb = pytest.importorskip("duckdb")
    assert duckdb.sql("select count(*) from ds").fetchall() == [(N,)]


def test_ipc_datasets(tmp_path: Path) -> None:
    zd.write_dataset(
        values_table(), tmp_path, partitioning=["k"], partitioning_flavor="hive", format="ipc"
    )
    ds = zd.dataset(tmp_path, format="ipc")
    expected = pds.dataset(tmp_path, format="ipc", partitioning="hive")
    assert same(by_id(ds.to_table()), by_id(expected.to_table()))
    f = (pc.field("k") == 1) & (pc.field("n") > 3)
    assert same(by_id(ds.to_table(filter=f)), by_id(expected.to_table(filter=f)))
    tuples = [("k", "=", 1), ("n", ">", 3)]
    assert ds.count_rows(filter=tuples) == expected.count_rows(filter=f)


def test_files_with_different_schemas_read_as_pyarrow_reads_them(tmp_path: Path) -> None:
    pq.write_table(pa.table({"id": [1, 2], "a": ["x", "y"]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": [3], "b": [1.5]}), tmp_path / "b.parquet")
    got = zd.dataset(tmp_path).to_table()
    assert same(got, pds.dataset(tmp_path).to_table())
    given = pa.schema([("id", pa.int64()), ("b", pa.float64())])
    got = zd.dataset(tmp_path, schema=given).to_table()
    assert same(got, pds.dataset(tmp_path, schema=given).to_table())


def test_partitionings_pyarrow_names(tmp_path: Path) -> None:
    d = tmp_path / "dir"
    for year, day in [(2024, "2024-01-02"), (2025, "2025-03-04")]:
        (d / str(year) / day).mkdir(parents=True)
        pq.write_table(pa.table({"v": [year]}), d / str(year) / day / "f.parquet")
    got = zd.dataset(d, partitioning=["year", "day"]).to_table()
    expected = pds.dataset(d, partitioning=["year", "day"]).to_table()
    assert same(got, expected)
    typed = pds.partitioning(pa.schema([("year", pa.int16()), ("day", pa.date32())]))
    got = zd.dataset(d, partitioning=typed).to_table(
        filter=[("day", ">", datetime.date(2025, 1, 1))]
    )
    assert got.to_pylist() == [{"v": 2025, "year": 2025, "day": datetime.date(2025, 3, 4)}]
    hive = pds.partitioning(pa.schema([("k", pa.int64())]), flavor="hive")
    zd.write_dataset(values_table(), tmp_path / "h", partitioning=["k"], partitioning_flavor="hive")
    assert zd.dataset(tmp_path / "h", partitioning=hive).schema.field("k").type == pa.int64()
    assert zd.dataset(tmp_path / "h", partitioning=None).schema.names == ["id", "s", "x", "n", "t"]


@pytest.mark.parametrize(
    "values",
    [
        ["0x10", "5"],
        ["0X1f", "0xFFFFFFFF", "0x80000000", "0x00000010"],
        ["-3", "007", "-0"],
        ["+5", "1"],
        [" 7", "1"],
        ["0x", "1"],
        ["-0x10", "1"],
        ["0x000000010", "1"],
        ["2147483648", "1"],
        ["1e3", "1_000"],
    ],
    ids=str,
)
def test_partition_values_are_typed_as_pyarrow_types_them(
    tmp_path: Path, values: list[str]
) -> None:
    for v in values:
        (tmp_path / f"q={v}").mkdir()
        pq.write_table(pa.table({"x": [v]}), tmp_path / f"q={v}" / "f.parquet")
    expected = pds.dataset(tmp_path, partitioning="hive").to_table()
    got = zd.dataset(tmp_path).to_table()
    assert got.schema == expected.schema
    assert got.sort_by("x").to_pylist() == expected.sort_by("x").to_pylist()
    # Given the type, the values are parsed as pyarrow parses them too.
    typed = pds.partitioning(pa.schema([("q", pa.int64())]), flavor="hive")
    try:
        expected = pds.dataset(tmp_path, partitioning=typed).to_table()
    except pa.ArrowInvalid:
        with pytest.raises(ParameterError, match="partitioning: the value"):
            zd.dataset(tmp_path, partitioning=typed).to_table()
    else:
        got = zd.dataset(tmp_path, partitioning=typed).to_table()
        assert got.sort_by("x").to_pylist() == expected.sort_by("x").to_pylist()


@pytest.mark.parametrize("partitioning", ["hive", ["q"]])
def test_a_partition_segment_of_invalid_utf8_is_refused(tmp_path: Path, partitioning: Any) -> None:
    segment = "q=%C3" if partitioning == "hive" else "%C3"
    (tmp_path / segment).mkdir()
    pq.write_table(pa.table({"x": [1]}), tmp_path / segment / "f.parquet")
    with pytest.raises(pa.ArrowInvalid, match="not valid UTF-8"):
        pds.dataset(tmp_path, partitioning=partitioning).to_table()
    with pytest.raises(ParameterError, match='segment "%C3" is not valid UTF-8'):
        zd.dataset(tmp_path, partitioning=partitioning).to_table()


def test_empty_and_missing_directories(tmp_path: Path) -> None:
    ds = zd.dataset(tmp_path)
    assert ds.files == [] and ds.to_table().num_rows == 0 and ds.count_rows() == 0
    assert ds.schema == pds.dataset(tmp_path).schema
    with pytest.raises(FileNotFoundError):
        zd.dataset(tmp_path / "nope")
    with pytest.raises(TypeError, match="filesystem must be a pyarrow.fs.FileSystem"):
        zd.dataset(tmp_path, filesystem=object())


def test_read_pandas_restores_the_index(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}, index=pd.Index([7, 8, 9], name="i"))
    zp.write_table(pa.Table.from_pandas(df), tmp_path / "f.parquet")
    got = zp.read_pandas(tmp_path / "f.parquet", columns=["a"]).to_pandas()
    assert got.equals(pq.read_pandas(tmp_path / "f.parquet", columns=["a"]).to_pandas())
    assert list(got.index) == [7, 8, 9]


def test_a_file_failing_part_way_through_a_stream_raises_naming_it(tmp_path: Path) -> None:
    data = pa.table({"id": pa.array(range(50), pa.int64())})
    for name in ("a", "b", "c"):
        zp.write_table(data, tmp_path / f"{name}.parquet")
    _corrupt_first_row_group(tmp_path / "b.parquet")
    batches = zd.dataset(tmp_path).to_batches(readahead_bytes=1)
    assert next(batches).num_rows == 50
    with pytest.raises(ParquetError, match="b.parquet"):
        next(batches)
    # The stream ends there; every context it leased is back (the autouse fixture checks).
    assert list(batches) == []


@pytest.mark.parametrize("writer", ["zstdpool", "pyarrow"])
def test_bloom_filters_prune_what_statistics_keep(tmp_path: Path, writer: str) -> None:
    # Even ids and their tags, four row groups: 51 lies inside row group 1's [50, 98] but is
    # not in it, which only its bloom filter tells.
    ids = list(range(0, 200, 2))
    data = pa.table({"id": pa.array(ids, pa.int64()), "s": [f"k{i}" for i in ids]})
    path = tmp_path / "f.parquet"
    blooms = {"id": True, "s": True}
    if writer == "zstdpool":
        zp.write_table(data, path, row_group_size=25, bloom_filter_options=blooms)
    else:
        try:
            pq.write_table(data, path, row_group_size=25, bloom_filter_options=blooms)
        except TypeError:
            pytest.skip("this pyarrow writes no bloom filters")
    _corrupt_first_row_group(path)
    ds = zd.dataset([path])
    assert ds.to_table(filter=[("id", "=", 1)]).num_rows == 0
    assert ds.to_table(filter=[("s", "in", ["k1", "k3"])]).num_rows == 0
    assert ds.to_table(filter=[("id", "=", 52)])["s"].to_pylist() == ["k52"]
    # Row group 0 holds 2: its bloom filter says so, and its corrupt pages are read.
    with pytest.raises(ParquetError, match="f.parquet"):
        ds.to_table(filter=[("id", "=", 2)])


def test_a_read_reuses_the_pools_contexts(hive: Path) -> None:
    """Each file is decoded by one reader for all its columns: a context leased per column
    for the whole chunk would need more contexts than the pool keeps, and make new ones for
    every file."""
    ds = zd.dataset(hive)
    ds.to_table(threads=2)
    before = zstdpool.pool_stats()
    ds.to_table(threads=2)
    after = zstdpool.pool_stats()
    assert after["created"] == before["created"]
    assert after["reused"] > before["reused"]


@pytest.mark.parametrize(
    ("data", "filters"),
    [
        # A value the column's type cannot hold is compared in a type that holds both, as
        # pyarrow promotes them: never cast down to the column's.
        (pa.array([0, 1, 2], pa.int32()), [("x", "<", 1.5)]),
        (pa.array([0, 1, 2], pa.int32()), [("x", ">=", 1.5)]),
        (pa.array([0, 1, 2], pa.int32()), [("x", "=", 1.5)]),
        (pa.array([0, 1, 2], pa.int32()), [("x", "in", [1.5, 2])]),
        (pa.array([0, 1, 2], pa.int32()), [("x", "!=", 2**40)]),
        (pa.array([0.1, 0.2], pa.float32()), [("x", "=", 0.1)]),
        (
            pa.array([1, 2], pa.timestamp("ms")),
            [("x", "=", pa.scalar(1500, pa.timestamp("us")))],
        ),
        # A finer decimal, and a fraction against integers, are never rounded into the
        # column's type.
        (
            pa.array([Decimal("1.00"), Decimal("999.99")], pa.decimal128(5, 2)),
            [("x", "=", Decimal("1.001"))],
        ),
        (pa.array([1, 5, 100], pa.int64()), [("x", "<", Decimal("1.5"))]),
        (pa.array([1, 5, 100], pa.int64()), [("x", "=", Decimal("1.5"))]),
        # 0.0 and -0.0 are equal in comparisons, apart in `in` (pyarrow hashes the set).
        (pa.array([0.0, -0.0, 1.0]), [("x", "in", [0.0])]),
        (pa.array([0.0, -0.0, 1.0]), [("x", "not in", [-0.0])]),
        (pa.array([-0.0, 0.0, 1.0, math.nan]), [("x", "=", 0.0)]),
        (pa.array([-0.0, 0.0, 1.0, math.nan]), [("x", "<", 0.0)]),
        (pa.array([-0.0, 0.0, 1.0, math.nan]), [("x", "!=", -0.0)]),
    ],
    ids=str,
)
def test_values_are_compared_as_pyarrow_compares_them(
    tmp_path: Path, data: pa.Array, filters: list[Any]
) -> None:
    pq.write_table(pa.table({"x": data}), tmp_path / "f.parquet")
    expected = pds.dataset(tmp_path).to_table(filter=pq.filters_to_expression(filters))
    ds = zd.dataset(tmp_path)
    assert same(ds.to_table(filter=filters), expected), filters
    assert ds.count_rows(filter=filters) == expected.num_rows


@pytest.mark.parametrize(
    "data",
    [
        pa.array(["a", None, "b"]),
        pa.array([True, None, False]),
        pa.array([1, None, 3], pa.int64()),
        pa.array([1.5, None, math.nan]),
        pa.array([datetime.date(2026, 1, 1), None, datetime.date(2026, 1, 2)]),
        pa.array([1, None, 2], pa.timestamp("us", tz="UTC")),
        pa.array([b"a", None, b"b"]),
        pa.array([Decimal("1.5"), None, Decimal("2.5")], pa.decimal128(4, 1)),
        pa.array(["a", None, "b"]).dictionary_encode(),
    ],
    ids=lambda a: str(a.type),
)
@pytest.mark.parametrize("op", ["=", "!=", "<", ">="])
def test_a_comparison_with_null_keeps_no_row_of_any_type(
    tmp_path: Path, data: pa.Array, op: str
) -> None:
    pq.write_table(pa.table({"x": data, "i": range(3)}), tmp_path / "f.parquet")
    filters = [("x", op, None)]
    expected = pds.dataset(tmp_path).to_table(filter=pq.filters_to_expression(filters))
    assert expected.num_rows == 0
    ds = zd.dataset(tmp_path)
    cases: list[tuple[Any, list[int]]] = [
        (filters, []),
        (pq.filters_to_expression(filters), []),
        ([[("x", op, None)], [("i", "=", 1)]], [1]),
    ]
    for case, ids in cases:
        assert ds.to_table(filter=case)["i"].to_pylist() == ids
        assert ds.count_rows(filter=case) == len(ids)
    assert zp.read_table(tmp_path / "f.parquet", filters=filters).num_rows == 0


@pytest.mark.parametrize(
    ("data", "filters"),
    [
        (pa.array(["1", "05", "10"]), [("x", "<", 10)]),
        (pa.array([1, 2]), [("x", "=", "1")]),
        (pa.array([True, False]), [("x", "=", 1)]),
        (
            pa.array([1, 2], pa.timestamp("ms", tz="UTC")),
            [("x", "=", pa.scalar(1, pa.timestamp("ms")))],
        ),
    ],
    ids=str,
)
def test_values_pyarrow_cannot_compare_are_refused(
    tmp_path: Path, data: pa.Array, filters: list[Any]
) -> None:
    pq.write_table(pa.table({"x": data}), tmp_path / "f.parquet")
    with pytest.raises(pa.ArrowException):
        pds.dataset(tmp_path).to_table(filter=pq.filters_to_expression(filters))
    with pytest.raises(
        ParameterError, match="filter on column 'x': the value .* cannot be compared"
    ):
        zd.dataset(tmp_path).to_table(filter=filters)


def test_statistics_of_another_type_or_unordered_prune_nothing(tmp_path: Path) -> None:
    # The dataset's x is int64 (the first file's); the second file holds strings, whose
    # statistics ("10" < "5") say nothing of the integers they are read as.
    pq.write_table(pa.table({"x": pa.array([1, 2], pa.int64())}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"x": ["10", "20"]}), tmp_path / "b.parquet")
    ds = zd.dataset(tmp_path)
    assert ds.to_table(filter=[("x", ">", 5)])["x"].to_pylist() == [10, 20]
    assert ds.count_rows(filter=[("x", ">", 5)]) == 2
    # A value the dataset's type cannot hold is an error naming the file, not a null.
    pq.write_table(pa.table({"x": ["abc"]}), tmp_path / "c.parquet")
    with pytest.raises(ParameterError, match=r"column 'x' is Utf8 in .*c\.parquet"):
        ds = zd.dataset(tmp_path)
        ds.to_table()


def _varint(n: int, width: int) -> bytes:
    """`n` as a varint of exactly `width` bytes (padded with continuation bits)."""
    out = []
    for i in range(width):
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if i < width - 1 else 0))
    assert n == 0
    return bytes(out)


def test_a_hostile_bloom_filter_is_never_a_crash(tmp_path: Path) -> None:
    data = pa.table({"x": pa.array(range(100), pa.int64())})
    path = tmp_path / "f.parquet"
    zp.write_table(data, path, bloom_filter_options={"x": True})
    length = pq.read_metadata(path).row_group(0).column(0).bloom_filter_length
    assert length is not None and length > 32
    raw = bytearray(path.read_bytes())
    # The footer's bloom_filter_length (field 15, an i32: 0x15 then a zigzag varint) made 32:
    # a 16-byte header and a 16-byte bitset, a filter of no 32-byte block, whose every
    # lookup would index out of bounds.
    width = max(1, (2 * length).bit_length() + 6) // 7
    old = b"\x15" + _varint(2 * length, width)
    at = raw.rfind(old)
    assert at > 0
    raw[at : at + len(old)] = b"\x15" + _varint(2 * 32, width)
    path.write_bytes(bytes(raw))
    assert pq.read_metadata(path).row_group(0).column(0).bloom_filter_length == 32
    ds = zd.dataset(tmp_path)
    for _ in range(2):
        got = ds.to_reader(filter=[("x", "=", 5)]).read_all()
        assert got["x"].to_pylist() == [5]
        assert ds.to_table(filter=[("x", "=", 5)])["x"].to_pylist() == [5]


def _bloom_filtered(tmp_path: Path) -> tuple[Path, int, int, bytearray]:
    """A file of ids 0-199 with a bloom filter on id: its path, the filter's offset and
    length, and the file's bytes."""
    path = tmp_path / "f.parquet"
    zp.write_table(
        pa.table({"id": pa.array(range(200), pa.int64())}), path, bloom_filter_options={"id": True}
    )
    column = pq.read_metadata(path).row_group(0).column(0)
    offset, length = column.bloom_filter_offset, column.bloom_filter_length
    assert offset is not None and length is not None
    return path, offset, length, bytearray(path.read_bytes())


def _every_id_is_found(path: Path) -> None:
    """Each id's filter finds its row, as pyarrow finds it without bloom filters."""
    ds = zd.dataset([path])
    plain = pds.dataset(path)
    for i in range(200):
        want = plain.count_rows(filter=pc.field("id") == i)
        assert ds.count_rows(filter=[("id", "=", i)]) == want == 1, i
        assert ds.to_table(filter=[("id", "in", [i, -1])]).num_rows == 1, i


def test_a_bloom_filter_whose_header_and_bitset_disagree_prunes_nothing(tmp_path: Path) -> None:
    path, offset, length, raw = _bloom_filtered(tmp_path)
    header = bytes(raw[offset : offset + length])
    # Field 1, num_bytes: 0x15 and the zigzag varint of the bitset's length, ending at `end`.
    assert header[0] == 0x15
    end = 1 + next(i for i, b in enumerate(header[1:]) if not b & 0x80) + 1
    # The header now claims 2**30 bytes, in a 5-byte varint: the 3 bytes more are taken from the
    # bitset's end, so the footer's length still holds header and bitset, and what is left of
    # the bitset (not a whole number of 32-byte blocks) would hash values into other blocks.
    claimed = b"\x15" + _varint(2 * 2**30, 5)
    grown = claimed + header[end:]
    extra = len(grown) - len(header)
    assert extra > 0
    raw[offset : offset + length] = grown[: len(header)]
    path.write_bytes(bytes(raw))
    _every_id_is_found(path)


@pytest.mark.parametrize("damage", ["bitset zeroed", "bitset truncated", "num_bytes zeroed"])
def test_a_damaged_bloom_filter_prunes_nothing(tmp_path: Path, damage: str) -> None:
    path, offset, length, raw = _bloom_filtered(tmp_path)
    header = bytes(raw[offset : offset + length])
    bitset_bytes = 1 << (length.bit_length() - 1)  # the bitset is a power of two
    header_len = length - bitset_bytes
    assert header_len > 0 and header[0] == 0x15
    if damage == "bitset zeroed":
        raw[offset + header_len : offset + length] = bytes(bitset_bytes)
    elif damage == "bitset truncated":
        # The footer's length cut by 32 bytes: the header still claims the whole bitset.
        width = max(1, (2 * length).bit_length() + 6) // 7
        old = b"\x15" + _varint(2 * length, width)
        at = raw.rfind(old)
        assert at > 0
        raw[at : at + len(old)] = b"\x15" + _varint(2 * (length - 32), width)
    else:
        # num_bytes 0, in the varint's own width (padded), in front of the whole bitset.
        width = next(i for i, b in enumerate(header[1:]) if not b & 0x80) + 1
        raw[offset + 1 : offset + 1 + width] = _varint(0, width)
    path.write_bytes(bytes(raw))
    _every_id_is_found(path)


def test_files_are_read_in_pyarrows_order(tmp_path: Path) -> None:
    for k in ("a", "a-b", "a.b"):
        (tmp_path / f"k={k}").mkdir()
        pq.write_table(pa.table({"v": [k]}), tmp_path / f"k={k}" / "f.parquet")
    got = zd.dataset(tmp_path).to_table()["v"].to_pylist()
    assert got == pds.dataset(tmp_path, partitioning="hive").to_table()["v"].to_pylist()


def test_pages_the_page_index_rules_out_are_never_read(tmp_path: Path) -> None:
    data = pa.table({"id": pa.array(range(100), pa.int64()), "v": [f"v{i:03}" for i in range(100)]})
    path = tmp_path / "f.parquet"
    zp.write_table(data, path, max_rows_per_page=10, use_dictionary=False)
    meta = pq.read_metadata(path)
    assert meta.num_row_groups == 1
    raw = bytearray(path.read_bytes())
    for c in range(2):
        at = meta.row_group(0).column(c).data_page_offset
        raw[at : at + 8] = b"\xa5" * 8  # the first page's header: rows 0-9 of each column
    path.write_bytes(bytes(raw))
    ds = zd.dataset(tmp_path)
    got = ds.to_table(filter=[("id", ">=", 42), ("id", "<", 57)])
    assert got["v"].to_pylist() == [f"v{i:03}" for i in range(42, 57)]
    assert ds.count_rows(filter=[("id", ">=", 10)]) == 90
    with pytest.raises(ParquetError, match="f.parquet"):
        ds.to_table(filter=[("id", "<", 5)])


def test_expressions_of_timestamps_and_decimals_are_read_into_the_filter(tmp_path: Path) -> None:
    times = [datetime.datetime(2020, 1, 1, 0, 0, i) for i in range(5)]
    utc = datetime.timezone.utc
    data = pa.table(
        {
            "t": pa.array(times, pa.timestamp("ms")),
            "tz": pa.array(
                [t.replace(tzinfo=utc) for t in times], pa.timestamp("us", "Europe/Paris")
            ),
            "d": pa.array([Decimal(f"{i}.25") for i in range(5)], pa.decimal128(10, 2)),
        }
    )
    pq.write_table(data, tmp_path / "f.parquet")
    ds = zd.dataset(tmp_path)
    from zstdpool._substrait import to_tree

    for expression in [
        pc.field("t") > pa.scalar(times[2], pa.timestamp("ms")),
        pc.field("tz") >= pa.scalar(times[3].replace(tzinfo=utc), pa.timestamp("us", "UTC")),
        pc.field("d") == pa.scalar(Decimal("2.25"), pa.decimal128(10, 2)),
    ]:
        assert to_tree(expression, ds.schema) is not None, expression
        expected = pds.dataset(tmp_path).to_table(filter=expression)
        assert same(ds.to_table(filter=expression), expected)
        assert ds.count_rows(filter=expression) == expected.num_rows


def test_pages_of_a_column_with_nulls_are_pruned_too(tmp_path: Path) -> None:
    # max_rows_per_page bounds every column's pages, nulls or not (the writer's batches are
    # no larger than it), so a nullable column's pages are pruned as a full one's are.
    ids = [None if i % 7 == 3 else i for i in range(100)]
    data = pa.table({"id": pa.array(ids, pa.int64())})
    path = tmp_path / "f.parquet"
    zp.write_table(data, path, max_rows_per_page=10, use_dictionary=False)
    meta = pq.read_metadata(path)
    raw = bytearray(path.read_bytes())
    at = meta.row_group(0).column(0).data_page_offset
    raw[at : at + 8] = b"\xa5" * 8  # the first page's header: rows 0-9
    path.write_bytes(bytes(raw))
    ds = zd.dataset(tmp_path)
    got = ds.to_table(filter=[("id", ">=", 50)])["id"].to_pylist()
    assert got == [i for i in ids[50:] if i is not None]
    with pytest.raises(ParquetError, match="f.parquet"):
        ds.to_table(filter=[("id", "<", 5)])


def test_a_corrupt_ipc_dataset_raises_the_ipc_error(tmp_path: Path) -> None:
    import zstdpool.ipc as zi
    from zstdpool.errors import IpcDecompressionError

    data = pa.table({"x": pa.array([f"value {i % 50}" for i in range(20_000)])})
    path = tmp_path / "f.arrow"
    zi.write_file(data, path, compression="zstd")
    raw = bytearray(path.read_bytes())
    frame = raw.find(b"\x28\xb5\x2f\xfd")  # the first zstd frame of a body
    assert frame > 0
    raw[frame + 8 : frame + 40] = b"\xa5" * 32
    path.write_bytes(bytes(raw))
    ds = zd.dataset(tmp_path, format="ipc")
    # A corrupt body of an IPC dataset is the IPC format's decompression error.
    with pytest.raises(IpcDecompressionError, match="f.arrow") as raised:
        ds.to_table()
    assert not isinstance(raised.value, ParquetError)
    with pytest.raises(IpcDecompressionError):
        next(iter(ds.to_batches()))
