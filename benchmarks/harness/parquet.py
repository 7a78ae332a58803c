"""The Parquet workloads of ``python -m benchmarks``: the ``parquet_writer`` and
``parquet_reader`` groups.

Every contender writes zstd at level 1 (pyarrow's default, and zstdpool's) to memory, with
its library's default row groups and pages; the "bytes" column shows what each wrote.
``parquet_writer`` writes a whole file per call; ``parquet_threads`` writes the big lineitem
table with zstdpool's ``threads=1`` and ``threads=2`` beside pyarrow's defaults.
``parquet_bloom`` writes the lineitem table with bloom filters on three columns, zstdpool and
pyarrow with the same ``bloom_filter_options``.
``parquet_cdc`` writes it with ``use_content_defined_chunking=True``, zstdpool and pyarrow; its
"shared%" column is the share of page bytes that the same library's file of the table with ten
rows inserted a tenth of the way in has in common with the first file: what a deduplicating
store does not store again.
``parquet_reader`` reads a file written by pyarrow (zstd level 1) into a table.
"""

from __future__ import annotations

import functools
import io
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchmarks.harness.data import have_numpy
from benchmarks.harness.ipc import TableCase, check_read, ipc_sizes
from benchmarks.harness.runner import (
    Contender,
    Profile,
    Timed,
    Workload,
    register_source,
    require_version,
)

if TYPE_CHECKING:
    import pyarrow as pa

#: zstd level of every contender.
LEVEL = 1


def written(out: object) -> bytes:
    """The bytes of a writer's result: bytes, a pyarrow Buffer or a BytesIO."""
    if isinstance(out, io.BytesIO):
        return out.getvalue()
    if isinstance(out, bytes):
        return out
    return bytes(memoryview(out))  # type: ignore[arg-type]


def check_written(expected: pa.Table, out: object) -> None:
    """Raises AssertionError unless pyarrow reads ``out`` back as ``expected``, zstd-compressed."""
    import pyarrow.parquet as pq

    data = written(out)
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    codecs = {meta.row_group(0).column(j).compression for j in range(meta.num_columns)}
    if codecs != {"ZSTD"}:
        raise AssertionError(f"columns compressed with {codecs}, not zstd")
    check_read(expected, pq.read_table(io.BytesIO(data)))


def _bytes(out: object) -> dict[str, float]:
    return {"bytes": len(written(out))}


@functools.lru_cache(maxsize=4)
def pyarrow_file(case: TableCase) -> bytes:
    """The case's table as a Parquet file written by pyarrow (zstd level 1; cached)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(case.table(), sink, compression="zstd", compression_level=LEVEL)
    data: bytes = sink.getvalue().to_pybytes()
    return data


@dataclass(frozen=True)
class ParquetImpl:
    """One library's way to do a Parquet operation; ``bind(stack, input)`` gives the timed call.

    The input is a pyarrow table for writers, a file's bytes for readers.
    """

    label: str
    bind: Callable[[ExitStack, Any], Timed]
    requires: tuple[str, ...] = ()


#: The bloom filters of the ``parquet_bloom`` workloads: a key, a foreign key and a
#: low-cardinality string, each with pyarrow's default size (ndv 1,048,576, fpp 0.05).
BLOOM_FILTERS: dict[str, Any] = {"l_orderkey": True, "l_partkey": True, "l_shipmode": True}


def _zstdpool_write(
    threads: int | None = None, **options: Any
) -> Callable[[ExitStack, pa.Table], Timed]:
    def bind(stack: ExitStack, table: pa.Table) -> Timed:
        import zstdpool.parquet

        return functools.partial(zstdpool.parquet.write_table, table, threads=threads, **options)

    return bind


def _pyarrow_write_with(**options: Any) -> Callable[[ExitStack, pa.Table], Timed]:
    def bind(stack: ExitStack, table: pa.Table) -> Timed:
        import pyarrow as pa
        import pyarrow.parquet as pq

        def call() -> pa.Buffer:
            sink = pa.BufferOutputStream()
            pq.write_table(table, sink, compression="zstd", compression_level=LEVEL, **options)
            return sink.getvalue()

        return call

    return bind


_pyarrow_write = _pyarrow_write_with()


def _polars_write(stack: ExitStack, table: pa.Table) -> Timed:
    import polars as pl

    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)

    def call() -> bytes:
        sink = io.BytesIO()
        frame.write_parquet(sink, compression="zstd", compression_level=LEVEL)
        return sink.getvalue()

    return call


def _arro3_write(stack: ExitStack, table: pa.Table) -> Timed:
    from arro3.core import Table
    from arro3.io import write_parquet

    data = Table.from_arrow(table)

    def call() -> bytes:
        sink = io.BytesIO()
        write_parquet(data, sink, compression=f"zstd({LEVEL})")
        return sink.getvalue()

    return call


WRITERS: tuple[ParquetImpl, ...] = (
    ParquetImpl("zstdpool write_table", _zstdpool_write()),
    ParquetImpl("pyarrow", _pyarrow_write, ("pyarrow",)),
    ParquetImpl("polars", _polars_write, ("polars",)),
    ParquetImpl("arro3-io", _arro3_write, ("arro3.io",)),
)

THREADED_WRITERS: tuple[ParquetImpl, ...] = (
    ParquetImpl("zstdpool threads=2", _zstdpool_write(2)),
    ParquetImpl("zstdpool threads=1", _zstdpool_write(1)),
    ParquetImpl("pyarrow", _pyarrow_write, ("pyarrow",)),
)


BLOOM_WRITERS: tuple[ParquetImpl, ...] = (
    ParquetImpl("zstdpool bloom filters", _zstdpool_write(bloom_filter_options=BLOOM_FILTERS)),
    ParquetImpl(
        "pyarrow bloom filters",
        _pyarrow_write_with(bloom_filter_options=BLOOM_FILTERS),
        ("pyarrow",),
    ),
)


CDC_WRITERS: tuple[ParquetImpl, ...] = (
    ParquetImpl("zstdpool content-defined", _zstdpool_write(use_content_defined_chunking=True)),
    ParquetImpl(
        "pyarrow content-defined",
        _pyarrow_write_with(use_content_defined_chunking=True),
        ("pyarrow",),
    ),
)


def with_rows_inserted(table: pa.Table) -> pa.Table:
    """``table`` with ten of its rows inserted again a tenth of the way in: an edit that shifts
    every later row."""
    import pyarrow as pa

    at = table.num_rows // 10
    return pa.concat_tables([table.slice(0, at), table.slice(0, 10), table.slice(at)])


def _shared_after_insert(
    impl: ParquetImpl, case: TableCase
) -> Callable[[object], dict[str, float]]:
    def figures(out: object) -> dict[str, float]:
        from benchmarks.harness.pages import shared_bytes

        with ExitStack() as stack:
            edited = written(impl.bind(stack, with_rows_inserted(case.table()))())
        return {**_bytes(out), "shared%": 100 * shared_bytes(written(out), edited)}

    return figures


def _zstdpool_read(stack: ExitStack, data: bytes) -> Timed:
    import zstdpool.parquet

    return functools.partial(zstdpool.parquet.read_table, data)


def _pyarrow_read(stack: ExitStack, data: bytes) -> Timed:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = pa.py_buffer(data)

    def call() -> pa.Table:
        return pq.read_table(buffer)

    return call


def _polars_read(stack: ExitStack, data: bytes) -> Timed:
    import polars as pl

    def call() -> pl.DataFrame:
        return pl.read_parquet(io.BytesIO(data))

    return call


def _arro3_read(stack: ExitStack, data: bytes) -> Timed:
    from arro3.io import read_parquet

    require_version("arro3-io", (0, 9), "has no batch_size on read_parquet")

    def call() -> object:
        # Every batch decoded, in batches as large as the file's row groups.
        return read_parquet(data, batch_size=1 << 20).read_all()

    return call


READERS: tuple[ParquetImpl, ...] = (
    ParquetImpl("zstdpool read_table", _zstdpool_read),
    ParquetImpl("pyarrow", _pyarrow_read, ("pyarrow",)),
    ParquetImpl("polars", _polars_read, ("polars",)),
    ParquetImpl("arro3-io", _arro3_read, ("arro3.io",)),
)


def _bind(impl: ParquetImpl, make_input: Callable[[], Any]) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        return impl.bind(stack, make_input())

    return setup


def writer_workload(
    case: TableCase,
    group: str,
    impls: tuple[ParquetImpl, ...],
    figures: Callable[[ParquetImpl, TableCase], Callable[[object], dict[str, float]]] | None = None,
) -> Workload:
    """Writing ``case`` with each of ``impls``; ``figures`` gives what is reported beside the
    time (the file's bytes when None)."""
    return Workload(
        name=f"{group} {case.name}",
        group=group,
        description=(
            f"Write a table as one Parquet file in memory, zstd level 1, each library's default "
            f"row groups and pages. Table: {case.description}. Bytes: the file."
        ),
        contenders=tuple(
            Contender(
                impl.label,
                _bind(impl, case.table),
                check=lambda out: check_written(case.table(), out),
                extra=_bytes if figures is None else figures(impl, case),
                requires=impl.requires,
            )
            for impl in impls
        ),
        nbytes=case.table().nbytes,
    )


def reader_workload(case: TableCase) -> Workload:
    return Workload(
        name=f"parquet_reader {case.name}",
        group="parquet_reader",
        description=(
            f"Read a whole Parquet file, written by pyarrow (zstd level 1, default options), "
            f"into a table. Table: {case.description}."
        ),
        contenders=tuple(
            Contender(
                impl.label,
                _bind(impl, functools.partial(pyarrow_file, case)),
                check=lambda out: check_read(case.table(), out),
                requires=impl.requires,
            )
            for impl in READERS
        ),
        nbytes=case.table().nbytes,
    )


@register_source
def parquet_workloads(profile: Profile) -> Iterator[Workload]:
    """The Parquet writer and reader workloads (none without numpy)."""
    if not have_numpy():
        print(
            "note: the Parquet workloads need numpy: pip install 'zstdpool[bench]'", file=sys.stderr
        )
        return
    sizes = ipc_sizes(profile)
    cases = [TableCase("int32", rows) for rows in sizes.int32_rows[:3]]
    cases.append(TableCase("lineitem", sizes.lineitem_rows))
    big = TableCase("lineitem", sizes.big_rows)
    for case in [*cases, big]:
        yield writer_workload(case, "parquet_writer", WRITERS)
    yield writer_workload(big, "parquet_threads", THREADED_WRITERS)
    for case in [cases[-1], big]:
        yield writer_workload(case, "parquet_bloom", BLOOM_WRITERS)
    for case in [cases[-1], big]:
        yield writer_workload(case, "parquet_cdc", CDC_WRITERS, _shared_after_insert)
    for case in [*cases, big]:
        yield reader_workload(case)
