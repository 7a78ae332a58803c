"""zstdpool: pooled zstd contexts for compressing Arrow data often and in small pieces.

A zstd context allocates its window and match tables before it compresses a byte. zstdpool
keeps contexts warm in a thread-safe pool keyed by their parameters; every codec call, IPC
writer and IPC reader borrows one and gives it back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from zstdpool import dataset, errors, feather, ipc, parquet
from zstdpool._zstdpool import (
    DEFAULT_LEVEL,
    DEFAULT_MAX_OUTPUT_SIZE,
    MAX_LEVEL,
    MIN_LEVEL,
    ZSTD_VERSION,
    Compressor,
    ContextPool,
    Decompressor,
    ZstdDict,
    __version__,
    compress,
    compress_many,
    compressor,
    decompress,
    decompress_into,
    decompress_many,
    decompressor,
    default_pool,
    finalize_dict,
    memory_stats,
    pool_stats,
    remove_stale_temp_files,
    reset_peak_memory,
    train_dict,
)
from zstdpool.errors import (
    BusyError,
    ClosedError,
    CompressionError,
    DecompressionError,
    OutputLimitError,
    ParameterError,
    ZstdError,
)

if TYPE_CHECKING:
    from zstdpool.errors import IpcError, ParquetError


def __getattr__(name: str) -> Any:
    # IpcError and ParquetError derive from pyarrow.ArrowInvalid; zstdpool.errors makes them
    # (importing pyarrow) on first use, not at import.
    if name in ("IpcError", "ParquetError"):
        return getattr(errors, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_MAX_OUTPUT_SIZE",
    "MAX_LEVEL",
    "MIN_LEVEL",
    "ZSTD_VERSION",
    "BusyError",
    "ClosedError",
    "CompressionError",
    "Compressor",
    "ContextPool",
    "DecompressionError",
    "Decompressor",
    "IpcError",
    "OutputLimitError",
    "ParameterError",
    "ParquetError",
    "ZstdDict",
    "ZstdError",
    "__version__",
    "compress",
    "compress_many",
    "compressor",
    "decompress",
    "decompress_into",
    "decompress_many",
    "decompressor",
    "dataset",
    "default_pool",
    "errors",
    "feather",
    "finalize_dict",
    "ipc",
    "memory_stats",
    "parquet",
    "pool_stats",
    "remove_stale_temp_files",
    "reset_peak_memory",
    "train_dict",
]
