"""Ray Data on the pool: datasets written and read by zstdpool's dataset writer and reader
inside Ray's tasks.

``DatasetDatasink`` is a ``ray.data.Datasink``: each write task hands its blocks, streamed, to
``zstdpool.dataset.write_dataset`` (partitioned or not, Parquet or Arrow IPC, on any
filesystem zstdpool takes), so a task's partition files share one pool of warm contexts
instead of making a writer and a context per file. Files are named after the write (an id
drawn when it starts, on the driver) and the task (``<write id>_<task index>-<i>.<ext>``):
unique per write and task, and the same when Ray retries a task (a retry keeps the task's
index), so a retry replaces what the failed attempt wrote instead of adding to it. Every file
appears under its name only once it is whole. When a write fails, ``on_write_failed`` removes
the files that carry that write's id, where the filesystem lets it; other writes' files, a
concurrent append's included, are left alone.

``DatasetDatasource`` is a ``ray.data.Datasource``: the files are listed and their partitions
pruned on the driver, then split into read tasks of a group of files each, which zstdpool's
dataset reader reads. Ray pushes column selections (``select_columns``) and predicates
(``filter(expr=...)``) into it; both are applied by the reader (partitions, row-group
statistics, bloom filters and page indexes prune what is read), and Ray drops its own
Filter and Project steps.

``write_dataset(ds, path, ...)`` and ``read_dataset(path, ...)`` are the two in one call.

Install with ``pip install zstdpool[ray]`` (Ray Data 2.60 or later).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import sys
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

try:
    import ray.data
    from ray.data import Datasink, Datasource, ReadTask
    from ray.data.block import BlockAccessor, BlockMetadata
except ImportError as e:  # pragma: no cover - depends on what is installed
    raise ImportError(
        "zstdpool.ray needs Ray Data 2.60 or later: pip install 'zstdpool[ray]'"
    ) from e

import pyarrow as pa
import pyarrow.dataset as pds

import zstdpool.dataset as _zd
from zstdpool import _filters, _fs

if TYPE_CHECKING:
    import pyarrow.compute as pc
    from ray.data._internal.execution.interfaces import TaskContext
    from ray.data.datasource.datasink import WriteResult

__all__ = ["DatasetDatasink", "DatasetDatasource", "read_dataset", "write_dataset"]

#: What a write does where files already are, as Ray's ``SaveMode`` names it.
_MODES = ("append", "overwrite", "error", "ignore")

#: The extension of each format's files, as ``zstdpool.dataset.write_dataset`` names them.
_EXTENSIONS = {"parquet": "parquet", "ipc": "arrow", "arrow": "arrow", "feather": "feather"}

#: The column Ray's readers carry a row count in when no column is read
#: (``ray.data._internal.arrow_block._BATCH_SIZE_PRESERVING_STUB_COL_NAME``).
_ROWS_ONLY = "__bsp_stub"

#: The keywords of ``zstdpool.dataset.write_dataset`` that the datasink sets itself.
_OWN = frozenset(
    {
        "data",
        "base_dir",
        "basename_template",
        "format",
        "partitioning",
        "partitioning_flavor",
        "filesystem",
        "storage_options",
        "existing_data_behavior",
        "file_visitor",
        "schema",
    }
)


class _Files:
    """The files under a dataset's path, wherever it is (a local directory, an object store
    prefix, a filesystem object's directory): listed and deleted, for a write's mode and its
    clean-up."""

    def __init__(self, path: str, filesystem: Any, storage_options: dict[str, Any] | None):
        resolved, options = _fs.resolve(path, filesystem, storage_options, "path")
        self._resolved = resolved
        self._options = options

    def names(self) -> list[str]:
        """Every file below the path, as a path relative to it."""
        target = self._resolved
        if isinstance(target, _fs.FileSystemPath):
            return [key for key, _ in target.adapter.list(str(target.keys))]
        if _fs.is_store_url(target):
            from zstdpool._zstdpool import _store_list

            prefix = target.rstrip("/") + "/"
            return [key[len(prefix) :] for key, _ in _store_list(prefix, self._options)]
        found: list[str] = []
        for top, _dirs, files in os.walk(target):
            found.extend(os.path.relpath(os.path.join(top, f), target) for f in files)
        return found

    def delete(self, names: Iterable[str]) -> None:
        """Deletes these files (paths relative to the dataset's path)."""
        names = list(names)
        target = self._resolved
        if not names:
            return
        if isinstance(target, _fs.FileSystemPath):
            for name in names:
                target.adapter.delete(str(target.keys).rstrip("/") + "/" + name)
        elif _fs.is_store_url(target):
            from zstdpool._zstdpool import _store_delete

            prefix = target.rstrip("/") + "/"
            _store_delete([prefix + n for n in names], self._options)
        else:
            for name in names:
                try:
                    os.remove(os.path.join(target, name))
                except FileNotFoundError:
                    pass

    def clear(self) -> None:
        """Deletes everything below the path (the path itself stays, for a local one)."""
        target = self._resolved
        if isinstance(target, str) and not _fs.is_store_url(target):
            if os.path.isdir(target):
                # rmtree removes a symbolic link inside as a link, never what it points to.
                for entry in os.scandir(target):
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path)
                    else:
                        os.remove(entry.path)
            return
        self.delete(self.names())


def _mode(mode: Any) -> str:
    """A save mode given as a string or as Ray's ``SaveMode``."""
    value = getattr(mode, "value", mode)
    if value not in _MODES:
        raise ValueError(f"mode must be one of {', '.join(map(repr, _MODES))}, not {mode!r}")
    return str(value)


class DatasetDatasink(Datasink[list[str]]):
    """Writes a Ray dataset as a zstdpool dataset under ``path``: each write task's blocks go
    to ``zstdpool.dataset.write_dataset`` (see the module). ``write_datasink`` returns once
    every task is done; ``written_files`` then lists the files (as ``write_dataset`` returns
    them; an object's as "bucket/key").

    ``format`` is "parquet" (the default), "ipc"/"arrow" or "feather". ``partition_cols``
    names the partition columns, written as ``partitioning_flavor`` says ("hive", the
    default, as Ray's ``write_parquet``; None for a directory per value; "filename").
    ``mode`` is what a write does where files already are, as Ray's ``SaveMode``: "append"
    (the default: add files beside them), "overwrite" (delete them first), "error" (refuse)
    or "ignore" (write nothing). ``filesystem`` and ``storage_options`` are
    ``write_dataset``'s, as are the other keywords, ``options`` (``compression``, ``level``,
    ``max_rows_per_file``, ``max_rows_per_group``, ``file_options``, ``threads``, ...),
    checked here, on the driver, before any task runs; those the datasink sets itself
    (``basename_template``, ``existing_data_behavior``, ...) and ``pool`` are refused.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        format: str = "parquet",
        partition_cols: Sequence[str] | None = None,
        partitioning_flavor: str | None = "hive",
        mode: Any = "append",
        filesystem: Any = None,
        storage_options: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if format not in _EXTENSIONS:
            raise ValueError(
                f"format must be one of {', '.join(map(repr, _EXTENSIONS))}, not {format!r}"
            )
        if isinstance(partition_cols, str):
            raise TypeError("partition_cols must be a list of column names, not a string")
        own = sorted(_OWN.intersection(options))
        if own:
            raise TypeError(f"{own[0]} is set by the datasink and cannot be given")
        if "pool" in options:
            raise TypeError(
                "pool: a ContextPool cannot travel to Ray's worker processes; each worker "
                "writes with its own default pool"
            )
        import inspect

        try:
            inspect.signature(_zd.write_dataset).bind(None, "", **options)
        except TypeError as e:
            raise TypeError(f"DatasetDatasink: {e}") from None
        self.path = os.fspath(path)
        self.format = format
        self.partition_cols = list(partition_cols) if partition_cols else None
        self.partitioning_flavor = partitioning_flavor if self.partition_cols else None
        self.mode = _mode(mode)
        self.filesystem = filesystem
        self.storage_options = storage_options
        self.options = options
        #: The files every task wrote, once the write is complete.
        self.written_files: list[str] = []
        self._skip = False
        # The write under way: its id, drawn on the driver when it starts (Ray sends the
        # datasink to its tasks after that), which names its files.
        self._write_id: str | None = None

    def _files(self) -> _Files:
        return _Files(self.path, self.filesystem, self.storage_options)

    def _ours(self, name: str) -> bool:
        """Whether ``name`` (relative to the path) is a file of the write under way."""
        if self._write_id is None:
            return False
        ext = re.escape(_EXTENSIONS[self.format])
        pattern = rf"(?:^|/){self._write_id}_[0-9]+-[0-9]+\.{ext}$"
        return re.search(pattern, name) is not None

    def on_write_start(self, schema: pa.Schema | None = None) -> None:
        """Ray's call on the driver before the write tasks run (``write_dataset`` makes it
        earlier itself): draws the write's id and applies ``mode`` to the files already under
        ``path``. ``schema``, the first block's that Ray passes, is not used. Called again
        during the same write, it does nothing."""
        if self._write_id is not None:
            return
        self._write_id = uuid.uuid4().hex
        self._skip = False
        self.written_files = []
        files = self._files()
        existing = files.names()
        if not existing:
            return
        if self.mode == "error":
            raise ValueError(
                f"path: {self.path} already holds {len(existing)} files (mode='error'; "
                "'append' adds to them, 'overwrite' replaces them)"
            )
        if self.mode == "ignore":
            self._skip = True
        elif self.mode == "overwrite":
            files.clear()

    def write(self, blocks: Iterable[Any], ctx: TaskContext) -> list[str]:
        """Ray's call in each write task: the task's ``blocks`` (in any block format Ray
        has), streamed as Arrow batches into ``zstdpool.dataset.write_dataset`` in the first
        non-empty block's schema (later blocks are cast to it), the files named after the
        write's id and the task index in ``ctx``, Ray's ``TaskContext``. Returns the paths
        written (none for empty blocks, or under mode "ignore")."""
        if self._skip:
            return []
        tables = (BlockAccessor.for_block(b).to_arrow() for b in blocks)
        first = next((t for t in tables if t.num_rows > 0), None)
        if first is None:
            return []
        schema = first.schema

        def batches() -> Iterator[pa.RecordBatch]:
            yield from first.to_batches()
            for table in tables:
                if table.num_rows:
                    yield from (
                        table if table.schema == schema else table.cast(schema)
                    ).to_batches()

        write_id = self._write_id or ctx.kwargs.get("write_uuid") or uuid.uuid4().hex
        written = _zd.write_dataset(
            pa.RecordBatchReader.from_batches(schema, batches()),
            self.path,
            basename_template=f"{write_id}_{ctx.task_idx:06d}-{{i}}.{_EXTENSIONS[self.format]}",
            format=self.format,
            partitioning=self.partition_cols,
            partitioning_flavor=self.partitioning_flavor,
            filesystem=self.filesystem,
            storage_options=self.storage_options,
            existing_data_behavior="overwrite_or_ignore",
            **self.options,
        )
        return [f["path"] for f in written]

    def on_write_complete(self, write_result: WriteResult[list[str]]) -> None:
        """Ray's call on the driver once every task is done: ``written_files`` becomes the
        paths the tasks returned (``write_result.write_returns``), sorted, and the next
        write through this datasink is a new one."""
        self.written_files = sorted(p for paths in write_result.write_returns for p in paths)
        self._write_id = None  # the next write through this datasink is a new one

    def on_write_failed(self, error: Exception) -> None:
        """Ray's call on the driver when the write fails: removes the files that carry the
        failed write's id, what its tasks left (each whole; none is half-written). ``error``
        is the error Ray reports; if the clean-up fails, a note saying so is added to it
        (``add_note``) rather than raised."""
        if self._write_id is None or self._skip:
            self._write_id = None
            return
        try:
            files = self._files()
            files.delete([n for n in files.names() if self._ours(n)])
        except Exception as e:  # the write's own error is what the caller sees
            note = f"zstdpool.ray: could not remove the files the failed write left: {e}"
            if sys.version_info >= (3, 11):
                error.add_note(note)
            else:  # PEP 678's notes, kept where 3.11's traceback would show them
                setattr(error, "__notes__", [*getattr(error, "__notes__", []), note])  # noqa: B010
        finally:
            self._write_id = None


def _read_group(
    opened: functools.partial[_zd.Dataset],
    files: list[str],
    columns: list[str] | None,
    filter: Any,
    target_bytes: int,
) -> Iterator[pa.Table]:
    """One read task: ``files`` read by zstdpool's dataset reader, as tables of about
    ``target_bytes`` each (Ray's target block size)."""
    dataset = opened(files)
    pending: list[pa.RecordBatch] = []
    size = 0
    schema = None
    for batch in dataset.to_batches(columns=columns, filter=filter):
        if batch.num_columns == 0:
            # No column asked for (``count()``): Ray counts a table without columns as empty,
            # so the rows are carried by a column of nulls under the name Ray's own readers
            # use for it.
            batch = pa.RecordBatch.from_arrays([pa.nulls(batch.num_rows)], [_ROWS_ONLY])
        schema = batch.schema
        pending.append(batch)
        size += batch.nbytes
        if size >= target_bytes:
            yield pa.Table.from_batches(pending, schema)
            pending, size = [], 0
    if pending:
        yield pa.Table.from_batches(pending, schema)


class DatasetDatasource(Datasource):
    """A zstdpool dataset read by Ray: ``source`` and the other keywords are
    ``zstdpool.dataset.dataset``'s; ``columns`` and ``filter`` (pyarrow's ``filters`` forms
    or an Expression) are read's, and Ray's own ``select_columns`` and ``filter(expr=...)``
    are pushed down on top of them (see the module).

    - ``format``: "parquet" (the default), or "ipc", "arrow" or "feather".
    - ``partitioning``: "hive" (the default), a pyarrow ``HivePartitioning``, or None; other
      partitionings are refused, since each task opens its files as a list.
    - ``schema``: the schema to read the files as; None takes the first file's.
    - ``filesystem``, ``storage_options``: a pyarrow or fsspec filesystem, or an object
      store's options, as ``zstdpool.dataset.dataset`` takes them.
    - ``ignore_prefixes``: names left out when a directory is listed ("." and "_").
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        format: str = "parquet",
        partitioning: Any = "hive",
        schema: pa.Schema | None = None,
        columns: Sequence[str] | None = None,
        filter: Any = None,
        filesystem: Any = None,
        storage_options: dict[str, Any] | None = None,
        ignore_prefixes: Sequence[str] = (".", "_"),
    ) -> None:
        super().__init__()
        if isinstance(columns, str):
            raise TypeError("columns must be a list of column names, not a string")
        if partitioning not in ("hive", None) and not (
            isinstance(partitioning, pds.HivePartitioning)
        ):
            # Each task opens its group of files as a list, where a directory partitioning
            # (which names no root) would read the whole path as partition values.
            raise ValueError(
                "partitioning: zstdpool.ray reads Hive (key=value) partitions or none, "
                f"not {partitioning!r}"
            )
        self._projection_map = None if columns is None else {c: c for c in columns}
        self._dataset = _zd.dataset(
            source,
            format=format,
            partitioning=partitioning,
            schema=schema,
            filesystem=filesystem,
            storage_options=storage_options,
            ignore_prefixes=ignore_prefixes,
        )
        if columns is not None:
            missing = [c for c in columns if c not in self._dataset.schema.names]
            if missing:
                raise ValueError(f"columns: no column {missing[0]!r} in the dataset")
        if filter is not None and _filters.normalize(filter) is None:
            raise TypeError("filter must be an Expression or filters")
        self._filter = filter
        # An object store's files are listed as "bucket/key" (as pyarrow lists them); the
        # tasks open them by URL.
        first = source[0] if isinstance(source, (list, tuple)) and source else source
        self._scheme = ""
        if _fs.is_store_url(first):
            self._scheme = str(first).split("://", 1)[0] + "://"
        # Sizes for Ray's planning, where the files are local.
        self._local = not self._scheme and filesystem is None
        # Each task opens its files as the dataset was opened: the partitioning as it was
        # typed and the dataset's schema, so that every task reads the same columns.
        self._opened = functools.partial(
            _zd.dataset,
            format=self._dataset.format,
            partitioning=self._dataset.partitioning,
            schema=self._dataset.schema,
            filesystem=filesystem,
            storage_options=storage_options,
        )

    def get_name(self) -> str:
        """``"ZstdpoolDataset"``: the name Ray gives the read tasks."""
        return "ZstdpoolDataset"

    def supports_projection_pushdown(self) -> bool:
        """True: Ray pushes column selections (``select_columns``) into the read."""
        return True

    def supports_predicate_pushdown(self) -> bool:
        """True: Ray pushes predicates (``filter(expr=...)``) into the read."""
        return True

    def _size(self, files: Sequence[str]) -> int | None:
        """The files' bytes where they are local, else None (unknown to Ray)."""
        if not self._local:
            return None
        try:
            return sum(os.path.getsize(f) for f in files)
        except OSError:
            return None

    def estimate_inmemory_data_size(self) -> int | None:
        """Ray's size estimate for planning: the files' bytes on disk where they are local;
        None (unknown) for an object store's files or a filesystem object's."""
        return self._size(self._dataset.files)

    def _read_filter(self) -> Any:
        """The datasource's filter and Ray's pushed-down predicate, as one Expression."""
        ray_filter = None if self._predicate_expr is None else self._predicate_expr.to_pyarrow()
        if self._filter is None:
            return ray_filter
        if ray_filter is None:
            return self._filter
        own = _filters.to_expression(self._filter)
        assert own is not None
        return own & ray_filter

    def get_read_tasks(
        self,
        parallelism: int,
        per_task_row_limit: int | None = None,
        data_context: Any = None,
    ) -> list[ReadTask]:
        """Ray's call on the driver: the files left once partitions are pruned (by the
        datasource's ``filter`` and Ray's pushed-down predicate), split into at most
        ``parallelism`` read tasks of a group of files each (never more tasks than files; one
        per file when ``parallelism`` is not positive). Each task yields tables of about the
        ``target_max_block_size`` of ``data_context`` (None: the current ``DataContext``;
        128 MiB when unset); ``per_task_row_limit`` is handed to each ``ReadTask``, which
        stops at that many rows."""
        filter = self._read_filter()
        files = self._dataset.files
        if filter is not None:
            expression: pc.Expression | None = _filters.to_expression(filter)
            kept = None if expression is None else self._dataset._files_for(expression)
            if kept is not None:
                files = [files[i] for i in kept]
        files = [self._scheme + f for f in files] if self._scheme else files
        columns = self._get_data_columns()
        schema = self._dataset.schema
        if columns is not None:
            schema = pa.schema([schema.field(c) for c in columns])
        context = data_context or ray.data.DataContext.get_current()
        target = int(getattr(context, "target_max_block_size", None) or 128 << 20)
        n = max(1, min(parallelism if parallelism > 0 else len(files), len(files)))
        tasks = []
        for i in range(n):
            group = files[i * len(files) // n : (i + 1) * len(files) // n]
            if not group:
                continue
            metadata = BlockMetadata(
                num_rows=None,
                size_bytes=self._size(group),
                input_files=group,
                exec_stats=None,
            )
            read = functools.partial(_read_group, self._opened, group, columns, filter, target)
            tasks.append(
                ReadTask(read, metadata, schema=schema, per_task_row_limit=per_task_row_limit)
            )
        return tasks


def write_dataset(
    ds: ray.data.Dataset,
    path: str | os.PathLike[str],
    *,
    concurrency: int | None = None,
    ray_remote_args: dict[str, Any] | None = None,
    **options: Any,
) -> list[str]:
    """Writes ``ds`` under ``path`` through a ``DatasetDatasink`` (whose keywords ``options``
    are) and returns the files written. ``concurrency`` (the most write tasks run at once)
    and ``ray_remote_args`` (the tasks' Ray options, such as ``num_cpus``) are
    ``Dataset.write_datasink``'s; None leaves them to Ray."""
    sink = DatasetDatasink(path, **options)
    # The save mode is settled before Ray runs the dataset: "ignore" over existing files
    # computes nothing. (Ray calls on_write_start again when the first block is ready, which
    # then does nothing.)
    sink.on_write_start()
    if sink._skip:
        sink._write_id = None
        return []
    ds.write_datasink(sink, concurrency=concurrency, ray_remote_args=ray_remote_args)
    return sink.written_files


def read_dataset(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    parallelism: int = -1,
    concurrency: int | None = None,
    ray_remote_args: dict[str, Any] | None = None,
    **options: Any,
) -> ray.data.Dataset:
    """A Ray dataset of ``source`` read through a ``DatasetDatasource`` (whose keywords
    ``options`` are). ``parallelism`` (how many read tasks; -1, the default, lets Ray choose,
    and there are never more tasks than files), ``concurrency`` (the most read tasks run at
    once) and ``ray_remote_args`` (the tasks' Ray options) are
    ``ray.data.read_datasource``'s."""
    return ray.data.read_datasource(
        DatasetDatasource(source, **options),
        parallelism=parallelism,
        concurrency=concurrency,
        ray_remote_args=ray_remote_args,
    )
