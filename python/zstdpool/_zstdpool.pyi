"""Type stubs for the compiled core of zstdpool (a test checks them against the module).

The names below that the module does not have at run time (the Arrow PyCapsule protocols,
the TypedDicts of the dicts it returns) are marked ``@type_check_only``; import them under
``typing.TYPE_CHECKING`` from ``zstdpool._zstdpool``.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterable, Iterator, Mapping
from types import TracebackType
from typing import (
    Any,
    ClassVar,
    Literal,
    NoReturn,
    Protocol,
    TypeAlias,
    TypedDict,
    final,
    type_check_only,
)

import pyarrow as pa
import pyarrow.parquet as pq
from typing_extensions import Buffer, CapsuleType, Self, Unpack, disjoint_base

from zstdpool._stats import ReadStats, WriteStats

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_MAX_OUTPUT_SIZE",
    "MAX_LEVEL",
    "MIN_LEVEL",
    "ZSTD_VERSION",
    "Compressor",
    "ContextPool",
    "Decompressor",
    "ZstdDict",
    "IpcWriter",
    "ParquetWriter",
    "RecordBatchFileReader",
    "RecordBatchFileWriter",
    "RecordBatchStreamReader",
    "RecordBatchStreamWriter",
    "ParquetFile",
    "BatchStream",
    "ParquetBatches",
    "DatasetScanner",
    "DatasetBatches",
    "__version__",
    "_STORE_SCHEMES",
    "_resolve_threads",
    "_check_dataset_options",
    "_store_delete",
    "_store_list",
    "_compression_bounds",
    "_decompression_bounds",
    "_frame_info",
    "_frame_size",
    "ZstdCompressor",
    "ZstdDecompressor",
    "compress",
    "compress_many",
    "compressor",
    "decompress",
    "decompress_into",
    "decompress_many",
    "decompressor",
    "default_pool",
    "finalize_dict",
    "inspect_ipc",
    "memory_stats",
    "pool_stats",
    "read_file",
    "read_stream",
    "read_table",
    "read_schema",
    "remove_stale_temp_files",
    "reset_peak_memory",
    "train_dict",
    "write_dataset",
    "write_file",
    "write_stream",
    "write_table",
]

__version__: str
_STORE_SCHEMES: tuple[str, ...]
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

# The Arrow PyCapsule interface (https://arrow.apache.org/docs/format/CDataInterface/
# PyCapsuleInterface.html): pyarrow, polars, duckdb, arro3, nanoarrow and pandas (2.2 and
# later) objects have these methods. The requested schema is positional here so that every
# implementation matches, whatever it calls it.

@type_check_only
class ArrowSchemaExportable(Protocol):
    """An object with ``__arrow_c_schema__``: a pyarrow Schema, or any PyCapsule schema."""

    def __arrow_c_schema__(self) -> object: ...

@type_check_only
class ArrowArrayExportable(Protocol):
    """An object with ``__arrow_c_array__``: a record batch (as a struct array)."""

    def __arrow_c_array__(
        self, requested_schema: object | None = None, /
    ) -> tuple[object, object]: ...

@type_check_only
class ArrowStreamExportable(Protocol):
    """An object with ``__arrow_c_stream__``: a table, a reader, a DataFrame."""

    def __arrow_c_stream__(self, requested_schema: object | None = None, /) -> object: ...

#: What the writers write: a stream (a table, reader or DataFrame) or one record batch.
#: pandas DataFrames go through pyarrow, so that their index comes back.
_ArrowData = ArrowStreamExportable | ArrowArrayExportable
#: The codec of the writers' body buffers. The names are case-insensitive ("ZSTD" works too);
#: "lz4" and "lz4_frame" are both the LZ4 frame format, and None, "none" and "uncompressed"
#: all write uncompressed buffers.
_Compression = Literal["zstd", "lz4", "lz4_frame", "none", "uncompressed"] | None

@type_check_only
class CompressKeyStats(TypedDict):
    """One key of ``PoolStats["per_key"]``: compression contexts of one set of parameters."""

    kind: Literal["compress"]
    level: int
    checksum: bool
    #: 0: the level's default window.
    window_log: int
    write_dict_id: bool
    #: zstd's other parameters set through zstdpool.zstd's ``options``, by name.
    options: dict[str, int]
    idle: int
    bytes: int

@type_check_only
class DecompressKeyStats(TypedDict):
    """One key of ``PoolStats["per_key"]``: decompression contexts of one window limit."""

    kind: Literal["decompress"]
    #: 0: zstd's default limit.
    window_log_max: int
    idle: int
    bytes: int

@type_check_only
class PoolStats(TypedDict):
    """What ``ContextPool.stats()`` and ``pool_stats()`` return."""

    created: int
    reused: int
    returned: int
    dropped: int
    leased: int
    idle: int
    idle_bytes: int
    scratch_bytes: int
    peak_idle_bytes: int
    per_key: list[CompressKeyStats | DecompressKeyStats]
    spare_blocks: int
    spare_bytes: int
    spare_reused: int
    #: Dictionaries prepared for a level or for decompression, process-wide.
    prepared_dicts: int
    prepared_dict_bytes: int

@type_check_only
class MemoryStats(TypedDict):
    """What ``memory_stats()`` returns (both counts are 0 when ``counting`` is False)."""

    current_bytes: int
    peak_bytes: int
    counting: bool
    #: zstd's measure of the prepared dictionaries alive (C allocations).
    prepared_dict_bytes: int

@type_check_only
class ColumnBytes(TypedDict):
    """One column of ``IpcInspection["columns"]``: its bytes in the bodies, dictionaries
    included, as stored and uncompressed."""

    name: str
    #: pyarrow's spelling of the type.
    type: str
    compressed_bytes: int
    uncompressed_bytes: int

@type_check_only
class IpcInspection(TypedDict):
    """What ``inspect_ipc()`` returns."""

    format: Literal["stream", "file"]
    schema: pa.Schema
    num_batches: int
    num_rows: int
    num_dictionary_batches: int
    #: The codecs of the record batches, sorted: "none" for uncompressed ones.
    codecs: list[Literal["lz4", "none", "unknown", "zstd"]]
    body_bytes: int
    columns: list[ColumnBytes]

#: A Parquet column codec: zstd (with pooled contexts), "lz4" (LZ4_RAW), snappy, gzip, brotli,
#: or None / "none" / "uncompressed". Case-insensitive.
_ParquetCodec = (
    Literal["zstd", "lz4", "lz4_raw", "snappy", "gzip", "brotli", "none", "uncompressed"] | None
)

@type_check_only
class ParquetColumnChunk(TypedDict):
    """One column chunk of ``ParquetRowGroup["columns"]``."""

    path_in_schema: str
    physical_type: str
    #: pyarrow's spelling: "ZSTD", "SNAPPY", "LZ4_RAW", "UNCOMPRESSED"...
    compression: str
    encodings: list[str]
    num_values: int
    total_compressed_size: int
    total_uncompressed_size: int
    has_dictionary_page: bool

@type_check_only
class ParquetRowGroup(TypedDict):
    """One row group of ``ParquetMetadata["row_groups"]``."""

    num_rows: int
    total_byte_size: int
    columns: list[ParquetColumnChunk]

@type_check_only
class ParquetMetadata(TypedDict):
    """What ``ParquetFile.metadata`` returns: the footer's contents."""

    num_rows: int
    num_row_groups: int
    num_columns: int
    created_by: str | None
    format_version: int
    key_value_metadata: dict[bytes, bytes | None]
    row_groups: list[ParquetRowGroup]

@type_check_only
class _Lifecycle:
    """What every object that holds a leased context, a sink or a source shares (written once
    in src/lifecycle.rs): ``close()``, ``closed``, use as a context manager, and a refusal to
    be pickled."""

    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool: ...

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
    def stats(self) -> PoolStats: ...
    def __copy__(self) -> Self: ...
    def __deepcopy__(self, _memo: object) -> Self: ...
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
class ZstdDict:
    # content: bytes-like, or a dictionary object of compression.zstd, python-zstandard or
    # zstdpool (none of which share a type).
    def __new__(cls, content: object, /, *, is_raw: bool = False) -> ZstdDict: ...
    @property
    def dict_id(self) -> int: ...
    @property
    def dict_content(self) -> bytes: ...
    @property
    def is_raw(self) -> bool: ...
    def __len__(self) -> int: ...
    def __reduce__(self) -> tuple[Any, tuple[bytes]]: ...
    @property
    def as_digested_dict(self) -> tuple[ZstdDict, int]: ...
    @property
    def as_undigested_dict(self) -> tuple[ZstdDict, int]: ...
    @property
    def as_prefix(self) -> tuple[ZstdDict, int]: ...

_ZstdDictArg: TypeAlias = ZstdDict | tuple[ZstdDict, int]  # noqa: PYI047

@disjoint_base
class ZstdCompressor:
    """``compression.zstd.ZstdCompressor`` on the pool (see ``zstdpool.zstd``)."""

    CONTINUE: ClassVar[int]
    FLUSH_BLOCK: ClassVar[int]
    FLUSH_FRAME: ClassVar[int]
    def __new__(
        cls,
        level: int | None = None,
        options: dict[int, int] | None = None,
        zstd_dict: _ZstdDictArg | None = None,
        *,
        pool: ContextPool | None = None,
    ) -> Self: ...
    def compress(self, data: Buffer, mode: int = 0) -> bytes: ...
    def flush(self, mode: int = 2) -> bytes: ...
    def set_pledged_input_size(self, size: int | None) -> None: ...
    @property
    def last_mode(self) -> int: ...
    def __reduce__(self) -> NoReturn: ...

@disjoint_base
class ZstdDecompressor:
    """``compression.zstd.ZstdDecompressor`` on the pool (see ``zstdpool.zstd``)."""

    def __new__(
        cls,
        zstd_dict: _ZstdDictArg | None = None,
        options: dict[int, int] | None = None,
        *,
        pool: ContextPool | None = None,
    ) -> Self: ...
    def decompress(self, data: Buffer, max_length: int = -1) -> bytes: ...
    def _decompress_into(self, data: Buffer, out: Buffer) -> int: ...
    @property
    def eof(self) -> bool: ...
    @property
    def needs_input(self) -> bool: ...
    @property
    def unused_data(self) -> bytes: ...
    def __reduce__(self) -> NoReturn: ...

def _compression_bounds(id: int) -> tuple[int, int]: ...
def _decompression_bounds(id: int) -> tuple[int, int]: ...
def _frame_info(frame_buffer: Buffer) -> tuple[int | None, int]: ...
def _frame_size(frame_buffer: Buffer) -> int: ...
def train_dict(samples: Iterable[Buffer], dict_size: int) -> ZstdDict: ...
def finalize_dict(
    zstd_dict: ZstdDict, /, samples: Iterable[Buffer], dict_size: int, level: int
) -> ZstdDict: ...

@final
class Compressor(_Lifecycle):
    def compress(self, data: Buffer) -> bytes: ...
    @property
    def level(self) -> int: ...
    @property
    def checksum(self) -> bool: ...
    @property
    def window_log(self) -> int | None: ...
    @property
    def zstd_dict(self) -> ZstdDict | None: ...
    @property
    def write_dict_id(self) -> bool: ...

@final
class Decompressor(_Lifecycle):
    def decompress(self, data: Buffer, *, max_output_size: int | None = None) -> bytes: ...
    def decompress_into(self, data: Buffer, out: Buffer) -> int: ...
    @property
    def max_output_size(self) -> int: ...
    @property
    def zstd_dict(self) -> ZstdDict | None: ...

def default_pool() -> ContextPool: ...
def pool_stats() -> PoolStats: ...
def memory_stats() -> MemoryStats: ...
def reset_peak_memory() -> int: ...
def _resolve_threads(requested: int | None, total_bytes: int, items: int) -> int: ...
def compress(
    data: Buffer,
    level: int = 3,
    *,
    checksum: bool = False,
    window_log: int | None = None,
    zstd_dict: ZstdDict | None = None,
    write_dict_id: bool = True,
    pool: ContextPool | None = None,
) -> bytes: ...
def decompress(
    data: Buffer,
    *,
    max_output_size: int = 1073741824,
    zstd_dict: ZstdDict | None = None,
    pool: ContextPool | None = None,
) -> bytes: ...
def decompress_into(
    data: Buffer,
    out: Buffer,
    *,
    zstd_dict: ZstdDict | None = None,
    pool: ContextPool | None = None,
) -> int: ...
def compressor(
    level: int = 3,
    *,
    checksum: bool = False,
    window_log: int | None = None,
    zstd_dict: ZstdDict | None = None,
    write_dict_id: bool = True,
    pool: ContextPool | None = None,
) -> Compressor: ...
def decompressor(
    *,
    max_output_size: int = 1073741824,
    zstd_dict: ZstdDict | None = None,
    pool: ContextPool | None = None,
) -> Decompressor: ...
def compress_many(
    buffers: Iterable[Buffer],
    level: int = 3,
    *,
    checksum: bool = False,
    window_log: int | None = None,
    zstd_dict: ZstdDict | None = None,
    write_dict_id: bool = True,
    threads: int | None = None,
    pool: ContextPool | None = None,
) -> list[bytes]: ...
def decompress_many(
    buffers: Iterable[Buffer],
    *,
    max_output_size: int = 1073741824,
    zstd_dict: ZstdDict | None = None,
    threads: int | None = None,
    pool: ContextPool | None = None,
) -> list[bytes]: ...

_Metadata = dict[str, str] | dict[bytes, bytes] | Any

@disjoint_base
class IpcWriter(_Lifecycle):
    def write(self, data: _ArrowData) -> None: ...
    def write_batch(self, batch: _ArrowData, custom_metadata: _Metadata | None = None) -> None: ...
    def write_table(self, table: _ArrowData, max_chunksize: int | None = None) -> None: ...
    def abort(self) -> None: ...
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
    @property
    def stats(self) -> WriteStats: ...

@final
class RecordBatchStreamWriter(IpcWriter):
    """An Arrow IPC stream writer on ``sink`` (a path, or a binary file object);
    ``zstdpool.ipc.new_stream`` is another name for it.

    ``compression`` is "zstd" (at ``level``, 1 by default), "lz4" (also "lz4_frame") or None
    (also "none" or "uncompressed"); the names are case-insensitive. ``options`` is a
    ``pyarrow.ipc.IpcWriteOptions``; a keyword left at its default yields to it, one that
    disagrees with it is an error.
    """

    def __new__(
        cls,
        sink: _Sink,
        schema: ArrowSchemaExportable,
        *,
        options: Any | None = None,
        compression: _Compression = "zstd",
        level: int | None = None,
        threads: int | None = None,
        dictionary_deltas: bool = False,
        fsync: bool = False,
        pool: ContextPool | None = None,
        filesystem: Any | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> Self: ...

@final
class RecordBatchFileWriter(IpcWriter):
    """An Arrow IPC file writer on ``sink``; ``zstdpool.ipc.new_file`` is another name for it.
    Its options are the stream writer's, with ``metadata`` for the footer."""

    def __new__(
        cls,
        sink: _Sink,
        schema: ArrowSchemaExportable,
        *,
        options: Any | None = None,
        metadata: _Metadata | None = None,
        compression: _Compression = "zstd",
        level: int | None = None,
        threads: int | None = None,
        dictionary_deltas: bool = False,
        fsync: bool = False,
        pool: ContextPool | None = None,
        filesystem: Any | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> Self: ...

@final
class RecordBatchStreamReader(_Lifecycle):
    def __new__(
        cls,
        source: _Source,
        *,
        options: Any | None = None,
        memory_pool: Any | None = None,
        max_buffer_size: int | None = None,
        max_batch_size: int | None = None,
        threads: int | None = None,
        pool: ContextPool | None = None,
        filesystem: Any | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> Self: ...
    @property
    def schema(self) -> pa.Schema: ...
    @property
    def stats(self) -> ReadStats: ...
    def count_rows(self) -> int: ...
    def __iter__(self) -> Self: ...
    def __next__(self) -> pa.RecordBatch: ...
    def read_next_batch(self) -> pa.RecordBatch: ...
    def read_next_batch_with_custom_metadata(self) -> Any: ...
    def iter_batches_with_custom_metadata(self) -> Iterator[Any]: ...
    def read_all(self) -> pa.Table: ...
    def read_pandas(self, **kwargs: Any) -> Any: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> CapsuleType: ...

@final
class RecordBatchFileReader(_Lifecycle):
    def __new__(
        cls,
        source: _Source,
        footer_offset: int | None = None,
        *,
        options: Any | None = None,
        memory_pool: Any | None = None,
        max_buffer_size: int | None = None,
        max_batch_size: int | None = None,
        threads: int | None = None,
        pool: ContextPool | None = None,
        filesystem: Any | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> Self: ...
    @property
    def schema(self) -> pa.Schema: ...
    @property
    def num_record_batches(self) -> int: ...
    def __len__(self) -> int: ...
    @property
    def metadata(self) -> dict[bytes, bytes] | None: ...
    @property
    def stats(self) -> ReadStats: ...
    def count_rows(self) -> int: ...
    def get_batch(self, i: int) -> pa.RecordBatch: ...
    def get_record_batch(self, i: int) -> pa.RecordBatch: ...
    def get_batch_with_custom_metadata(self, i: int) -> Any: ...
    def read_all(self) -> pa.Table: ...
    def read_pandas(self, **kwargs: Any) -> Any: ...
    def __iter__(self) -> Iterator[pa.RecordBatch]: ...

def write_stream(
    data: _ArrowData,
    sink: _Sink | None = None,
    *,
    compression: _Compression = "zstd",
    level: int | None = None,
    threads: int | None = None,
    dictionary_deltas: bool = False,
    fsync: bool = False,
    pool: ContextPool | None = None,
    filesystem: Any | None = None,
    storage_options: dict[str, Any] | None = None,
) -> bytes | None:
    """Writes ``data`` as one Arrow IPC stream; returns the bytes when ``sink`` is None.

    ``compression`` is "zstd" (at ``level``, 1 by default), "lz4" (also "lz4_frame") or None
    (also "none" or "uncompressed"); the names are case-insensitive.
    """

def write_file(
    data: _ArrowData,
    sink: _Sink | None = None,
    *,
    compression: _Compression = "zstd",
    level: int | None = None,
    threads: int | None = None,
    dictionary_deltas: bool = False,
    metadata: _Metadata | None = None,
    fsync: bool = False,
    pool: ContextPool | None = None,
    filesystem: Any | None = None,
    storage_options: dict[str, Any] | None = None,
) -> bytes | None:
    """Writes ``data`` as one Arrow IPC file; returns the bytes when ``sink`` is None.

    ``compression`` is "zstd" (at ``level``, 1 by default), "lz4" (also "lz4_frame") or None
    (also "none" or "uncompressed"); the names are case-insensitive.
    """

def read_stream(
    source: _Source,
    *,
    max_buffer_size: int | None = None,
    max_batch_size: int | None = None,
    threads: int | None = None,
    pool: ContextPool | None = None,
    filesystem: Any | None = None,
    storage_options: dict[str, Any] | None = None,
) -> pa.Table: ...
def read_file(
    source: _Source,
    *,
    max_buffer_size: int | None = None,
    max_batch_size: int | None = None,
    threads: int | None = None,
    pool: ContextPool | None = None,
    filesystem: Any | None = None,
    storage_options: dict[str, Any] | None = None,
) -> pa.Table: ...
def inspect_ipc(
    source: _Source,
    *,
    filesystem: Any | None = None,
    storage_options: dict[str, Any] | None = None,
) -> IpcInspection: ...
def remove_stale_temp_files(
    path: str | os.PathLike[str], *, min_age: float = 3600.0, recursive: bool = True
) -> list[pathlib.Path]: ...

@type_check_only
class ParquetWriteOptions(TypedDict, total=False):
    """The keywords of ``write_table`` and ``ParquetWriter``: pyarrow's, with zstdpool's
    defaults where they differ (zstd at level 1, page indexes written)."""

    row_group_size: int | None
    version: Literal["1.0", "2.4", "2.6"] | None
    use_dictionary: bool | list[str] | None
    compression: _ParquetCodec | dict[str, _ParquetCodec]
    write_statistics: bool | list[str] | None
    use_deprecated_int96_timestamps: bool | None
    coerce_timestamps: Literal["ms", "us"] | None
    allow_truncated_timestamps: bool | None
    data_page_size: int | None
    flavor: Literal["spark"] | None
    filesystem: Any | None
    compression_level: int | dict[str, int] | None
    use_byte_stream_split: bool | list[str] | None
    column_encoding: str | dict[str, str] | None
    data_page_version: Literal["1.0", "2.0"] | None
    use_compliant_nested_type: bool | None
    encryption_properties: None
    write_batch_size: int | None
    dictionary_pagesize_limit: int | None
    store_schema: bool | None
    write_page_index: bool | None
    write_page_checksum: bool | None
    sorting_columns: Iterable[Any] | None
    store_decimal_as_integer: bool | None
    write_time_adjusted_to_utc: bool | None
    max_rows_per_page: int | None
    bloom_filter_options: dict[str, bool | dict[str, int | float]] | None
    use_content_defined_chunking: bool | dict[str, int] | None
    writer_engine_version: Literal["V1", "V2"] | None
    threads: int | None
    fsync: bool | None
    pool: ContextPool | None
    storage_options: dict[str, Any] | None

@final
class ParquetWriter(_Lifecycle):
    def __new__(
        cls,
        where: _Sink,
        schema: pa.Schema | ArrowSchemaExportable,
        **options: Unpack[ParquetWriteOptions],
    ) -> ParquetWriter: ...
    def write(self, table_or_batch: _ArrowData, row_group_size: int | None = None) -> None: ...
    def add_key_value_metadata(
        self, key_value_metadata: Mapping[str | bytes, str | bytes]
    ) -> None: ...
    def write_table(self, table: _ArrowData, row_group_size: int | None = None) -> None: ...
    def write_batch(self, batch: _ArrowData, row_group_size: int | None = None) -> None: ...
    def flush(self) -> None: ...
    def abort(self) -> None: ...
    @property
    def schema(self) -> pa.Schema: ...
    @property
    def num_rows(self) -> int: ...
    @property
    def num_row_groups(self) -> int: ...
    @property
    def bytes_written(self) -> int: ...
    @property
    def metadata(self) -> pq.FileMetaData | None: ...

def write_table(
    data: _ArrowData,
    where: _Sink | None = None,
    **options: Unpack[ParquetWriteOptions],
) -> bytes | None: ...

@final
class ParquetFile(_Lifecycle):
    def __new__(
        cls,
        source: _Source,
        *,
        max_page_size: int | None = None,
        page_checksum_verification: bool = False,
        use_threads: bool = True,
        threads: int | None = None,
        pool: ContextPool | None = None,
        filesystem: Any | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> ParquetFile: ...
    @property
    def schema_arrow(self) -> pa.Schema: ...
    @property
    def schema(self) -> pa.Schema: ...
    @property
    def num_row_groups(self) -> int: ...
    @property
    def metadata(self) -> ParquetMetadata: ...
    def read(self, columns: list[str] | None = None, use_threads: bool = True) -> pa.Table: ...
    def read_row_group(self, i: int, columns: list[str] | None = None) -> pa.Table: ...
    def read_row_groups(
        self, row_groups: list[int], columns: list[str] | None = None
    ) -> pa.Table: ...
    def iter_batches(
        self,
        batch_size: int = 65536,
        row_groups: list[int] | None = None,
        columns: list[str] | None = None,
    ) -> ParquetBatches: ...

@final
class BatchStream:
    """Batches read as they are asked for, from a Parquet file or a dataset."""

    @property
    def schema(self) -> pa.Schema: ...
    def __iter__(self) -> Self: ...
    def __next__(self) -> pa.RecordBatch: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> CapsuleType: ...

ParquetBatches = BatchStream

def read_table(
    source: _Source,
    *,
    columns: list[str] | None = None,
    row_groups: list[int] | None = None,
    use_threads: bool = True,
    threads: int | None = None,
    max_page_size: int | None = None,
    page_checksum_verification: bool = False,
    pool: ContextPool | None = None,
    filesystem: Any | None = None,
    storage_options: dict[str, Any] | None = None,
) -> pa.Table: ...
def read_schema(
    source: _Source,
    *,
    filesystem: Any | None = None,
    storage_options: dict[str, Any] | None = None,
) -> pa.Schema: ...

@final
class DatasetScanner:
    def __new__(
        cls,
        source: str | list[str],
        *,
        format: str = "parquet",
        partitioning: Literal["hive", "directory", "filename"] | None = None,
        partition_schema: pa.Schema | ArrowSchemaExportable | None = None,
        infer_partition_types: bool = True,
        infer_dictionary: bool = False,
        schema: pa.Schema | ArrowSchemaExportable | None = None,
        ignore_prefixes: list[str] | None = None,
        page_checksum_verification: bool = False,
        null_fallback: str | None = None,
        pool: ContextPool | None = None,
        filesystem: Any | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> DatasetScanner: ...
    @property
    def schema(self) -> pa.Schema: ...
    @property
    def partition_schema(self) -> pa.Schema: ...
    @property
    def files(self) -> list[str]: ...
    def partition_values(self) -> pa.Table: ...
    def read(
        self,
        columns: list[str] | None = None,
        filter: tuple[Any, ...] | None = None,
        threads: int | None = None,
        files: list[int] | None = None,
    ) -> pa.Table: ...
    def stream(
        self,
        columns: list[str] | None = None,
        filter: tuple[Any, ...] | None = None,
        threads: int | None = None,
        files: list[int] | None = None,
        readahead: int = ...,
    ) -> DatasetBatches: ...
    def count_rows(
        self,
        filter: tuple[Any, ...] | None = None,
        threads: int | None = None,
        files: list[int] | None = None,
    ) -> int: ...

DatasetBatches = BatchStream

@type_check_only
class WrittenFile(TypedDict):
    """One file of what ``write_dataset`` returns."""

    path: str
    num_rows: int
    size: int

def write_dataset(
    data: _ArrowData,
    base_dir: str | os.PathLike[str],
    *,
    partitioning: list[str] | None = None,
    partitioning_flavor: Literal["hive", "filename"] | None = "hive",
    format: Literal["parquet", "ipc", "arrow", "feather"] = "parquet",
    compression: str | None = "zstd",
    level: int | None = None,
    basename_template: str | None = None,
    existing_data_behavior: Literal["error", "overwrite_or_ignore", "delete_matching"] = "error",
    max_open_files: int = 1024,
    max_partitions: int | None = None,
    null_fallback: str | None = None,
    max_rows_per_file: int | None = None,
    min_rows_per_group: int = 0,
    max_rows_per_group: int | None = None,
    max_pending_bytes: int = 268435456,
    threads: int | None = None,
    file_options: ParquetWriteOptions | None = None,
    fsync: bool = False,
    pool: ContextPool | None = None,
    filesystem: Any | None = None,
    storage_options: dict[str, Any] | None = None,
) -> list[WrittenFile]: ...
def _store_list(
    url: str, storage_options: dict[str, Any] | None = None
) -> list[tuple[str, int]]: ...
def _store_delete(urls: list[str], storage_options: dict[str, Any] | None = None) -> None: ...
def _check_dataset_options(
    format: str,
    existing_data_behavior: str,
    compression: str | None = "zstd",
    level: int | None = None,
) -> str: ...
