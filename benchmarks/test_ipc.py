"""Arrow IPC benchmarks (pytest-benchmark): zstdpool against its peers, grouped by input.

Benchmarking is off by default (``--benchmark-disable`` in pyproject), so a plain ``pytest``
runs each case once as a smoke test; every case still checks its result (what was written
reads back with pyarrow as the input; what was read equals the input). Measure with
``pytest benchmarks/test_ipc.py --benchmark-enable``. The inputs and the contenders are those
of ``python -m zstdpool bench`` (zstdpool._bench.ipc and .threads).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

pytest.importorskip("numpy")

from zstdpool._bench import runner as _bench  # noqa: E402
from zstdpool._bench.data import lineitem_table  # noqa: E402
from zstdpool._bench.ipc import (  # noqa: E402
    ONE_WRITERS,
    PER_TABLE_WRITERS,
    READERS,
    IpcImpl,
    TableCase,
    check_read,
    check_written,
    ipc_sizes,
)
from zstdpool._bench.runner import Timed  # noqa: E402
from zstdpool._bench.threads import (  # noqa: E402
    Gang,
    check_frame_list,
    check_stream_list,
    python_threads_workload,
    table_buffers,
)

#: Inputs of the writer tests: the int32 tables and the lineitem table of the quick profile.
QUICK = ipc_sizes(_bench.PROFILES["quick"])
WRITER_CASES = [TableCase("int32", rows) for rows in QUICK.int32_rows] + [
    TableCase("lineitem", QUICK.lineitem_rows)
]
#: Inputs of the reader tests: many small batches, and the lineitem table.
READER_CASES = [
    TableCase("small_batches", QUICK.small_batches[0] * QUICK.small_batches[1], 256),
    TableCase("lineitem", QUICK.lineitem_rows),
]


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    """Closes what a contender's setup opened (a long-lived writer)."""
    with ExitStack() as s:
        yield s


def bind(impl: IpcImpl, stack: ExitStack, arg: Any) -> Timed:
    """The timed call of ``impl``; skips the test if its library or feature is missing."""
    for module in impl.requires:
        pytest.importorskip(module)
    try:
        return impl.bind(stack, arg)
    except _bench.Unavailable as e:
        pytest.skip(str(e))


@pytest.mark.parametrize("impl", PER_TABLE_WRITERS, ids=lambda i: i.id)
@pytest.mark.parametrize("case", WRITER_CASES, ids=lambda c: c.name.replace(" ", "-"))
def test_writer_per_table(benchmark: Any, stack: ExitStack, case: TableCase, impl: IpcImpl) -> None:
    fn = bind(impl, stack, case.table())
    benchmark.group = f"writer_per_table {case.name}"
    check_written(case.table(), benchmark(fn))


@pytest.mark.parametrize("impl", ONE_WRITERS, ids=lambda i: i.id)
@pytest.mark.parametrize("case", WRITER_CASES, ids=lambda c: c.name.replace(" ", "-"))
def test_one_writer(benchmark: Any, stack: ExitStack, case: TableCase, impl: IpcImpl) -> None:
    fn = bind(impl, stack, case.table())
    # The first call leaves the schema and one batch in the sink; later calls may rewind it.
    check_written(case.table(), fn())
    benchmark.group = f"one_writer {case.name}"
    assert isinstance(benchmark(fn), io.BytesIO)


@pytest.mark.parametrize("impl", READERS, ids=lambda i: i.id)
@pytest.mark.parametrize("case", READER_CASES, ids=lambda c: c.name.replace(" ", "-"))
def test_reader(benchmark: Any, stack: ExitStack, case: TableCase, impl: IpcImpl) -> None:
    fn = bind(impl, stack, case.pyarrow_stream())
    benchmark.group = f"reader {case.name}"
    check_read(case.table(), benchmark(fn))


def test_inputs_are_deterministic_and_realistic() -> None:
    """Same tables every time; lineitem has TPC-H's 16 columns and compresses, but not to dust."""
    table = lineitem_table(2_000)
    assert table.num_columns == 16 and table.num_rows == 2_000
    assert table.equals(lineitem_table.__wrapped__(2_000))
    assert {str(t) for t in table.schema.types} >= {"int64", "decimal128(15, 2)", "date32[day]"}
    comments = table.column("l_comment").to_pylist()
    assert all(10 <= len(c) <= 40 for c in comments) and len(set(comments)) > 1_900
    stream = TableCase("lineitem", 2_000).pyarrow_stream()
    assert 0.1 < len(stream) / table.nbytes < 0.6
    small = TableCase("small_batches", 1024, 256)
    assert small.name == "4x256-row batches"
    import pyarrow as pa

    assert len(list(pa.ipc.open_stream(small.pyarrow_stream()))) == 4


def test_gang_runs_each_job_on_its_own_thread() -> None:
    import threading

    seen: list[set[int]] = [set(), set()]

    def job(i: int) -> Any:
        def run() -> list[int]:
            seen[i].add(threading.get_ident())
            return [i]

        return run

    gang = Gang([job(0), job(1)])
    try:
        assert gang() == [[0], [1]] and gang() == [[0], [1]]
    finally:
        gang.close()
    assert len(seen[0]) == len(seen[1]) == 1 and seen[0] != seen[1]
    assert threading.get_ident() not in seen[0] | seen[1]

    def boom() -> Any:
        raise ValueError("job failed")

    gang = Gang([boom])
    try:
        with pytest.raises(ValueError, match="job failed"):
            gang()
    finally:
        gang.close()


@pytest.mark.parametrize("single", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
def test_python_threads_contenders(stack: ExitStack, threads: int, single: bool) -> None:
    """Every contender of the Python-threads workloads, checked, with a few small tables."""
    workload = python_threads_workload(count=5, rows=4096, threads=threads, single=single)
    assert len(workload.contenders) == (8 if single else 4)
    for contender in workload.contenders:
        for module in contender.requires:
            pytest.importorskip(module)
        fn = contender.setup(stack)
        out = fn()
        assert contender.check is not None
        contender.check(out)


def test_checks_reject_wrong_output() -> None:
    import zstdpool
    from zstdpool import ipc

    table = TableCase("int32", 4096).table()
    stream = ipc.write_stream(table)
    check_stream_list(table, 2, [stream, stream])
    with pytest.raises(AssertionError):
        check_stream_list(table, 2, [stream])
    with pytest.raises(AssertionError):
        check_written(table, ipc.write_stream(table.slice(1)))
    with pytest.raises(AssertionError):
        check_read(table, table.rename_columns(["other"]))
    (data,) = [b.to_pybytes() for b in table_buffers(table)]
    check_frame_list(table, 1, [zstdpool.compress(data, 1)])
    with pytest.raises(AssertionError):
        check_frame_list(table, 1, [zstdpool.compress(data[1:], 1)])
