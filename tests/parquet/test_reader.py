"""The Parquet reader: sources, projections, row groups, batches, metadata, threads, and
hostile input (truncated, corrupted, oversized, encrypted)."""

from __future__ import annotations

import io
import random
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstdpool
import zstdpool.parquet as zp
from zstdpool.errors import ParquetError

from tests.helpers.parquet import pyarrow_write
from tests.helpers.peers import np

TABLE = pa.table(
    {
        "i": pa.array(range(20_000), pa.int32()),
        "s": pa.array([f"v{i % 101}" for i in range(20_000)]),
        "n": pa.array([{"a": i, "b": [float(i)] * (i % 3)} for i in range(20_000)]),
    }
)
DATA = zp.write_table(TABLE, row_group_size=6000)


@pytest.mark.parametrize(
    "kind",
    ["bytes", "bytearray", "memoryview", "numpy", "buffer", "path", "str", "file", "bytesio"],
)
def test_sources(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    path.write_bytes(DATA)
    source = {
        "bytes": lambda: DATA,
        "bytearray": lambda: bytearray(DATA),
        "memoryview": lambda: memoryview(DATA),
        "numpy": lambda: np.frombuffer(DATA, np.uint8),
        "buffer": lambda: pa.py_buffer(DATA),
        "path": lambda: path,
        "str": lambda: str(path),
        "file": lambda: open(path, "rb"),  # noqa: SIM115 - closed below
        "bytesio": lambda: io.BytesIO(DATA),
    }[kind]()
    try:
        assert zp.read_table(source).equals(TABLE)
        assert zp.ParquetFile(source).read(columns=["s"]).column(0).equals(TABLE.column(1))
    finally:
        if hasattr(source, "close"):
            source.close()


def test_projections_keep_the_order_asked_and_reach_into_nested_columns() -> None:
    got = zp.read_table(DATA, columns=["s", "i"])
    assert got.column_names == ["s", "i"] and got.column(1).equals(TABLE.column(0))
    nested = zp.read_table(DATA, columns=["n.b"])
    assert nested.schema.field(0).type.num_fields == 1
    assert (
        nested.column(0)
        .combine_chunks()
        .field("b")
        .equals(TABLE.column(2).combine_chunks().field("b"))
    )
    with pytest.raises(zstdpool.ParameterError, match='"x" is not in the file'):
        zp.read_table(DATA, columns=["x"])
    with pytest.raises(ValueError):
        zp.read_table(DATA, columns=["n.zz"])


def test_row_groups_batches_and_metadata() -> None:
    f = zp.ParquetFile(DATA)
    assert (
        f.num_row_groups == 4
        and f.schema_arrow.equals(TABLE.schema)
        and f.schema.equals(f.schema_arrow)
    )
    assert f.read_row_group(1).equals(TABLE.slice(6000, 6000))
    assert f.read_row_groups([3, 0], columns=["i"]).column(0).to_pylist() == (
        list(range(18000, 20000)) + list(range(6000))
    )
    with pytest.raises(zstdpool.ParameterError, match="out of range"):
        f.read_row_group(4)
    batches = f.iter_batches(batch_size=2500, columns=["i", "s"])
    sizes = [b.num_rows for b in batches]
    assert sum(sizes) == 20_000 and max(sizes) <= 2500
    assert pa.table(f.iter_batches(row_groups=[2])).equals(TABLE.slice(12000, 6000))
    with pytest.raises(zstdpool.ParameterError, match="batch_size"):
        f.iter_batches(batch_size=0)
    md = f.metadata
    assert md["num_rows"] == 20_000 and md["num_row_groups"] == 4 and md["num_columns"] == 4
    assert md["created_by"].startswith("parquet-rs")
    assert b"ARROW:schema" in md["key_value_metadata"]
    column = md["row_groups"][0]["columns"][0]
    assert column["path_in_schema"] == "i" and column["compression"] == "ZSTD"
    assert zp.read_schema(DATA).equals(TABLE.schema)
    f.close()
    assert f.closed
    with pytest.raises(zstdpool.ClosedError):
        f.read()


def test_threads_read_the_same_and_one_file_serves_many_threads() -> None:
    big = pa.concat_tables([TABLE] * 10)
    data = zp.write_table(big)
    for threads in (1, 2, 4):
        assert zp.read_table(data, threads=threads).equals(big)
    assert zp.read_table(data, use_threads=False).equals(big)
    f = zp.ParquetFile(data)
    results: list[bool] = []
    workers = [
        threading.Thread(target=lambda: results.append(f.read(columns=["s"]).num_rows == 200_000))
        for _ in range(4)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert results == [True] * 4


def test_the_pool_serves_every_page_and_gets_every_context_back() -> None:
    pool = zstdpool.ContextPool()
    data = zp.write_table(TABLE, row_group_size=1000, data_page_size=512, pool=pool)
    for _ in range(3):
        assert zp.read_table(data, pool=pool).equals(TABLE)
    stats = pool.stats()
    # Hundreds of pages and 60 column chunks, and only a few contexts made.
    assert stats["created"] <= 6 and stats["leased"] == 0, stats


def test_a_page_larger_than_max_page_size_is_refused() -> None:
    with pytest.raises(zstdpool.OutputLimitError, match=r"max_page_size \(100 bytes\)"):
        zp.read_table(DATA, max_page_size=100)
    assert zp.read_table(DATA, max_page_size=1 << 20).equals(TABLE)


def test_not_parquet_and_encrypted_files_are_refused_clearly() -> None:
    for bad, match in [
        (b"", "too short"),
        (b"PAR1PAR1", "too short"),
        (b"x" * 100, "PAR1 magic"),
        (DATA[:-4] + b"PARE", "encrypted"),
        (DATA[:4] + DATA[-8:-4] + b"PAR1", "footer"),
    ]:
        with pytest.raises(zstdpool.ParquetError, match=match):
            zp.read_table(bad)
    with pytest.raises(FileNotFoundError):
        zp.read_table("/nonexistent/file.parquet")
    with pytest.raises(TypeError, match="source must be"):
        zp.read_table(3)


@pytest.mark.parametrize("opener", ["bytesio", "file"])
def test_a_closed_file_object_gives_pythons_own_error(opener: str, tmp_path: Path) -> None:
    # As pyarrow and the IPC readers: the file object's ValueError, not an OSError around it.
    path = tmp_path / "t.parquet"
    path.write_bytes(DATA)
    f = io.BytesIO(DATA) if opener == "bytesio" else open(path, "rb")  # noqa: SIM115
    f.close()
    with pytest.raises(ValueError, match="closed file") as raised:
        zp.read_table(f)
    assert not isinstance(raised.value, OSError)
    with pytest.raises(ValueError, match="closed file"):
        zp.ParquetFile(f)


def test_every_truncation_and_many_corruptions_fail_cleanly() -> None:
    pool = zstdpool.ContextPool()
    small = zp.write_table(TABLE.slice(0, 300), row_group_size=100, pool=pool)
    for cut in range(0, len(small), 11):
        with pytest.raises((zstdpool.ZstdError, OSError)):
            zp.read_table(small[:cut], pool=pool)
    rng = random.Random(7)
    for _ in range(400):
        bad = bytearray(small)
        for _ in range(rng.randint(1, 4)):
            bad[rng.randrange(len(bad))] ^= 1 << rng.randrange(8)
        try:
            got = zp.read_table(bytes(bad), pool=pool)
        except (zstdpool.ZstdError, OSError):
            continue
        got.validate(full=True)
    assert pool.stats()["leased"] == 0


@pytest.mark.parametrize("codec", ["zstd", "snappy", "lz4", "gzip", "brotli", "none"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_pyarrow_files_of_every_codec_and_page_version(codec: str, version: str) -> None:
    data = pyarrow_write(TABLE, compression=codec, data_page_version=version, row_group_size=7000)
    assert zp.read_table(data).equals(TABLE)


@pytest.mark.parametrize("store_schema", [True, False])
def test_int96_timestamps_outside_the_nanosecond_range_read_as_pyarrow_reads_them(
    store_schema: bool,
) -> None:
    """INT96 from the years 3000 and 1600, outside what nanoseconds hold. Without the Arrow
    schema stored they are read as nanoseconds and wrap exactly as pyarrow's do, the values
    pyarrow users already get from such a file. With it (a millisecond column, as written)
    they come back in its unit, whole, where pyarrow reads nanoseconds and wraps (a difference
    docs/migrating.md lists)."""
    import datetime

    import pyarrow.parquet as pq

    when = [datetime.datetime(3000, 1, 1), datetime.datetime(1600, 6, 1), None]
    table = pa.table({"t": pa.array(when, pa.timestamp("ms"))})
    sink = io.BytesIO()
    pq.write_table(table, sink, use_deprecated_int96_timestamps=True, store_schema=store_schema)
    data = sink.getvalue()
    theirs = pq.read_table(io.BytesIO(data))
    ours = zp.read_table(data)
    if store_schema:
        assert ours.schema == table.schema
        assert ours.column("t").to_pylist() == when
        assert theirs.schema.field("t").type == pa.timestamp("ns")
    else:
        assert ours.schema == theirs.schema
        assert ours.column("t").cast(pa.int64()).equals(theirs.column("t").cast(pa.int64()))


@pytest.mark.parametrize("unit", ["ns", "us", "ms"])
@pytest.mark.parametrize("use_dictionary", [False, True])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_int96_days_past_two_to_the_31_read_as_pyarrow_reads_them(
    unit: str, use_dictionary: bool, version: str
) -> None:
    """Spark writes INT96 days of 2^31 and more for far dates (parquet-testing's
    int96_from_spark.parquet). parquet-cpp reads the day as unsigned, the parquet crate as
    signed: each such value is read as pyarrow reads it, in its PLAIN data pages and in its
    dictionary, in nanoseconds and in a stored microsecond unit; in milliseconds, which no
    value the crate reads can hold, the column is refused by name."""
    import datetime

    import pyarrow.parquet as pq

    when = [datetime.datetime(2020, 1, 1, 0, 0, 1), None, datetime.datetime(1999, 3, 4, 5, 6, 7)]
    table = pa.table({"t": pa.array(when, pa.timestamp(unit))})
    sink = io.BytesIO()
    pq.write_table(
        table,
        sink,
        use_deprecated_int96_timestamps=True,
        compression="none",
        use_dictionary=use_dictionary,
        data_page_version=version,
    )
    data = bytearray(sink.getvalue())
    # The first value's day (2020-01-01 is Julian day 2458850) with its top bit set.
    day = (2_458_850).to_bytes(4, "little")
    at = data.index(day)
    data[at + 3] |= 0x80
    assert data.find(day) == -1
    theirs = pq.read_table(io.BytesIO(bytes(data)), coerce_int96_timestamp_unit=unit)
    if unit == "ms":
        with pytest.raises(zstdpool.ParquetError, match="column 't': an INT96 value's day"):
            zp.read_table(bytes(data))
        return
    ours = zp.read_table(bytes(data))
    assert ours.schema == theirs.schema
    assert ours.column("t").cast(pa.int64()).equals(theirs.column("t").cast(pa.int64()))
    assert ours.column("t")[2].as_py() == when[2]


# --- page checksums ---------------------------------------------------------------------------


def _checksummed(path: Path, writer: str, **options: Any) -> None:
    table = pa.table({"v": pa.array(range(5000), pa.int64()), "s": [f"s{i}" for i in range(5000)]})
    write = zp.write_table if writer == "zstdpool" else pq.write_table
    write(table, path, write_page_checksum=True, use_dictionary=False, **options)


def _flip_last_byte_of_first_chunk(path: Path) -> None:
    """One byte of the first column's last page body changed: its values read otherwise (or
    fail to decompress), and only the page's CRC says it is not what was written."""
    column = pq.read_metadata(path).row_group(0).column(0)
    at = column.data_page_offset + column.total_compressed_size - 1
    raw = bytearray(path.read_bytes())
    raw[at] ^= 0x01
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("writer", ["zstdpool", "pyarrow"])
@pytest.mark.parametrize(
    "options",
    [
        {"compression": "none"},
        {"compression": "zstd"},
        {"compression": "snappy"},
        {"compression": "zstd", "data_page_version": "2.0"},
    ],
    ids=str,
)
def test_page_checksums_are_verified_on_request(
    tmp_path: Path, writer: str, options: dict[str, Any]
) -> None:
    path = tmp_path / "f.parquet"
    _checksummed(path, writer, **options)
    whole = pq.read_table(path)
    # A whole file reads alike with and without verification.
    assert zp.read_table(path, page_checksum_verification=True).equals(whole)
    _flip_last_byte_of_first_chunk(path)
    with pytest.raises(OSError, match="CRC"):
        pq.read_table(path, page_checksum_verification=True)
    for read in (
        lambda: zp.read_table(path, page_checksum_verification=True),
        lambda: zp.ParquetFile(path, page_checksum_verification=True).read(),
        lambda: zp.read_table([path], page_checksum_verification=True),
        lambda: zp.read_table(path, page_checksum_verification=True, filters=[("v", ">=", 0)]),
    ):
        with pytest.raises(ParquetError, match="page checksum verification failed"):
            read()
    # The other column, whose pages are whole, still reads.
    assert zp.read_table(path, columns=["s"], page_checksum_verification=True)["s"].equals(
        whole["s"]
    )


def test_a_file_without_checksums_reads_with_verification_on(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    table = pa.table({"v": pa.array(range(100), pa.int64())})
    pq.write_table(table, path, compression="none")
    assert zp.read_table(path, page_checksum_verification=True).equals(table)


def test_one_batch_stream_serves_parquet_files_and_datasets(tmp_path: Path) -> None:
    """Parquet's iter_batches and a dataset's stream are one class, erring as their format."""
    import zstdpool.dataset as zd

    path = tmp_path / "t.parquet"
    zp.write_table(TABLE, path, row_group_size=700)
    batches = zp.ParquetFile(path).iter_batches(batch_size=500)
    stream = zd.dataset(path)._scanner.stream(None, None, None, None, 1 << 20)
    assert type(batches) is type(stream) is zstdpool.parquet.ParquetBatches
    assert zstdpool.dataset.DatasetBatches is zstdpool.parquet.ParquetBatches
    assert pa.Table.from_batches(list(batches)).equals(TABLE)
    assert pa.RecordBatchReader.from_stream(stream).read_all().equals(TABLE)
