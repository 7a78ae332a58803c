"""The reading API of pyarrow.dataset.Dataset on zstdpool's datasets: filter, scanner and
Scanner, take, replace_schema and projections given as Expressions, each against what
pyarrow's own Dataset returns for the same files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pytest
import zstdpool
import zstdpool.dataset as zd

N = 500


@pytest.fixture(scope="module")
def hive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("api")
    t = pa.table(
        {
            "id": pa.array(range(N), pa.int64()),
            "k": pa.array([i % 5 for i in range(N)], pa.int32()),
            "x": pa.array([None if i % 7 == 0 else i / 2 for i in range(N)]),
            "s": [f"s{i % 11}" for i in range(N)],
        }
    )
    zd.write_dataset(t, d, partitioning=["k"], partitioning_flavor="hive")
    return d


def both(hive: Path) -> tuple[zd.Dataset, pds.Dataset]:
    return zd.dataset(hive), pds.dataset(hive, partitioning="hive")


def by_id(t: pa.Table) -> list[dict[str, Any]]:
    return t.sort_by("id").to_pylist() if "id" in t.schema.names else t.to_pylist()


FILTERS = [
    pc.field("k") == 2,
    (pc.field("x") > 100) & (pc.field("k") != 1),
    pc.field("s").isin(["s1", "s3"]),
    pc.field("x").is_null(),
]


@pytest.mark.parametrize("expression", FILTERS, ids=str)
def test_dataset_filter_keeps_what_pyarrows_keeps(hive: Path, expression: pc.Expression) -> None:
    z, p = both(hive)
    got, want = z.filter(expression), p.filter(expression)
    assert by_id(got.to_table()) == by_id(want.to_table())
    assert got.count_rows() == want.count_rows()
    # A read's own filter applies on top of the dataset's.
    more = pc.field("id") < 250
    assert by_id(got.to_table(filter=more)) == by_id(want.to_table(filter=more))
    assert got.count_rows(filter=[("id", "<", 250)]) == want.count_rows(filter=more)
    # Filters stack, and the stream other libraries take holds only the rows kept.
    twice = got.filter(more)
    assert by_id(twice.to_table()) == by_id(want.filter(more).to_table())
    assert by_id(pa.table(twice)) == by_id(want.filter(more).to_table())
    # The dataset itself is unchanged.
    assert z.count_rows() == N


def test_scanner_has_pyarrows_methods(hive: Path) -> None:
    z, p = both(hive)
    kwargs: dict[str, Any] = {"columns": ["id", "s"], "filter": pc.field("k") >= 3}
    zs, ps = z.scanner(batch_size=17, **kwargs), p.scanner(batch_size=17, **kwargs)
    assert zs.projected_schema == ps.projected_schema
    assert zs.dataset_schema == z.schema
    assert by_id(zs.to_table()) == by_id(ps.to_table())
    batches = list(zs.to_batches())
    assert all(b.num_rows <= 17 for b in batches)
    assert by_id(pa.Table.from_batches(batches)) == by_id(ps.to_table())
    assert by_id(zs.to_reader().read_all()) == by_id(ps.to_table())
    assert zs.count_rows() == ps.count_rows()
    assert zs.head(5).num_rows == 5
    assert zs.head(5).schema == ps.projected_schema
    assert by_id(pa.table(zs)) == by_id(ps.to_table())
    assert zd.Scanner.from_dataset(z, **kwargs).count_rows() == ps.count_rows()
    with pytest.raises(TypeError, match="Dataset"):
        zd.Scanner.from_dataset(p, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size"):
        z.scanner(batch_size=0)


def test_take_reads_rows_at_positions(hive: Path) -> None:
    z, p = both(hive)
    order = z.to_table()["id"].to_pylist()
    for indices in ([0, 3, 3, 99], pa.array([N - 1, 0], pa.int64()), []):
        got = z.take(indices)
        assert got["id"].to_pylist() == [order[i] for i in list(indices)]
    kept = z.take([0, 1], columns=["id"], filter=pc.field("k") == 4)
    assert kept["id"].to_pylist() == z.to_table(filter=pc.field("k") == 4)["id"].to_pylist()[:2]
    assert kept.schema.names == ["id"]
    with pytest.raises(IndexError):
        z.take([N])
    with pytest.raises(IndexError):
        p.take([N])
    with pytest.raises(IndexError):
        z.take([-1])
    assert z.scanner(filter=pc.field("k") == 1).take([0])["k"].to_pylist() == [1]


def test_replace_schema(hive: Path) -> None:
    z, p = both(hive)
    schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("k", pa.int32())])
    got = z.replace_schema(schema)
    want = p.replace_schema(schema)
    assert got.schema == want.schema
    assert by_id(got.to_table()) == by_id(want.to_table())
    # Columns the schema adds read as nulls.
    wider = pa.schema([("id", pa.int64()), ("extra", pa.string()), ("k", pa.int32())])
    read = z.replace_schema(wider).to_table()
    assert read["extra"].null_count == N
    with pytest.raises(TypeError, match="Schema"):
        z.replace_schema(["id"])  # type: ignore[arg-type]


def test_columns_as_expressions(hive: Path) -> None:
    z, p = both(hive)
    projection = {"id": pc.field("id"), "twice": pc.field("x") * 2, "tag": pc.field("s")}
    want = p.to_table(columns=projection)
    got = z.to_table(columns=projection)
    assert got.schema == want.schema
    assert by_id(got) == by_id(want)
    f = pc.field("k") == 0
    assert by_id(z.to_table(columns=projection, filter=f)) == by_id(
        p.to_table(columns=projection, filter=f)
    )
    reader = z.to_reader(columns=projection, batch_size=50)
    assert reader.schema == want.schema
    assert by_id(reader.read_all()) == by_id(want)
    assert z.head(3, columns=projection).schema == want.schema
    assert by_id(z.scanner(columns=projection).to_table()) == by_id(want)
    with pytest.raises(TypeError, match="Expressions"):
        z.to_table(columns={"id": "id"})


@pytest.mark.parametrize(
    "factory",
    [
        lambda: pds.partitioning(field_names=["year", "country"]),
        lambda: pds.DirectoryPartitioning.discover(["year", "country"], infer_dictionary=True),
        lambda: pds.HivePartitioning.discover(infer_dictionary=True),
        lambda: pds.partitioning(flavor="hive"),
    ],
    ids=["directory", "directory-dictionary", "hive-dictionary", "hive"],
)
@pytest.mark.parametrize("format", ["parquet", "feather"])
def test_partitioning_factories_read_what_pyarrow_discovers(
    tmp_path: Path, factory: Any, format: str
) -> None:
    """A factory shows nothing but its kind: its field names and dictionaries are found by
    pyarrow's discovery, then the files read by zstdpool's reader."""
    table = pa.table({"v": range(12), "year": [2024, 2025, 2026] * 4, "country": ["DE", "FR"] * 6})
    flavor = "hive" if factory().type_name == "hive" else None
    pds.write_dataset(
        table,
        tmp_path,
        format=format,
        partitioning=["year", "country"],
        partitioning_flavor=flavor,
    )
    theirs = pds.dataset(tmp_path, format=format, partitioning=factory())
    ours = zd.dataset(
        tmp_path,
        format=pds.FeatherFileFormat() if format == "feather" else format,
        partitioning=factory(),
    )
    assert ours.schema == theirs.schema
    key = [("v", "ascending")]
    assert ours.to_table().sort_by(key).equals(theirs.to_table().sort_by(key))
    expression = pc.field("year") == 2025
    assert (
        ours.to_table(filter=expression)
        .sort_by(key)
        .equals(theirs.to_table(filter=expression).sort_by(key))
    )


def test_formats_given_as_pyarrow_file_formats(tmp_path: Path) -> None:
    pds.write_dataset(pa.table({"v": [1, 2]}), tmp_path, format="ipc")
    assert zd.dataset(tmp_path, format=pds.IpcFileFormat()).to_table().column("v").to_pylist() == [
        1,
        2,
    ]
    with pytest.raises(ValueError, match="not 'csv'"):
        zd.dataset(tmp_path, format=pds.CsvFileFormat())


def test_a_dataset_pickles_with_its_source_filter_and_schema(hive: Path) -> None:
    import pickle

    dataset = zd.dataset(hive, partitioning=pds.HivePartitioning.discover(infer_dictionary=True))
    back = pickle.loads(pickle.dumps(dataset))
    assert back.schema == dataset.schema
    assert back.to_table().equals(dataset.to_table())
    kept = dataset.filter(pc.field("id") > 300)
    assert pickle.loads(pickle.dumps(kept)).to_table().equals(kept.to_table())
    schema = pa.schema(
        [(f.name, pa.large_string() if f.type == pa.string() else f.type) for f in dataset.schema]
    )
    replaced = dataset.replace_schema(schema)
    assert pickle.loads(pickle.dumps(replaced)).schema == replaced.schema


def test_partitioning_is_the_one_read_with(hive: Path) -> None:
    part = zd.dataset(hive).partitioning
    assert isinstance(part, pds.HivePartitioning)
    assert part.schema == pa.schema([("k", pa.int32())])
    given = pds.partitioning(pa.schema([("k", pa.int64())]), flavor="hive")
    assert zd.dataset(hive, partitioning=given).partitioning is given
    found = zd.dataset(hive, partitioning=pds.HivePartitioning.discover(infer_dictionary=True))
    assert found.partitioning.schema == pa.schema([("k", pa.dictionary(pa.int32(), pa.int32()))])
    assert sorted(found.partitioning.dictionaries[0].to_pylist()) == [0, 1, 2, 3, 4]
    none = zd.dataset(hive, partitioning=None).partitioning
    assert isinstance(none, pds.DirectoryPartitioning) and len(none.schema) == 0


@pytest.mark.parametrize("writer", ["pyarrow", "zstdpool"])
def test_null_fallback_names_nulls_as_pyarrow_does(tmp_path: Path, writer: str) -> None:
    """A HivePartitioning's null_fallback (which pyarrow does not show: it is read from how
    the partitioning formats a null) names null values when written and when read."""
    table = pa.table({"v": [1, 2, 3], "a": ["x", None, "z"], "b": ["x", "y", None]})
    schema = pa.schema([("a", pa.string()), ("b", pa.string())])
    part = pds.HivePartitioning(schema, None, "xyz")
    write = pds.write_dataset if writer == "pyarrow" else zd.write_dataset
    write(table, tmp_path, format="parquet", partitioning=part)
    dirs = sorted(str(p.relative_to(tmp_path).parent) for p in tmp_path.rglob("*.parquet"))
    assert dirs == ["a=x/b=x", "a=xyz/b=y", "a=z/b=xyz"]
    ours = zd.dataset(tmp_path, partitioning=part).to_table().sort_by("v")
    theirs = pds.dataset(tmp_path, partitioning=part).to_table().sort_by("v")
    assert ours.equals(theirs)
    assert ours.column("a").to_pylist() == ["x", None, "z"]
    found = pds.HivePartitioning.discover(null_fallback="xyz")
    assert zd.dataset(tmp_path, partitioning=found).to_table().sort_by("v").equals(theirs)


def test_filesystem_given_as_a_uri(hive: Path) -> None:
    """A filesystem given as a URI, as pyarrow takes one: rooted at its path."""
    ours = zd.dataset(".", filesystem=f"file://{hive}").to_table()
    assert ours.sort_by("id").equals(zd.dataset(hive).to_table().sort_by("id"))
    one = sorted(p.relative_to(hive) for p in hive.rglob("*.parquet"))[0]
    assert zd.dataset(str(one), filesystem=f"file://{hive}").count_rows() > 0


def test_columns_as_dotted_paths_into_structs(tmp_path: Path) -> None:
    table = pa.table(
        {
            "id": [1, 2],
            "a.dotted.field": [1, 2],
            "s": [{"t": None, "v": [1, 2]}, {"t": "scroll", "v": [3]}],
        }
    )
    zd.write_dataset(table, tmp_path)
    columns = ["id", "s.t", "s.v", "a.dotted.field"]
    ours = zd.dataset(tmp_path).to_table(columns=columns)
    assert ours.equals(pds.dataset(tmp_path).to_table(columns=columns))
    assert ours.column_names == ["id", "t", "v", "a.dotted.field"]
    batches = zd.dataset(tmp_path).to_reader(columns=columns).read_all()
    assert batches.equals(ours)
    with pytest.raises(zstdpool.ParameterError, match="nope"):
        zd.dataset(tmp_path).to_table(columns=["nope.t"])
