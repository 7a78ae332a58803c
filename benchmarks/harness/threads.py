"""The ``threads`` workloads of ``python -m benchmarks``.

- zstdpool's ``threads=`` on one big table: its default (one thread per CPU for a batch of
  1 MiB and more) against pyarrow, and ``threads=2`` against ``threads=1``.
- Per-table writes from several Python threads (pre-started, released by a barrier each
  call: see :class:`Gang`) against python-zstandard (a compressor per thread) and one shared
  backports.zstd compressor on the same column buffers.

Without numpy these workloads are not listed (:mod:`benchmarks.harness.ipc` says so).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from benchmarks.harness.codec import reference_decompress
from benchmarks.harness.data import have_numpy
from benchmarks.harness.ipc import (
    LEVEL,
    IpcImpl,
    TableCase,
    as_pybytes,
    check_written,
    ipc_sizes,
    pyarrow_per_table,
    writer_contenders,
)
from benchmarks.harness.runner import Contender, Profile, Timed, Workload, register_source

if TYPE_CHECKING:
    import pyarrow as pa

# --------------------------------------------------------------------------------------------
# zstdpool's threads= on one big table


def _zstdpool_write_threads(threads: int | None) -> Callable[[ExitStack, pa.Table], Timed]:
    def bind(stack: ExitStack, table: pa.Table) -> Timed:
        from zstdpool import ipc

        return functools.partial(ipc.write_stream, table, threads=threads)

    return bind


#: zstdpool's threads= against pyarrow on one big table; the first is the baseline.
THREADS_WRITERS: tuple[IpcImpl, ...] = (
    IpcImpl("zstdpool write_stream", _zstdpool_write_threads(None)),
    IpcImpl("pyarrow", pyarrow_per_table(True), ("pyarrow",)),
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
        contenders=writer_contenders(THREADS_WRITERS, case),
        nbytes=case.table().nbytes,
    )
    yield Workload(
        name=f"threads=2 vs 1 write {case.name}",
        group="threads",
        description=common + " Ratio: threads=1 time / threads=2 time.",
        contenders=writer_contenders((THREADS_WRITERS[3], THREADS_WRITERS[2]), case),
        nbytes=case.table().nbytes,
    )


# --------------------------------------------------------------------------------------------
# Per-table work from T Python threads


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
    return {"bytes": sum(len(as_pybytes(x)) for x in out)}


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
def threads_workloads(profile: Profile) -> Iterator[Workload]:
    """The threads workloads (none without numpy)."""
    if not have_numpy():
        return
    sizes = ipc_sizes(profile)
    yield from threads_big_workloads(TableCase("lineitem", sizes.big_rows))
    yield python_threads_workload(sizes.thread_tables, sizes.thread_table_rows)
    yield python_threads_workload(sizes.thread_tables, sizes.thread_table_rows, single=False)
