"""Property tests: arbitrary Arrow tables, drawn with pyarrow's own hypothesis strategies
(``pyarrow.tests.strategies``, so the types and the nulls are those pyarrow tests itself with),
go through every writer and reader pair of zstdpool (IPC stream and file, Feather, Parquet,
datasets) and are read back by zstdpool and by pyarrow.

What may differ is only what is documented: Parquet's type mappings (the test takes pyarrow's
own round trip of the same table as the reference, with zstdpool's documented mappings applied
to its types), and a null in a top-level column declared non-nullable, which zstdpool's writers
refuse (docs/migrating.md).
"""

from __future__ import annotations

import datetime
import io
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.feather
import pyarrow.parquet as pq
import pyarrow.tests.strategies as past
import pytest
import zstdpool
import zstdpool.dataset as zd
import zstdpool.feather as zf
import zstdpool.ipc as zi
import zstdpool.parquet as zp
from hypothesis import HealthCheck, assume, example, given, settings


def _unusable_timestamp(t: pa.DataType) -> bool:
    """Whether `t` holds a timestamp pyarrow's `arrays` strategy cannot draw values for:
    one without a zone (it skips the test, pytest.skip), or one in a zone of the system's
    "posix/" or "right/" trees. hypothesis's `timezones()` draws those from the system's
    database, and pyarrow converts the values through pytz where it is installed, whose
    database lacks them (UnknownTimeZoneError: 'posix/Etc/GMT-4')."""
    if pa.types.is_timestamp(t):
        return t.tz is None or t.tz.startswith(("posix/", "right/"))
    if pa.types.is_dictionary(t):
        return _unusable_timestamp(t.value_type)
    return any(_unusable_timestamp(t.field(i).type) for i in range(t.num_fields))


TABLES = past.tables(past.all_types.filter(lambda t: not _unusable_timestamp(t)), max_fields=4)
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    database=None,
)


def _refused_nulls(table: pa.Table) -> bool:
    """Whether a top-level column declared non-nullable holds a null (refused by design)."""
    return any(
        not f.nullable and c.null_count for f, c in zip(table.schema, table.columns, strict=True)
    )


def _writes(table: pa.Table, write: object) -> bytes | None:
    """What `write()` returns, or None where the table holds a refused null and the writer
    refused it, saying why."""
    if _refused_nulls(table):
        with pytest.raises(pa.ArrowInvalid, match="non-nullable"):
            write()  # type: ignore[operator]
        return None
    return write()  # type: ignore[operator, no-any-return]


@SETTINGS
@given(TABLES)
def test_ipc_streams_and_files(table: pa.Table) -> None:
    for write, zread, pread in [
        (zi.write_stream, zi.open_stream, pa.ipc.open_stream),
        (zi.write_file, zi.open_file, pa.ipc.open_file),
    ]:
        data = _writes(table, lambda: write(table))  # noqa: B023
        if data is None:
            continue
        assert zread(data).read_all().equals(table)
        assert pread(data).read_all().equals(table)


@SETTINGS
@given(TABLES)
def test_feather(table: pa.Table) -> None:
    sink = io.BytesIO()
    if _writes(table, lambda: zf.write_feather(table, sink) or b"") is None:
        return
    assert zf.read_table(io.BytesIO(sink.getvalue())).equals(table)
    assert pyarrow.feather.read_table(io.BytesIO(sink.getvalue())).equals(table)


def _stored(t: pa.DataType) -> pa.DataType:
    """The type zstdpool reads back from Parquet where pyarrow reads back `t`
    (docs/guide/parquet.md): seconds as milliseconds; list views are restored from
    `ARROW:schema`, as pyarrow's are."""
    if pa.types.is_timestamp(t) and t.unit == "s":
        return pa.timestamp("ms", t.tz)
    if pa.types.is_time32(t) and t.unit == "s":
        return pa.time32("ms")
    if pa.types.is_date64(t):
        # Stored as date32 by both; pyarrow reads its own back as date32, and zstdpool's (whose
        # ARROW:schema keeps date64) as date64: the same dates, compared as one type here.
        return pa.date32()
    if pa.types.is_list_view(t):
        return pa.list_view(t.value_field.with_type(_stored(t.value_type)))
    if pa.types.is_large_list_view(t):
        return pa.large_list_view(t.value_field.with_type(_stored(t.value_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_stored(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_stored(t.value_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(_stored(t.value_type)), t.list_size)
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_stored(t.key_type)),
            t.item_field.with_type(_stored(t.item_type)),
            t.keys_sorted,
        )
    if pa.types.is_struct(t):
        return pa.struct(
            [t.field(i).with_type(_stored(t.field(i).type)) for i in range(t.num_fields)]
        )
    if pa.types.is_dictionary(t):
        return pa.dictionary(t.index_type, _stored(t.value_type), t.ordered)
    return t


def _pyarrow_read(source: object) -> pa.Table:
    # ParquetFile.read, not pq.read_table: that scans through pyarrow.dataset, which cannot
    # read columns whose names repeat.
    return pq.ParquetFile(source).read()


def _pyarrow_parquet(table: pa.Table) -> pa.Table | Exception | None:
    """pyarrow's own round trip of `table`, the reference for a Parquet round trip; or what
    pyarrow's writer raised; None when pyarrow cannot read what it wrote (a fixed-size list of
    size 0 holding values), which makes no reference."""
    sink = io.BytesIO()
    try:
        pq.write_table(table, sink)
    except (pa.ArrowException, OSError) as e:
        return e
    try:
        return _pyarrow_read(io.BytesIO(sink.getvalue()))
    except (pa.ArrowException, OSError):
        return None


def _nulls_where_not_nullable(array: pa.Array) -> bool:
    """Whether a nested child declared non-nullable holds a null. pyarrow's Parquet writer
    turns such a null into an empty or default value, or refuses it, by type, and arrow-rs's
    writes it as a null or fails: not compared here (a known gap, in docs/migrating.md)."""
    t = array.type
    children: list[tuple[pa.Field, pa.Array]] = []
    if pa.types.is_struct(t):
        children = [(t.field(i), array.field(i)) for i in range(t.num_fields)]
    elif pa.types.is_map(t):
        children = [(t.key_field, array.keys), (t.item_field, array.items)]
    elif (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    ):
        children = [(t.value_field, array.values)]
    elif pa.types.is_dictionary(t):
        return _nulls_where_not_nullable(array.dictionary)
    return any(
        (not field.nullable and child.null_count) or _nulls_where_not_nullable(child)
        for field, child in children
    )


def _parquet_comparable(table: pa.Table) -> bool:
    return not any(_nulls_where_not_nullable(c) for col in table.columns for c in col.chunks)


def _same(got: pa.Table, reference: pa.Table) -> None:
    """`got` is `reference` with zstdpool's documented types: the same values, compared as
    Python objects (pyarrow cannot cast every list view to a list)."""
    expected = pa.schema([f.with_type(_stored(f.type)) for f in reference.schema])
    seen = pa.schema([f.with_type(_stored(f.type)) for f in got.schema])
    assert seen.equals(expected), (got.schema, expected)
    assert got.to_pylist() == reference.to_pylist()


def _refuses(write: object) -> None:
    with pytest.raises((pa.ArrowException, zstdpool.ZstdError, OSError)):
        write()  # type: ignore[operator]


@SETTINGS
@given(TABLES)
@example(pa.table({"d": pa.array([datetime.date(2026, 12, 3), None], pa.date64())}))
def test_parquet(table: pa.Table) -> None:
    reference = _pyarrow_parquet(table)
    assume(reference is not None and _parquet_comparable(table))
    if isinstance(reference, Exception) or _refused_nulls(table):
        # What pyarrow cannot store, zstdpool refuses too, with an exception.
        _refuses(lambda: zp.write_table(table))
        return
    data = zp.write_table(table)
    _same(zp.read_table(data), reference)
    _same(_pyarrow_read(pa.BufferReader(data)), reference)
    # Pages cut by content, chunks small enough that every type is cut into several.
    chunked = zp.write_table(
        table, use_content_defined_chunking={"min_chunk_size": 64, "max_chunk_size": 256}
    )
    _same(zp.read_table(chunked), reference)
    _same(_pyarrow_read(pa.BufferReader(chunked)), reference)


@SETTINGS
@given(TABLES)
def test_datasets(table: pa.Table) -> None:
    reference = _pyarrow_parquet(table)
    assume(reference is not None and _parquet_comparable(table))
    with tempfile.TemporaryDirectory() as d:
        if table.num_rows == 0:
            # As pyarrow's write_dataset: no rows, no files (and no type refused).
            assert zd.write_dataset(table, d) == []
            return
        if isinstance(reference, Exception) or _refused_nulls(table):
            _refuses(lambda: zd.write_dataset(table, d))
            return
        files = zd.write_dataset(table, d)
        # Each file read on its own: pyarrow.dataset cannot scan columns whose names repeat.
        _same(pa.concat_tables(_pyarrow_read(f["path"]) for f in files), reference)
        ipc_files = zd.write_dataset(table, Path(d) / "ipc", format="ipc")
        got = pa.concat_tables(pa.ipc.open_file(f["path"]).read_all() for f in ipc_files)
        assert got.equals(table)
