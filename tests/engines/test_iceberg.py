"""zstdpool.iceberg: pyiceberg's appends and overwrites through zstdpool's Parquet writer, on a
SQL catalog over sqlite with a local warehouse. What a scan reads back, and every statistic
the manifests keep (counts, bounds, split offsets), equal those of pyiceberg's own writer for
the same data; only the files' sizes differ."""

from __future__ import annotations

import datetime
import decimal
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyiceberg.io.fileformat")
pytest.importorskip("sqlalchemy")

import zstdpool.iceberg as zi  # noqa: E402
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.io.fileformat import FileFormatFactory  # noqa: E402
from pyiceberg.manifest import FileFormat  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.types import (  # noqa: E402
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "i", IntegerType(), required=False),
    NestedField(3, "f", FloatType(), required=False),
    NestedField(4, "d", DoubleType(), required=False),
    NestedField(5, "dec", DecimalType(12, 3), required=False),
    NestedField(6, "day", DateType(), required=False),
    NestedField(7, "t", TimeType(), required=False),
    NestedField(8, "ts", TimestampType(), required=False),
    NestedField(9, "tstz", TimestamptzType(), required=False),
    NestedField(10, "s", StringType(), required=False),
    NestedField(11, "bin", BinaryType(), required=False),
    NestedField(12, "fix", FixedType(4), required=False),
    NestedField(13, "b", BooleanType(), required=False),
    NestedField(14, "u", UUIDType(), required=False),
    NestedField(
        15,
        "l",
        ListType(element_id=17, element_type=LongType(), element_required=False),
        required=False,
    ),
    NestedField(
        16,
        "st",
        StructType(NestedField(18, "a", StringType(), required=False)),
        required=False,
    ),
    NestedField(19, "part", IntegerType(), required=False),
)


def rows(table: Any, n: int, seed: int = 0) -> pa.Table:
    """``n`` rows in ``table``'s schema (the catalog assigns its own field ids)."""
    arrow = table.schema().as_arrow()
    base = datetime.datetime(2026, 1, 1)
    data: dict[str, list[Any]] = {
        "id": [i + seed for i in range(n)],
        "i": [None if i % 9 == 0 else i * 3 for i in range(n)],
        "f": [float("nan") if i % 11 == 0 else i / 4 for i in range(n)],
        "d": [None if i % 5 == 0 else i / 8 for i in range(n)],
        "dec": [decimal.Decimal(i) / 1000 for i in range(n)],
        "day": [(base + datetime.timedelta(days=i % 40)).date() for i in range(n)],
        "t": [datetime.time(i % 24, i % 60) for i in range(n)],
        "ts": [base + datetime.timedelta(seconds=i) for i in range(n)],
        "tstz": [
            (base + datetime.timedelta(minutes=i)).replace(tzinfo=datetime.timezone.utc)
            for i in range(n)
        ],
        "s": [None if i % 7 == 0 else f"value {i % 31}" for i in range(n)],
        "bin": [bytes([i % 256]) * (i % 5) for i in range(n)],
        "fix": [i.to_bytes(4, "big") for i in range(n)],
        "b": [i % 3 == 0 for i in range(n)],
        "u": [uuid.UUID(int=i).bytes for i in range(n)],
        "l": [None if i % 13 == 0 else list(range(i % 4)) for i in range(n)],
        "st": [{"a": f"x{i % 3}"} for i in range(n)],
        "part": [i % 3 for i in range(n)],
    }
    return pa.Table.from_pydict(data, schema=arrow)


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    cat = SqlCatalog(
        "test", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/wh"
    )
    cat.create_namespace("ns")
    return cat


#: The data file fields a manifest keeps of each file.
FIELDS = (
    "file_path",
    "file_size_in_bytes",
    "record_count",
    "column_sizes",
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
    "split_offsets",
    "partition",
)


def files(table: Any) -> list[dict[str, Any]]:
    """The live data files of the table's current snapshot, as their manifests keep them,
    in the order of their lower bounds."""
    snapshot = table.current_snapshot()
    if snapshot is None:
        return []
    out = []
    for manifest in snapshot.manifests(table.io):
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            f = entry.data_file
            out.append({k: getattr(f, k) for k in FIELDS})
    return sorted(out, key=lambda e: (sorted(e["lower_bounds"].items()), e["record_count"]))


def same_rows(ours: Any, theirs: Any) -> bool:
    """Whether two tables' scans read the same rows (NaN equal to NaN)."""
    import pyarrow.compute as pc

    a, b = (t.scan().to_arrow().sort_by("id") for t in (ours, theirs))
    if a.schema != b.schema or a.num_rows != b.num_rows:
        return False
    for name in a.column_names:
        x, y = a[name], b[name]
        if pa.types.is_floating(x.type):
            x, y = (pc.if_else(pc.is_nan(c), float("inf"), c) for c in (x, y))
        if not x.equals(y):
            return False
    return True


#: What differs between two writers of the same rows: where the file is and how it is encoded.
ENCODING = {"file_path", "file_size_in_bytes", "column_sizes"}


def same_statistics(ours: Any, theirs: Any) -> None:
    a, b = files(ours), files(theirs)
    assert len(a) == len(b) > 0
    for x, y in zip(a, b, strict=True):
        for key in x:
            if key not in ENCODING:
                assert x[key] == y[key], (key, x[key], y[key])
        assert x["file_size_in_bytes"] > 0


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_appends_and_overwrites_equal_pyicebergs_own(
    catalog: SqlCatalog, partitioned: bool
) -> None:
    theirs = catalog.create_table("ns.theirs", schema=SCHEMA)
    ours = catalog.create_table("ns.ours", schema=SCHEMA)
    if partitioned:
        for t in (theirs, ours):
            with t.update_spec() as update:
                update.add_identity("part")
    first, second = rows(theirs, 500), rows(theirs, 300, seed=10_000)
    theirs.append(first)
    theirs.append(second)
    with zi.installed():
        ours.append(first)
        ours.append(second)
    assert not isinstance(FileFormatFactory.get(FileFormat.PARQUET), zi.ParquetModel)
    assert same_rows(ours, theirs)
    same_statistics(ours, theirs)
    # zstdpool wrote these: the files read back with zstdpool's own writer's mark.
    for entry in files(ours):
        created_by = pq.read_metadata(entry["file_path"].removeprefix("file://")).created_by
        assert "parquet-rs" in created_by, created_by
    third = rows(theirs, 200, seed=50_000)
    theirs.overwrite(third)
    with zi.installed():
        ours.overwrite(third)
    assert same_rows(ours, theirs)
    same_statistics(ours, theirs)


def test_table_properties_are_honoured(catalog: SqlCatalog) -> None:
    props = {
        "write.parquet.compression-codec": "snappy",
        "write.parquet.row-group-limit": "120",
        "write.parquet.page-row-limit": "50",
    }
    table = catalog.create_table("ns.props", schema=SCHEMA, properties=props)
    with zi.installed():
        table.append(rows(table, 500))
    [entry] = files(table)
    meta = pq.read_metadata(entry["file_path"].removeprefix("file://"))
    assert meta.num_row_groups == 5
    assert meta.row_group(0).column(0).compression == "SNAPPY"
    assert len(entry["split_offsets"]) == 5


def test_install_and_uninstall() -> None:
    own = FileFormatFactory.get(FileFormat.PARQUET)
    zi.install()
    zi.install()
    try:
        assert isinstance(FileFormatFactory.get(FileFormat.PARQUET), zi.ParquetModel)
        with zi.installed():
            assert isinstance(FileFormatFactory.get(FileFormat.PARQUET), zi.ParquetModel)
        # installed() leaves an install it found in place.
        assert isinstance(FileFormatFactory.get(FileFormat.PARQUET), zi.ParquetModel)
    finally:
        zi.uninstall()
    assert FileFormatFactory.get(FileFormat.PARQUET) is own
    zi.uninstall()
    assert FileFormatFactory.get(FileFormat.PARQUET) is own


def test_a_failed_write_raises_through_pyiceberg_and_commits_nothing(
    catalog: SqlCatalog,
) -> None:
    table = catalog.create_table(
        "ns.bad", schema=SCHEMA, properties={"write.parquet.compression-level": "99"}
    )
    with zi.installed(), pytest.raises(Exception, match="compression_level|level"):
        table.append(rows(table, 50))
    assert table.scan().to_arrow().num_rows == 0
    assert files(table) == []
