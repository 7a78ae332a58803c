"""The Parquet writer: options, sinks, the writer's life, failures and the pool."""

from __future__ import annotations

import io
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstdpool
import zstdpool.parquet as zp

from tests.helpers.arrow_data import compressible_table
from tests.helpers.parquet import pyarrow_read

TABLE = pa.table(
    {
        "i": pa.array(range(10_000), pa.int64()),
        "s": pa.array([f"word{i % 13}" for i in range(10_000)]),
        "f": pa.array([i / 7 for i in range(10_000)]),
        "n": pa.array([{"a": i, "b": [str(i)]} for i in range(10_000)]),
    }
)


def footer(data: bytes) -> pq.FileMetaData:
    return pq.ParquetFile(io.BytesIO(data)).metadata


def codecs(data: bytes) -> dict[str, str]:
    md = footer(data)
    return {
        md.row_group(0).column(j).path_in_schema: md.row_group(0).column(j).compression
        for j in range(md.num_columns)
    }


def test_defaults_are_zstd_with_statistics_dictionaries_and_page_indexes() -> None:
    data = zp.write_table(TABLE)
    assert set(codecs(data).values()) == {"ZSTD"}
    md = footer(data)
    col = md.row_group(0).column(0)
    assert col.is_stats_set and col.statistics.min == 0 and col.statistics.max == 9999
    assert md.row_group(0).column(1).has_dictionary_page
    assert col.has_offset_index and col.has_column_index
    assert b"ARROW:schema" in md.metadata
    assert pyarrow_read(data).equals(TABLE)


def test_level_one_by_default_and_levels_change_the_output() -> None:
    table = compressible_table(200_000)
    one = zp.write_table(table)
    assert one == zp.write_table(table, compression_level=1)
    assert len(zp.write_table(table, compression_level=19)) < len(one)
    assert zp.write_table(table, compression_level=-5) != one


def test_per_column_codecs_levels_dictionaries_and_statistics() -> None:
    data = zp.write_table(
        TABLE,
        compression={"i": "zstd", "s": "snappy", "n": "lz4"},
        compression_level={"i": 9},
        use_dictionary=["s"],
        write_statistics=["i"],
    )
    got = codecs(data)
    assert got["i"] == "ZSTD" and got["s"] == "SNAPPY" and got["f"] == "UNCOMPRESSED"
    # pyarrow calls LZ4_RAW "LZ4".
    assert got["n.a"] == "LZ4" and got["n.b.list.element"] == "LZ4"
    rg = footer(data).row_group(0)
    by_path = {rg.column(j).path_in_schema: rg.column(j) for j in range(rg.num_columns)}
    assert by_path["s"].has_dictionary_page and not by_path["i"].has_dictionary_page
    assert by_path["i"].is_stats_set and not by_path["f"].is_stats_set
    assert pyarrow_read(data).equals(TABLE)


@pytest.mark.parametrize("codec", ["zstd", "lz4", "snappy", "gzip", "brotli", None, "NONE", "ZSTD"])
def test_every_codec_name(codec: str | None) -> None:
    assert pyarrow_read(zp.write_table(TABLE, compression=codec)).equals(TABLE)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"compression": "lzo"}, zstdpool.ParameterError, "compression must be"),
        ({"compression": "snappy", "compression_level": 3}, zstdpool.ParameterError, "does not"),
        ({"compression_level": 99}, zstdpool.ParameterError, "level"),
        ({"compression": "gzip", "compression_level": 10}, zstdpool.ParameterError, "0 to 9"),
        ({"compression": {"nope": "zstd"}}, zstdpool.ParameterError, '"nope"'),
        ({"use_dictionary": ["nope"]}, zstdpool.ParameterError, "use_dictionary"),
        ({"row_group_size": 0}, zstdpool.ParameterError, "row_group_size"),
        ({"row_group_size": -1}, zstdpool.ParameterError, "row_group_size"),
        ({"data_page_size": 0}, zstdpool.ParameterError, "data_page_size"),
        ({"data_page_version": "3.0"}, zstdpool.ParameterError, "data_page_version"),
        ({"threads": 0}, zstdpool.ParameterError, "threads"),
        ({"compression": 3}, TypeError, "compression"),
        ({"compression": {"i": 3}}, TypeError, "codec of column"),
        ({"use_dictionary": 3}, TypeError, "use_dictionary"),
        ({"compression_level": "high"}, TypeError, "compression_level"),
    ],
)
def test_bad_options_are_refused_before_anything_is_written(
    kwargs: dict, error: type, match: str, tmp_path: Path
) -> None:
    with pytest.raises(error, match=match):
        zp.write_table(TABLE, tmp_path / "x.parquet", **kwargs)
    with pytest.raises(error, match=match):
        zp.ParquetWriter(tmp_path / "y.parquet", TABLE.schema, **kwargs)
    assert list(tmp_path.iterdir()) == []


def test_row_groups_pages_and_page_versions() -> None:
    data = zp.write_table(TABLE, row_group_size=3000, data_page_size=1024, data_page_version="2.0")
    md = footer(data)
    assert [md.row_group(i).num_rows for i in range(md.num_row_groups)] == [3000] * 3 + [1000]
    assert pyarrow_read(data).equals(TABLE)
    assert zp.read_table(data).equals(TABLE)


def test_threads_give_byte_identical_files_and_reuse_contexts() -> None:
    table = pa.concat_tables([TABLE] * 30)
    pool = zstdpool.ContextPool()
    one = zp.write_table(table, threads=1, pool=pool)
    assert zp.write_table(table, threads=2, pool=pool) == one
    assert zp.write_table(table, threads=4, pool=pool) == one
    assert zp.write_table(table, pool=pool) == one
    stats = pool.stats()
    # Contexts per thread, never per page or column chunk (5 leaves x row groups x writes).
    assert stats["created"] <= 4 and stats["leased"] == 0, stats


@pytest.mark.parametrize("kind", ["path", "pathlike", "file", "bytesio", "bytes"])
def test_sinks(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    if kind == "bytes":
        data = zp.write_table(TABLE)
    elif kind == "bytesio":
        sink = io.BytesIO()
        assert zp.write_table(TABLE, sink) is None
        data = sink.getvalue()
    elif kind == "file":
        with open(path, "wb") as f:
            zp.write_table(TABLE, f)
        data = path.read_bytes()
    else:
        zp.write_table(TABLE, str(path) if kind == "path" else path)
        data = path.read_bytes()
    assert pyarrow_read(data).equals(TABLE)


def test_writer_buffers_row_groups_and_writes_the_footer_on_close(tmp_path: Path) -> None:
    path = tmp_path / "w.parquet"
    batches = TABLE.to_batches(max_chunksize=1500)
    with zp.ParquetWriter(path, TABLE.schema, row_group_size=4000) as w:
        for batch in batches[:3]:
            w.write_batch(batch)
            assert not path.exists()
        assert w.num_row_groups == 1 and w.num_rows == 4000
        w.flush()
        assert w.num_row_groups == 2 and w.num_rows == 4500
        # pyarrow's write_table(row_group_size=): row groups of the table's own.
        w.write_table(TABLE, row_group_size=5000)
        assert w.num_row_groups == 4
        assert w.bytes_written > 0 and w.schema.equals(TABLE.schema)
    assert w.closed
    # Once closed: every byte of the file, footer included.
    assert w.bytes_written == path.stat().st_size
    w.close()  # idempotent
    assert w.bytes_written == path.stat().st_size
    md = footer(path.read_bytes())
    assert [md.row_group(i).num_rows for i in range(md.num_row_groups)] == [4000, 500, 5000, 5000]
    want = pa.concat_tables([TABLE.slice(0, 4500), TABLE])
    assert pyarrow_read(path.read_bytes()).equals(want)
    with pytest.raises(zstdpool.ClosedError):
        w.write(TABLE)


def test_a_failed_block_or_abort_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "w.parquet"
    with pytest.raises(RuntimeError, match="boom"):
        with zp.ParquetWriter(path, TABLE.schema) as w:
            w.write(TABLE)
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
    w = zp.ParquetWriter(path, TABLE.schema)
    w.write(TABLE)
    w.abort()
    assert w.closed and list(tmp_path.iterdir()) == []
    w = zp.ParquetWriter(path, TABLE.schema)
    w.write(TABLE)
    del w  # collected without close
    assert list(tmp_path.iterdir()) == []


def test_a_schema_mismatch_is_refused_and_the_writer_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "w.parquet"
    with zp.ParquetWriter(path, TABLE.schema) as w:
        with pytest.raises(zstdpool.ParquetError, match="does not match the writer's schema"):
            w.write(pa.table({"x": [1]}))
        w.write(TABLE)
    assert pyarrow_read(path.read_bytes()).equals(TABLE)


def test_inputs_of_every_kind() -> None:
    pl = pytest.importorskip("polars")
    reader = pa.RecordBatchReader.from_batches(TABLE.schema, TABLE.to_batches(2500))
    for data in (TABLE, TABLE.to_batches()[0], reader, pl.from_arrow(TABLE)):
        got = pyarrow_read(zp.write_table(data))
        assert got.num_rows in (TABLE.num_rows, TABLE.to_batches()[0].num_rows)
    with pytest.raises(TypeError, match="cannot write 'int'"):
        zp.write_table(3)


class FailingSink(io.RawIOBase):
    """Accepts `limit` bytes, then raises."""

    def __init__(self, limit: int) -> None:
        self.limit, self.taken = limit, 0

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # type: ignore[no-untyped-def, override]
        if self.taken + len(b) > self.limit:
            raise OSError("disk on fire")
        self.taken += len(b)
        return len(b)


def test_a_failing_sink_raises_its_error_and_returns_every_context() -> None:
    pool = zstdpool.ContextPool()
    with pytest.raises(OSError, match="disk on fire"):
        zp.write_table(pa.concat_tables([TABLE] * 20), FailingSink(10_000), pool=pool)
    w = zp.ParquetWriter(FailingSink(100), TABLE.schema, pool=pool)
    with pytest.raises(OSError, match="disk on fire"):
        w.write_table(TABLE)
        w.close()
    assert w.closed
    assert pool.stats()["leased"] == 0


def test_one_writer_in_two_threads_gets_busy_error() -> None:
    entered, release = threading.Event(), threading.Event()

    def slow_batches():  # type: ignore[no-untyped-def]
        yield TABLE.to_batches()[0]
        entered.set()
        release.wait(10)

    w = zp.ParquetWriter(io.BytesIO(), TABLE.schema)
    slow = pa.RecordBatchReader.from_batches(TABLE.schema, slow_batches())
    worker = threading.Thread(target=w.write, args=(slow,))
    worker.start()
    try:
        assert entered.wait(10)
        with pytest.raises(zstdpool.BusyError):
            w.write(TABLE)
        with pytest.raises(zstdpool.BusyError):
            w.close()
    finally:
        release.set()
        worker.join(10)
    w.close()


def test_files_of_one_schema_differ_where_their_schemas_and_options_do() -> None:
    """Writers of one schema and options share what they derive from them; each file still
    holds its own ordered flags, metadata and options, written alternately."""

    def table(ordered: bool, nested_ordered: bool, meta: str) -> pa.Table:
        dictionary = pa.array(["b", "a", "b"]).dictionary_encode()
        plain = pa.DictionaryArray.from_arrays(
            dictionary.indices, dictionary.dictionary, ordered=ordered
        )
        nested = pa.DictionaryArray.from_arrays(
            dictionary.indices, dictionary.dictionary, ordered=nested_ordered
        )
        return pa.table(
            {"d": plain, "s": pa.StructArray.from_arrays([nested], ["n"])}
        ).replace_schema_metadata({"k": meta})

    for _ in range(2):
        for ordered, nested_ordered, meta in [
            (True, False, "a"),
            (False, False, "a"),
            (True, True, "a"),
            (True, False, "b"),
        ]:
            back = pq.read_table(io.BytesIO(zp.write_table(table(ordered, nested_ordered, meta))))
            assert back.schema.field("d").type.ordered == ordered
            assert back.schema.field("s").type.field("n").type.ordered == nested_ordered
            assert back.schema.metadata[b"k"] == meta.encode()
        for codec in ["zstd", "snappy"]:
            assert set(codecs(zp.write_table(TABLE, compression=codec)).values()) == {codec.upper()}
