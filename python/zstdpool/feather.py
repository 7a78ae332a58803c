"""Feather (Arrow IPC files) with pooled zstd compression, following ``pyarrow.feather``.

``write_feather(df, dest)`` and ``read_feather(source)`` are what ``DataFrame.to_feather`` and
``pd.read_feather`` call in pyarrow; ``read_table`` returns a ``pyarrow.Table``. Files are
Feather version 2, which is the Arrow IPC file format: pyarrow, polars, R's arrow and every
Arrow implementation read them.

Deliberate differences from ``pyarrow.feather``: zstd is the default codec (pyarrow's is lz4);
version 1 (the format before 2020, without compression) is refused. ``memory_map=True`` is
accepted and reads the file through ordinary reads: a file truncated while mapped cannot
crash the interpreter, and compressed columns are copied out when decompressed in any case.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from zstdpool import errors, ipc

if TYPE_CHECKING:
    import pyarrow as pa

    from zstdpool._zstdpool import ContextPool, _Compression

__all__ = ["read_feather", "read_table", "write_feather"]

#: Rows per record batch when ``chunksize`` is not given, as pyarrow's Feather writer.
DEFAULT_CHUNKSIZE = 64 * 1024

_FEATHER_V1_MAGIC = b"FEA1"


def write_feather(
    df: Any,
    dest: str | os.PathLike[str] | Any,
    compression: _Compression = "zstd",
    compression_level: int | None = None,
    chunksize: int | None = None,
    version: int = 2,
    *,
    fsync: bool = False,
    pool: ContextPool | None = None,
    filesystem: Any = None,
    storage_options: dict[str, Any] | None = None,
) -> None:
    """Writes ``df`` (a pandas DataFrame, a pyarrow Table or anything the IPC writers take)
    to ``dest`` (a path or a binary file object) as a Feather version 2 file.

    ``compression`` is "zstd" (at ``compression_level``, 1 by default), "lz4" (one level: a
    ``compression_level`` is accepted, as pyarrow accepts it, and has no effect), or
    "uncompressed" or None for none; ``chunksize`` is the most rows per record batch (64K
    by default). A path is written under a temporary name and renamed into place when
    complete, so a failed write leaves nothing under its name; ``fsync=True`` also makes it
    survive a power loss. ``dest`` may also be a path of ``filesystem`` (any pyarrow or
    fsspec filesystem), a URI pyarrow or fsspec resolve, or an object store URL with
    ``storage_options`` (see ``zstdpool.dataset.dataset``). Contexts are leased from
    ``pool`` (None: the default pool). ``version`` must be 2 (pyarrow's default): version 1
    is refused with ``ParameterError``.

    Unlike ``pyarrow.feather``, None means uncompressed rather than "the default codec".
    """
    if version != 2:
        raise errors.ParameterError(
            f"version={version!r}: zstdpool writes Feather version 2 only (the Arrow IPC file "
            "format); version 1, the format before 2020, has no compression: use "
            "pyarrow.feather.write_feather(..., version=1) for readers that need it"
        )
    if chunksize is not None and chunksize <= 0:
        raise errors.ParameterError(f"chunksize must be at least 1, not {chunksize}")
    if compression == "lz4" and compression_level is not None:
        # pyarrow takes any integer level with lz4 (LZ4 frame levels 1-12, clamped); lz4 here
        # has one level (lz4_flex), so the level is checked to be one and then has no effect.
        if not isinstance(compression_level, int) or isinstance(compression_level, bool):
            raise TypeError(
                f"compression_level must be an int or None, not {type(compression_level).__name__}"
            )
        compression_level = None
    table = _as_table(df)
    with ipc.new_file(
        dest,
        table.schema,
        compression=compression,
        level=compression_level,
        fsync=fsync,
        pool=pool,
        filesystem=filesystem,
        storage_options=storage_options,
    ) as writer:
        writer.write_table(table, max_chunksize=chunksize or DEFAULT_CHUNKSIZE)


def read_table(
    source: Any,
    columns: Sequence[int | str] | None = None,
    memory_map: bool = False,
    use_threads: bool = True,
    *,
    pool: ContextPool | None = None,
    filesystem: Any = None,
    storage_options: dict[str, Any] | None = None,
) -> pa.Table:
    """Reads a Feather (version 2) file into a pyarrow Table; ``columns`` (names or indices)
    selects columns, in the order given, and only their buffers are decompressed.
    ``source`` is a path, a bytes-like object or a binary file object; it may also be a path
    of ``filesystem``, a URI, or an object store URL with ``storage_options``, as
    ``write_feather``'s ``dest``.

    ``use_threads`` is pyarrow's: True decompresses a large batch's buffers in parallel,
    False on one thread. ``memory_map`` is accepted, as pyarrow's, and has no effect (the
    file is read through ordinary reads: see the module's docstring). Contexts are leased
    from ``pool`` (None: the default pool)."""
    import pyarrow as pa

    del memory_map  # read through ordinary reads either way (see the module's docstring)
    threads = None if use_threads else 1
    try:
        reader = ipc.open_file(
            source,
            threads=threads,
            pool=pool,
            filesystem=filesystem,
            storage_options=storage_options,
        )
    except errors.IpcError as e:
        if _is_feather_v1(source):
            raise errors.IpcError(
                "this is a Feather version 1 file (the format before 2020), which zstdpool does "
                "not read: read it with pyarrow.feather.read_table"
            ) from e
        raise
    with reader:
        if columns is None:
            return reader.read_all()
        if not isinstance(columns, Sequence) or isinstance(columns, (str, bytes)):
            # As pyarrow: a generator would be used up by the first of two passes.
            raise TypeError(
                f"columns must be a sequence of names or indices, not {type(columns).__name__}"
            )
        names = reader.schema.names
        indices = [_column_index(c, names) for c in columns]
    included = sorted(set(indices))
    options = pa.ipc.IpcReadOptions(included_fields=included)
    with ipc.open_file(
        source,
        options=options,
        threads=threads,
        pool=pool,
        filesystem=filesystem,
        storage_options=storage_options,
    ) as reader:
        table = reader.read_all()
    # The projection reads in schema order; give the columns in the order asked for, by
    # position, since names may repeat.
    return table.select([included.index(i) for i in indices])


def read_feather(
    source: Any,
    columns: Sequence[int | str] | None = None,
    use_threads: bool = True,
    memory_map: bool = False,
    **kwargs: Any,
) -> Any:
    """Reads a Feather (version 2) file into a pandas DataFrame, as ``pyarrow.feather``.

    ``source``, ``columns`` and ``memory_map`` are ``read_table``'s: the file, the columns
    to read (names or indices, in the order given; None: all) and a flag that has no
    effect. ``use_threads`` (pyarrow's) decompresses and converts on several threads; False
    does both on one. ``pool``, ``filesystem`` and ``storage_options`` in ``kwargs`` go to
    ``read_table``, the other ``kwargs`` to ``pyarrow.Table.to_pandas``."""
    table = read_table(
        source,
        columns=columns,
        memory_map=memory_map,
        use_threads=use_threads,
        pool=kwargs.pop("pool", None),
        filesystem=kwargs.pop("filesystem", None),
        storage_options=kwargs.pop("storage_options", None),
    )
    return table.to_pandas(use_threads=use_threads, **kwargs)


def _as_table(df: Any) -> pa.Table:
    import pyarrow as pa

    if isinstance(df, pa.Table):
        return df
    if isinstance(df, pa.RecordBatch):
        return pa.Table.from_batches([df])
    if type(df).__module__.startswith("pandas"):
        # As pyarrow.feather: the index is kept when it is not a plain range.
        return pa.Table.from_pandas(df, preserve_index=None)
    # Anything with the Arrow PyCapsule stream interface (polars, duckdb, arro3...).
    return pa.table(df)


def _column_index(column: int | str, names: list[str]) -> int:
    if isinstance(column, int) and not isinstance(column, bool):
        if not -len(names) <= column < len(names):
            raise IndexError(f"column index {column} is out of range: the file has {len(names)}")
        return column % len(names)
    if isinstance(column, str):
        if column not in names:
            raise KeyError(f"the file has no column {column!r} (it has {names})")
        if names.count(column) > 1:
            raise ValueError(
                f"columns: the file has {names.count(column)} columns named {column!r}; "
                "select one by its index"
            )
        return names.index(column)
    raise TypeError(f"columns must be names or indices, not {type(column).__name__}")


def _is_feather_v1(source: Any) -> bool:
    """Whether ``source`` (a path or bytes-like; other sources are not peeked) starts with
    Feather version 1's magic."""
    try:
        if isinstance(source, (str, os.PathLike)):
            with open(source, "rb") as f:
                return f.read(4) == _FEATHER_V1_MAGIC
        return bytes(memoryview(source)[:4]) == _FEATHER_V1_MAGIC
    except (OSError, TypeError, ValueError):
        return False
