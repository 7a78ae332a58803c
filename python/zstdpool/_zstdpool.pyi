"""Type stubs for the compiled core of zstdpool (a test checks them against the module)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any, Literal, Protocol, final

import pyarrow as pa
from typing_extensions import Buffer, Self

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_MAX_OUTPUT_SIZE",
    "MAX_LEVEL",
    "MIN_LEVEL",
    "ZSTD_VERSION",
    "Compressor",
    "ContextPool",
    "Decompressor",
    "IpcFileReader",
    "IpcStreamReader",
    "IpcWriter",
    "__version__",
    "_resolve_threads",
    "compress",
    "compress_many",
    "compressor",
    "decompress",
    "decompress_into",
    "decompress_many",
    "decompressor",
    "default_pool",
    "inspect_ipc",
    "memory_stats",
    "new_file",
    "new_stream",
    "open_file",
    "open_stream",
    "pool_stats",
    "read_file",
    "read_stream",
    "reset_peak_memory",
    "write_file",
    "write_stream",
]

__version__: str
ZSTD_VERSION: str
MIN_LEVEL: int
MAX_LEVEL: int
DEFAULT_LEVEL: int
DEFAULT_MAX_OUTPUT_SIZE: int

class _Writable(Protocol):
    def write(self, data: bytes, /) -> int | None: ...

class _Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...

_Sink = str | os.PathLike[str] | _Writable
_Source = Buffer | str | os.PathLike[str] | _Readable
_Compression = Literal["zstd", "lz4"] | None

@final
class ContextPool:
    def __new__(
        cls,
        *,
        max_idle_per_key: int | None = None,
        max_idle_bytes: int = 67108864,
        max_scratch_bytes: int = 4194304,
        idle_timeout: float | None = None,
        max_spare_bytes: int = 536870912,
        spare_timeout: float = 1.0,
    ) -> ContextPool: ...
    def stats(self) -> dict[str, Any]: ...
    def trim(self) -> int: ...
    def clear(self) -> int: ...
    @property
    def max_idle_per_key(self) -> int: ...
    @property
    def max_idle_bytes(self) -> int: ...
    @property
    def max_scratch_bytes(self) -> int: ...
    @property
    def idle_timeout(self) -> float | None: ...
    @property
    def max_spare_bytes(self) -> int: ...
    @property
    def spare_timeout(self) -> float: ...

@final
class Compressor:
    def compress(self, data: Buffer) -> bytes: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def level(self) -> int: ...
    @property
    def checksum(self) -> bool: ...
    @property
    def window_log(self) -> int | None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *_exc: object) -> bool: ...

@final
class Decompressor:
    def decompress(self, data: Buffer, *, max_output_size: int | None = None) -> bytes: ...
    def decompress_into(self, data: Buffer, out: Buffer) -> int: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def max_output_size(self) -> int: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *_exc: object) -> bool: ...

def default_pool() -> ContextPool: ...
def pool_stats() -> dict[str, Any]: ...
def memory_stats() -> dict[str, Any]: ...
def reset_peak_memory() -> int: ...
def _resolve_threads(requested: int | None, total_bytes: int, items: int) -> int: ...
def compress(
    data: Buffer,
    level: int = 3,
    *,
    checksum: bool = False,
    window_log: int | None = None,
    pool: ContextPool | None = None,
) -> bytes: ...
def decompress(
    data: Buffer, *, max_output_size: int = 1073741824, pool: ContextPool | None = None
) -> bytes: ...
def decompress_into(data: Buffer, out: Buffer, *, pool: ContextPool | None = None) -> int: ...
def compressor(
    level: int = 3,
    *,
    checksum: bool = False,
    window_log: int | None = None,
    pool: ContextPool | None = None,
) -> Compressor: ...
def decompressor(
    *, max_output_size: int = 1073741824, pool: ContextPool | None = None
) -> Decompressor: ...
def compress_many(
    buffers: Iterable[Buffer],
    level: int = 3,
    *,
    checksum: bool = False,
    window_log: int | None = None,
    threads: int | None = None,
    pool: ContextPool | None = None,
) -> list[bytes]: ...
def decompress_many(
    buffers: Iterable[Buffer],
    *,
    max_output_size: int = 1073741824,
    threads: int | None = None,
    pool: ContextPool | None = None,
) -> list[bytes]: ...

@final
class IpcWriter:
    def write(self, data: object) -> None: ...
    def write_batch(self, batch: object) -> None: ...
    def write_table(self, table: object) -> None: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def schema(self) -> pa.Schema: ...
    @property
    def format(self) -> Literal["stream", "file"]: ...
    @property
    def compression(self) -> Literal["zstd", "lz4"] | None: ...
    @property
    def level(self) -> int | None: ...
    @property
    def num_batches(self) -> int: ...
    @property
    def bytes_written(self) -> int: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        _exc_value: BaseException | None,
        _traceback: TracebackType | None,
    ) -> bool: ...

@final
class IpcStreamReader:
    @property
    def schema(self) -> pa.Schema: ...
    def __iter__(self) -> Self: ...
    def __next__(self) -> pa.RecordBatch: ...
    def read_next_batch(self) -> pa.RecordBatch: ...
    def read_all(self) -> pa.Table: ...
    def read_pandas(self, **kwargs: Any) -> Any: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *_exc: object) -> bool: ...

@final
class IpcFileReader:
    @property
    def schema(self) -> pa.Schema: ...
    @property
    def num_record_batches(self) -> int: ...
    def __len__(self) -> int: ...
    @property
    def metadata(self) -> dict[str, str]: ...
    def get_batch(self, i: int) -> pa.RecordBatch: ...
    def get_record_batch(self, i: int) -> pa.RecordBatch: ...
    def read_all(self) -> pa.Table: ...
    def read_pandas(self, **kwargs: Any) -> Any: ...
    def __iter__(self) -> Iterator[pa.RecordBatch]: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *_exc: object) -> bool: ...

def new_stream(
    sink: _Sink,
    schema: object,
    *,
    compression: _Compression = "zstd",
    level: int | None = None,
    threads: int | None = None,
    dictionary_deltas: bool = False,
    pool: ContextPool | None = None,
) -> IpcWriter: ...
def new_file(
    sink: _Sink,
    schema: object,
    *,
    compression: _Compression = "zstd",
    level: int | None = None,
    threads: int | None = None,
    dictionary_deltas: bool = False,
    metadata: dict[str, str] | None = None,
    pool: ContextPool | None = None,
) -> IpcWriter: ...
def write_stream(
    data: object,
    sink: _Sink | None = None,
    *,
    compression: _Compression = "zstd",
    level: int | None = None,
    threads: int | None = None,
    dictionary_deltas: bool = False,
    pool: ContextPool | None = None,
) -> bytes | None: ...
def write_file(
    data: object,
    sink: _Sink | None = None,
    *,
    compression: _Compression = "zstd",
    level: int | None = None,
    threads: int | None = None,
    dictionary_deltas: bool = False,
    metadata: dict[str, str] | None = None,
    pool: ContextPool | None = None,
) -> bytes | None: ...
def open_stream(
    source: _Source,
    *,
    max_buffer_size: int | None = None,
    max_batch_size: int | None = None,
    threads: int | None = None,
    pool: ContextPool | None = None,
) -> IpcStreamReader: ...
def open_file(
    source: _Source,
    *,
    max_buffer_size: int | None = None,
    max_batch_size: int | None = None,
    threads: int | None = None,
    pool: ContextPool | None = None,
) -> IpcFileReader: ...
def read_stream(
    source: _Source,
    *,
    max_buffer_size: int | None = None,
    max_batch_size: int | None = None,
    threads: int | None = None,
    pool: ContextPool | None = None,
) -> pa.Table: ...
def read_file(
    source: _Source,
    *,
    max_buffer_size: int | None = None,
    max_batch_size: int | None = None,
    threads: int | None = None,
    pool: ContextPool | None = None,
) -> pa.Table: ...
def inspect_ipc(source: _Source) -> dict[str, Any]: ...
