"""Arrow IPC streams and files with pooled zstd (or lz4) compression.

The names follow ``pyarrow.ipc`` so that switching costs a changed import:

- ``new_stream(sink, schema)`` / ``new_file(sink, schema)`` open writers
  (``RecordBatchStreamWriter`` / ``RecordBatchFileWriter``, which can also be constructed as
  pyarrow's are, ``options=pa.ipc.IpcWriteOptions(...)`` included);
  ``write_stream(data, sink=None)`` / ``write_file(data, sink=None)`` write in one call and
  return bytes when ``sink`` is None.
- ``open_stream(source)`` / ``open_file(source)`` open readers
  (``RecordBatchStreamReader`` / ``RecordBatchFileReader``, ``options=IpcReadOptions(...)``
  with ``included_fields`` included);
  ``read_stream(source)`` / ``read_file(source)`` return a ``pyarrow.Table``.

Writers take pyarrow tables, batches and readers, pandas DataFrames, and anything with the
Arrow PyCapsule interface (polars, duckdb, arro3, nanoarrow). Output is standard Arrow IPC
(metadata V5, per-buffer body compression) that pyarrow and every Arrow implementation read.
zstd is written at level 1 by default, as pyarrow does.
"""

from __future__ import annotations

from typing import Any

from zstdpool._zstdpool import (
    IpcWriter,
    RecordBatchFileReader,
    RecordBatchFileWriter,
    RecordBatchStreamReader,
    RecordBatchStreamWriter,
    read_file,
    read_stream,
    write_file,
    write_stream,
)

# pyarrow's functions are its classes called: one signature, and `new_stream(...)` is a
# `RecordBatchStreamWriter` as in pyarrow.
new_stream = RecordBatchStreamWriter
new_file = RecordBatchFileWriter
open_stream = RecordBatchStreamReader
open_file = RecordBatchFileReader

#: The readers' earlier names.
IpcStreamReader = RecordBatchStreamReader
IpcFileReader = RecordBatchFileReader

#: pyarrow's option classes, which zstdpool's writers and readers take as they are: code that
#: spells them `ipc.IpcWriteOptions` keeps working with `import zstdpool.ipc as ipc`.
_PYARROW_NAMES = ("IpcReadOptions", "IpcWriteOptions")
#: The stats records, subclasses of pyarrow's.
_STATS_NAMES = ("ReadStats", "WriteStats")


def __getattr__(name: str) -> Any:
    # On first use, so that `import zstdpool` does not import pyarrow.
    if name in _PYARROW_NAMES:
        import pyarrow.ipc

        return getattr(pyarrow.ipc, name)
    if name in _STATS_NAMES:
        from zstdpool import _stats

        return getattr(_stats, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "IpcFileReader",
    "IpcReadOptions",  # noqa: F822 - made by __getattr__, on first use
    "IpcStreamReader",
    "IpcWriteOptions",  # noqa: F822 - made by __getattr__, on first use
    "IpcWriter",
    "ReadStats",  # noqa: F822 - made by __getattr__, on first use
    "RecordBatchFileReader",
    "RecordBatchFileWriter",
    "RecordBatchStreamReader",
    "RecordBatchStreamWriter",
    "WriteStats",  # noqa: F822 - made by __getattr__, on first use
    "new_file",
    "new_stream",
    "open_file",
    "open_stream",
    "read_file",
    "read_stream",
    "write_file",
    "write_stream",
]
