"""pyarrow's Parquet writer keywords on zstdpool's writers: each takes effect as the file's
footer shows, the file reads back in pyarrow, polars and duckdb, and a bad value names the
keyword. And data that pyarrow keeps as it went in: pandas categoricals and empty row groups."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstdpool.parquet as zp
from zstdpool.errors import ParameterError, ParquetError

from tests.helpers.parquet import read_everywhere

TABLE = pa.table(
    {
        "ts": pa.array([1_000, 2_000, None, 4_000] * 50, pa.timestamp("ns")),
        "u32": pa.array([1, 2, 3, 2**32 - 1] * 50, pa.uint32()),
        "t64": pa.array([1_000, 2_000, 3_000, 4_000] * 50, pa.time64("ns")),
        "d": pa.array([1, -2, 3, 4] * 50, pa.decimal128(5, 2)),
        "f": pa.array([1.5, 2.5, None, 3.5] * 50),
        "s": pa.array(["a", "b", "c", None] * 50),
        "l": pa.array([[1], [2, 3], None, []] * 50, pa.list_(pa.int32())),
    }
)


def footer(data: bytes) -> pq.FileMetaData:
    return pq.ParquetFile(io.BytesIO(data)).metadata


def column(data: bytes, name: str) -> pq.ColumnChunkMetaData:
    md = footer(data).row_group(0)
    return next(md.column(i) for i in range(md.num_columns) if md.column(i).path_in_schema == name)


def pyarrows(table: pa.Table, **options: Any) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, **options)
    return sink.getvalue()


@pytest.mark.parametrize("version", ["1.0", "2.4", "2.6"])
def test_each_version_stores_the_logical_types_pyarrow_stores(version: str) -> None:
    # Nanoseconds are whole microseconds here, so that 1.0 and 2.4 need not truncate.
    # Decimals as integers, zstdpool's default (see docs/migrating.md), on both sides.
    ours = zp.write_table(TABLE, version=version)
    theirs = pyarrows(TABLE, version=version, store_decimal_as_integer=True)
    assert footer(ours).format_version == footer(theirs).format_version
    ours_file, theirs_file = pq.ParquetFile(io.BytesIO(ours)), pq.ParquetFile(io.BytesIO(theirs))
    for i in range(len(TABLE.schema)):
        a, b = ours_file.schema.column(i), theirs_file.schema.column(i)
        assert (a.physical_type, str(a.logical_type)) == (b.physical_type, str(b.logical_type)), (
            a.path
        )
    assert pq.read_table(io.BytesIO(ours)).equals(pq.read_table(io.BytesIO(theirs)))


def test_a_coarser_unit_refuses_to_drop_a_remainder_unless_allowed() -> None:
    table = pa.table({"x": pa.array([1_001], pa.timestamp("ns"))})
    with pytest.raises(ParquetError, match="'x'.*would lose data: 1001.*allow_truncated"):
        zp.write_table(table, version="2.4")
    with pytest.raises(ParquetError, match="would lose data"):
        zp.write_table(table, coerce_timestamps="ms")
    back = pq.read_table(
        io.BytesIO(zp.write_table(table, coerce_timestamps="ms", allow_truncated_timestamps=True))
    )
    assert back.schema.field("x").type == pa.timestamp("ms")
    assert (
        back.column("x").to_pylist()
        == pq.read_table(
            io.BytesIO(pyarrows(table, coerce_timestamps="ms", allow_truncated_timestamps=True))
        )
        .column("x")
        .to_pylist()
    )
    # A nested timestamp is checked too.
    nested = pa.table({"n": pa.array([[1_001]], pa.list_(pa.timestamp("ns")))})
    with pytest.raises(ParquetError, match="would lose data"):
        zp.write_table(nested, coerce_timestamps="us")


def test_encodings_by_column_and_byte_stream_split(tmp_path: Path) -> None:
    data = zp.write_table(
        TABLE,
        use_dictionary=False,
        column_encoding={
            "f": "BYTE_STREAM_SPLIT",
            "s": "DELTA_BYTE_ARRAY",
            "u32": "delta_binary_packed",
        },
    )
    assert "BYTE_STREAM_SPLIT" in column(data, "f").encodings
    assert "DELTA_BYTE_ARRAY" in column(data, "s").encodings
    assert "DELTA_BINARY_PACKED" in column(data, "u32").encodings
    assert read_everywhere(data, tmp_path).equals(pq.read_table(io.BytesIO(zp.write_table(TABLE))))
    split = zp.write_table(TABLE, use_dictionary=["s"], use_byte_stream_split=["f"])
    assert "BYTE_STREAM_SPLIT" in column(split, "f").encodings
    assert "RLE_DICTIONARY" in column(split, "s").encodings


def test_footer_options_take_effect() -> None:
    sorting = [pq.SortingColumn(0), pq.SortingColumn(4, descending=True, nulls_first=True)]
    data = zp.write_table(
        TABLE, sorting_columns=sorting, store_schema=False, write_page_index=False
    )
    md = footer(data)
    assert md.row_group(0).sorting_columns == tuple(sorting)
    assert b"ARROW:schema" not in (md.metadata or {})
    assert not column(data, "s").has_column_index and not column(data, "s").has_offset_index
    # Without the stored schema, readers see what Parquet holds: no nanoseconds lost here.
    assert pq.read_table(io.BytesIO(data)).column("u32").equals(TABLE.column("u32"))
    default = zp.write_table(TABLE)
    assert column(default, "s").has_column_index and column(default, "s").has_offset_index
    assert b"ARROW:schema" in footer(default).metadata


def test_decimals_times_and_list_names_as_pyarrow_stores_them() -> None:
    # Decimals are integers by default here (pyarrow: FIXED_LEN_BYTE_ARRAY), the rest as pyarrow.
    default = pq.ParquetFile(io.BytesIO(zp.write_table(TABLE))).schema.column(3)
    assert (default.physical_type, str(default.logical_type)) == (
        "INT32",
        "Decimal(precision=5, scale=2)",
    )
    for options in [
        {"store_decimal_as_integer": False},
        {"store_decimal_as_integer": True},
        {"write_time_adjusted_to_utc": True},
        {"use_compliant_nested_type": False},
    ]:
        theirs_options: dict[str, Any] = {"store_decimal_as_integer": True, **options}
        ours = pq.ParquetFile(io.BytesIO(zp.write_table(TABLE, **options))).schema
        theirs = pq.ParquetFile(io.BytesIO(pyarrows(TABLE, **theirs_options))).schema
        for i in range(len(theirs)):
            a, b = ours.column(i), theirs.column(i)
            assert (a.path, a.physical_type, str(a.logical_type)) == (
                b.path,
                b.physical_type,
                str(b.logical_type),
            ), options
        back = pq.read_table(io.BytesIO(zp.write_table(TABLE, **options)))
        assert back.column("d").equals(TABLE.column("d"))
        assert back.column("l").to_pylist() == TABLE.column("l").to_pylist()


def test_page_sizes_and_batches() -> None:
    table = pa.table({"i": range(10_000)})

    def header_bytes(**options: Any) -> int:
        """The bytes of page headers in the column chunk (the values are 80,000 bytes)."""
        data = zp.write_table(table, use_dictionary=False, **options)
        assert pq.read_table(io.BytesIO(data)).equals(table)
        return column(data, "i").total_uncompressed_size - 80_000

    one_page = header_bytes()
    # Ten pages of 1,000 rows: nine more headers, of at least 10 bytes each.
    assert header_bytes(max_rows_per_page=1_000, write_batch_size=100) >= one_page + 90
    assert header_bytes(data_page_size=8_000, write_batch_size=100) >= one_page + 90
    # A dictionary page limit smaller than the dictionary makes the column fall back to PLAIN.
    small = zp.write_table(table, dictionary_pagesize_limit=1_000)
    assert "PLAIN" in column(small, "i").encodings
    assert pq.read_table(io.BytesIO(small)).equals(table)


def test_bloom_filters_are_written_and_used(tmp_path: Path) -> None:
    table = pa.table({"k": [f"key{i}" for i in range(5_000)], "v": range(5_000)})
    plain = zp.write_table(table)
    data = zp.write_table(table, bloom_filter_options={"k": True, "v": {"ndv": 5_000, "fpp": 0.01}})
    assert len(data) > len(plain) + 4_000  # two filters
    path = tmp_path / "b.parquet"
    path.write_bytes(data)
    try:
        import duckdb
    except ImportError:  # no wheel for the free-threaded build
        pass
    else:
        assert duckdb.sql(f"select v from '{path}' where k = 'key17'").fetchall() == [(17,)]
    rows = pq.read_table(path, filters=[("k", "=", "key17")])
    assert rows.column("v").to_pylist() == [17]
    off = zp.write_table(table, bloom_filter_options={"k": False})
    assert len(off) == len(plain)


def test_page_checksums_are_verified_by_pyarrow(tmp_path: Path) -> None:
    for codec in ["zstd", "snappy", None]:
        data = zp.write_table(TABLE, compression=codec, write_page_checksum=True)
        assert read_everywhere(data, tmp_path).equals(
            pq.read_table(io.BytesIO(zp.write_table(TABLE)))
        )
        pq.read_table(io.BytesIO(data), page_checksum_verification=True)
        chunk = column(data, "s")
        damaged = bytearray(data)
        damaged[chunk.data_page_offset + chunk.total_compressed_size // 2] ^= 0x55
        with pytest.raises(OSError, match="(?i)crc|checksum"):
            pq.read_table(io.BytesIO(bytes(damaged)), page_checksum_verification=True)


def test_spark_flavor_names_and_units() -> None:
    table = pa.table({"a b": [1], "c=d;": pa.array([1_000], pa.timestamp("ns"))})
    data = zp.write_table(table, flavor="spark")
    back = pq.read_table(io.BytesIO(data))
    assert back.column_names == ["a_b", "c_d_"]
    # INT96 timestamps, as pyarrow writes them under the flavor unless told otherwise.
    assert column(data, "c_d_").physical_type == "INT96"
    assert back.equals(pq.read_table(io.BytesIO(pyarrows(table, flavor="spark"))))
    data = zp.write_table(table, flavor="spark", use_deprecated_int96_timestamps=False)
    assert pq.read_table(io.BytesIO(data)).schema.field("c_d_").type == pa.timestamp("us")


def _int96_table(unit: str) -> pa.Table:
    """Timestamps in `unit` before 1970, past what nanoseconds since 1970 hold (but for "ns"),
    with nulls, a time zone, and in a list."""
    if unit == "ns":
        values = [7_258_118_400_000_000_000, -8_520_336_000_123_456_789, None, -1]
    else:
        per_second = {"s": 1, "ms": 1_000, "us": 1_000_000}[unit]
        values = [32_503_680_000 * per_second, -11_676_096_000 * per_second - 1, None, -1]
    return pa.table(
        {
            "t": pa.array(values, pa.timestamp(unit)),
            "z": pa.array(values, pa.timestamp(unit, tz="Europe/Paris")),
            "l": pa.array(
                [[v, v] if v is not None else None for v in values], pa.list_(pa.timestamp(unit))
            ),
            "x": [1, 2, 3, 4],
        }
    )


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
@pytest.mark.parametrize(
    "options",
    [{}, {"compression": "snappy"}, {"data_page_version": "2.0", "write_page_checksum": True}],
)
def test_int96_timestamps_are_the_values_pyarrow_writes(
    unit: str, options: dict[str, Any], tmp_path: Path
) -> None:
    table = _int96_table(unit)
    data = zp.write_table(table, use_deprecated_int96_timestamps=True, **options)
    theirs = pyarrows(table, use_deprecated_int96_timestamps=True, **options)
    for name in ["t", "z", "l"]:
        chunk = column(data, name if name != "l" else "l.list.element")
        assert chunk.physical_type == "INT96" and not chunk.is_stats_set
    # Read by pyarrow in the unit written, the same values as from pyarrow's own file, and
    # every reader reads all the rows.
    read = lambda b: pq.read_table(io.BytesIO(b), coerce_int96_timestamp_unit=unit)  # noqa: E731
    assert read(data).equals(read(theirs))
    read_everywhere(data, tmp_path)
    if options.get("write_page_checksum"):
        pq.read_table(io.BytesIO(data), page_checksum_verification=True)
    # zstdpool reads them back in the unit its stored Arrow schema gives: as written.
    assert zp.read_table(data).equals(table)


def test_int96_refuses_encodings_other_than_plain() -> None:
    table = pa.table({"t": pa.array([1], pa.timestamp("ms"))})
    with pytest.raises(ParameterError, match="INT96.*DELTA_BINARY_PACKED"):
        zp.write_table(
            table,
            use_deprecated_int96_timestamps=True,
            use_dictionary=False,
            column_encoding={"t": "DELTA_BINARY_PACKED"},
        )
    data = zp.write_table(
        table,
        use_deprecated_int96_timestamps=True,
        use_dictionary=False,
        column_encoding={"t": "PLAIN"},
    )
    assert pq.read_table(io.BytesIO(data), coerce_int96_timestamp_unit="ms").equals(table)


def test_an_lz4_level_is_refused_naming_the_reason() -> None:
    """pyarrow's lz4 levels are LZ4 HC's (its level 9 file is smaller than its level 1); the
    parquet crate writes LZ4_RAW at one level, so a level taken would change nothing."""
    for level in [-5, 0, 9, 100]:
        with pytest.raises(ParameterError, match="LZ4_RAW at one level"):
            zp.write_table(TABLE, compression="lz4", compression_level=level)
    with pytest.raises(ParameterError, match="LZ4_RAW at one level"):
        zp.write_table(TABLE, compression="LZ4_RAW", compression_level=1)
    with pytest.raises(ParameterError, match="LZ4_RAW at one level"):
        zp.write_table(TABLE, compression={"u32": "lz4"}, compression_level={"u32": 9})
    data = zp.write_table(TABLE, compression="lz4")
    assert pq.read_table(io.BytesIO(data)).equals(pq.read_table(io.BytesIO(zp.write_table(TABLE))))


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"version": "3.0"}, ParameterError, 'version must be "1.0", "2.4" or "2.6", not "3.0"'),
        ({"column_encoding": {"f": "PLAIN"}}, ParameterError, "use_dictionary"),
        (
            {"use_dictionary": False, "column_encoding": {"s": "DELTA_BINARY_PACKED"}},
            ParameterError,
            'column "s" is stored as BYTE_ARRAY.*column_encoding',
        ),
        (
            {"use_dictionary": False, "column_encoding": "RLE_DICTIONARY"},
            ParameterError,
            "column_encoding",
        ),
        (
            {"use_dictionary": False, "column_encoding": {"nope": "PLAIN"}},
            ParameterError,
            "column_encoding.*nope",
        ),
        (
            {"use_byte_stream_split": True, "column_encoding": "PLAIN", "use_dictionary": False},
            ParameterError,
            "use_byte_stream_split",
        ),
        ({"coerce_timestamps": "ns"}, ParameterError, "coerce_timestamps"),
        ({"sorting_columns": [0]}, TypeError, "sorting_columns"),
        ({"sorting_columns": [pq.SortingColumn(99)]}, ParameterError, "sorting_columns.*99"),
        (
            {"bloom_filter_options": {"f": {"fpp": 1.5}}},
            ParameterError,
            "bloom_filter_options.*fpp",
        ),
        ({"bloom_filter_options": {"f": {"ndv": 0}}}, ParameterError, "bloom_filter_options.*ndv"),
        (
            {"bloom_filter_options": {"f": {"size": 1}}},
            ParameterError,
            "bloom_filter_options.*size",
        ),
        ({"bloom_filter_options": ["f"]}, TypeError, "bloom_filter_options"),
        ({"bloom_filter_options": {"zz": True}}, ParameterError, "bloom_filter_options.*zz"),
        ({"max_rows_per_page": 0}, ParameterError, "max_rows_per_page"),
        ({"dictionary_pagesize_limit": -1}, ParameterError, "dictionary_pagesize_limit"),
        ({"write_batch_size": "1"}, TypeError, "write_batch_size"),
        ({"store_schema": "yes"}, TypeError, "store_schema must be a bool"),
        ({"flavor": "hive"}, ParameterError, "flavor"),
        ({"writer_engine_version": "V3"}, ParameterError, "writer_engine_version"),
        ({"compression": "snappy", "compression_level": 3}, ParameterError, "compression_level"),
        ({"use_deprecated_int96_timestamps": 1}, TypeError, "use_deprecated_int96_timestamps"),
        (
            {"use_content_defined_chunking": {"min_chunk_size": 2, "max_chunk_size": 1}},
            ParameterError,
            "use_content_defined_chunking",
        ),
        ({"encryption_properties": object()}, NotImplementedError, "encryption_properties"),
        ({"storage_options": ["x"]}, TypeError, "storage_options must be a dict"),
        ({"data_page_size": 2**70}, ParameterError, "data_page_size is out of range"),
    ],
)
def test_a_bad_value_names_its_keyword(
    options: dict[str, Any], error: type[Exception], match: str, tmp_path: Path
) -> None:
    with pytest.raises(error, match=match):
        zp.write_table(TABLE, **options)
    path = tmp_path / "f.parquet"
    with pytest.raises(error, match=match):
        zp.ParquetWriter(path, TABLE.schema, **options)
    assert list(tmp_path.iterdir()) == []


CATEGORIES = [
    pd.Categorical(["b", "a", "b", None], categories=["z", "b", "a", "q"], ordered=True),
    pd.Categorical(["b", "a", "b", None], categories=["z", "b", "a", "q"], ordered=False),
    pd.Categorical([None, None, None, None], categories=["x", "y"]),
    pd.Categorical(["only"] * 4, categories=["only"]),
    pd.Categorical([b"\x00", b"\xff", b"\x00", b"\x00"], categories=[b"\xff", b"\x00", b"unused"]),
    pd.Categorical([3, 1, 3, 1], categories=[5, 3, 1]),
    pd.Categorical([3, 1, 3, None], categories=[5, 3, 1], ordered=True),
]


@pytest.mark.parametrize("codec", ["zstd", "snappy", None])
@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
@pytest.mark.parametrize("categorical", range(len(CATEGORIES)))
def test_pandas_categoricals_come_back_as_pyarrow_gives_them_back(
    categorical: int, page_version: str, codec: str | None
) -> None:
    frame = pd.DataFrame({"c": CATEGORIES[categorical], "n": range(4)})
    ours = zp.write_table(frame, compression=codec, data_page_version=page_version)
    theirs = pyarrows(
        pa.Table.from_pandas(frame), compression=codec, data_page_version=page_version
    )
    # Both readers return what pyarrow's returns for its own file: string categoricals exactly
    # (unused categories, order, ordered flag), integer ones as their values.
    expected = pq.read_table(io.BytesIO(theirs)).to_pandas()
    pd.testing.assert_frame_equal(pq.read_table(io.BytesIO(ours)).to_pandas(), expected)
    pd.testing.assert_frame_equal(zp.read_table(ours).to_pandas(), expected)
    if isinstance(frame["c"].cat.categories[0], (str, bytes)):
        pd.testing.assert_frame_equal(expected, frame)


def test_a_dictionary_that_changes_between_batches_is_written_as_its_values() -> None:
    first = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array(["a", "b"]))
    second = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array(["c", "a"]))
    table = pa.Table.from_batches([pa.record_batch({"d": first}), pa.record_batch({"d": second})])
    back = pq.read_table(io.BytesIO(zp.write_table(table)))
    assert back.column("d").to_pylist() == ["a", "b", "c", "a"]


def test_a_large_dictionary_keeps_its_order_across_pages_and_row_groups() -> None:
    values = pa.array([f"v{i:05}" for i in range(20_000)][::-1])
    indices = pa.array([(i * 7919) % 20_000 for i in range(100_000)], pa.int32())
    table = pa.table({"d": pa.DictionaryArray.from_arrays(indices, values)})
    data = zp.write_table(table, row_group_size=30_000, data_page_size=4_096)
    back = pq.read_table(io.BytesIO(data))
    assert back.column("d").to_pylist() == table.column("d").to_pylist()
    for chunk in back.column("d").chunks:
        assert chunk.dictionary.equals(values)


def test_empty_tables_write_empty_row_groups_as_pyarrow_does(tmp_path: Path) -> None:
    empty = TABLE.slice(0, 0)
    with zp.ParquetWriter(tmp_path / "e.parquet", TABLE.schema) as w:
        for _ in range(3):
            w.write_table(empty)
        w.add_key_value_metadata({"k": "v", b"k2": b"v2"})
    md = pq.ParquetFile(tmp_path / "e.parquet").metadata
    assert md.num_row_groups == 3 and md.num_rows == 0
    assert md.metadata[b"k"] == b"v" and md.metadata[b"k2"] == b"v2"
    assert read_everywhere((tmp_path / "e.parquet").read_bytes(), tmp_path).num_rows == 0
    assert footer(zp.write_table(empty)).num_row_groups == 1
    with zp.ParquetWriter(tmp_path / "none.parquet", TABLE.schema):
        pass
    assert pq.ParquetFile(tmp_path / "none.parquet").metadata.num_row_groups == 0
    with zp.ParquetWriter(tmp_path / "kv.parquet", TABLE.schema) as w:
        with pytest.raises(TypeError, match="key_value_metadata"):
            w.add_key_value_metadata({"k": 1})
        with pytest.raises(ParameterError, match="UTF-8"):
            w.add_key_value_metadata({"k": b"\xff"})


def test_numbers_get_a_dictionary_only_where_values_repeat() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    rows = 100_000
    table = pa.table(
        {
            "sorted": pa.array(np.arange(rows, dtype=np.int32) * 3),
            "distinct": pa.array(rng.permutation(rows).astype(np.int64)),
            "dates": pa.array(rng.integers(0, 2_500, rows).astype(np.int32)).cast(pa.date32()),
            "flags": pa.array(rng.integers(0, 7, rows).astype(np.float64)),
        }
    )
    data = zp.write_table(table)
    assert "RLE_DICTIONARY" not in column(data, "sorted").encodings
    assert "RLE_DICTIONARY" not in column(data, "distinct").encodings
    assert "RLE_DICTIONARY" in column(data, "dates").encodings
    assert "RLE_DICTIONARY" in column(data, "flags").encodings
    assert pq.read_table(io.BytesIO(data)).equals(table)
    # use_dictionary, given, decides alone: True tries a dictionary everywhere, as pyarrow does.
    forced = zp.write_table(table, use_dictionary=True)
    assert "RLE_DICTIONARY" in column(forced, "sorted").encodings
    assert len(data) < len(forced) <= len(pyarrows(table, compression="zstd")) * 1.02
    assert (
        "RLE_DICTIONARY"
        not in column(zp.write_table(table, use_dictionary=False), "flags").encodings
    )


def test_write_to_dataset_as_pyarrows(tmp_path: Path) -> None:
    import pyarrow.dataset as ds

    table = pa.table({"year": [2020, 2020, 2021, 2022] * 25, "v": range(100), "s": ["a", "b"] * 50})
    collected: list[pq.FileMetaData] = []
    zp.write_to_dataset(
        table,
        tmp_path / "d",
        partition_cols=["year"],
        compression="snappy",
        row_group_size=10,
        metadata_collector=collected,
    )
    # Written again: new files beside the first ones, as pyarrow's uuid names make it.
    zp.write_to_dataset(table, tmp_path / "d", partition_cols=["year"])
    files = sorted(
        p.relative_to(tmp_path / "d").as_posix() for p in (tmp_path / "d").rglob("*.parquet")
    )
    assert len(files) == 6 and {f.split("/")[0] for f in files} == {
        "year=2020",
        "year=2021",
        "year=2022",
    }
    back = ds.dataset(tmp_path / "d", partitioning="hive").to_table()
    assert back.num_rows == 200
    assert sorted(back.column("v").to_pylist()) == sorted(list(range(100)) * 2)
    assert len(collected) == 3
    for md in collected:
        assert md.row_group(0).column(0).compression == "SNAPPY"
        assert md.row_group(0).num_rows <= 10
        assert md.row_group(0).column(0).file_path.startswith("year=")
    visited: list[zp.WrittenFile] = []
    zp.write_to_dataset(
        table, tmp_path / "e", partitioning=["year"], file_visitor=visited.append, use_threads=False
    )
    assert sorted(Path(w.path).stat().st_size for w in visited) == sorted(w.size for w in visited)
    assert sum(w.metadata.num_rows for w in visited) == 100
    with pytest.raises(ValueError, match="partition_cols"):
        zp.write_to_dataset(table, tmp_path / "f", partition_cols=["year"], partitioning=["year"])
    with pytest.raises(TypeError, match="filesystem must be a pyarrow.fs.FileSystem"):
        zp.write_to_dataset(table, tmp_path / "f", filesystem=object())
    with pytest.raises(TypeError, match="file_options got an unexpected keyword argument 'nope'"):
        zp.write_to_dataset(table, tmp_path / "f", nope=1)


def test_write_dataset_takes_the_parquet_keywords_as_file_options(tmp_path: Path) -> None:
    import zstdpool.dataset

    table = pa.table({"k": ["x", "y"] * 50, "f": [float(i) for i in range(100)]})
    written = zstdpool.dataset.write_dataset(
        table,
        tmp_path / "d",
        partitioning=["k"],
        partitioning_flavor="hive",
        level=5,
        file_options={"use_dictionary": False, "column_encoding": {"f": "BYTE_STREAM_SPLIT"}},
    )
    for f in written:
        md = pq.read_metadata(f["path"])
        assert "BYTE_STREAM_SPLIT" in md.row_group(0).column(0).encodings
        assert md.row_group(0).column(0).compression == "ZSTD"
    with pytest.raises(ParameterError, match='file_options.*"ipc"'):
        zstdpool.dataset.write_dataset(
            table, tmp_path / "i", format="ipc", file_options={"version": "2.6"}
        )
    with pytest.raises(TypeError, match="pass fsync to write_dataset"):
        zstdpool.dataset.write_dataset(table, tmp_path / "j", file_options={"fsync": True})


@pytest.mark.parametrize("rows", [0, 4])
def test_a_boolean_dictionary_reads_back_as_pyarrow_reads_it(rows: int) -> None:
    keys = pa.array([0, 1, None, 0][:rows], pa.int8())
    table = pa.table({"d": pa.DictionaryArray.from_arrays(keys, pa.array([True, False]))})
    theirs = pq.read_table(io.BytesIO(pyarrows(table)))
    assert theirs.schema.field("d").type == pa.bool_()
    ours = zp.write_table(table)
    assert pq.read_table(io.BytesIO(ours)).equals(theirs)
    assert zp.read_table(ours).equals(theirs)
    assert zp.read_table(pyarrows(table)).equals(theirs)


def test_the_truncation_check_sees_only_the_values_written() -> None:
    # A slice of a list whose unsliced values hold a remainder; an unused dictionary entry.
    lists = pa.array([[1_001], [2_000], [3_000]], pa.list_(pa.timestamp("ns"))).slice(1)
    back = pq.read_table(io.BytesIO(zp.write_table(pa.table({"l": lists}), version="2.4")))
    assert (
        back.column("l").to_pylist()
        == pa.table({"l": lists}).cast(back.schema).column("l").to_pylist()
    )
    lossy = pa.table({"l": pa.array([[2_000, 1_001]], pa.list_(pa.timestamp("ns")))})
    with pytest.raises(ParquetError, match="'l'.*would lose data"):
        zp.write_table(lossy, version="2.4")
    # A seconds timestamp out of the millisecond range fails, as in pyarrow, not a null.
    huge = pa.table({"t": pa.array([2**62], pa.timestamp("s"))})
    with pytest.raises(ParquetError, match="'t'"):
        zp.write_table(huge)


def test_file_options_level_goes_with_write_datasets_codec(tmp_path: Path) -> None:
    import zstdpool.dataset

    table = pa.table({"k": [1, 2] * 50, "v": range(100)})
    written = zstdpool.dataset.write_dataset(
        table,
        tmp_path / "d",
        partitioning=["k"],
        partitioning_flavor="hive",
        compression="gzip",
        file_options={"compression_level": 9},
    )
    assert {pq.read_metadata(f["path"]).row_group(0).column(0).compression for f in written} == {
        "GZIP"
    }
    zp.write_to_dataset(table, tmp_path / "e", partition_cols=["k"], threads=1)
    assert len(list((tmp_path / "e").rglob("*.parquet"))) == 2


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"bloom_filter_options": {"s": True}, "write_page_index": True},
        {"use_deprecated_int96_timestamps": True, "write_statistics": ["i"]},
        {"sorting_columns": [pq.SortingColumn(0)], "compression": "snappy"},
    ],
    ids=["default", "bloom-and-page-index", "int96", "sorted-snappy"],
)
@pytest.mark.parametrize("sink", ["memory", "path"])
def test_writer_metadata_is_the_footer_written(tmp_path: Path, options: Any, sink: str) -> None:
    """``ParquetWriter.metadata`` after close is the file's own footer, as pyarrow's is:
    equal to what pyarrow reads from the file (the last bloom filters and page indexes are
    written before it); None before close."""
    import datetime

    n = 5000
    table = pa.table(
        {
            "i": pa.array(range(n), pa.int64()),
            "s": [f"v{i % 97}" for i in range(n)],
            "t": pa.array([datetime.datetime(2026, 1, 1)] * n, pa.timestamp("us")),
        }
    )
    out: Any = io.BytesIO() if sink == "memory" else tmp_path / "f.parquet"
    w = zp.ParquetWriter(out, table.schema, row_group_size=1200, **options)
    assert w.metadata is None
    w.write_table(table)
    assert w.metadata is None
    w.close()
    data = out.getvalue() if sink == "memory" else out.read_bytes()
    theirs = pq.read_metadata(io.BytesIO(data))
    ours = w.metadata
    assert ours.equals(theirs)
    assert ours.num_rows == n and ours.num_row_groups == 5
    assert ours.to_dict() == theirs.to_dict()


def test_writer_metadata_of_an_aborted_writer_is_none() -> None:
    w = zp.ParquetWriter(io.BytesIO(), pa.schema([("a", pa.int64())]))
    w.write_table(pa.table({"a": [1]}))
    w.abort()
    assert w.metadata is None
