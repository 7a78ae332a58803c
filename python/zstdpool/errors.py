"""The exceptions zstdpool raises, all under ``ZstdError``.

Errors about bad data or bad arguments are also ``ValueError``s, so code that already
catches ``ValueError`` keeps working. I/O errors from sinks and sources surface unchanged
(``OSError`` and whatever a file-like object raises).
"""

from __future__ import annotations


class ZstdError(Exception):
    """Root of every exception zstdpool raises itself."""


class ParameterError(ZstdError, ValueError):
    """An invalid level, window size, codec name, limit or other option."""


class DecompressionError(ZstdError, ValueError):
    """Data that is not valid zstd (or lz4): corrupt, truncated or empty."""


class OutputLimitError(DecompressionError):
    """Output that would pass a size limit; refused before the memory is allocated."""


class CompressionError(ZstdError):
    """zstd failed while compressing (an internal error, not bad input)."""


class ClosedError(ZstdError, ValueError):
    """Use of a lease, writer or reader after ``close()``."""


class BusyError(ZstdError, RuntimeError):
    """A lease, writer or reader used from two threads at once; each is for one thread."""


class IpcError(ZstdError, ValueError):
    """Malformed Arrow IPC data, or data that does not fit the writer (schema mismatch)."""


class ParquetError(ZstdError, ValueError):
    """Malformed or encrypted Parquet data, a type Parquet cannot hold, or data that does not
    fit the writer (schema mismatch)."""


__all__ = [
    "BusyError",
    "ClosedError",
    "CompressionError",
    "DecompressionError",
    "IpcError",
    "OutputLimitError",
    "ParameterError",
    "ParquetError",
    "ZstdError",
]
