"""Every Arrow type through zstdpool's Parquet writer, read back by pyarrow, zstdpool, polars
and duckdb; and pyarrow's files read by zstdpool."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstdpool
import zstdpool.parquet as zp

from tests.helpers.arrow_data import SLICE_PANICS, chunked, typed_arrays, typed_table
from tests.helpers.parquet import (
    COERCED,
    DECODED,
    UNWRITABLE,
    VIEWS,
    pyarrow_read,
    pyarrow_write,
    same_values,
)

ARRAYS = dict(typed_arrays(60))
WRITABLE = [name for name in ARRAYS if name not in UNWRITABLE]


@pytest.mark.parametrize(
    "chunking",
    # Pages cut by content, in chunks small enough that 60 values of any type take several.
    [False, {"min_chunk_size": 32, "max_chunk_size": 128}],
    ids=["by size", "by content"],
)
@pytest.mark.parametrize("name", WRITABLE)
def test_every_writable_type_round_trips(name: str, chunking: Any) -> None:
    table = pa.table({name: ARRAYS[name]})
    data = zp.write_table(table, use_content_defined_chunking=chunking)
    assert isinstance(data, bytes)
    ours, theirs = zp.read_table(data), pyarrow_read(data)
    if name in VIEWS:
        # Stored as lists, and restored from ARROW:schema by both readers, as pyarrow's are.
        want = table.schema.field(0).type
        assert ours.schema.field(0).type == want == theirs.schema.field(0).type, name
        assert same_values(theirs, table) and same_values(ours, table), name
    elif name in DECODED:
        assert same_values(theirs, table) and same_values(ours, table), name
    elif name in COERCED:
        # As pyarrow's own round trip gives them (seconds as milliseconds, date64 as date32);
        # zstdpool keeps date64 where the file's Arrow schema says so.
        reference = pyarrow_read(pyarrow_write(table))
        assert same_values(theirs, reference.cast(theirs.schema)), name
        assert same_values(ours, reference.cast(ours.schema)), name
    else:
        assert same_values(ours, table), name
        assert same_values(theirs, table), name
        assert ours.schema.field(0).type == table.schema.field(0).type or same_values(ours, table)


@pytest.mark.parametrize("name", sorted(UNWRITABLE))
def test_a_type_parquet_cannot_hold_is_refused_naming_the_column(name: str, tmp_path: Path) -> None:
    table = pa.table({"fine": pa.array(range(len(ARRAYS[name]))), name: ARRAYS[name]})
    with pytest.raises(zstdpool.ParquetError, match=f"column '{name}'"):
        zp.write_table(table)
    with pytest.raises(zstdpool.ParquetError, match=f"column '{name}'"):
        zp.write_table(table, tmp_path / "x.parquet")
    assert list(tmp_path.iterdir()) == []


def test_all_types_at_once_with_metadata_chunked_and_sliced() -> None:
    table = typed_table(50, names=WRITABLE)
    # arrow-rs cannot import a sliced struct nested in a struct (tested apart in tests/ipc).
    sliceable = table.drop_columns(sorted(SLICE_PANICS))
    for variant in (table, chunked(sliceable, 7), sliceable.slice(5, 31)):
        got = zp.read_table(zp.write_table(variant, row_group_size=16))
        plain = [n for n in variant.column_names if n not in COERCED | DECODED | VIEWS]
        assert same_values(got.select(plain), variant.select(plain))
        assert got.schema.metadata == variant.schema.metadata
        for field in got.schema:
            assert field.metadata == variant.schema.field(field.name).metadata


def test_nulls_everywhere_and_empty_tables() -> None:
    nulls = pa.table({n: pa.nulls(9, a.type) for n, a in ARRAYS.items() if n in WRITABLE})
    got = zp.read_table(zp.write_table(nulls))
    assert got.num_rows == 9 and all(c.null_count == 9 for c in got.columns)
    empty = pa.table({n: a[:0] for n, a in ARRAYS.items() if n in WRITABLE})
    for data in (zp.write_table(empty), pyarrow_write(empty.drop_columns(sorted(DECODED)))):
        got = zp.read_table(data)
        assert got.num_rows == 0 and set(got.column_names) <= set(empty.column_names)
        assert pyarrow_read(data).num_rows == 0


def test_pandas_index_and_metadata_come_back() -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(
        {"x": [1.5, 2.5, None], "s": ["a", None, "c"]},
        index=pd.Index([10, 20, 30], name="key"),
    )
    data = zp.write_table(df)
    back = zp.read_table(data).to_pandas()
    pd.testing.assert_frame_equal(back, df)
    pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(data)), df)
    assert b"pandas" in zp.ParquetFile(data).metadata["key_value_metadata"]


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"compression": "lz4"},
        {"compression": "snappy"},
        {"compression": "gzip"},
        {"compression": "brotli"},
        {"compression": None},
        {"data_page_version": "2.0"},
        {"use_dictionary": False},
        {"compression": "zstd", "compression_level": 7, "data_page_size": 1024},
    ],
    ids=repr,
)
def test_pyarrow_files_read_equal(options: dict) -> None:
    table = typed_table(300, names=[n for n in WRITABLE if n not in COERCED | DECODED])
    data = pyarrow_write(table, row_group_size=120, **options)
    assert same_values(zp.read_table(data), pyarrow_read(data))
    assert same_values(zp.read_table(data, use_threads=False), pyarrow_read(data))


def polars_frame(data: bytes):  # type: ignore[no-untyped-def]
    pl = pytest.importorskip("polars")
    try:
        return pl.read_parquet(io.BytesIO(data))
    # A type polars cannot read from any writer (polars 2.1 panics on some, a BaseException).
    except BaseException:  # noqa: BLE001
        return None


@pytest.mark.parametrize("name", WRITABLE)
def test_polars_reads_our_files_as_it_reads_pyarrows(name: str) -> None:
    table = pa.table({name: ARRAYS[name]})
    theirs = polars_frame(pyarrow_write(table)) if name not in DECODED else None
    ours = polars_frame(zp.write_table(table))
    if theirs is None:
        pytest.skip(f"polars does not read {name} from pyarrow's file either")
    assert ours is not None, f"polars cannot read {name} from zstdpool's file"
    if not ours.equals(theirs):
        # polars 2.0 misreads some of pyarrow's files (time32[s]: seconds read as
        # milliseconds): then ours must read as the data itself.
        pl = pytest.importorskip("polars")
        source = pl.from_arrow(table)
        assert not theirs.equals(source) and ours.equals(source), (ours, theirs)


@pytest.mark.parametrize("name", WRITABLE)
def test_duckdb_reads_our_files_as_it_reads_pyarrows(name: str, tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    table = pa.table({name: ARRAYS[name]})
    if name in DECODED:
        pytest.skip("pyarrow cannot write run-end encoded columns to compare with")

    def read(data: bytes, file: str) -> pa.Table | None:
        path = tmp_path / file
        path.write_bytes(data)
        try:
            return duckdb.sql(f"SELECT * FROM read_parquet('{path}')").to_arrow_table()
        except Exception:  # noqa: BLE001 - a type duckdb cannot read from any writer
            return None

    theirs = read(pyarrow_write(table), "theirs.parquet")
    if theirs is None:
        pytest.skip(f"duckdb does not read {name} from pyarrow's file either")
    ours = read(zp.write_table(table), "ours.parquet")
    assert ours is not None and ours.equals(theirs), (ours, theirs)


def test_fixed_size_binary_dictionaries_read_back_as_their_values_as_in_pyarrow() -> None:
    values = pa.array([b"ab", b"cd", b"ab", None], pa.binary(2))
    dictionary = values.dictionary_encode()
    table = pa.table(
        {
            "d": dictionary,
            "l": pa.ListArray.from_arrays(pa.array([0, 1, 3, 4, 4], pa.int32()), dictionary),
            "s": pa.StructArray.from_arrays([dictionary], ["x"]),
        }
    )
    # What pyarrow gives for its own file: the dictionaries' values.
    expected = pq.read_table(pa.BufferReader(pyarrow_write(table)))
    assert expected.column("d").type == pa.binary(2)
    data = zp.write_table(table)
    assert pq.read_table(pa.BufferReader(data)).equals(expected)
    assert zp.read_table(data).equals(expected)
    assert zp.read_table(pyarrow_write(table)).equals(expected)
