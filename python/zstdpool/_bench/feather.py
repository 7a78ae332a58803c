"""The Feather workloads of ``python -m zstdpool bench``: the ``feather`` group.

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

from zstdpool._bench.data import have_numpy
from zstdpool._bench.ipc import TableCase, ipc_sizes
from zstdpool._bench.runner import Contender, Profile, Timed, Workload, register_source

if TYPE_CHECKING:
    import pandas as pd

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


def _check_written(case: TableCase, codec: str, out: io.BytesIO) -> None:
    import pyarrow as pa
    import pyarrow.feather

    from zstdpool._zstdpool import inspect_ipc

    data = out.getvalue()
    if inspect_ipc(data)["codecs"] != [codec]:
        raise AssertionError(f"the file is not {codec}-compressed")
    if not pyarrow.feather.read_table(pa.py_buffer(data)).equals(
        pa.Table.from_pandas(_frame(case), preserve_index=None)
    ):
        raise AssertionError("the file read back differs from the DataFrame written")


def _check_read(case: TableCase, got: Any) -> None:
    if not got.equals(_frame(case)):
        raise AssertionError("the DataFrame read differs from the one written")


def _bytes(out: io.BytesIO) -> dict[str, float]:
    return {"bytes": len(out.getvalue())}


def _write(module: str, compression: str) -> Any:
    def setup(case: TableCase, stack: ExitStack) -> Timed:
        import importlib

        feather = importlib.import_module(module)
        frame = _frame(case)
        level = LEVEL if compression == "zstd" else None

        def call() -> io.BytesIO:
            sink = io.BytesIO()
            feather.write_feather(frame, sink, compression=compression, compression_level=level)
            return sink

        return call

    return setup


def _pandas_to_arrow(case: TableCase, stack: ExitStack) -> Timed:
    import pyarrow as pa

    frame = _frame(case)
    return functools.partial(pa.Table.from_pandas, frame, preserve_index=None)


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


def _write_table(module: str, compression: str) -> Any:
    def setup(case: TableCase, stack: ExitStack) -> Timed:
        import importlib

        feather = importlib.import_module(module)
        table = case.table()
        level = LEVEL if compression == "zstd" else None

        def call() -> io.BytesIO:
            sink = io.BytesIO()
            feather.write_feather(table, sink, compression=compression, compression_level=level)
            return sink

        return call

    return setup


def _read_table(module: str) -> Any:
    def setup(case: TableCase, stack: ExitStack) -> Timed:
        import importlib

        import pyarrow as pa

        feather = importlib.import_module(module)
        data = pa.py_buffer(_pyarrow_file(case))
        return functools.partial(feather.read_table, data)

    return setup


def _check_table_written(case: TableCase, codec: str, out: io.BytesIO) -> None:
    import pyarrow as pa
    import pyarrow.feather

    from zstdpool._zstdpool import inspect_ipc

    data = out.getvalue()
    if inspect_ipc(data)["codecs"] != [codec]:
        raise AssertionError(f"the file is not {codec}-compressed")
    if not pyarrow.feather.read_table(pa.py_buffer(data)).equals(case.table()):
        raise AssertionError("the file read back differs from the table written")


def _check_table_read(case: TableCase, got: Any) -> None:
    import pyarrow as pa

    expected = pa.Table.from_pandas(_frame(case), preserve_index=None)
    if not got.equals(expected):
        raise AssertionError("the table read differs from the one written")


def _read(module: str) -> Any:
    def setup(case: TableCase, stack: ExitStack) -> Timed:
        import importlib

        import pyarrow as pa

        feather = importlib.import_module(module)
        data = pa.py_buffer(_pyarrow_file(case))
        return functools.partial(feather.read_feather, data)

    return setup


def _workloads(case: TableCase) -> Iterator[Workload]:
    writers = [
        ("zstdpool write_feather", "zstdpool.feather", "zstd"),
        ("pyarrow", "pyarrow.feather", "zstd"),
        ("pyarrow lz4 (its default)", "pyarrow.feather", "lz4"),
    ]
    yield Workload(
        name=f"feather_writer {case.name}",
        group="feather_writer",
        description=(
            "Write a pandas DataFrame as a Feather file in memory (write_feather, 64K-row "
            f"batches), zstd level 1 unless named. Table: {case.description}. Bytes: the file."
        ),
        contenders=tuple(
            Contender(
                label,
                functools.partial(_write(module, codec), case),
                check=functools.partial(_check_written, case, codec),
                extra=_bytes,
                requires=("pandas",),
            )
            for label, module, codec in writers
        )
        + (
            Contender(
                "pandas to Arrow alone (floor)",
                functools.partial(_pandas_to_arrow, case),
                check=functools.partial(_check_converted, case),
                requires=("pandas",),
            ),
        ),
        nbytes=case.table().nbytes,
    )
    yield Workload(
        name=f"feather_table_writer {case.name}",
        group="feather_table_writer",
        description=(
            "Write a pyarrow Table as a Feather file in memory (write_feather, 64K-row "
            f"batches), zstd level 1 unless named. Table: {case.description}. Bytes: the file."
        ),
        contenders=tuple(
            Contender(
                label,
                functools.partial(_write_table(module, codec), case),
                check=functools.partial(_check_table_written, case, codec),
                extra=_bytes,
            )
            for label, module, codec in writers
        ),
        nbytes=case.table().nbytes,
    )
    yield Workload(
        name=f"feather_table_reader {case.name}",
        group="feather_table_reader",
        description=(
            "Read a Feather file written by pyarrow from pandas (zstd level 1) into a pyarrow "
            f"Table (read_table). Table: {case.description}."
        ),
        contenders=tuple(
            Contender(
                label,
                functools.partial(_read_table(module), case),
                check=functools.partial(_check_table_read, case),
            )
            for label, module in (
                ("zstdpool read_table", "zstdpool.feather"),
                ("pyarrow", "pyarrow.feather"),
            )
        ),
        nbytes=case.table().nbytes,
    )
    yield Workload(
        name=f"feather_reader {case.name}",
        group="feather_reader",
        description=(
            "Read a Feather file written by pyarrow (zstd level 1) into a pandas DataFrame "
            f"(read_feather). Table: {case.description}."
        ),
        contenders=tuple(
            Contender(
                label,
                functools.partial(_read(module), case),
                check=functools.partial(_check_read, case),
                requires=("pandas",),
            )
            for label, module in (
                ("zstdpool read_feather", "zstdpool.feather"),
                ("pyarrow", "pyarrow.feather"),
            )
        )
        + (
            Contender(
                "Arrow to pandas alone (floor)",
                functools.partial(_arrow_to_pandas, case),
                check=functools.partial(_check_read, case),
                requires=("pandas",),
            ),
        ),
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
