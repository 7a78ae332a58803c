"""Peak and held memory of one whole write, and of one dataset read, zstdpool and its peers
side by side, measured as the operating system sees it: each runs in a fresh process, which
builds its input (for a read: writes the dataset with zstdpool), gives the memory its
allocators hold free back to the system, resets its peak resident set (Linux:
``/proc/self/clear_refs``), writes or reads, and reports how far its resident set rose
above where it stood before: at its highest during the call (peak: ``VmHWM`` minus
``VmRSS`` before) and once the call has returned, with its result still alive and after a
garbage collection (held: ``VmRSS`` after minus before). That counts everything: the output
(for a read: the table read, its size in the output column), buffers, zstd contexts the pool
keeps, memory an allocator freed but kept from the system, threads' stacks, in every library
alike. Printed by ``python -m benchmarks --peaks``.

Target (zstdpool's writes): held <= output + 32 MiB (:data:`HELD_SLACK`): what a write keeps
besides its output is the pool's warm contexts and the allocator's slack, not the data.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.harness import child_env

#: zstd level of every Parquet write (pyarrow's default).
PARQUET_LEVEL = 1

#: zstd level of every IPC stream write (as the IPC memory table's).
IPC_LEVEL = 3

#: What a zstdpool write may hold besides its output once it has returned.
HELD_SLACK = 32 << 20


@dataclass(frozen=True)
class PeakCase:
    """One write: what is written (``kind``), of how many rows, into how many partitions."""

    kind: str
    rows: int
    partitions: int = 0

    @property
    def name(self) -> str:
        if self.kind == "dataset":
            return f"dataset {self.rows} rows, {self.partitions} partitions"
        if self.kind == "dataset_read":
            return f"read dataset {self.rows} rows, {self.partitions} partitions"
        return f"{self.kind} lineitem {self.rows} rows"

    @property
    def is_write(self) -> bool:
        return self.kind != "dataset_read"


PEAK_CASES: dict[str, tuple[PeakCase, ...]] = {
    "tiny": (
        PeakCase("parquet", 2_000),
        PeakCase("ipc", 2_000),
        PeakCase("dataset", 2_000, 10),
        PeakCase("dataset_read", 2_000, 10),
    ),
    "quick": (
        PeakCase("parquet", 200_000),
        PeakCase("ipc", 200_000),
        PeakCase("dataset", 100_000, 1000),
        PeakCase("dataset_read", 100_000, 1000),
    ),
    "full": (
        PeakCase("parquet", 1_000_000),
        PeakCase("ipc", 1_000_000),
        PeakCase("dataset", 1_000_000, 1000),
        PeakCase("dataset_read", 1_000_000, 1000),
    ),
}


def _status(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _give_back_free_memory() -> None:
    """Returns to the system what the allocators hold free after the input was built, so that
    the measured call's allocations show in the resident set: glibc's (``malloc_trim``) and
    pyarrow's default pool's. Without it a write could reuse pages the input's building
    freed and seem to need nothing."""
    import ctypes
    import ctypes.util

    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    libc = ctypes.util.find_library("c")
    if libc is not None:
        trim = getattr(ctypes.CDLL(libc), "malloc_trim", None)
        if trim is not None:
            trim(0)


def unavailable() -> str | None:
    """Why peaks cannot be measured here, or None."""
    if not os.path.exists("/proc/self/clear_refs"):
        return "peak memory is measured through Linux's /proc/self/clear_refs"
    return None


def _parquet_writers() -> dict[str, Callable[[Any], object]]:
    def zstdpool_write(table: Any) -> object:
        import zstdpool.parquet

        return zstdpool.parquet.write_table(table)

    def pyarrow_write(table: Any) -> object:
        import pyarrow as pa
        import pyarrow.parquet as pq

        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd", compression_level=PARQUET_LEVEL)
        return sink.getvalue()

    def polars_write(table: Any) -> object:
        import io

        import polars as pl

        frame = pl.from_arrow(table)
        sink = io.BytesIO()
        frame.write_parquet(sink, compression="zstd", compression_level=PARQUET_LEVEL)  # type: ignore[union-attr,unused-ignore]
        return sink

    return {"zstdpool": zstdpool_write, "pyarrow": pyarrow_write, "polars": polars_write}


def _ipc_writers() -> dict[str, Callable[[Any], object]]:
    def zstdpool_write(table: Any) -> object:
        import zstdpool.ipc

        return zstdpool.ipc.write_stream(table, level=IPC_LEVEL)

    def pyarrow_write(table: Any) -> object:
        import pyarrow as pa

        sink = pa.BufferOutputStream()
        options = pa.ipc.IpcWriteOptions(compression=pa.Codec("zstd", IPC_LEVEL))
        with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
            writer.write_table(table)
        return sink.getvalue()

    def polars_write(table: Any) -> object:
        import io

        import polars as pl

        frame = pl.from_arrow(table)
        sink = io.BytesIO()
        frame.write_ipc_stream(sink, compression="zstd")  # type: ignore[union-attr,unused-ignore]
        return sink

    return {"zstdpool": zstdpool_write, "pyarrow": pyarrow_write, "polars": polars_write}


def _dataset_writers(directory: str) -> dict[str, Callable[[Any], object]]:
    def zstdpool_write(table: Any) -> object:
        import zstdpool.dataset

        return zstdpool.dataset.write_dataset(
            table, directory, partitioning=["partition_key"], partitioning_flavor="hive", level=3
        )

    def pyarrow_write(table: Any) -> object:
        import pyarrow.dataset as ds
        import pyarrow.parquet as pq

        fmt = ds.ParquetFileFormat()
        ds.write_dataset(
            table,
            directory,
            format=fmt,
            partitioning=["partition_key"],
            partitioning_flavor="hive",
            file_options=fmt.make_write_options(compression="zstd", compression_level=3),
            max_partitions=100_000,
        )
        del pq
        return None

    def polars_write(table: Any) -> object:
        import polars as pl

        frame = pl.from_arrow(table)
        frame.write_parquet(  # type: ignore[union-attr,unused-ignore]
            directory, compression="zstd", compression_level=3, partition_by=["partition_key"]
        )
        return None

    return {"zstdpool": zstdpool_write, "pyarrow": pyarrow_write, "polars": polars_write}


def _dataset_readers(directory: str) -> dict[str, Callable[[Any], object]]:
    """Reads of the dataset under `directory` (written by zstdpool before the measure)."""

    def zstdpool_read(_: Any) -> object:
        import zstdpool.dataset

        return zstdpool.dataset.dataset(directory).to_table()

    def pyarrow_read(_: Any) -> object:
        import pyarrow.dataset as ds

        return ds.dataset(directory, partitioning="hive").to_table()

    def polars_read(_: Any) -> object:
        import polars as pl

        pattern = os.path.join(directory, "**", "*.parquet")
        return pl.scan_parquet(pattern, hive_partitioning=True).collect()

    return {"zstdpool": zstdpool_read, "pyarrow": pyarrow_read, "polars": polars_read}


def _input(case: PeakCase) -> Any:
    if case.kind in ("dataset", "dataset_read"):
        from benchmarks.harness.data import partitioned_table

        return partitioned_table(case.rows, case.partitions)
    from benchmarks.harness.data import lineitem_table

    return lineitem_table(case.rows)


def _read_size(result: Any) -> int:
    """Bytes of a table read: pyarrow's Table, or polars' DataFrame."""
    nbytes = getattr(result, "nbytes", None)
    return int(nbytes if nbytes is not None else result.estimated_size())


def _size(result: object, directory: str | None) -> int:
    """Bytes written: a directory's files, or the bytes of an in-memory output."""
    if directory is not None:
        return sum(
            os.path.getsize(os.path.join(root, n))
            for root, _, names in os.walk(directory)
            for n in names
        )
    getvalue = getattr(result, "getvalue", None)
    data = getvalue() if callable(getvalue) else result
    return memoryview(data).nbytes  # type: ignore[arg-type]


def child(case: PeakCase, contender: str) -> dict[str, Any]:
    """Runs in the fresh process: builds the input, measures one write."""
    import gc

    table = None if case.kind == "dataset_read" else _input(case)
    with tempfile.TemporaryDirectory() as tmp:
        directory = os.path.join(tmp, "out")
        if case.kind == "dataset_read":
            # Written by another process: memory this one's allocators kept from the write
            # would hold the read, and hide it from the peak.
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.harness.peaks",
                    "write-dataset",
                    str(case.rows),
                    str(case.partitions),
                    directory,
                ],
                check=True,
                timeout=1800,
                env=child_env(),
            )
            writers = _dataset_readers(directory)
        elif case.kind == "dataset":
            writers = _dataset_writers(directory)
        elif case.kind == "ipc":
            writers = _ipc_writers()
        else:
            writers = _parquet_writers()
        # Every library a write or read calls is imported before the measure: the peak and the
        # held set are the call's, not a library's code or its import-time allocations.
        import pyarrow.dataset  # noqa: F401
        import pyarrow.parquet  # noqa: F401
        import zstdpool.dataset  # noqa: F401
        import zstdpool.ipc  # noqa: F401
        import zstdpool.parquet  # noqa: F401

        if contender == "polars":
            import polars  # noqa: F401
        gc.collect()
        _give_back_free_memory()
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")  # the peak resident set starts again from the current one
        before = _status("VmRSS")
        result = writers[contender](table)
        gc.collect()
        held = _status("VmRSS")
        # Read after the resident set, so that the highest it has been includes it.
        peak = _status("VmHWM")
        if case.kind == "dataset_read":
            size = _read_size(result)
        else:
            size = _size(result, directory if case.kind == "dataset" else None)
        del result
    return {
        "peak_bytes": max(0, peak - before),
        "held_bytes": max(0, held - before),
        "output_bytes": size,
    }


def measure(case: PeakCase, contender: str) -> dict[str, Any]:
    """One write of `case` by `contender` in a fresh process."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.harness.peaks",
            case.kind,
            str(case.rows),
            str(case.partitions),
            contender,
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        env=child_env(),
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def peak_table(
    size_choice: str,
    filters: Sequence[str] = (),
    contenders: Sequence[str] = ("zstdpool", "pyarrow", "polars"),
) -> list[dict[str, Any]]:
    """Every case of the profile (whose name contains one of `filters`), every contender."""
    rows = []
    for case in PEAK_CASES.get(size_choice, PEAK_CASES["quick"]):
        if filters and not any(f.lower() in case.name.lower() for f in filters):
            continue
        for contender in contenders:
            rows.append(
                {
                    "case": case.name,
                    "contender": contender,
                    "write": case.is_write,
                    **measure(case, contender),
                }
            )
    return rows


def held_target_met(row: dict[str, Any]) -> bool | None:
    """Whether a zstdpool write holds at most its output and :data:`HELD_SLACK` once it has
    returned; None for a row the target is not about (a peer, a read, a failed run)."""
    if row.get("contender") != "zstdpool" or not row.get("write") or "held_bytes" not in row:
        return None
    return bool(row["held_bytes"] <= row["output_bytes"] + HELD_SLACK)


def format_peak_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as text: peak and held above the input, output size, the peak's ratio to
    zstdpool's, and zstdpool's held target."""
    lines = [
        "Resident memory of one write (or read) above the input, fresh process each: peak "
        "during the call, held once it has returned (its result alive)",
        f"{'write':40}  {'contender':10}  {'peak MB':>9}  {'held MB':>9}  {'output MB':>9}  "
        f"{'x zstdpool':>10}  held target",
    ]
    ours: dict[str, int] = {
        r["case"]: r["peak_bytes"]
        for r in rows
        if r["contender"] == "zstdpool" and "peak_bytes" in r
    }
    for r in rows:
        if "error" in r:
            lines.append(f"{r['case']:40}  {r['contender']:10}  failed: {r['error']}")
            continue
        base = ours.get(r["case"])
        ratio = f"{r['peak_bytes'] / base:.2f}" if base else "-"
        met = held_target_met(r)
        target = "" if met is None else ("met" if met else "MISSED")
        lines.append(
            f"{r['case']:40}  {r['contender']:10}  {r['peak_bytes'] / 1e6:9.1f}  "
            f"{r['held_bytes'] / 1e6:9.1f}  {r['output_bytes'] / 1e6:9.1f}  {ratio:>10}  "
            f"{target}".rstrip()
        )
    lines.append(
        f"held target (zstdpool's writes): held <= output + {HELD_SLACK >> 20} MiB; held "
        "counts the pool's warm contexts and memory the allocator keeps after freeing it"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] == "write-dataset":
        rows, partitions, directory = sys.argv[2:5]
        table = _input(PeakCase("dataset", int(rows), int(partitions)))
        _dataset_writers(directory)["zstdpool"](table)
        sys.exit(0)
    kind, rows, partitions, contender = sys.argv[1:5]
    print(json.dumps(child(PeakCase(kind, int(rows), int(partitions)), contender)))
