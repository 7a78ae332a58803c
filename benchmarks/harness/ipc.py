"""The Arrow IPC workloads of ``python -m benchmarks``: the ``writer`` and ``reader`` groups.

Every contender writes or reads zstd at level 1 (pyarrow's default) where the library lets
one choose (polars and arro3-io do not take a level; their "bytes" column shows what they
wrote):

- ``writer``: the arrow-go benchmark shape. ``writer_per_table`` opens a new stream writer for
  every table (schema + one batch + end of stream per call); ``one_writer`` keeps one writer
  open and each call writes one more table into it (its sink, a ``BytesIO``, is rewound every
  few MiB so that memory stays flat).
- ``reader``: a whole stream written by pyarrow (zstd, default ``IpcWriteOptions``), read into
  a table.

The ``threads`` group is in :mod:`benchmarks.harness.threads`. The inputs are the tables of
:mod:`benchmarks.harness.data`, named by a :class:`TableCase`. Without numpy these workloads are
not listed.
"""

from __future__ import annotations

import functools
import io
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchmarks.harness.data import (
    INT32_DESCRIPTION,
    LINEITEM_DESCRIPTION,
    SMALL_BATCHES_DESCRIPTION,
    have_numpy,
    int32_table,
    lineitem_table,
    small_batches_table,
)
from benchmarks.harness.runner import (
    Contender,
    Profile,
    Timed,
    Unavailable,
    Workload,
    register_source,
    require_version,
)

if TYPE_CHECKING:
    import pyarrow as pa

#: zstd level of every contender that takes one (pyarrow's default, and zstdpool's).
LEVEL = 1
#: ``one_writer`` rewinds its BytesIO sink once it holds more than this.
ONE_WRITER_REWIND = 4 << 20

# --------------------------------------------------------------------------------------------
# Sizes per profile


@dataclass(frozen=True)
class IpcSizes:
    """Input sizes of the IPC workloads under one profile."""

    #: Rows of the int32 tables of the writer group.
    int32_rows: tuple[int, ...]
    #: Rows of the lineitem table of the writer group and the small reader case.
    lineitem_rows: int
    #: (batches, rows per batch) of the many-small-batches reader case.
    small_batches: tuple[int, int]
    #: Rows of the big lineitem table (reader and threads groups).
    big_rows: int
    #: Tables written per call by the Python-threads workload, and their rows.
    thread_tables: int
    thread_table_rows: int = 4096


IPC_SIZES: dict[str, IpcSizes] = {
    "tiny": IpcSizes((256, 4096), 1_000, (20, 256), 2_000, 8),
    "quick": IpcSizes((256, 4096, 65536), 10_000, (1000, 256), 200_000, 200),
    "full": IpcSizes((256, 4096, 65536, 1 << 20), 10_000, (1000, 256), 1_000_000, 1000),
}


def ipc_sizes(profile: Profile) -> IpcSizes:
    """The sizes for ``profile`` (by name; an unknown profile gets the quick sizes)."""
    return IPC_SIZES.get(profile.name, IPC_SIZES["quick"])


# --------------------------------------------------------------------------------------------
# Inputs


@dataclass(frozen=True)
class TableCase:
    """A named input: ``kind`` ("int32", "lineitem" or "small_batches") and its rows.

    ``batch_rows`` is the rows per record batch when pyarrow writes it as a stream (None:
    the table as built, one batch).
    """

    kind: str
    rows: int
    batch_rows: int | None = None

    @property
    def name(self) -> str:
        if self.batch_rows:
            return f"{self.rows // self.batch_rows}x{self.batch_rows}-row batches"
        return f"{self.kind} {self.rows} rows"

    @property
    def description(self) -> str:
        return {
            "int32": INT32_DESCRIPTION,
            "lineitem": LINEITEM_DESCRIPTION,
            "small_batches": SMALL_BATCHES_DESCRIPTION,
        }[self.kind]

    def table(self) -> pa.Table:
        """The input table (cached)."""
        build = {
            "int32": int32_table,
            "lineitem": lineitem_table,
            "small_batches": small_batches_table,
        }[self.kind]
        return build(self.rows)

    def pyarrow_stream(self) -> bytes:
        """The table as an IPC stream written by pyarrow (zstd, default options; cached)."""
        return _pyarrow_stream(self)


@functools.lru_cache(maxsize=4)
def _pyarrow_stream(case: TableCase) -> bytes:
    import pyarrow as pa

    table = case.table()
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table, max_chunksize=case.batch_rows)
    data: bytes = sink.getvalue().to_pybytes()
    return data


# --------------------------------------------------------------------------------------------
# Checks


def as_pybytes(out: object) -> bytes:
    """The bytes of a writer's result: bytes, a pyarrow Buffer or a BytesIO."""
    if isinstance(out, io.BytesIO):
        return out.getvalue()
    if isinstance(out, bytes):
        return out
    return bytes(memoryview(out))  # type: ignore[arg-type]


_STRINGS = ("string", "large_string", "string_view")


def _as_expected(expected: pa.Table, got: object) -> pa.Table:
    """``got`` (pyarrow, polars or arro3) as a pyarrow table with the expected string types.

    polars reads and writes strings as string_view or large_string; those (and only those)
    are cast back to the input's types before comparing.
    """
    import pyarrow as pa

    if not isinstance(got, pa.Table):
        to_arrow = getattr(got, "to_arrow", None)
        got = to_arrow() if callable(to_arrow) else pa.table(got)
    assert isinstance(got, pa.Table)
    if got.schema.names != expected.schema.names:
        raise AssertionError(f"columns {got.schema.names} != {expected.schema.names}")
    if got.schema.equals(expected.schema):
        return got
    for want, have in zip(expected.schema, got.schema, strict=True):
        same = want.type == have.type
        strings = str(want.type) in _STRINGS and str(have.type) in _STRINGS
        if not (same or strings):
            raise AssertionError(f"column {want.name}: {have.type} instead of {want.type}")
    return got.cast(expected.schema)


def check_read(expected: pa.Table, got: object) -> None:
    """Raises AssertionError unless ``got`` holds the rows of ``expected``."""
    table = _as_expected(expected, got)
    if table.num_rows != expected.num_rows or not table.equals(expected):
        raise AssertionError("the table read differs from the one written")


def check_written(expected: pa.Table, out: object) -> None:
    """Raises AssertionError unless pyarrow reads ``out`` (an IPC stream) back as ``expected``."""
    import pyarrow as pa

    check_read(expected, pa.ipc.open_stream(as_pybytes(out)).read_all())


def _written_bytes(out: object) -> dict[str, float]:
    return {"bytes": len(as_pybytes(out))}


# --------------------------------------------------------------------------------------------
# Contenders


@dataclass(frozen=True)
class IpcImpl:
    """One library's way to do an IPC operation; ``bind(stack, input)`` returns the timed call.

    The input is a pyarrow table for writers, the bytes of a stream for readers.
    """

    label: str
    bind: Callable[[ExitStack, Any], Timed]
    requires: tuple[str, ...] = ()


def _pyarrow_options(use_threads: bool = True) -> Any:
    import pyarrow as pa

    if use_threads:
        return pa.ipc.IpcWriteOptions(compression="zstd")
    return pa.ipc.IpcWriteOptions(compression="zstd", use_threads=False)


# writer_per_table: one call writes a whole stream (schema, one table, end of stream).


def _zstdpool_per_table(stack: ExitStack, table: pa.Table) -> Timed:
    from zstdpool import ipc

    schema = table.schema

    def call() -> bytes:
        sink = io.BytesIO()
        with ipc.new_stream(sink, schema) as writer:
            writer.write(table)
        return sink.getvalue()

    return call


def _zstdpool_write_stream(stack: ExitStack, table: pa.Table) -> Timed:
    from zstdpool import ipc

    return functools.partial(ipc.write_stream, table)


def pyarrow_per_table(use_threads: bool) -> Callable[[ExitStack, pa.Table], Timed]:
    def bind(stack: ExitStack, table: pa.Table) -> Timed:
        import pyarrow as pa

        schema, options = table.schema, _pyarrow_options(use_threads)

        def call() -> pa.Buffer:
            # pyarrow's own in-memory sink: no Python calls per write, zero-copy result.
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, schema, options=options) as writer:
                writer.write_table(table)
            return sink.getvalue()

        return call

    return bind


def _polars_per_table(stack: ExitStack, table: pa.Table) -> Timed:
    import polars as pl

    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)

    def call() -> bytes:
        sink = io.BytesIO()
        frame.write_ipc_stream(sink, compression="zstd")
        return sink.getvalue()

    return call


def _arro3_per_table(stack: ExitStack, table: pa.Table) -> Timed:
    from arro3.core import Table
    from arro3.io import write_ipc_stream

    data = Table.from_arrow(table)

    def call() -> bytes:
        sink = io.BytesIO()
        write_ipc_stream(data, sink, compression="zstd")
        return sink.getvalue()

    return call


#: Ways to write one table as a whole stream; the first is the baseline.
PER_TABLE_WRITERS: tuple[IpcImpl, ...] = (
    IpcImpl("zstdpool new_stream", _zstdpool_per_table),
    IpcImpl("zstdpool write_stream", _zstdpool_write_stream),
    IpcImpl("pyarrow", pyarrow_per_table(True), ("pyarrow",)),
    IpcImpl("pyarrow use_threads=False", pyarrow_per_table(False), ("pyarrow",)),
    IpcImpl("polars", _polars_per_table, ("polars",)),
    IpcImpl("arro3-io", _arro3_per_table, ("arro3.io",)),
)


# one_writer: one writer opened in setup; a call writes one table (one batch) into it.


def _rewinding(write: Callable[[pa.Table], object], table: pa.Table, sink: io.BytesIO) -> Timed:
    def call() -> io.BytesIO:
        write(table)
        if sink.tell() > ONE_WRITER_REWIND:
            sink.seek(0)  # overwrite from the start: no reallocation, no growth
        return sink

    return call


def _zstdpool_one_writer(stack: ExitStack, table: pa.Table) -> Timed:
    from zstdpool import ipc

    sink = io.BytesIO()
    writer = stack.enter_context(ipc.new_stream(sink, table.schema))
    return _rewinding(writer.write, table, sink)


def _pyarrow_one_writer(use_threads: bool) -> Callable[[ExitStack, pa.Table], Timed]:
    def bind(stack: ExitStack, table: pa.Table) -> Timed:
        import pyarrow as pa

        sink = io.BytesIO()
        options = _pyarrow_options(use_threads)
        writer = stack.enter_context(pa.ipc.new_stream(sink, table.schema, options=options))
        return _rewinding(writer.write_table, table, sink)

    return bind


def _no_long_lived_writer(library: str, call: str) -> Callable[[ExitStack, pa.Table], Timed]:
    def bind(stack: ExitStack, table: pa.Table) -> Timed:
        raise Unavailable(f"{library} has no long-lived IPC stream writer ({call} writes a stream)")

    return bind


#: Ways to write one table into a long-lived stream writer; the first is the baseline.
ONE_WRITERS: tuple[IpcImpl, ...] = (
    IpcImpl("zstdpool new_stream", _zstdpool_one_writer),
    IpcImpl("pyarrow", _pyarrow_one_writer(True), ("pyarrow",)),
    IpcImpl("pyarrow use_threads=False", _pyarrow_one_writer(False), ("pyarrow",)),
    IpcImpl("polars", _no_long_lived_writer("polars", "write_ipc_stream"), ("polars",)),
    IpcImpl("arro3-io", _no_long_lived_writer("arro3-io", "write_ipc_stream"), ("arro3.io",)),
)


# reader: one call reads a whole stream (bytes) into a table.


def _zstdpool_read(stack: ExitStack, data: bytes) -> Timed:
    from zstdpool import ipc

    return functools.partial(ipc.read_stream, data)


def _pyarrow_read(stack: ExitStack, data: bytes) -> Timed:
    import pyarrow as pa

    def call() -> pa.Table:
        return pa.ipc.open_stream(data).read_all()

    return call


def _polars_read(stack: ExitStack, data: bytes) -> Timed:
    import polars as pl

    def call() -> pl.DataFrame:
        return pl.read_ipc_stream(io.BytesIO(data))

    return call


def _arro3_read(stack: ExitStack, data: bytes) -> Timed:
    from arro3.io import read_ipc_stream

    require_version("arro3-io", (0, 9), "reads IPC streams from files only, not bytes")

    def call() -> object:
        return read_ipc_stream(data).read_all()  # an arro3 Table: every batch decoded

    return call


#: Ways to read a whole stream into a table; the first is the baseline.
READERS: tuple[IpcImpl, ...] = (
    IpcImpl("zstdpool read_stream", _zstdpool_read),
    IpcImpl("pyarrow", _pyarrow_read, ("pyarrow",)),
    IpcImpl("polars", _polars_read, ("polars",)),
    IpcImpl("arro3-io", _arro3_read, ("arro3.io",)),
)

# --------------------------------------------------------------------------------------------
# Workloads


def _bind(impl: IpcImpl, make_input: Callable[[], Any]) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        return impl.bind(stack, make_input())

    return setup


def writer_contenders(impls: Sequence[IpcImpl], case: TableCase) -> tuple[Contender, ...]:
    return tuple(
        Contender(
            impl.label,
            _bind(impl, case.table),
            check=lambda out: check_written(case.table(), out),
            extra=_written_bytes,
            requires=impl.requires,
        )
        for impl in impls
    )


def per_table_workload(case: TableCase) -> Workload:
    """writer_per_table: a new stream writer for every table."""
    return Workload(
        name=f"writer_per_table {case.name}",
        group="writer",
        description=(
            f"Open a stream writer on an in-memory sink, write one table, close (schema, one "
            f"batch, end of stream), zstd level 1. Table: {case.description}. Bytes: the stream."
        ),
        contenders=writer_contenders(PER_TABLE_WRITERS, case),
        nbytes=case.table().nbytes,
    )


def one_writer_workload(case: TableCase) -> Workload:
    """one_writer: one long-lived stream writer; a call writes one more table into it."""
    return Workload(
        name=f"one_writer {case.name}",
        group="writer",
        description=(
            f"Write one table (one batch) into a stream writer opened in setup, zstd level 1; "
            f"the BytesIO sink is rewound every {ONE_WRITER_REWIND >> 20} MiB. Table: "
            f"{case.description}. Bytes: schema + the first batch."
        ),
        contenders=writer_contenders(ONE_WRITERS, case),
        nbytes=case.table().nbytes,
    )


def reader_workload(case: TableCase) -> Workload:
    """reader: a whole stream written by pyarrow, read into a table."""
    return Workload(
        name=f"reader {case.name}",
        group="reader",
        description=(
            f"Read a whole IPC stream, written by pyarrow (zstd, default options), into a "
            f"table. Table: {case.description}."
        ),
        contenders=tuple(
            Contender(
                impl.label,
                _bind(impl, case.pyarrow_stream),
                check=lambda out: check_read(case.table(), out),
                requires=impl.requires,
            )
            for impl in READERS
        ),
        nbytes=case.table().nbytes,
    )


@register_source
def ipc_workloads(profile: Profile) -> Iterator[Workload]:
    """The writer and reader workloads (none without numpy)."""
    if not have_numpy():
        print(
            "note: the IPC writer, reader and threads workloads need numpy and the peers: "
            "pip install 'zstdpool[bench]'",
            file=sys.stderr,
        )
        return
    sizes = ipc_sizes(profile)
    writer_cases = [TableCase("int32", rows) for rows in sizes.int32_rows]
    writer_cases.append(TableCase("lineitem", sizes.lineitem_rows))
    for case in writer_cases:
        yield per_table_workload(case)
        yield one_writer_workload(case)
    batches, batch_rows = sizes.small_batches
    yield reader_workload(TableCase("small_batches", batches * batch_rows, batch_rows))
    yield reader_workload(TableCase("lineitem", sizes.lineitem_rows))
    yield reader_workload(TableCase("lineitem", sizes.big_rows))
