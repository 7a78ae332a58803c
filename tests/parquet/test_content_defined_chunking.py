"""`use_content_defined_chunking`: data pages end where the values say, so a file written again
after a small edit shares most of its pages with the old one. Pages are compared with
pyarrow's, read from their headers (benchmarks.harness.pages)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstdpool
import zstdpool.parquet as zp
from zstdpool.errors import ParameterError

from benchmarks.harness.pages import data_page_values, pages, shared_bytes
from tests.helpers.parquet import pyarrow_write, read_everywhere

#: Chunks of 16-64 KiB: a few thousand values a page, under the 20,000-row page limit.
SMALL = {"min_chunk_size": 16 * 1024, "max_chunk_size": 64 * 1024}


def values(rows: int, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "i": rng.integers(0, 1 << 40, rows),
            "s": [f"value {x}" for x in rng.integers(0, 10**9, rows)],
            "f": rng.random(rows),
        }
    )


@pytest.mark.parametrize("options", [True, SMALL, {**SMALL, "norm_level": 1}])
def test_pages_end_where_pyarrows_do(options: Any) -> None:
    table = values(120_000)
    kw = {"use_content_defined_chunking": options, "use_dictionary": False}
    ours, theirs = zp.write_table(table, **kw), pyarrow_write(table, **kw)
    assert pq.read_table(io.BytesIO(ours)).equals(table)
    plain = zp.write_table(table, use_dictionary=False)
    for column in range(table.num_columns):
        cut = data_page_values(ours, 0, column)
        assert cut == data_page_values(theirs, 0, column)
        assert sum(cut) == table.num_rows
        # Not where the row limit or the page size would have ended them.
        assert cut != data_page_values(plain, 0, column)


def test_smaller_chunks_make_more_pages() -> None:
    table = values(100_000)
    many = zp.write_table(table, use_content_defined_chunking=SMALL)
    few = zp.write_table(table, use_content_defined_chunking=True)
    for column in range(table.num_columns):
        assert len(pages(many, 0, column)) > len(pages(few, 0, column))


def few_values(rows: int) -> pa.Table:
    """Columns of few distinct values: each gets a dictionary, whose indices an insert of
    values already in it leaves as they were."""
    rng = np.random.default_rng(5)
    return pa.table(
        {
            "k": rng.integers(0, 50, rows),
            "s": [f"category {x}" for x in rng.integers(0, 30, rows)],
        }
    )


@pytest.mark.parametrize("dictionary", [False, True])
def test_rows_inserted_leave_most_pages_as_they_were(dictionary: bool) -> None:
    table = few_values(200_000) if dictionary else values(200_000)
    edited = pa.concat_tables([table.slice(0, 5_000), table.slice(100, 7), table.slice(5_000)])
    kw: dict[str, Any] = {"use_dictionary": dictionary}

    def shared(**more: Any) -> float:
        return shared_bytes(
            zp.write_table(table, **kw, **more), zp.write_table(edited, **kw, **more)
        )

    by_content = shared(use_content_defined_chunking=SMALL)
    # Without it every page after the edit starts at another row.
    assert shared() < 0.2
    assert by_content > 0.8
    theirs = shared_bytes(
        pyarrow_write(table, use_content_defined_chunking=SMALL, **kw),
        pyarrow_write(edited, use_content_defined_chunking=SMALL, **kw),
    )
    assert by_content >= theirs - 0.02


def test_each_row_group_starts_its_own_chunks() -> None:
    """pyarrow carries its chunkers from one row group to the next; zstdpool starts them again
    (see the deliberate differences in docs/migrating.md): the first row group's pages are
    pyarrow's, and a later row group's pages are those of the same rows written as a first row
    group."""
    table = values(90_000)
    kw = {"use_content_defined_chunking": SMALL, "use_dictionary": False}
    ours = zp.write_table(table, row_group_size=30_000, **kw)
    theirs = pyarrow_write(table, row_group_size=30_000, **kw)
    assert pq.ParquetFile(io.BytesIO(ours)).metadata.num_row_groups == 3
    assert pq.read_table(io.BytesIO(ours)).equals(table)
    for column in range(table.num_columns):
        assert data_page_values(ours, 0, column) == data_page_values(theirs, 0, column)
        alone = zp.write_table(table.slice(60_000), **kw)
        assert data_page_values(ours, 2, column) == data_page_values(alone, 0, column)


def categorical_table(rows: int) -> pa.Table:
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 3, rows)
    return pa.table(
        {
            "c": pa.array(
                pd.Categorical.from_codes(codes, categories=["z", "y", "x", "unused"], ordered=True)
            ),
            "l": pa.array(
                [
                    None if x % 7 == 0 else [int(x)] * (int(x) % 4)
                    for x in codes + rng.integers(0, 50, rows)
                ],
                pa.list_(pa.int64()),
            ),
            "st": pa.array([{"x": int(x), "y": str(x)} for x in rng.integers(0, 1000, rows)]),
            "ts": pa.array(rng.integers(0, 10**18, rows), pa.timestamp("ns")),
        }
    )


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"write_page_checksum": True},
        {"data_page_version": "2.0"},
        {"compression": "snappy"},
        {"compression": {"c": "gzip", "l": "zstd", "st.x": "none", "st.y": "brotli", "ts": "lz4"}},
        {"use_deprecated_int96_timestamps": True},
        {"bloom_filter_options": {"ts": True}},
        {"write_page_index": False},
        {"write_statistics": False},
    ],
    ids=lambda o: ",".join(o) or "defaults",
)
def test_content_chunks_take_every_other_option(options: dict[str, Any], tmp_path: Path) -> None:
    table = categorical_table(60_000)
    data = zp.write_table(
        table, use_content_defined_chunking=SMALL, row_group_size=25_000, **options
    )
    back = pq.read_table(io.BytesIO(data), page_checksum_verification=True)
    # The categorical keeps its categories, unused one and order included.
    assert back.column("c").type == pa.dictionary(pa.int8(), pa.string(), ordered=True)
    assert back.column("c").chunk(0).dictionary.to_pylist() == ["z", "y", "x", "unused"]
    for name in ["c", "l", "st"]:
        assert back.column(name).to_pylist() == table.column(name).to_pylist()
    assert back.column("ts").equals(table.column("ts"))
    assert zp.read_table(data).column("l").equals(back.column("l"))
    md = pq.ParquetFile(io.BytesIO(data)).metadata
    assert md.num_row_groups == 3
    chunk = md.row_group(0).column(0)
    assert chunk.has_offset_index == (options.get("write_page_index", True))
    assert chunk.has_column_index == (
        options.get("write_page_index", True) and options.get("write_statistics", True)
    )
    assert (md.row_group(0).column(4).bloom_filter_offset is not None) == (
        "bloom_filter_options" in options
    )
    if "use_deprecated_int96_timestamps" in options:
        assert md.schema.column(4).physical_type == "INT96"
    # The values of a leaf take pages by content: the list's values fill several.
    assert len(pages(data, 0, 1)) > 2
    assert read_everywhere(data, tmp_path).num_rows == table.num_rows


def test_a_parquet_writer_and_an_empty_table() -> None:
    table = values(50_000)
    sink = io.BytesIO()
    with zp.ParquetWriter(sink, table.schema, use_content_defined_chunking=SMALL) as w:
        w.write_table(table.slice(0, 20_000))
        w.write_table(table.slice(20_000))
        w.write_table(table.slice(0, 0))
    data = sink.getvalue()
    assert pq.read_table(io.BytesIO(data)).equals(table)
    empty = zp.write_table(table.slice(0, 0), use_content_defined_chunking=True)
    assert pq.read_table(io.BytesIO(empty)).equals(table.slice(0, 0))


def test_the_pool_gets_every_context_back() -> None:
    pool = zstdpool.ContextPool()
    table = values(50_000)
    for _ in range(3):
        zp.write_table(table, use_content_defined_chunking=SMALL, row_group_size=10_000, pool=pool)
    stats = pool.stats()
    assert stats["leased"] == 0 and stats["created"] <= 2, stats


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (1, TypeError, r"use_content_defined_chunking must be a bool or a dict .* not int"),
        ("yes", TypeError, r"use_content_defined_chunking must be a bool or a dict"),
        ({"min_chunk_size": 1}, ParameterError, r"must give max_chunk_size"),
        ({"max_chunk_size": 10}, ParameterError, r"must give min_chunk_size"),
        ({**SMALL, "size": 3}, ParameterError, r"unknown option \"size\""),
        ({**SMALL, "min_chunk_size": 0}, ParameterError, r"min_chunk_size must be at least 1"),
        ({**SMALL, "min_chunk_size": "1"}, TypeError, r"min_chunk_size must be an int"),
        ({**SMALL, "max_chunk_size": 2**70}, ParameterError, r"max_chunk_size is out of range"),
        (
            {"min_chunk_size": 100, "max_chunk_size": 100},
            ParameterError,
            r"max_chunk_size \(100\) must be greater than min_chunk_size \(100\)",
        ),
        (
            {**SMALL, "norm_level": 40},
            ParameterError,
            r"chunk sizes and norm_level make no chunker",
        ),
        ({**SMALL, "norm_level": 2**40}, ParameterError, r"norm_level is out of range"),
        ({**SMALL, "norm_level": 0.5}, TypeError, r"norm_level must be an int"),
    ],
)
def test_a_bad_value_names_the_option(value: Any, error: type[Exception], message: str) -> None:
    table = values(10)
    with pytest.raises(error, match=message) as info:
        zp.write_table(table, use_content_defined_chunking=value)
    assert "use_content_defined_chunking" in str(info.value)
    with pytest.raises(error, match=message):
        zp.ParquetWriter(io.BytesIO(), table.schema, use_content_defined_chunking=value)
