"""The Feather workloads of ``python -m benchmarks``: the ``feather`` group.

pandas in, pandas out, as ``DataFrame.to_feather`` and ``pd.read_feather`` do it: a write
converts a DataFrame and writes a Feather file to memory, a read turns a Feather file (written
by pyarrow) back into a DataFrame. zstdpool and pyarrow both write zstd at level 1; pyarrow's
own default, lz4, is shown beside them. The conversion between pandas and Arrow, the same in
both libraries, is timed alone as a floor: on lineitem (decimal columns become Python
``Decimal`` objects) it is nearly all of the time. ``feather_table_writer`` and
``feather_table_reader`` therefore also time pyarrow tables in and out, where the IPC work
shows.
"""

from __future__ import annotations

import functools
import io
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from benchmarks.harness.data import have_numpy
from benchmarks.harness.ipc import TableCase, ipc_sizes
from benchmarks.harness.runner import Contender, Profile, Timed, Workload, register_source

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

#: zstd level of every zstd contender.
LEVEL = 1


@functools.lru_cache(maxsize=2)
def _frame(case: TableCase) -> pd.DataFrame:
    return case.table().to_pandas()


@functools.lru_cache(maxsize=2)
def _pyarrow_file(case: TableCase) -> bytes:
    import pyarrow.feather

    sink = io.BytesIO()
    pyarrow.feather.write_feather(_frame(case), sink, compression="zstd", compression_level=LEVEL)
    return sink.getvalue()


def _frame_table(case: TableCase) -> pa.Table:
    """The DataFrame as pyarrow converts it (with its pandas metadata)."""
    import pyarrow as pa

    return pa.Table.from_pandas(_frame(case), preserve_index=None)


def _check_written(case: TableCase, codec: str, pandas: bool, out: io.BytesIO) -> None:
    import pyarrow as pa
    import pyarrow.feather
    from zstdpool._zstdpool import inspect_ipc

    data = out.getvalue()
    if inspect_ipc(data)["codecs"] != [codec]:
        raise AssertionError(f"the file is not {codec}-compressed")
    expected = _frame_table(case) if pandas else case.table()
    if not pyarrow.feather.read_table(pa.py_buffer(data)).equals(expected):
        raise AssertionError("the file read back differs from the input written")


def _check_read(case: TableCase, pandas: bool, got: Any) -> None:
    expected = _frame(case) if pandas else _frame_table(case)
    if not got.equals(expected):
        raise AssertionError("what was read differs from what was written")


def _bytes(out: io.BytesIO) -> dict[str, float]:
    return {"bytes": len(out.getvalue())}


def _write(module: str, compression: str, pandas: bool) -> Any:
    """The setup of a `module.write_feather` of the case's DataFrame (or its pyarrow Table)."""

    def setup(case: TableCase, stack: ExitStack) -> Timed:
        import importlib

        feather = importlib.import_module(module)
        data = _frame(case) if pandas else case.table()
        level = LEVEL if compression == "zstd" else None

        def call() -> io.BytesIO:
            sink = io.BytesIO()
            feather.write_feather(data, sink, compression=compression, compression_level=level)
            return sink

        return call

    return setup


def _read(module: str, function: str) -> Any:
    """The setup of `module.<function>` (read_feather or read_table) of pyarrow's file."""

    def setup(case: TableCase, stack: ExitStack) -> Timed:
        import importlib

        import pyarrow as pa

        read = getattr(importlib.import_module(module), function)
        return functools.partial(read, pa.py_buffer(_pyarrow_file(case)))

    return setup


def _pandas_to_arrow(case: TableCase, stack: ExitStack) -> Timed:
    import pyarrow as pa

    return functools.partial(pa.Table.from_pandas, _frame(case), preserve_index=None)


def _check_converted(case: TableCase, got: Any) -> None:
    expected = case.table()
    if got.num_rows != expected.num_rows or got.column_names != expected.column_names:
        raise AssertionError("the conversion lost rows or columns")


def _arrow_to_pandas(case: TableCase, stack: ExitStack) -> Timed:
    import pyarrow as pa
    import pyarrow.feather

    table = pyarrow.feather.read_table(pa.py_buffer(_pyarrow_file(case)))
    convert: Timed = table.to_pandas
    return convert


WRITERS = (
    ("zstdpool write_feather", "zstdpool.feather", "zstd"),
    ("pyarrow", "pyarrow.feather", "zstd"),
    ("pyarrow lz4 (its default)", "pyarrow.feather", "lz4"),
)


def _workloads(case: TableCase) -> Iterator[Workload]:
    for pandas in (True, False):
        kind, table = ("pandas DataFrame", "") if pandas else ("pyarrow Table", "table_")
        requires = ("pandas",) if pandas else ()
        write_floor = (
            Contender(
                "pandas to Arrow alone (floor)",
                functools.partial(_pandas_to_arrow, case),
                check=functools.partial(_check_converted, case),
                requires=requires,
            ),
        )
        yield Workload(
            name=f"feather_{table}writer {case.name}",
            group=f"feather_{table}writer",
            description=(
                f"Write a {kind} as a Feather file in memory (write_feather, 64K-row batches), "
                f"zstd level 1 unless named. Table: {case.description}. Bytes: the file."
            ),
            contenders=tuple(
                Contender(
                    label,
                    functools.partial(_write(module, codec, pandas), case),
                    check=functools.partial(_check_written, case, codec, pandas),
                    extra=_bytes,
                    requires=requires,
                )
                for label, module, codec in WRITERS
            )
            + (write_floor if pandas else ()),
            nbytes=case.table().nbytes,
        )
        function = "read_feather" if pandas else "read_table"
        read_floor = (
            Contender(
                "Arrow to pandas alone (floor)",
                functools.partial(_arrow_to_pandas, case),
                check=functools.partial(_check_read, case, True),
                requires=requires,
            ),
        )
        yield Workload(
            name=f"feather_{table}reader {case.name}",
            group=f"feather_{table}reader",
            description=(
                f"Read a Feather file written by pyarrow from pandas (zstd level 1) into a {kind} "
                f"({function}). Table: {case.description}."
            ),
            contenders=tuple(
                Contender(
                    label,
                    functools.partial(_read(module, function), case),
                    check=functools.partial(_check_read, case, pandas),
                    requires=requires,
                )
                for label, module in (
                    (f"zstdpool {function}", "zstdpool.feather"),
                    ("pyarrow", "pyarrow.feather"),
                )
            )
            + (read_floor if pandas else ()),
            nbytes=case.table().nbytes,
        )


@register_source
def feather_workloads(profile: Profile) -> Iterator[Workload]:
    """The Feather writer and reader workloads on lineitem (none without numpy)."""
    if not have_numpy():
        print(
            "note: the Feather workloads need numpy: pip install 'zstdpool[bench]'", file=sys.stderr
        )
        return
    sizes = ipc_sizes(profile)
    for rows in (sizes.lineitem_rows, sizes.big_rows):
        yield from _workloads(TableCase("lineitem", rows))
