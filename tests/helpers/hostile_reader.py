"""Reads hostile Arrow IPC inputs with zstdpool; run in a subprocess by the tests.

Usage: ``python hostile_reader.py MODE PATH [PATH ...]`` where MODE is ``stream`` (read each
input as an IPC stream) or ``file`` (read it as an IPC file, then also as a stream).

For every input the script first prints ``BEGIN <path>`` and flushes, so that a crash or a hang
names the input that caused it; then it reads the input in several ways and prints one
``RESULT <json>`` line. Each read ends in one of:

- ``table``: a table that passed ``validate(full=True)`` (with its row count);
- ``error``: a clean zstdpool exception (a ``zstdpool.ZstdError`` subclass);
- ``bad``: anything else (another exception type, a table that fails validation, a context
  left out on lease). The test fails on it.

A crash (death by a signal) or a hang (the caller's timeout) leaves a ``BEGIN`` line without
its ``RESULT``. The ``RESULT`` also holds the process's peak memory before and after the input,
so that a hostile length that was believed (a huge allocation) shows.
"""

from __future__ import annotations

import gc
import io
import json
import resource
import sys
import traceback

import pyarrow as pa
import zstdpool
from zstdpool import ipc


def _validated(table: pa.Table | pa.RecordBatch) -> int:
    table.validate(full=True)
    return table.num_rows


def _stream_reads(data: bytes, path: str):
    """Ways to read `data` as a stream: each a (name, callable returning a row count)."""

    def whole_from_path():
        return _validated(ipc.read_stream(path))

    def batch_by_batch_from_bytes():
        rows = 0
        with ipc.open_stream(data) as reader:
            for batch in reader:
                rows += _validated(batch)
        return rows

    def from_file_object():
        return _validated(ipc.read_stream(io.BytesIO(data)))

    def parallel():
        return _validated(ipc.read_stream(data, threads=2))

    return [
        ("read_stream(path)", whole_from_path),
        ("open_stream(bytes) iteration", batch_by_batch_from_bytes),
        ("read_stream(BytesIO)", from_file_object),
        ("read_stream(bytes, threads=2)", parallel),
    ]


def _file_reads(data: bytes, path: str):
    """Ways to read `data` as a file: each a (name, callable returning a row count)."""

    def whole_from_path():
        return _validated(ipc.read_file(path))

    def get_batch_backwards():
        rows = 0
        with ipc.open_file(data) as reader:
            _ = reader.metadata
            # Random access: the last batch first, by negative index.
            for i in range(1, len(reader) + 1):
                rows += _validated(reader.get_batch(-i))
        return rows

    def from_file_object():
        with ipc.open_file(io.BytesIO(data)) as reader:
            return sum(_validated(b) for b in reader)

    return [
        ("read_file(path)", whole_from_path),
        ("open_file(bytes).get_batch(-i)", get_batch_backwards),
        ("open_file(BytesIO) iteration", from_file_object),
    ]


def _attempt(group: str, name: str, read) -> dict:
    try:
        rows = read()
    except zstdpool.ZstdError as e:
        outcome = {"how": name, "outcome": "error", "type": type(e).__name__, "msg": str(e)}
    except BaseException as e:  # noqa: BLE001 - every other exception is the finding
        outcome = {
            "how": name,
            "outcome": "bad",
            "type": f"{type(e).__module__}.{type(e).__qualname__}",
            "msg": str(e)[:500],
            "traceback": traceback.format_exc()[-2000:],
        }
    else:
        outcome = {"how": name, "outcome": "table", "rows": rows}
    outcome["group"] = group
    gc.collect()
    leased = zstdpool.pool_stats()["leased"]
    if leased:
        outcome = {
            "how": name,
            "outcome": "bad",
            "type": "leak",
            "msg": f"{leased} context(s) still leased after the read ({outcome})",
            "group": group,
        }
    return outcome


def _maxrss_kb() -> int:
    """The process's peak resident memory so far, in KB (Linux's unit)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main(argv: list[str]) -> int:
    mode, paths = argv[0], argv[1:]
    if mode not in ("stream", "file"):
        print(f"unknown mode {mode!r}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"BEGIN {path}", flush=True)
        with open(path, "rb") as f:
            data = f.read()
        reads = [("stream", name, read) for name, read in _stream_reads(data, path)]
        if mode == "file":
            reads = [("file", name, read) for name, read in _file_reads(data, path)] + reads
        before = _maxrss_kb()
        results = [_attempt(group, name, read) for group, name, read in reads]
        record = {
            "path": path,
            "mode": mode,
            "results": results,
            "maxrss_kb_before": before,
            "maxrss_kb_after": _maxrss_kb(),
        }
        print("RESULT " + json.dumps(record), flush=True)
    print("DONE", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
