"""Memory of one Arrow IPC stream write, zstdpool and pyarrow side by side (zstd level 3).

Run by ``python -m benchmarks --memory`` (and after the timing table by ``bench --full``):
Apache Spark's memory table for zstdpool and pyarrow. One row per input; each write is
measured once (memory, not time), after warm-up writes. The columns:

- ``vectors``: the input's Arrow buffer bytes (``table.nbytes``);
- ``compressed``: the bytes of the stream written;
- ``held``: what the write leaves allocated: the output and whatever the writer or the pool
  kept;
- ``peak``: the most allocated at once during the write, on top of the input.

How each library is measured
----------------------------
zstdpool (``zstdpool.ipc.write_stream(table, level=3)``, output as bytes): its Rust heap is
counted by ``zstdpool.memory_stats()`` (blocks of 4 KiB and more: the buffers that hold data,
not each call's small bookkeeping); the output ``bytes`` object, which the writer builds
in place and grows as it goes, is a Python allocation, traced by :mod:`tracemalloc` (as is
anything else Python allocates during the write); zstd's own contexts are C allocations,
reported by ``zstdpool.pool_stats()["idle_bytes"]`` (zstd's sizeof) once they are back in the
pool. After two warm-up writes (see :data:`WARMUP_WRITES`), ``gc.collect()``,
``reset_peak_memory()`` and ``tracemalloc.reset_peak()``::

    held = len(out) + (Rust bytes after - before) + max(0, pool idle bytes after - warm)
    peak = (Rust peak - before) + (Python peak - before)

where ``warm`` is the pool's ``peak_idle_bytes`` before the measured write, the most it ever
kept idle, warm-up writes included: its idle bytes can swing by a context from one write to
the next when a write leases more contexts than the pool keeps per key (``contexts_created``
in the JSON shows such churn), which is not memory the write leaves behind.

The two peaks are added: an upper bound of the peak of their sum, exact when both peak at
the end of the write. ``threads=None`` (one thread below 1 MiB of buffers, else up to one per
CPU: the core's rule, which :func:`compressing_threads` asks the core for) is the main
figure; ``threads=1`` and ``threads=2`` are shown too. The pool's idle bytes (contexts kept
warm, shared by every later write) are a column of their own.

pyarrow (``pa.ipc.new_stream(pa.BufferOutputStream(), schema, options=IpcWriteOptions(
compression=pa.Codec("zstd", 3), use_threads=...))``): ``pa.set_memory_pool`` only changes
the pool pyarrow's *Python* API hands out (``arrow::py::get_memory_pool``, used by
``BufferOutputStream()``); the IPC writer's ``IpcWriteOptions::Defaults()`` takes the C++
``arrow::default_memory_pool()``, which it does not change. A proxy pool set with
``pa.set_memory_pool`` therefore sees the output buffer but none of the writer's compressed
buffers (its peak equals the output's capacity; it is kept as ``proxy_peak`` in the JSON). So
each pyarrow row runs in a fresh subprocess (``python -m benchmarks.harness.memory child ...``):
the input is built with ``pa.set_memory_pool(pa.system_memory_pool())`` so that the C++
default pool stays unused, then the write goes through it (the sink too, via a proxy of it),
and ``held`` / ``peak`` are that pool's ``bytes_allocated()`` (with the result buffer alive)
and ``max_memory()`` minus what it held before. ``held`` thus counts the output buffer's
*capacity*, which may exceed its size. zstd's context inside pyarrow (``ZSTD_compress`` makes
and frees one per buffer with malloc) is counted by neither pool.

Targets (zstdpool, every threads setting)
-----------------------------------------
- ``held <= compressed + 1%``;
- ``peak <= 1 MiB + compressed + threads x compressBound(largest buffer)``, with ``threads``
  the number of compressing threads the write uses and the largest buffer taken over all the
  table's Arrow buffers.

The inputs are deterministic (numpy, seed 0) and built by :mod:`benchmarks.harness.data`; the
text table and the JSON are made by :mod:`benchmarks.harness.report`.
"""

from __future__ import annotations

import gc
import json
import math
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from zstdpool._zstdpool import _resolve_threads

from benchmarks.harness.data import (
    KiB,
    MiB,
    int64_random_table,
    int64_seq_table,
    json_text_table,
    lineitem_bytes_table,
    lineitem_rows_table,
    uuid_table,
)

if TYPE_CHECKING:
    import pyarrow as pa

#: zstd level of every write.
LEVEL = 3
#: Input-independent allowance of the peak target.
PEAK_OVERHEAD = 1 * MiB
#: Allowance of the held target, as a fraction of the compressed size.
HELD_SLACK = 0.01
#: zstdpool writes before the measured one. Two, because a thread that finds no buffer left
#: to compress leases a context without using it: one write does not warm every context.
WARMUP_WRITES = 2
#: Measured writes tried until one leaves the pool's cache as it was (see measure_zstdpool).
MEASURE_ATTEMPTS = 8
#: zstdpool's threads settings measured; None (by size) is the main figure.
ZSTDPOOL_THREADS: tuple[int | None, ...] = (None, 1, 2)


# --------------------------------------------------------------------------------------------
# Inputs


@dataclass(frozen=True)
class MemoryCase:
    """An input of the memory table: ``kind`` built at ``size`` (rows, or bytes for the kinds
    ending in ``_bytes``)."""

    kind: str
    size: int

    @property
    def name(self) -> str:
        label = _KINDS[self.kind][0]
        if self.kind.endswith("_bytes"):
            return f"{label} {format_amount(self.size)}"
        return f"{label} {self.size:,} rows"

    @property
    def description(self) -> str:
        return _KINDS[self.kind][1]

    def table(self) -> pa.Table:
        """The input, built afresh (not cached: some are hundreds of MB)."""
        return _KINDS[self.kind][2](self.size)

    def matches(self, filters: Sequence[str]) -> bool:
        """True if no filter is given, or one is a substring of ``memory <name>``."""
        hay = f"memory {self.kind} {self.name}".lower()
        return not filters or any(f.lower() in hay for f in filters)


def format_amount(n: int) -> str:
    """1048576 -> '1 MiB', 2048 -> '2 KiB', 1500 -> '1,500 B'."""
    if n >= MiB and n % MiB == 0:
        return f"{n // MiB} MiB"
    if n >= KiB and n % KiB == 0:
        return f"{n // KiB} KiB"
    return f"{n:,} B"


_KINDS: dict[str, tuple[str, str, Callable[[int], pa.Table]]] = {
    "int64_seq": ("int64 sequential", "one int64 column 0, 1, 2, ...", int64_seq_table),
    "lineitem": (
        "lineitem",
        "TPC-H lineitem-like, 16 columns (benchmarks.harness.data.lineitem_table)",
        lineitem_rows_table,
    ),
    "lineitem_bytes": (
        "lineitem",
        "TPC-H lineitem-like, 16 columns, as many rows as make the size",
        lineitem_bytes_table,
    ),
    "text_bytes": (
        "JSON text 8 KiB/row",
        "one string column, about 8 KiB of JSON-like event records per row",
        json_text_table,
    ),
    "uuid": ("UUID strings", "one string column of random v4 UUIDs", uuid_table),
    "int64_random": (
        "int64 random",
        "one int64 column of uniform random values: incompressible, written raw",
        int64_random_table,
    ),
}

#: The inputs per size choice: ``full`` (also ``quick``: each write runs once either way) is
#: the issue's table; ``tiny`` shrinks it for the test suite.
MEMORY_CASES: dict[str, tuple[MemoryCase, ...]] = {
    "full": (
        MemoryCase("int64_seq", 10_000),
        MemoryCase("lineitem", 10_000),
        MemoryCase("lineitem", 1_000_000),
        MemoryCase("lineitem_bytes", 64 * MiB),
        MemoryCase("text_bytes", 64 * MiB),
        MemoryCase("uuid", 1_000_000),
        MemoryCase("int64_random", 1_000_000),
    ),
    "tiny": (
        MemoryCase("int64_seq", 10_000),
        MemoryCase("lineitem", 2_000),
        MemoryCase("lineitem", 20_000),
        MemoryCase("lineitem_bytes", 2 * MiB),
        MemoryCase("text_bytes", 2 * MiB),
        MemoryCase("uuid", 20_000),
        MemoryCase("int64_random", 20_000),
    ),
}


def memory_cases(size_choice: str, filters: Sequence[str] = ()) -> list[MemoryCase]:
    """The inputs for a profile name (``tiny``; anything else gets the full sizes)."""
    cases = MEMORY_CASES["tiny" if size_choice == "tiny" else "full"]
    return [c for c in cases if c.matches(filters)]


# --------------------------------------------------------------------------------------------
# Sizes and bounds


def compress_bound(n: int) -> int:
    """zstd's ZSTD_COMPRESSBOUND(n)."""
    return n + (n >> 8) + (((128 * KiB) - n) >> 11 if n < 128 * KiB else 0)


def _buffers(batch_or_table: Any) -> list[Any]:
    found = []
    for column in batch_or_table.columns:
        chunks = getattr(column, "chunks", [column])
        for chunk in chunks:
            found += [b for b in chunk.buffers() if b is not None]
    return found


def largest_buffer(table: pa.Table) -> int:
    """The size of the table's largest Arrow buffer."""
    return max((b.size for b in _buffers(table)), default=0)


def compressing_threads(table: pa.Table, threads: int | None) -> int:
    """The threads that compress a batch of ``table`` in zstdpool, at most: the core's own
    rule for the thread count (``zstdpool._zstdpool._resolve_threads``) over the batch's
    non-empty buffers, which caps it by their number (a thread may start and find none left)."""
    most = 1
    for batch in table.to_batches():
        sizes = [b.size for b in _buffers(batch) if b.size]
        most = max(most, _resolve_threads(threads, sum(sizes), len(sizes)))
    return most


# --------------------------------------------------------------------------------------------
# Measurements


def measure_zstdpool(table: pa.Table, threads: int | None = None) -> dict[str, Any]:
    """Held and peak bytes of one ``zstdpool.ipc.write_stream(table, level=3)``, warmed up.

    Returns compressed, held, peak (bytes, see the module's docstring), rust_held (Rust bytes
    left over), idle_growth and idle_bytes (the default pool's idle contexts after the write),
    contexts created / dropped by the pool during the write, threads (compressing threads),
    the targets ``held_limit`` / ``peak_limit``, and the output itself.
    """
    import zstdpool
    import zstdpool.ipc

    if not zstdpool.memory_stats()["counting"]:
        raise RuntimeError("zstdpool was built without the alloc-stats feature")
    for _ in range(WARMUP_WRITES):
        zstdpool.ipc.write_stream(table, level=LEVEL, threads=threads)
    # Which buffers a parallel write's helper thread gets varies from write to write, so the
    # warm-up may not have made every context a write can use, or grown its window tables to
    # the largest buffer it can get. A measured write that does either is filling the pool's
    # cache, not holding output: measure again (a few times at most) until one does neither.
    # Memory a write really keeps shows up in every attempt.
    for _ in range(MEASURE_ATTEMPTS):
        result = _measure_zstdpool_once(table, threads)
        if result["contexts_created"] == 0 and result["idle_above_warm"] == 0:
            break
    return result


def _measure_zstdpool_once(table: pa.Table, threads: int | None) -> dict[str, Any]:
    import zstdpool
    import zstdpool.ipc

    gc.collect()
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        before = zstdpool.memory_stats()["current_bytes"]
        pool_before = zstdpool.pool_stats()
        warm_idle = pool_before["peak_idle_bytes"]
        py_before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        zstdpool.reset_peak_memory()
        out = zstdpool.ipc.write_stream(table, level=LEVEL, threads=threads)
        rust_peak = zstdpool.memory_stats()["peak_bytes"] - before
        _, py_peak = tracemalloc.get_traced_memory()
    finally:
        if not tracing:
            tracemalloc.stop()
    gc.collect()
    rust_held = zstdpool.memory_stats()["current_bytes"] - before
    pool_after = zstdpool.pool_stats()
    assert isinstance(out, bytes)
    n = len(out)
    idle_growth = pool_after["idle_bytes"] - pool_before["idle_bytes"]
    # Contexts the pool keeps are counted when they take it above the most it ever kept idle
    # (its high-water mark, warm-up writes included): when a write leases more contexts than
    # the pool keeps per key, which ones survive varies, and so do the idle bytes.
    above_warm = max(0, pool_after["idle_bytes"] - warm_idle)
    used = compressing_threads(table, threads)
    return {
        "compressed": n,
        "held": n + rust_held + above_warm,
        "peak": rust_peak + py_peak - py_before,
        "rust_held": rust_held,
        "rust_peak": rust_peak,
        "python_peak": py_peak - py_before,
        "idle_growth": idle_growth,
        "idle_above_warm": above_warm,
        "idle_bytes": pool_after["idle_bytes"],
        "contexts_created": pool_after["created"] - pool_before["created"],
        "contexts_dropped": pool_after["dropped"] - pool_before["dropped"],
        "threads": used,
        "held_limit": math.floor(n * (1 + HELD_SLACK)),
        "peak_limit": PEAK_OVERHEAD + n + used * compress_bound(largest_buffer(table)),
        "output": out,
    }


def _pyarrow_write(table: pa.Table, use_threads: bool, cpp: pa.MemoryPool) -> dict[str, Any]:
    """One pyarrow write; ``cpp`` is the C++ default pool, which the input did not touch."""
    import pyarrow as pa

    proxy = pa.proxy_memory_pool(cpp)
    options = pa.ipc.IpcWriteOptions(
        compression=pa.Codec("zstd", compression_level=LEVEL), use_threads=use_threads
    )
    gc.collect()
    before, max_before = cpp.bytes_allocated(), cpp.max_memory()
    previous = pa.default_memory_pool()
    pa.set_memory_pool(proxy)
    try:
        sink = pa.BufferOutputStream()  # allocates from the proxy, so from cpp too
        with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
            writer.write_table(table)
        result = sink.getvalue()
    finally:
        pa.set_memory_pool(previous)
    gc.collect()
    figures = {
        "compressed": result.size,
        "held": cpp.bytes_allocated() - before,
        "peak": cpp.max_memory() - before,
        "proxy_peak": proxy.max_memory(),
        "proxy_held": proxy.bytes_allocated(),
        # The pool's maximum from before the write: if it is above what the write reached,
        # the peak would be hidden (it is not, as the input avoids this pool).
        "max_before_excess": max_before - before,
        "peak_hidden": max_before > before and cpp.max_memory() == max_before,
        "backend": cpp.backend_name,
        "use_threads": use_threads,
    }
    # What was allocated through the proxy must go before the proxy does (else a crash).
    del writer, sink, result
    gc.collect()
    return figures


def _child(kind: str, size: int, use_threads: bool) -> dict[str, Any]:
    import pyarrow as pa

    cpp = pa.default_memory_pool()  # before any set_memory_pool: the C++ default pool
    pa.set_memory_pool(pa.system_memory_pool())  # the input stays out of the C++ default pool
    table = MemoryCase(kind, size).table()
    result = _pyarrow_write(table, use_threads, cpp)
    result["vectors"] = table.nbytes
    return result


def measure_pyarrow(case: MemoryCase, use_threads: bool = True) -> dict[str, Any]:
    """Held and peak bytes of one pyarrow IPC stream write of ``case``, in a fresh process.

    The pool's ``max_memory()`` cannot be reset, hence one process per measurement; it builds
    the input itself (deterministic), outside the pool it measures.
    """
    from benchmarks.harness import child_env

    env = child_env()
    argv = [sys.executable, "-m", "benchmarks.harness.memory", "child", case.kind, str(case.size)]
    argv.append("1" if use_threads else "0")
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"pyarrow measurement failed ({done.returncode}): {tail}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --------------------------------------------------------------------------------------------
# The table


def _check_output(table: pa.Table, out: bytes) -> None:
    import pyarrow as pa

    got = pa.ipc.open_stream(out).read_all()
    if not got.equals(table):
        raise AssertionError("zstdpool's stream does not read back as the input")


def unavailable() -> str | None:
    """Why the memory table cannot be measured here (None if it can)."""
    import zstdpool

    if not _have("numpy") or not _have("pyarrow"):
        return "the memory table needs numpy and pyarrow"
    if not zstdpool.memory_stats()["counting"]:
        return "the memory table needs zstdpool built with the alloc-stats feature"
    return None


def _have(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def memory_row(
    case: MemoryCase, *, pyarrow: bool = True, threads: Iterable[int | None] = ZSTDPOOL_THREADS
) -> dict[str, Any]:
    """The figures of one input: zstdpool for each ``threads``, and pyarrow unless told not."""
    t0 = time.perf_counter()
    table = case.table()
    row: dict[str, Any] = {
        "input": case.name,
        "kind": case.kind,
        "size": case.size,
        "description": case.description,
        "rows": table.num_rows,
        "vectors": table.nbytes,
        "largest_buffer": largest_buffer(table),
        "build_seconds": time.perf_counter() - t0,
        "zstdpool": {},
        "pyarrow": {},
    }
    for t in threads:
        m = measure_zstdpool(table, t)
        out = m.pop("output")
        if t is None:
            _check_output(table, out)
        del out
        row["zstdpool"][str(t)] = m
    del table
    gc.collect()
    if pyarrow:
        for use_threads in (True, False):
            row["pyarrow"][str(use_threads)] = measure_pyarrow(case, use_threads)
    row["seconds"] = time.perf_counter() - t0
    return row


def memory_table(
    size_choice: str = "full",
    filters: Sequence[str] = (),
    *,
    pyarrow: bool = True,
    err: TextIO | None = None,
) -> list[dict[str, Any]]:
    """Measures every input of ``size_choice`` ("tiny", or "quick"/"full": the issue's sizes).

    ``pyarrow=False`` leaves pyarrow's columns empty (they take a process per figure);
    progress goes to ``err`` (default stderr). See :func:`unavailable` for the requirements.
    """
    err = err if err is not None else sys.stderr
    cases = memory_cases(size_choice, filters)
    rows = []
    for i, case in enumerate(cases):
        row = memory_row(case, pyarrow=pyarrow)
        rows.append(row)
        print(f"[{i + 1}/{len(cases)}] memory {case.name}: {row['seconds']:.1f}s", file=err)
    return rows


def targets(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The zstdpool target checks of a row: one per threads setting."""
    checks = []
    for t, m in row["zstdpool"].items():
        checks.append(
            {
                "threads": t,
                "used": m["threads"],
                "held": m["held"],
                "held_limit": m["held_limit"],
                "held_ok": m["held"] <= m["held_limit"],
                "peak": m["peak"],
                "rust_peak": m["rust_peak"],
                "peak_limit": m["peak_limit"],
                "peak_ok": m["peak"] <= m["peak_limit"],
            }
        )
    return checks


def all_targets_met(rows: Iterable[dict[str, Any]]) -> bool:
    """True if every zstdpool row meets both targets."""
    return all(c["held_ok"] and c["peak_ok"] for r in rows for c in targets(r))


def list_cases(size_choice: str, filters: Sequence[str] = ()) -> str:
    """One line per input, for ``bench --memory --list``."""
    return "\n".join(
        f"{'memory':8}  {c.name:32}  {c.description}" for c in memory_cases(size_choice, filters)
    )


if __name__ == "__main__":
    # The pyarrow measurement in a fresh process: child KIND SIZE USE_THREADS.
    if len(sys.argv) != 5 or sys.argv[1] != "child":
        sys.exit("usage: python -m benchmarks.harness.memory child KIND SIZE USE_THREADS(0|1)")
    print(json.dumps(_child(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1")))
