"""What the Parquet tests share: how each library reads a file, and comparing tables up to
what Parquet keeps (dictionaries are re-encoded, so they are compared by value)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

#: Types Parquet cannot hold; writing them must fail naming the column (pyarrow refuses them too).
UNWRITABLE = {"month_day_nano_interval", "dense_union", "sparse_union"}

#: Stored as pyarrow stores them: seconds as milliseconds, date64 (for pyarrow) as date32.
COERCED = {"time32_s", "timestamp_s", "timestamp_s_utc", "timestamp_s_new_york", "date64"}

#: Stored as the lists they are (Parquet has no list views), declared list views in
#: ARROW:schema, from which readers restore them.
VIEWS = {"list_view", "large_list_view"}

#: Written as their decoded values (pyarrow cannot write them at all).
DECODED = {"run_end_encoded", "run_end_encoded_int16"}


def decoded(t: pa.Table) -> pa.Table:
    """`t` with dictionary and run-end encodings replaced by their values (at any depth)."""

    def plain(ty: pa.DataType) -> pa.DataType:
        if pa.types.is_dictionary(ty):
            return plain(ty.value_type)
        if pa.types.is_run_end_encoded(ty):
            return plain(ty.value_type)
        if pa.types.is_large_list_view(ty):
            return pa.large_list(pa.field(ty.value_field.name, plain(ty.value_type)))
        if pa.types.is_list_view(ty):
            return pa.list_(pa.field(ty.value_field.name, plain(ty.value_type)))
        if pa.types.is_large_list(ty):
            return pa.large_list(pa.field(ty.value_field.name, plain(ty.value_type)))
        if pa.types.is_list(ty):
            return pa.list_(pa.field(ty.value_field.name, plain(ty.value_type)))
        return ty

    columns = []
    for field, column in zip(t.schema, t.columns, strict=True):
        if pa.types.is_run_end_encoded(field.type):
            column = pa.chunked_array(
                [pc.run_end_decode(c) for c in column.chunks], field.type.value_type
            )
            field = pa.field(field.name, field.type.value_type)
        target = plain(field.type)
        if target == field.type:
            columns.append(column)
        elif pa.types.is_list_view(field.type) or pa.types.is_large_list_view(field.type):
            # pyarrow 26's cast of a list view to a list makes an invalid array.
            columns.append(pa.chunked_array([pa.array(column.to_pylist(), target)], target))
        else:
            columns.append(column.cast(target))
    return pa.table(columns, names=t.column_names)


def same_values(got: pa.Table, want: pa.Table) -> bool:
    return decoded(got).equals(decoded(want))


def pyarrow_read(data: bytes, **kw: Any) -> pa.Table:
    try:
        return pq.read_table(io.BytesIO(data), **kw)
    except pa.ArrowInvalid as e:
        # pyarrow before 26 cannot read a fixed-size list column with nulls from any file,
        # its own included ("Expected all lists to be of size=3 but index 1 had size=0").
        if int(pa.__version__.split(".")[0]) < 26 and "Expected all lists to be of size" in str(e):
            pytest.skip(f"pyarrow {pa.__version__} cannot read fixed-size lists with nulls: {e}")
        raise


def pyarrow_write(table: pa.Table, **kw: Any) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, **kw)
    return sink.getvalue()


def read_everywhere(data: bytes, tmp_path: Path) -> pa.Table:
    """The file as pyarrow reads it, after polars and duckdb read the same rows (each where it
    is installed: neither has a wheel for the free-threaded build)."""
    table = pq.read_table(io.BytesIO(data))
    try:
        import polars as pl
    except ImportError:
        pass
    else:
        assert pl.read_parquet(io.BytesIO(data)).height == table.num_rows
    try:
        import duckdb
    except ImportError:
        pass
    else:
        path = tmp_path / "f.parquet"
        path.write_bytes(data)
        assert duckdb.sql(f"select count(*) from '{path}'").fetchall() == [(table.num_rows,)]
    return table
