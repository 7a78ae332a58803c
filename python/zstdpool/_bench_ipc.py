"""Arrow IPC and threading workloads for ``python -m zstdpool bench`` (see :mod:`zstdpool._bench`).

Three groups, every contender writing or reading zstd at level 1 (pyarrow's default) where
the library lets one choose (polars and arro3-io do not take a level; their "bytes" column
shows what they wrote):

- ``writer``: the arrow-go benchmark shape. ``writer_per_table`` opens a new stream writer for
  every table (schema + one batch + end of stream per call); ``one_writer`` keeps one writer
  open and each call writes one more table into it (its sink, a ``BytesIO``, is rewound every
  few MiB so that memory stays flat).
- ``reader``: a whole stream written by pyarrow (zstd, default ``IpcWriteOptions``), read into
  a table.
- ``threads``: zstdpool's ``threads=`` on one big table, and per-table writes from several
  Python threads (pre-started, released by a barrier each call) against python-zstandard and
  a shared backports.zstd compressor on the same column buffers.

The inputs (:func:`int32_table`, :func:`lineitem_table`, :func:`small_batches_table`) are
deterministic (numpy, seed 0) and cached; the contenders are lists of :class:`IpcImpl` that
``benchmarks/test_ipc.py`` reuses. Without numpy these workloads are not listed.
"""

from __future__ import annotations

import functools
import io
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zstdpool._bench import (
    Contender,
    Profile,
    Timed,
    Unavailable,
    Workload,
    reference_decompress,
    register_source,
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
# Input tables

INT32_DESCRIPTION = "one int32 column: np.arange(n) * 3 + noise in [0, 4) (numpy seed 0)"
LINEITEM_DESCRIPTION = (
    "a TPC-H lineitem-like table of 16 columns (int64 keys, int32 linenumber, decimal128(15,2) "
    "quantity/extendedprice/discount/tax, 1-char flags, 3 date32, low-cardinality "
    "shipinstruct/shipmode, 10-40 char comments; numpy seed 0)"
)
SMALL_BATCHES_DESCRIPTION = "int32 id (np.arange * 3 + noise) + a string column of short words"


@functools.lru_cache(maxsize=8)
def int32_table(rows: int) -> pa.Table:
    """One int32 column ``value`` of sequential values with a little noise: ``3 i + [0, 4)``."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    values = np.arange(rows, dtype=np.int32) * 3 + rng.integers(0, 4, rows, dtype=np.int32)
    return pa.table({"value": values})


_WORDS = (
    "carefully final deposits furiously ironic packages requests regular accounts blithely "
    "express pending slyly quickly bold special theodolites instructions foxes unusual even "
    "asymptotes dependencies platelets pinto beans sleep haggle nag wake cajole are about above "
    "according to the among along across after against fluffily silent idle daring quiet"
).split()
_SHIPINSTRUCT = ("DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN")
_SHIPMODE = ("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB")
_DAY_1992 = 8035  # 1992-01-01 in days since the epoch
_DAY_CURRENT = 9298  # 1995-06-17, TPC-H's "current date" for the flags


def _decimal(cents: Any) -> pa.Array:
    """A decimal128(15, 2) array from int64 hundredths (non-negative)."""
    import numpy as np
    import pyarrow as pa

    words = np.zeros((len(cents), 2), dtype="<i8")
    words[:, 0] = cents
    return pa.Array.from_buffers(pa.decimal128(15, 2), len(cents), [None, pa.py_buffer(words)])


def _pick(choices: Sequence[str], index: Any) -> pa.Array:
    import pyarrow as pa

    return pa.array(list(choices), pa.string()).take(pa.array(index))


def _comments(rng: Any, rows: int) -> pa.Array:
    """10-40 character slices of a long text of lineitem-comment words, built vectorized."""
    import numpy as np
    import pyarrow as pa

    text = " ".join(np.array(_WORDS)[rng.integers(0, len(_WORDS), 100_000)].tolist()).encode()
    pool = np.frombuffer(text, dtype=np.uint8)
    lengths = rng.integers(10, 41, rows)
    offsets = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    starts = rng.integers(0, len(pool) - 41, rows)
    index = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
    data = pool[index]
    return pa.StringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(data))


@functools.lru_cache(maxsize=4)
def lineitem_table(rows: int) -> pa.Table:
    """A TPC-H lineitem-shaped table of ``rows`` rows, deterministic (numpy seed 0)."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    # Orders of 1-7 lines, with sparse keys as in TPC-H (8 keys used out of every 32).
    sizes = rng.integers(1, 8, rows)
    order = np.repeat(np.arange(rows), sizes)[:rows]
    first = np.flatnonzero(np.r_[True, order[1:] != order[:-1]])
    linenumber = np.arange(rows) - np.repeat(first, np.diff(np.r_[first, rows])) + 1
    orderkey = (order // 8) * 32 + order % 8 + 1
    partkey = rng.integers(1, 200_001, rows)
    suppkey = (partkey + rng.integers(0, 4, rows) * 2_500) % 10_000 + 1
    quantity = rng.integers(1, 51, rows)
    retail_cents = 90_000 + (partkey // 10) % 20_001 + 100 * (partkey % 1_000)
    orderdate = (_DAY_1992 + rng.integers(0, 2_406, rows))[order]  # one date per order
    shipdate = orderdate + rng.integers(1, 122, rows)
    commitdate = orderdate + rng.integers(30, 91, rows)
    receiptdate = shipdate + rng.integers(1, 31, rows)
    returned = np.where(rng.random(rows) < 0.5, 0, 1)  # R or A once received
    returnflag = np.where(receiptdate <= _DAY_CURRENT, returned, 2)
    linestatus = np.where(shipdate > _DAY_CURRENT, 0, 1)
    return pa.table(
        {
            "l_orderkey": orderkey.astype(np.int64),
            "l_partkey": partkey.astype(np.int64),
            "l_suppkey": suppkey.astype(np.int64),
            "l_linenumber": linenumber.astype(np.int32),
            "l_quantity": _decimal(quantity * 100),
            "l_extendedprice": _decimal(quantity * retail_cents),
            "l_discount": _decimal(rng.integers(0, 11, rows)),
            "l_tax": _decimal(rng.integers(0, 9, rows)),
            "l_returnflag": _pick("RAN", returnflag),
            "l_linestatus": _pick("OF", linestatus),
            "l_shipdate": pa.array(shipdate.astype(np.int32)).cast(pa.date32()),
            "l_commitdate": pa.array(commitdate.astype(np.int32)).cast(pa.date32()),
            "l_receiptdate": pa.array(receiptdate.astype(np.int32)).cast(pa.date32()),
            "l_shipinstruct": _pick(_SHIPINSTRUCT, rng.integers(0, 4, rows)),
            "l_shipmode": _pick(_SHIPMODE, rng.integers(0, 7, rows)),
            "l_comment": _comments(rng, rows),
        }
    )


@functools.lru_cache(maxsize=4)
def small_batches_table(rows: int) -> pa.Table:
    """``id`` int32 (``3 i + [0, 4)``) and ``word`` (short words from a small vocabulary)."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    ids = np.arange(rows, dtype=np.int32) * 3 + rng.integers(0, 4, rows, dtype=np.int32)
    return pa.table({"id": ids, "word": _pick(_WORDS, rng.integers(0, len(_WORDS), rows))})


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


def _as_pybytes(out: object) -> bytes:
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

    check_read(expected, pa.ipc.open_stream(_as_pybytes(out)).read_all())


def _written_bytes(out: object) -> dict[str, float]:
    return {"bytes": len(_as_pybytes(out))}


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

    @property
    def id(self) -> str:
        """A name fit for a pytest id."""
        return self.label.replace(" ", "-").replace("=", "").replace("(", "").replace(")", "")


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


def _pyarrow_per_table(use_threads: bool) -> Callable[[ExitStack, pa.Table], Timed]:
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
    IpcImpl("pyarrow", _pyarrow_per_table(True), ("pyarrow",)),
    IpcImpl("pyarrow use_threads=False", _pyarrow_per_table(False), ("pyarrow",)),
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


# threads: zstdpool's threads= on one big table.


def _zstdpool_write_threads(threads: int | None) -> Callable[[ExitStack, pa.Table], Timed]:
    def bind(stack: ExitStack, table: pa.Table) -> Timed:
        from zstdpool import ipc

        return functools.partial(ipc.write_stream, table, threads=threads)

    return bind


# threads: per-table work from T Python threads.


class Gang:
    """T threads started once; each call runs every job once, each on its own thread.

    A call releases the threads through a barrier and waits for all of them at a second
    one, so no thread is started or pooled per call. Returns the jobs' results in order.
    """

    TIMEOUT = 300.0

    def __init__(self, jobs: Sequence[Callable[[], object]]) -> None:
        self._jobs = list(jobs)
        self._results: list[object] = [None] * len(self._jobs)
        self._errors: list[BaseException | None] = [None] * len(self._jobs)
        self._go = threading.Barrier(len(self._jobs) + 1)
        self._done = threading.Barrier(len(self._jobs) + 1)
        self._stop = False
        self._threads = [
            threading.Thread(target=self._run, args=(i,), name=f"bench-gang-{i}", daemon=True)
            for i in range(len(self._jobs))
        ]
        for thread in self._threads:
            thread.start()

    def _run(self, i: int) -> None:
        try:
            while True:
                self._go.wait()
                if self._stop:
                    return
                try:
                    self._results[i] = self._jobs[i]()
                except BaseException as e:  # reported by __call__
                    self._errors[i] = e
                self._done.wait()
        except threading.BrokenBarrierError:
            return

    def __call__(self) -> list[object]:
        self._go.wait(self.TIMEOUT)
        self._done.wait(self.TIMEOUT)
        for i, error in enumerate(self._errors):
            if error is not None:
                self._errors[i] = None
                raise error
        return list(self._results)

    def close(self) -> None:
        """Stops the threads."""
        self._stop = True
        try:
            self._go.wait(self.TIMEOUT)
        except threading.BrokenBarrierError:
            pass
        self._go.abort()
        self._done.abort()
        for thread in self._threads:
            thread.join(self.TIMEOUT)


def _split(count: int, parts: int) -> list[int]:
    """``count`` items shared by ``parts`` workers, as evenly as possible."""
    return [count // parts + (i < count % parts) for i in range(parts)]


def _ganged(stack: ExitStack, jobs: Sequence[Callable[[], list[object]]]) -> Timed:
    gang = Gang(jobs)
    stack.callback(gang.close)

    def call() -> list[object]:
        return [item for part in gang() for item in part]  # type: ignore[attr-defined]

    return call


def table_buffers(table: pa.Table) -> list[pa.Buffer]:
    """The non-null buffers of every column chunk of ``table``, in order."""
    return [
        buf
        for column in table.columns
        for chunk in column.chunks
        for buf in chunk.buffers()
        if buf is not None
    ]


ThreadedBind = Callable[[ExitStack, "pa.Table", int, int], Timed]


def _zstdpool_tables(inner: int | None) -> ThreadedBind:
    """write_stream per table; ``inner`` is its own threads= (None: the default)."""

    def bind(stack: ExitStack, table: pa.Table, count: int, threads: int) -> Timed:
        from zstdpool import ipc

        write = functools.partial(ipc.write_stream, threads=inner)

        def job(n: int) -> Callable[[], list[object]]:
            return lambda: [write(table) for _ in range(n)]

        return _ganged(stack, [job(n) for n in _split(count, threads)])

    return bind


def _zstandard_tables(stack: ExitStack, table: pa.Table, count: int, threads: int) -> Timed:
    import zstandard

    buffers = table_buffers(table)

    def job(n: int) -> Callable[[], list[object]]:
        compress = zstandard.ZstdCompressor(level=LEVEL).compress  # one per thread
        return lambda: [compress(b) for _ in range(n) for b in buffers]

    return _ganged(stack, [job(n) for n in _split(count, threads)])


def _backports_tables(stack: ExitStack, table: pa.Table, count: int, threads: int) -> Timed:
    from backports import zstd

    buffers = table_buffers(table)
    shared = zstd.ZstdCompressor(LEVEL)  # one for all threads: they take turns at its lock
    # FLUSH_FRAME ends the frame; the next call starts a new one.
    compress = functools.partial(shared.compress, mode=zstd.ZstdCompressor.FLUSH_FRAME)

    def job(n: int) -> Callable[[], list[object]]:
        return lambda: [compress(b) for _ in range(n) for b in buffers]

    return _ganged(stack, [job(n) for n in _split(count, threads)])


def check_stream_list(expected: pa.Table, count: int, out: Sequence[object]) -> None:
    """``count`` streams, each read back by pyarrow as ``expected``."""
    if len(out) != count:
        raise AssertionError(f"{len(out)} streams for {count} tables")
    for stream in out:
        check_written(expected, stream)


def check_frame_list(expected: pa.Table, count: int, out: Sequence[object]) -> None:
    """One zstd frame per buffer of each of ``count`` copies of ``expected``, in order."""
    buffers = [b.to_pybytes() for b in table_buffers(expected)] * count
    if len(out) != len(buffers):
        raise AssertionError(f"{len(out)} frames for {len(buffers)} buffers")
    for frame, data in zip(out, buffers, strict=True):
        if reference_decompress(bytes(frame)) != data:  # type: ignore[call-overload]
            raise AssertionError("a frame does not decompress to its buffer")


def _frames_bytes(out: Sequence[object]) -> dict[str, float]:
    return {"bytes": sum(len(_as_pybytes(x)) for x in out)}


# --------------------------------------------------------------------------------------------
# Workloads


def _bind(impl: IpcImpl, make_input: Callable[[], Any]) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        return impl.bind(stack, make_input())

    return setup


def _writer_contenders(impls: Sequence[IpcImpl], case: TableCase) -> tuple[Contender, ...]:
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
        contenders=_writer_contenders(PER_TABLE_WRITERS, case),
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
        contenders=_writer_contenders(ONE_WRITERS, case),
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


#: zstdpool's threads= against pyarrow on one big table; the first is the baseline.
THREADS_WRITERS: tuple[IpcImpl, ...] = (
    IpcImpl("zstdpool write_stream", _zstdpool_write_threads(None)),
    IpcImpl("pyarrow", _pyarrow_per_table(True), ("pyarrow",)),
    IpcImpl("zstdpool threads=1", _zstdpool_write_threads(1)),
    IpcImpl("zstdpool threads=2", _zstdpool_write_threads(2)),
)


def threads_big_workloads(case: TableCase) -> Iterator[Workload]:
    """zstdpool's default threads vs pyarrow on a big table, and threads=2 vs threads=1."""
    common = (
        f"Write one table as a stream to bytes, zstd level 1; threads= compresses the "
        f"batch's buffers on that many threads (default: one per CPU). Table: "
        f"{case.description}."
    )
    yield Workload(
        name=f"threads write {case.name}",
        group="threads",
        description=common,
        contenders=_writer_contenders(THREADS_WRITERS, case),
        nbytes=case.table().nbytes,
    )
    yield Workload(
        name=f"threads=2 vs 1 write {case.name}",
        group="threads",
        description=common + " Ratio: threads=1 time / threads=2 time.",
        contenders=_writer_contenders((THREADS_WRITERS[3], THREADS_WRITERS[2]), case),
        nbytes=case.table().nbytes,
    )


#: Per-table work split across Python threads: (label, bind, check, requires).
THREADED: tuple[tuple[str, ThreadedBind, Callable[..., None], tuple[str, ...]], ...] = (
    ("zstdpool write_stream", _zstdpool_tables(None), check_stream_list, ()),
    ("zstdpool write_stream threads=1", _zstdpool_tables(1), check_stream_list, ()),
    ("zstandard per-thread", _zstandard_tables, check_frame_list, ("zstandard",)),
    ("backports.zstd shared", _backports_tables, check_frame_list, ("backports.zstd",)),
)


def python_threads_workload(
    count: int, rows: int, threads: int = 2, *, single: bool = True
) -> Workload:
    """``count`` tables written per call, split over ``threads`` Python threads (and over 1).

    With ``single`` each library runs both ways, interleaved, so the ratio of its 1-thread row
    to its ``threads`` row is the throughput gained. Without, only the ``threads`` contenders
    run: no single-threaded call leaves a CPU idle between two multi-threaded ones.
    """
    case = TableCase("int32", rows)

    def setup(bind: ThreadedBind, t: int) -> Callable[[ExitStack], Timed]:
        return lambda stack: bind(stack, case.table(), count, t)

    def checker(check: Callable[..., None]) -> Callable[[Any], None]:
        return lambda out: check(case.table(), count, out)

    contenders = [
        Contender(
            f"{label}, {t} Py thread{'s' if t > 1 else ''}",
            setup(bind, t),
            check=checker(check),
            extra=_frames_bytes,
            requires=requires,
        )
        for label, bind, check, requires in THREADED
        for t in ((threads, 1) if single else (threads,))
    ]
    what = (
        f"{count} tables ({case.description}, {rows} rows) per call, split over {threads} "
        f"pre-started Python threads{' or 1' if single else ''}: zstdpool.ipc.write_stream per "
        f"table (with its default threads=, or threads=1: compress on the calling thread), or "
        f"each table's column buffers compressed at level 1 by python-zstandard (a compressor "
        f"per thread) or by one shared backports.zstd compressor (FLUSH_FRAME)."
    )
    if single:
        name = f"{threads} Python threads {count}x {case.name}"
        what += (
            f" Throughput of {threads} threads over 1: the ratio of a library's 1-thread row "
            f"over its {threads}-thread row."
        )
    else:
        name = f"{threads} Python threads only {count}x {case.name}"
        what += f" Only {threads}-thread contenders, so that no CPU idles between calls."
    return Workload(
        name=name,
        group="threads",
        description=what,
        contenders=tuple(contenders),
        nbytes=count * case.table().nbytes,
        settle=single,
    )


@register_source
def ipc_workloads(profile: Profile) -> Iterator[Workload]:
    """The writer, reader and threads workloads (none without numpy)."""
    try:
        import numpy  # noqa: F401
    except ImportError:
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
    big = TableCase("lineitem", sizes.big_rows)
    yield reader_workload(big)
    yield from threads_big_workloads(big)
    yield python_threads_workload(sizes.thread_tables, sizes.thread_table_rows)
    yield python_threads_workload(sizes.thread_tables, sizes.thread_table_rows, single=False)
