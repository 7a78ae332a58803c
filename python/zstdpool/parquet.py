"""Parquet files with pooled zstd compression.

The names follow ``pyarrow.parquet`` so that switching costs a changed import:

- ``write_table(data, where=None)`` writes in one call and returns bytes when ``where`` is
  None; ``ParquetWriter(where, schema)`` writes a file batch by batch.
- ``read_table(source, columns=None, filters=None)`` returns a ``pyarrow.Table`` of a file, a
  directory (Hive partitions by default) or a list of files, filtered as pyarrow's
  ``filters`` say (``zstdpool.dataset`` does the reading); ``ParquetFile(source)``
  gives the schema, the footer's metadata, row groups one by one and ``iter_batches``;
  ``read_schema(source)`` reads the schema alone; ``write_to_dataset(table, root_path,
partition_cols=[...])`` is pyarrow's helper of that name, on ``zstdpool.dataset.write_dataset``.

Writers take pyarrow tables, batches and readers, pandas DataFrames (their index comes back
from ``to_pandas()``), and anything with the Arrow PyCapsule interface (polars, duckdb, arro3).
Files are standard Parquet, with the ``ARROW:schema`` metadata and page indexes, that pyarrow,
polars and duckdb read. zstd is written at level 1 by default, as pyarrow does; each page is
compressed with a context leased from the pool, never one made per page or per column chunk.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from zstdpool import _filters, _fs
from zstdpool._zstdpool import (
    ParquetBatches,
    ParquetFile,
    ParquetWriter,
    read_schema,
    write_table,
)
from zstdpool._zstdpool import read_table as _read_file
from zstdpool.dataset import WrittenFile, write_dataset

if TYPE_CHECKING:
    import pyarrow as pa

    from zstdpool._zstdpool import ContextPool, ParquetWriteOptions

# Keywords of write_to_dataset that go to write_dataset; the rest are the Parquet writer's.
_DATASET_KEYWORDS = (
    "partitioning_flavor",
    "max_partitions",
    "max_open_files",
    "max_rows_per_file",
    "min_rows_per_group",
    "max_rows_per_group",
    "preserve_order",
    "create_dir",
    "max_pending_bytes",
    "fsync",
    "pool",
    "storage_options",
)


def write_to_dataset(
    table: Any,
    root_path: str | os.PathLike[str],
    partition_cols: Sequence[str] | None = None,
    filesystem: Any = None,
    schema: Any = None,
    partitioning: Any = None,
    basename_template: str | None = None,
    use_threads: bool | None = None,
    file_visitor: Callable[[WrittenFile], object] | None = None,
    existing_data_behavior: str | None = None,
    **kwargs: Any,
) -> None:
    """pyarrow's ``write_to_dataset``: writes ``table`` (a table, batch, reader, DataFrame or
    Arrow PyCapsule object) under ``root_path`` as Hive-partitioned Parquet files, by the
    columns ``partition_cols`` (or ``partitioning``) names, with ``zstdpool.dataset.write_dataset``.

    As in pyarrow, files are named ``<uuid>-{i}.parquet`` unless ``basename_template`` says
    otherwise, so that writing again adds files (``existing_data_behavior`` is
    "overwrite_or_ignore" by default); ``schema`` casts the data first; ``use_threads=False``
    writes on one thread; ``file_visitor`` is called with each file written, and
    ``metadata_collector`` (a list) collects each file's metadata. The other keywords are those
    of ``write_table`` (``compression``, ``row_group_size``, ...), or ``write_dataset``'s
    ``max_open_files``, ``max_rows_per_file``, ``max_pending_bytes``, ``threads``, ``fsync``
    and ``pool``.
    ``root_path`` may be a path of ``filesystem`` (any pyarrow or fsspec filesystem), a URI
    pyarrow or fsspec resolve, or an object store URL with ``storage_options``.
    """
    metadata_collector = kwargs.pop("metadata_collector", None)
    if partition_cols is not None and partitioning is not None:
        raise ValueError(
            "The 'partition_cols' argument is not supported. Use only 'partitioning' instead."
        )
    if metadata_collector is not None and file_visitor is not None:
        raise ValueError(
            "The 'metadata_collector' argument is not supported. Use only 'file_visitor' instead."
        )
    root_path, _ = _fs.resolve(root_path, filesystem, None, "root_path")
    if (file_visitor is not None or metadata_collector is not None) and _fs.is_store_url(root_path):
        raise NotImplementedError(
            "file_visitor and metadata_collector read each file's footer back, which is done "
            "for local paths and filesystem objects; write to the store's URL without them, "
            "or pass pyarrow's S3FileSystem as filesystem="
        )
    if schema is not None:
        import pyarrow as pa

        table = pa.table(table).cast(schema)
    dataset_keywords = {k: kwargs.pop(k) for k in _DATASET_KEYWORDS if k in kwargs}
    flavor = dataset_keywords.pop("partitioning_flavor", None)
    threads = kwargs.pop("threads", None)
    if "chunk_size" in kwargs and "row_group_size" not in kwargs:
        kwargs["row_group_size"] = kwargs.pop("chunk_size")
    written = write_dataset(
        table,
        root_path,
        filesystem=None,
        partitioning=partitioning if partitioning is not None else partition_cols,
        # pyarrow writes partition_cols as Hive directories, and `partitioning` as its flavor
        # says (directories of values by default).
        partitioning_flavor="hive" if partitioning is None else flavor,
        format="parquet",
        basename_template=basename_template or uuid.uuid4().hex + "-{i}.parquet",
        existing_data_behavior=existing_data_behavior or "overwrite_or_ignore",
        threads=1 if use_threads is False else threads,
        file_options=cast("ParquetWriteOptions", kwargs),
        **dataset_keywords,
    )
    if file_visitor is None and metadata_collector is None:
        return
    import pyarrow.parquet as pq

    if isinstance(root_path, _fs.FileSystemPath):
        fs: Any = root_path.adapter.filesystem
        root = root_path.adapter.root + str(root_path.keys)
    else:
        fs, root = None, os.fspath(root_path)
    for f in written:
        metadata = pq.read_metadata(f["path"], filesystem=fs)
        metadata.set_file_path(os.path.relpath(f["path"], root).replace(os.sep, "/"))
        if metadata_collector is not None:
            metadata_collector.append(metadata)
        else:
            assert file_visitor is not None
            file_visitor(WrittenFile(str(f["path"]), metadata, f["size"]))


def _is_dataset_source(source: Any) -> bool:
    """Whether ``source`` names a directory or a list of files (what the dataset reader
    reads), rather than one file, bytes or a file object."""
    if isinstance(source, (str, os.PathLike)):
        return os.path.isdir(source)
    return isinstance(source, (list, tuple))


def _with_pandas_index(source_schema: pa.Schema, columns: list[str]) -> list[str]:
    """``columns`` and the pandas index columns the schema's metadata names (what
    ``use_pandas_metadata=True`` adds in pyarrow)."""
    import json

    meta = (source_schema.metadata or {}).get(b"pandas")
    if meta is None:
        return columns
    index = [c for c in json.loads(meta).get("index_columns", []) if isinstance(c, str)]
    return columns + [c for c in index if c not in columns and c in source_schema.names]


def read_table(
    source: Any,
    *,
    columns: Sequence[str] | None = None,
    use_threads: bool = True,
    schema: pa.Schema | None = None,
    use_pandas_metadata: bool = False,
    partitioning: Any = "hive",
    filesystem: Any = None,
    filters: Any = None,
    ignore_prefixes: Sequence[str] | None = None,
    row_groups: Sequence[int] | None = None,
    threads: int | None = None,
    max_page_size: int | None = None,
    page_checksum_verification: bool = False,
    pool: ContextPool | None = None,
    storage_options: dict[str, Any] | None = None,
) -> pa.Table:
    """pyarrow's ``read_table``: ``source`` is a file (a path, bytes-like, or a seekable
    binary file object), a directory, or a list of files, read into one ``pyarrow.Table``.

    A directory or a list is read as a dataset (``zstdpool.dataset``): Hive partitions by
    default (``partitioning``: "hive", a list of names, a pyarrow Partitioning, or None),
    typed as pyarrow types them (dictionaries of int32 or string), names starting with
    ``ignore_prefixes`` (".", "_") left out, ``schema`` or the first file's. ``filters``
    (pyarrow's list forms or an Expression) prune partitions and row groups and keep the rows
    they match. ``columns`` are top-level names (or, for one file read without ``filters``,
    dotted paths into nested columns); ``use_pandas_metadata`` adds the pandas index columns
    to them. Files are read on
    several threads (``threads``; one with ``use_threads=False``), zstd pages decompressed
    with pooled contexts. ``row_groups`` and ``max_page_size`` apply to a single file. With
    ``page_checksum_verification``, each page whose header gives a CRC (pyarrow's and
    zstdpool's ``write_page_checksum=True``) is checked against it, and a mismatch raises.
    Contexts are leased from ``pool`` (None: the default pool).

    ``source`` may be an object store URL ("s3://bucket/key" or a prefix), or a list of them,
    with ``storage_options`` as ``zstdpool.dataset.dataset`` takes them, or a path of
    ``filesystem`` (any pyarrow or fsspec filesystem), or a URI pyarrow or fsspec resolve.
    """
    source, storage_options = _fs.resolve(source, filesystem, storage_options, "source")
    n = threads if threads is not None else (None if use_threads else 1)
    cols = list(columns) if columns is not None else None
    remote = (
        _fs.is_store_url(source)
        or isinstance(source, _fs.FileSystemPath)
        or (isinstance(source, list) and any(_fs.is_store_url(s) for s in source))
    )
    if remote and row_groups is not None:
        raise NotImplementedError(
            "row_groups: a source of an object store or a filesystem object is read as a "
            "dataset, whole; open it with ParquetFile(source, filesystem=...) and read its "
            "row groups there"
        )
    if (
        remote
        or _is_dataset_source(source)
        or (filters is not None and isinstance(source, (str, os.PathLike)) and row_groups is None)
    ):
        from zstdpool.dataset import _open

        single = not remote and not _is_dataset_source(source)
        ds = _open(
            source,
            "parquet",
            None if single else partitioning,
            schema,
            None,
            (".", "_") if ignore_prefixes is None else ignore_prefixes,
            pool,
            infer_dictionary=True,
            storage_options=storage_options,
            page_checksum_verification=page_checksum_verification,
        )
        if cols is not None and use_pandas_metadata:
            cols = _with_pandas_index(ds.schema, cols)
        return ds.to_table(cols, filters, threads=n)
    if cols is not None and use_pandas_metadata:
        cols = _with_pandas_index(read_schema(source), cols)
        if hasattr(source, "seek"):
            source.seek(0)
    expression = _filters.to_expression(filters)
    table = _read_file(
        source,
        columns=cols if expression is None else None,
        row_groups=list(row_groups) if row_groups is not None else None,
        threads=n,
        max_page_size=max_page_size,
        page_checksum_verification=page_checksum_verification,
        pool=pool,
    )
    if schema is not None:
        table = table.cast(schema)
    if expression is None:
        return table
    table = table.filter(expression)
    return table if cols is None else table.select(cols)


def read_pandas(source: Any, *, columns: Sequence[str] | None = None, **kwargs: Any) -> pa.Table:
    """pyarrow's ``read_pandas``: ``read_table`` with the pandas index columns the file's
    metadata names read too, so that ``to_pandas()`` restores the index. ``source`` is
    ``read_table``'s (a file, a directory, a list of files or a URL), ``columns`` the columns
    to read besides the index (None: all), and ``kwargs`` are ``read_table``'s other
    keywords."""
    return read_table(source, columns=columns, use_pandas_metadata=True, **kwargs)


__all__ = [
    "ParquetBatches",
    "ParquetFile",
    "ParquetWriter",
    "read_pandas",
    "read_schema",
    "read_table",
    "write_table",
    "write_to_dataset",
    "WrittenFile",
]
