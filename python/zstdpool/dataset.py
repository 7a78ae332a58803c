"""Partitioned datasets with pooled zstd compression.

``write_dataset(data, base_dir, partitioning=[...])`` follows ``pyarrow.dataset.write_dataset``:
it writes a table or a stream into Hive directories (``key=value/``) of Parquet or Arrow IPC
files, splitting rows by their partition values in Rust and writing the files on several
threads, every file's compression leased from one pool (a write of a thousand partitions makes
about as many zstd contexts as it runs threads). pyarrow (``pyarrow.dataset.dataset(base_dir,
partitioning="hive")``), polars (``scan_parquet(..., hive_partitioning=True)``, ``scan_ipc``)
and duckdb read the result.

``dataset(source, partitioning="hive")`` follows ``pyarrow.dataset.dataset`` for reading: a
directory (or a list of files) of Parquet or Arrow IPC files becomes a ``Dataset`` whose
``to_table``, ``to_batches``, ``to_reader``, ``count_rows`` and ``head`` read it with filters.
Files are pruned by their partitions before any is opened and Parquet row groups by their
statistics; the files left are read on several threads without the GIL, every page
decompressed with a pooled context, and filtered in Rust.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from zstdpool import _filters, _fs, _substrait
from zstdpool._zstdpool import DatasetBatches, DatasetScanner, write_dataset

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc

    from zstdpool._zstdpool import ContextPool

__all__ = ["Dataset", "DatasetBatches", "dataset", "write_dataset"]

# What to_batches and to_reader read ahead of the consumer by default: files are read a window
# at a time, a window holding at most this many bytes of files (or one larger file).
DEFAULT_READAHEAD_BYTES = 64 << 20


def _partitioning(partitioning: Any, infer_dictionary: bool = False) -> dict[str, Any]:
    """pyarrow's ``partitioning`` argument as the scanner's keywords; inferred types as
    dictionaries with ``infer_dictionary`` (as ``pyarrow.parquet.read_table`` infers them)."""
    if partitioning is None:
        return {}
    if isinstance(partitioning, str):
        if partitioning != "hive":
            raise ValueError(
                f'partitioning must be "hive", a list of field names, a pyarrow Partitioning '
                f"or None, not {partitioning!r}"
            )
        return {"partitioning": "hive", "infer_dictionary": infer_dictionary}
    if isinstance(partitioning, (list, tuple)):
        import pyarrow as pa

        names = list(partitioning)
        if not all(isinstance(n, str) for n in names):
            raise TypeError("partitioning: a list of partition field names must hold str")
        fields = pa.schema([(n, pa.string()) for n in names])
        return {
            "partitioning": "directory",
            "partition_schema": fields,
            "infer_partition_types": True,
            "infer_dictionary": infer_dictionary,
        }
    import pyarrow.dataset as pds

    if isinstance(partitioning, pds.HivePartitioning):
        return {"partitioning": "hive", "partition_schema": partitioning.schema}
    if isinstance(partitioning, pds.DirectoryPartitioning):
        return {
            "partitioning": "directory",
            "partition_schema": partitioning.schema,
            "infer_partition_types": False,
        }
    if isinstance(partitioning, pds.PartitioningFactory) and partitioning.type_name == "hive":
        return {"partitioning": "hive", "infer_dictionary": infer_dictionary}
    raise NotImplementedError(
        f"partitioning: a {type(partitioning).__name__} ({getattr(partitioning, 'type_name', '')}) "
        f'is not supported; pass "hive", a list of directory field names, or a '
        f"HivePartitioning or DirectoryPartitioning with its schema"
    )


class Dataset:
    """Files read as one table: ``schema`` (the first file's columns, or the given schema,
    then the partition fields), ``files``, and reads with ``columns`` and ``filter``
    (pyarrow's ``filters`` forms or a ``pyarrow.compute.Expression``).

    A filter in the tuple forms, or an Expression of the same comparisons, ``is_in``, null
    tests and boolean logic over columns and values (read through its Substrait form: see
    ``zstdpool._substrait``), prunes files by their partitions,
    Parquet row groups by their statistics and bloom filters, and pages by the page index, and
    is evaluated in Rust. Any other Expression prunes files by their partitions (pyarrow
    decides which) and is applied by pyarrow to the rows read, with every column read for it.
    Rows come in file order (files sorted by path), each file's in its order.
    """

    def __init__(self, scanner: DatasetScanner, format: str) -> None:
        self._scanner = scanner
        self._format = format

    @property
    def schema(self) -> pa.Schema:
        return self._scanner.schema

    @property
    def partition_schema(self) -> pa.Schema:
        """The partition fields, as the directories type them."""
        return self._scanner.partition_schema

    @property
    def files(self) -> list[str]:
        return self._scanner.files

    @property
    def format(self) -> str:
        return self._format

    def __repr__(self) -> str:
        return f"<zstdpool.dataset.Dataset of {len(self.files)} {self._format} files>"

    # --- a read's arguments ---------------------------------------------------------------

    def _plan(
        self, columns: Sequence[str] | None, filter: Any
    ) -> tuple[list[str] | None, tuple[Any, ...] | None, pc.Expression | None, list[int] | None]:
        """The scanner's columns, filter and files for a read; and the Expression pyarrow
        applies afterwards, if the filter is one."""
        if columns is not None:
            if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
                raise TypeError("columns must be a list of column names")
            columns = list(columns)
        made = _filters.normalize(filter)
        if made is None:
            return columns, None, None, None
        if made.tree is not None:
            return columns, made.tree, None, None
        expression = made.expression
        assert expression is not None
        tree = _substrait.to_tree(expression, self._substrait_schema())
        if tree is not None:
            return columns, tree, None, None
        return columns, None, expression, self._files_for(expression)

    def _substrait_schema(self) -> pa.Schema:
        """The schema an Expression is read against: dictionaries as their values (a field is
        referred to by its position, whatever its type)."""
        import pyarrow as pa

        return pa.schema(
            [
                f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f
                for f in self.schema
            ]
        )

    def _files_for(self, expression: pc.Expression) -> list[int] | None:
        """The files whose partitions may satisfy `expression`, as pyarrow decides it from
        the partition expressions alone (no file is opened); None when there are none."""
        if len(self.partition_schema) == 0:
            return None
        import pyarrow.compute as pc
        import pyarrow.dataset as pds
        import pyarrow.fs as pfs

        values = self._scanner.partition_values().to_pylist()
        guarantees = []
        for row in values:
            terms = [
                pc.field(k).is_null() if v is None else pc.field(k) == pc.scalar(v)
                for k, v in row.items()
            ]
            guarantee = terms[0]
            for t in terms[1:]:
                guarantee = guarantee & t
            guarantees.append(guarantee)
        paths = self.files
        fmt = pds.ParquetFileFormat() if self._format == "parquet" else pds.IpcFileFormat()
        virtual = pds.FileSystemDataset.from_paths(
            paths,
            schema=self.schema,
            format=fmt,
            filesystem=pfs.LocalFileSystem(),
            partitions=guarantees,
        )
        index = {p: i for i, p in enumerate(paths)}
        return [index[f.path] for f in virtual.get_fragments(filter=expression)]

    @staticmethod
    def _threads(use_threads: bool, threads: int | None) -> int | None:
        if threads is not None:
            return threads
        return None if use_threads else 1

    # --- reads ------------------------------------------------------------------------------

    def to_table(
        self,
        columns: Sequence[str] | None = None,
        filter: Any = None,
        *,
        use_threads: bool = True,
        threads: int | None = None,
    ) -> pa.Table:
        """Every row ``filter`` keeps (all by default), with ``columns`` (all by default), read
        on ``threads`` (every core by default; one with ``use_threads=False``)."""
        columns, tree, expression, files = self._plan(columns, filter)
        n = self._threads(use_threads, threads)
        if expression is None:
            return self._scanner.read(columns, tree, n, files)
        table = self._scanner.read(None, None, n, files).filter(expression)
        return table if columns is None else table.select(columns)

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: Any = None,
        *,
        batch_size: int | None = None,
        readahead_bytes: int = DEFAULT_READAHEAD_BYTES,
        use_threads: bool = True,
        threads: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """The rows ``to_table`` returns, as batches of at most ``batch_size`` rows (a row
        group's by default), read a window of files at a time: at most ``readahead_bytes`` of
        files (or one larger file) are read ahead of the consumer."""
        stream, columns, expression = self._stream(
            columns, filter, batch_size, readahead_bytes, use_threads, threads
        )
        return self._batches(stream, columns, expression, batch_size)

    def _stream(
        self,
        columns: Sequence[str] | None,
        filter: Any,
        batch_size: int | None,
        readahead_bytes: int,
        use_threads: bool,
        threads: int | None,
    ) -> tuple[DatasetBatches, list[str] | None, pc.Expression | None]:
        """The scanner's stream for a read, its output columns, and the Expression pyarrow
        applies to its batches (every column is streamed for one)."""
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        cols, tree, expression, files = self._plan(columns, filter)
        n = self._threads(use_threads, threads)
        scan_columns = cols if expression is None else None
        stream = self._scanner.stream(scan_columns, tree, n, files, readahead_bytes)
        return stream, cols, expression

    @staticmethod
    def _batches(
        stream: DatasetBatches,
        columns: list[str] | None,
        expression: pc.Expression | None,
        batch_size: int | None,
    ) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        for batch in stream:
            if expression is not None:
                table = pa.Table.from_batches([batch]).filter(expression)
                if columns is not None:
                    table = table.select(columns)
                parts = table.combine_chunks().to_batches()
            else:
                parts = [batch]
            for part in parts:
                if part.num_rows == 0:
                    continue
                if batch_size is None or part.num_rows <= batch_size:
                    yield part
                    continue
                for start in range(0, part.num_rows, batch_size):
                    yield part.slice(start, batch_size)

    def _output_schema(self, columns: list[str] | None) -> pa.Schema:
        import pyarrow as pa

        if columns is None:
            return self.schema
        return pa.schema([self.schema.field(c) for c in columns], metadata=self.schema.metadata)

    def to_reader(
        self,
        columns: Sequence[str] | None = None,
        filter: Any = None,
        *,
        batch_size: int | None = None,
        readahead_bytes: int = DEFAULT_READAHEAD_BYTES,
        use_threads: bool = True,
        threads: int | None = None,
    ) -> pa.RecordBatchReader:
        """``to_batches`` as a ``pyarrow.RecordBatchReader``."""
        import pyarrow as pa

        stream, cols, expression = self._stream(
            columns, filter, batch_size, readahead_bytes, use_threads, threads
        )
        if expression is None and batch_size is None:
            return pa.RecordBatchReader.from_stream(stream)
        batches = self._batches(stream, cols, expression, batch_size)
        return pa.RecordBatchReader.from_batches(self._output_schema(cols), batches)

    def count_rows(
        self, filter: Any = None, *, use_threads: bool = True, threads: int | None = None
    ) -> int:
        """The rows ``filter`` keeps (all by default). Without a filter, or where partitions
        and statistics tell, rows are counted from the files' footers without reading them."""
        _, tree, expression, files = self._plan(None, filter)
        n = self._threads(use_threads, threads)
        if expression is None:
            return self._scanner.count_rows(tree, n, files)
        return int(self._scanner.read(None, None, n, files).filter(expression).num_rows)

    def head(
        self,
        num_rows: int,
        columns: Sequence[str] | None = None,
        filter: Any = None,
        *,
        use_threads: bool = True,
        threads: int | None = None,
    ) -> pa.Table:
        """The first ``num_rows`` rows ``filter`` keeps, reading only as many files as
        needed."""
        import pyarrow as pa

        if num_rows < 0:
            raise ValueError(f"num_rows must be at least 0, not {num_rows}")
        taken: list[pa.RecordBatch] = []
        left = num_rows
        if left > 0:
            for batch in self.to_batches(
                columns, filter, readahead_bytes=1, use_threads=use_threads, threads=threads
            ):
                taken.append(batch.slice(0, left))
                left -= taken[-1].num_rows
                if left == 0:
                    break
        columns = list(columns) if columns is not None else None
        return pa.Table.from_batches(taken, schema=self._output_schema(columns))

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        """Every row, through the Arrow C stream interface: polars, duckdb and pyarrow take the
        dataset directly."""
        stream = self._scanner.stream(None, None, None, None, DEFAULT_READAHEAD_BYTES)
        return stream.__arrow_c_stream__(requested_schema)


def dataset(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    format: str = "parquet",
    partitioning: Any = "hive",
    schema: pa.Schema | None = None,
    filesystem: Any = None,
    ignore_prefixes: Sequence[str] = (".", "_"),
    pool: ContextPool | None = None,
    storage_options: dict[str, Any] | None = None,
) -> Dataset:
    """A dataset of Parquet (``format="parquet"``) or Arrow IPC (``"ipc"``, ``"arrow"``,
    ``"feather"``) files: ``source`` is a directory (walked, leaving out names that start with
    one of ``ignore_prefixes``), a file, or a list of files.

    ``partitioning`` is ``"hive"`` (``key=value`` directories; the default), a list of field
    names (the directories below the root, in order), a pyarrow ``HivePartitioning`` or
    ``DirectoryPartitioning`` with the fields' types, or None. Partition values are typed as
    pyarrow infers them (int32 where every value is one, else string) unless given;
    ``__HIVE_DEFAULT_PARTITION__`` reads as null and escaped values are unescaped. The schema
    is the first file's (or ``schema``), then the partition fields; a column a file lacks
    reads as nulls.

    ``source`` may be an object store URL ("s3://bucket/prefix", "gs://..."), with
    ``storage_options`` as polars takes them (endpoint, region, credentials, allow_http;
    environment variables fill in the rest): the prefix is listed, and files are read with
    GETs issued from Rust, as many in flight as ``storage_options["max_in_flight"]`` (32).
    ``filesystem`` may be any pyarrow filesystem (``LocalFileSystem``, ``SubTreeFileSystem``,
    ``S3FileSystem``, ``PyFileSystem``, ...) or an fsspec filesystem, and ``source`` any URI
    that pyarrow or fsspec resolves ("memory://...", "hdfs://..."; ``storage_options`` go to
    fsspec). A local filesystem is read as local paths; any other through its own calls, each
    with the GIL (pyarrow's release it while they wait), 8 files at a time by default.
    """
    return _open(
        source,
        format,
        partitioning,
        schema,
        filesystem,
        ignore_prefixes,
        pool,
        storage_options=storage_options,
    )


def _open(
    source: Any,
    format: str,
    partitioning: Any,
    schema: pa.Schema | None,
    filesystem: Any,
    ignore_prefixes: Sequence[str],
    pool: ContextPool | None,
    infer_dictionary: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> Dataset:
    """``dataset``, with inferred partition types as dictionaries on request (what
    ``zstdpool.parquet.read_table`` asks for, as pyarrow's does)."""
    source, storage_options = _fs.resolve(source, filesystem, storage_options, "source")
    fmt = format.lower()
    if fmt not in ("parquet", "ipc", "arrow", "feather"):
        raise ValueError(
            f'format must be "parquet", or "ipc", "arrow" or "feather", not {format!r}'
        )
    if isinstance(source, _fs.FileSystemPath):
        src: Any = source
    elif isinstance(source, (str, os.PathLike)):
        src = os.fspath(source)
    elif isinstance(source, Sequence):
        src = [s if _fs.is_store_url(s) else os.fspath(s) for s in source]
    else:
        raise TypeError(
            f"source must be a directory, a file, or a list of files, not '{type(source).__name__}'"
        )
    if isinstance(src, str) and not _fs.is_store_url(src) and not os.path.exists(src):
        raise FileNotFoundError(2, "No such file or directory", src)
    scanner = DatasetScanner(
        src,
        format=fmt,
        schema=schema,
        ignore_prefixes=list(ignore_prefixes),
        pool=pool,
        storage_options=storage_options,
        **_partitioning(partitioning, infer_dictionary),
    )
    return Dataset(scanner, "parquet" if fmt == "parquet" else "ipc")
