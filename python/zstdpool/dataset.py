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

import functools
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zstdpool import _filters, _fs, _substrait, _zstdpool
from zstdpool._zstdpool import DatasetBatches, DatasetScanner

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as pds
    import pyarrow.parquet as pq

    from zstdpool._zstdpool import ContextPool, ParquetWriteOptions
    from zstdpool._zstdpool import WrittenFile as _Written

__all__ = ["Dataset", "DatasetBatches", "Scanner", "WrittenFile", "dataset", "write_dataset"]

# What to_batches and to_reader read ahead of the consumer by default: files are read a window
# at a time, a window holding files that decode to at most this many bytes (or one file that
# decodes to more), weighed from their footers.
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
        return {
            "partitioning": "hive",
            "partition_schema": partitioning.schema,
            "null_fallback": _null_fallback(partitioning),
        }
    if isinstance(partitioning, pds.FilenamePartitioning):
        return {
            "partitioning": "filename",
            "partition_schema": partitioning.schema,
            "infer_partition_types": False,
        }
    if isinstance(partitioning, pds.DirectoryPartitioning):
        return {
            "partitioning": "directory",
            "partition_schema": partitioning.schema,
            "infer_partition_types": False,
        }
    if isinstance(partitioning, pds.PartitioningFactory) and partitioning.type_name == "hive":
        return {"partitioning": "hive", "infer_dictionary": infer_dictionary}
    raise TypeError(
        f"partitioning: a {type(partitioning).__name__} ({getattr(partitioning, 'type_name', '')}) "
        f'is not supported; pass "hive", a list of directory field names, or a '
        f"HivePartitioning, DirectoryPartitioning or FilenamePartitioning with its schema"
    )


class Dataset:
    """Files read as one table: ``schema`` (the first file's columns, or the given schema,
    then the partition fields), ``files``, and reads with ``columns`` and ``filter``
    (pyarrow's ``filters`` forms or a ``pyarrow.compute.Expression``), as
    ``pyarrow.dataset.Dataset``: ``to_table``, ``to_batches``, ``to_reader``, ``count_rows``,
    ``head``, ``take``, ``scanner``, ``filter`` and ``replace_schema``.

    A filter in the tuple forms, or an Expression of the same comparisons, ``is_in``, null
    tests and boolean logic over columns and values (read through its Substrait form: see
    ``zstdpool._substrait``), prunes files by their partitions,
    Parquet row groups by their statistics and bloom filters, and pages by the page index, and
    is evaluated in Rust. Any other Expression prunes files by their partitions (pyarrow
    decides which) and is applied by pyarrow to the rows read, with every column read for it.
    ``columns`` is a list of names, or a dict of output names to Expressions (pyarrow
    evaluates them on the rows read). Rows come in file order (files sorted by path), each
    file's in its order.

    A Dataset is made by :func:`dataset`, not constructed directly: ``scanner`` is the core's
    scanner of the files, ``format`` "parquet" or "ipc", ``filter`` the dataset's own filter
    (None: none; a read's filter applies on top of it), and ``opened`` how the source was
    opened (what ``replace_schema`` opens again and a pickle holds; None: neither works).
    """

    def __init__(
        self,
        scanner: DatasetScanner,
        format: str,
        filter: Any = None,
        opened: functools.partial[Dataset] | None = None,
    ) -> None:
        self._scanner = scanner
        self._format = format
        self._filter = filter
        # How the dataset was opened (a partial of ``_open`` taking ``schema=``): opens the
        # same source again with another schema (replace_schema), and is what a pickle holds.
        self._opened = opened

    def __reduce__(self) -> tuple[Any, ...]:
        if self._opened is None:
            raise TypeError("this dataset was not opened from a source, and cannot be pickled")
        return (_reopened, (self._opened, self._filter))

    @property
    def schema(self) -> pa.Schema:
        """The files' columns (or the given schema), then the partition fields."""
        return self._scanner.schema

    @property
    def partition_schema(self) -> pa.Schema:
        """The partition fields, as the directories type them."""
        return self._scanner.partition_schema

    @property
    def partitioning(self) -> pds.Partitioning:
        """The partitioning the files are read with, as ``pyarrow.dataset.Dataset.partitioning``:
        the one given, or the kind named (a ``HivePartitioning`` for "hive", a
        ``DirectoryPartitioning`` for field names or none) with the partition fields as they
        were typed; a dictionary-typed field's dictionary holds its values. pyarrow also
        gives the values of other fields it discovered; its constructors take no such values."""
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.dataset as pds

        given = None if self._opened is None else self._opened.keywords.get("partitioning")
        if isinstance(given, pds.Partitioning):
            return given
        schema = self.partition_schema
        dictionaries = {}
        if len(schema) > 0:
            values = self._scanner.partition_values()
            for i, field in enumerate(schema):
                if pa.types.is_dictionary(field.type):
                    column = values.field(i).cast(field.type.value_type)
                    dictionaries[field.name] = pc.unique(column.drop_null())
        if given == "hive":
            return pds.HivePartitioning(schema, dictionaries=dictionaries or None)
        return pds.DirectoryPartitioning(schema, dictionaries=dictionaries or None)

    @property
    def files(self) -> list[str]:
        """The dataset's files, sorted by path."""
        return self._scanner.files

    @property
    def format(self) -> str:
        """ "parquet" or "ipc"."""
        return self._format

    def __repr__(self) -> str:
        return f"<zstdpool.dataset.Dataset of {len(self.files)} {self._format} files>"

    # --- datasets made from this one ------------------------------------------------------------

    def filter(self, expression: Any) -> Dataset:
        """This dataset with only the rows ``expression`` keeps (an Expression, or pyarrow's
        ``filters`` forms); the filters of later reads apply on top of it."""
        if _filters.normalize(expression) is None:
            raise TypeError("filter: expression must be an Expression or filters, not None")
        return Dataset(self._scanner, self._format, self._combined(expression), self._opened)

    def replace_schema(self, schema: pa.Schema) -> Dataset:
        """The source, listed again, read as ``schema`` (columns a file lacks read as nulls;
        a column that cannot be read as its type is an error when read)."""
        import pyarrow as pa

        if not isinstance(schema, pa.Schema):
            raise TypeError(f"schema must be a pyarrow Schema, not '{type(schema).__name__}'")
        if self._opened is None:
            raise NotImplementedError("this dataset cannot be reopened with another schema")
        return _reopened(functools.partial(self._opened, schema=schema), self._filter)

    def scanner(
        self,
        columns: Sequence[str] | dict[str, pc.Expression] | None = None,
        filter: Any = None,
        *,
        batch_size: int | None = None,
        readahead_bytes: int = DEFAULT_READAHEAD_BYTES,
        use_threads: bool = True,
        threads: int | None = None,
    ) -> Scanner:
        """A ``Scanner`` of this dataset's rows, as ``pyarrow.dataset.Dataset.scanner``, its
        reads fixed to ``columns`` (None: all) and the rows ``filter`` keeps (None: all), in
        batches of at most ``batch_size`` rows, with ``readahead_bytes`` read ahead, on
        ``threads`` threads (every core by default; one with ``use_threads=False``): the
        keywords of ``to_batches``."""
        return Scanner.from_dataset(
            self,
            columns=columns,
            filter=filter,
            batch_size=batch_size,
            readahead_bytes=readahead_bytes,
            use_threads=use_threads,
            threads=threads,
        )

    # --- a read's arguments ---------------------------------------------------------------

    def _combined(self, filter: Any) -> Any:
        """The dataset's own filter and a read's, as one."""
        if self._filter is None:
            return filter
        if filter is None:
            return self._filter
        own, given = _filters.to_expression(self._filter), _filters.to_expression(filter)
        assert own is not None and given is not None
        return own & given

    def _columns(
        self,
        columns: Any,
    ) -> tuple[list[str] | None, dict[str, pc.Expression] | None]:
        """The columns a read names, and the projection it computes from them, if any: a
        dict of Expressions (every column is read), or names that include a dotted path into
        a struct ("interaction.type", output as its last name, as pyarrow names it; the
        columns it lies in are read)."""
        import pyarrow.compute as pc

        if isinstance(columns, dict):
            for name, value in columns.items():
                if not isinstance(name, str) or not isinstance(value, pc.Expression):
                    raise TypeError(
                        "columns: a dict must map output names (str) to pyarrow Expressions"
                    )
            return None, columns
        if columns is None:
            return None, None
        if isinstance(columns, str):
            raise TypeError("columns must be a list of column names")
        columns = list(columns)
        names = set(self.schema.names)
        paths = [c for c in columns if isinstance(c, str) and c not in names and "." in c]
        if not paths:
            return columns, None
        roots: list[str] = []
        projection: dict[str, pc.Expression] = {}
        for c in columns:
            parts = c.split(".") if c in paths else [c]
            if parts[0] not in names:
                return columns, None  # the scanner names the column missing
            if parts[0] not in roots:
                roots.append(parts[0])
            projection[parts[-1]] = pc.field(*parts)
        return roots, projection

    def _plan(
        self, columns: Sequence[str] | None, filter: Any
    ) -> tuple[list[str] | None, tuple[Any, ...] | None, pc.Expression | None, list[int] | None]:
        """The scanner's columns, filter and files for a read; and the Expression pyarrow
        applies afterwards, if the filter is one."""
        if columns is not None:
            if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
                raise TypeError("columns must be a list of column names")
            columns = list(columns)
        made = _filters.normalize(self._combined(filter))
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
        columns: Sequence[str] | dict[str, pc.Expression] | None = None,
        filter: Any = None,
        *,
        use_threads: bool = True,
        threads: int | None = None,
    ) -> pa.Table:
        """Every row ``filter`` keeps (all by default), with ``columns`` (all by default), read
        on ``threads`` (every core by default; one with ``use_threads=False``)."""
        names, projection = self._columns(columns)
        names, tree, expression, files = self._plan(names, filter)
        n = self._threads(use_threads, threads)
        if expression is None:
            table = self._scanner.read(names, tree, n, files)
        else:
            table = self._scanner.read(None, None, n, files).filter(expression)
            table = table if names is None else table.select(names)
        return table if projection is None else _project(table, projection)

    def to_batches(
        self,
        columns: Sequence[str] | dict[str, pc.Expression] | None = None,
        filter: Any = None,
        *,
        batch_size: int | None = None,
        readahead_bytes: int = DEFAULT_READAHEAD_BYTES,
        use_threads: bool = True,
        threads: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """The rows ``to_table`` returns, as batches of at most ``batch_size`` rows (a row
        group's by default), read a window of files at a time: files that decode to at most
        ``readahead_bytes`` (or one file that decodes to more) are read ahead of the
        consumer, weighed from their footers before they are read.

        - ``columns``: the columns to read (names, dotted paths into structs, or a dict of
          output names to Expressions); None reads all.
        - ``filter``: an Expression or pyarrow's ``filters`` forms, applied on top of the
          dataset's own filter; None adds none.
        - ``batch_size``: the most rows in a batch; None yields batches as the files hold them.
        - ``readahead_bytes``: how much decoded data is read ahead (64 MiB by default).
        - ``use_threads``: as in pyarrow; False reads on one thread.
        - ``threads``: how many threads read (every core by default); overrides
          ``use_threads``.
        """
        names, projection = self._columns(columns)
        stream, names, expression = self._stream(
            names, filter, batch_size, readahead_bytes, use_threads, threads
        )
        return self._batches(stream, names, expression, batch_size, projection)

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
        projection: dict[str, pc.Expression] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        for batch in stream:
            if expression is not None or projection is not None:
                table = pa.Table.from_batches([batch])
                if expression is not None:
                    table = table.filter(expression)
                    if columns is not None:
                        table = table.select(columns)
                if projection is not None:
                    table = _project(table, projection)
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

    def _output_schema(self, columns: Any) -> pa.Schema:
        import pyarrow as pa

        names, projection = self._columns(columns)
        if projection is not None:
            return _project(self.schema.empty_table(), projection).schema
        if names is None:
            return self.schema
        return pa.schema([self.schema.field(c) for c in names], metadata=self.schema.metadata)

    def to_reader(
        self,
        columns: Sequence[str] | dict[str, pc.Expression] | None = None,
        filter: Any = None,
        *,
        batch_size: int | None = None,
        readahead_bytes: int = DEFAULT_READAHEAD_BYTES,
        use_threads: bool = True,
        threads: int | None = None,
    ) -> pa.RecordBatchReader:
        """``to_batches`` as a ``pyarrow.RecordBatchReader``, with its keywords: ``columns``
        to read (None: all), the rows ``filter`` keeps (None: all), at most ``batch_size`` rows
        a batch (None: as the files hold them), ``readahead_bytes`` read ahead, on ``threads``
        threads (every core by default; one with ``use_threads=False``)."""
        import pyarrow as pa

        names, projection = self._columns(columns)
        stream, cols, expression = self._stream(
            names, filter, batch_size, readahead_bytes, use_threads, threads
        )
        if expression is None and batch_size is None and projection is None:
            return pa.RecordBatchReader.from_stream(stream)
        batches = self._batches(stream, cols, expression, batch_size, projection)
        return pa.RecordBatchReader.from_batches(self._output_schema(columns), batches)

    def count_rows(
        self, filter: Any = None, *, use_threads: bool = True, threads: int | None = None
    ) -> int:
        """The rows ``filter`` keeps (all by default). Without a filter, or where partitions
        and statistics tell, rows are counted from the files' footers without reading them;
        files that must be read are read on ``threads`` threads (every core by default; one
        with ``use_threads=False``)."""
        _, tree, expression, files = self._plan(None, filter)
        n = self._threads(use_threads, threads)
        if expression is None:
            return self._scanner.count_rows(tree, n, files)
        return int(self._scanner.read(None, None, n, files).filter(expression).num_rows)

    def head(
        self,
        num_rows: int,
        columns: Sequence[str] | dict[str, pc.Expression] | None = None,
        filter: Any = None,
        *,
        use_threads: bool = True,
        threads: int | None = None,
    ) -> pa.Table:
        """The first ``num_rows`` rows ``filter`` keeps (all by default), with ``columns``
        (all by default), reading only as many files as needed, on ``threads`` threads (every
        core by default; one with ``use_threads=False``)."""
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
        if columns is not None and not isinstance(columns, dict):
            columns = list(columns)
        return pa.Table.from_batches(taken, schema=self._output_schema(columns))

    def take(
        self,
        indices: Any,
        columns: Sequence[str] | dict[str, pc.Expression] | None = None,
        filter: Any = None,
        *,
        use_threads: bool = True,
        threads: int | None = None,
    ) -> pa.Table:
        """The rows at ``indices`` (positions among the rows ``filter`` keeps, in
        ``to_table``'s order), with ``columns`` (all by default), reading only the files up
        to the last of them, on ``threads`` threads (every core by default; one with
        ``use_threads=False``)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        index = (
            indices
            if isinstance(indices, (pa.Array, pa.ChunkedArray))
            else pa.array(indices, pa.int64())
        )
        if not pa.types.is_integer(index.type):
            raise TypeError(f"indices must be integers, not {index.type}")
        if len(index) == 0 or index.null_count == len(index):
            return self.head(0, columns, filter).take(index)
        low, high = pc.min(index).as_py(), pc.max(index).as_py()
        if low < 0:
            raise IndexError(f"Index {low} out of bounds")
        table = self.head(high + 1, columns, filter, use_threads=use_threads, threads=threads)
        if table.num_rows <= high:
            raise IndexError(f"Index {high} out of bounds")
        return table.take(index)

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        """Every row, through the Arrow C stream interface: polars, duckdb and pyarrow take the
        dataset directly."""
        if self._filter is not None:
            return self.to_reader().__arrow_c_stream__(requested_schema)
        stream = self._scanner.stream(None, None, None, None, DEFAULT_READAHEAD_BYTES)
        return stream.__arrow_c_stream__(requested_schema)


def _project(table: pa.Table, projection: dict[str, pc.Expression]) -> pa.Table:
    """``table``'s columns computed as ``projection`` names them, by pyarrow's own
    evaluation of each Expression."""
    import pyarrow.dataset as pds

    return pds.dataset(table).to_table(columns=projection)


class Scanner:
    """A read of a dataset made ready, as ``pyarrow.dataset.Scanner``: its columns, filter
    and batch size fixed, then ``to_table``, ``to_batches``, ``to_reader``, ``count_rows``,
    ``head`` or ``take`` (each reads the files again).

    Made by ``Scanner.from_dataset`` or ``Dataset.scanner``: ``dataset`` is the Dataset read;
    ``columns``, ``filter``, ``batch_size``, ``readahead_bytes``, ``use_threads`` and
    ``threads`` are fixed for every read, with the meanings ``Dataset.to_batches`` gives
    them (a ``batch_size`` below 1 is refused)."""

    def __init__(
        self,
        dataset: Dataset,
        columns: Any,
        filter: Any,
        batch_size: int | None,
        readahead_bytes: int,
        use_threads: bool,
        threads: int | None,
    ) -> None:
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        self._dataset = dataset
        self._columns = columns
        self._filter = filter
        self._batch_size = batch_size
        self._readahead = readahead_bytes
        self._use_threads = use_threads
        self._threads = threads
        # Checked now, as pyarrow's scanner checks them when it is made (the files are
        # planned when a read starts).
        _filters.normalize(filter)
        self._schema = dataset._output_schema(columns)

    @staticmethod
    def from_dataset(
        dataset: Dataset,
        *,
        columns: Sequence[str] | dict[str, pc.Expression] | None = None,
        filter: Any = None,
        batch_size: int | None = None,
        readahead_bytes: int = DEFAULT_READAHEAD_BYTES,
        use_threads: bool = True,
        threads: int | None = None,
    ) -> Scanner:
        """A scanner of ``dataset``'s rows (``Dataset.scanner`` is the same call), its reads
        fixed to ``columns`` (None: all) and the rows ``filter`` keeps (None: all), in batches
        of at most ``batch_size`` rows, with ``readahead_bytes`` read ahead, on ``threads``
        threads (every core by default; one with ``use_threads=False``): the keywords of
        ``Dataset.to_batches``."""
        if not isinstance(dataset, Dataset):
            raise TypeError(
                f"dataset must be a zstdpool.dataset.Dataset, not '{type(dataset).__name__}'"
            )
        return Scanner(dataset, columns, filter, batch_size, readahead_bytes, use_threads, threads)

    @property
    def dataset_schema(self) -> pa.Schema:
        """The schema of the dataset scanned."""
        return self._dataset.schema

    @property
    def projected_schema(self) -> pa.Schema:
        """The schema of the rows read: the columns chosen, or the projection's."""
        return self._schema

    def to_table(self) -> pa.Table:
        """Every row the scan keeps, as one Table."""
        return self._dataset.to_table(
            self._columns, self._filter, use_threads=self._use_threads, threads=self._threads
        )

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The rows as batches of at most ``batch_size`` rows, a window of files at a time."""
        return self._dataset.to_batches(
            self._columns,
            self._filter,
            batch_size=self._batch_size,
            readahead_bytes=self._readahead,
            use_threads=self._use_threads,
            threads=self._threads,
        )

    def to_reader(self) -> pa.RecordBatchReader:
        """``to_batches`` as a ``pyarrow.RecordBatchReader``."""
        return self._dataset.to_reader(
            self._columns,
            self._filter,
            batch_size=self._batch_size,
            readahead_bytes=self._readahead,
            use_threads=self._use_threads,
            threads=self._threads,
        )

    def count_rows(self) -> int:
        """The rows the scan's filter keeps, from footers where they tell."""
        return self._dataset.count_rows(
            self._filter, use_threads=self._use_threads, threads=self._threads
        )

    def head(self, num_rows: int) -> pa.Table:
        """The first ``num_rows`` rows, reading only as many files as needed."""
        return self._dataset.head(
            num_rows,
            self._columns,
            self._filter,
            use_threads=self._use_threads,
            threads=self._threads,
        )

    def take(self, indices: Any) -> pa.Table:
        """The rows at ``indices`` among those the scan keeps."""
        return self._dataset.take(
            indices,
            self._columns,
            self._filter,
            use_threads=self._use_threads,
            threads=self._threads,
        )

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        """The rows, through the Arrow C stream interface."""
        return self.to_reader().__arrow_c_stream__(requested_schema)


def dataset(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    format: str | pds.FileFormat = "parquet",
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
    names (the directories below the root, in order), a pyarrow ``HivePartitioning``,
    ``DirectoryPartitioning`` or ``FilenamePartitioning`` (values before the file name's
    last ``_``) with the fields' types, or None. Partition values are typed as
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

    ``pool`` is the ``ContextPool`` whose contexts decompress the files when they are read
    (None: the default pool).
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


def _format_name(format: Any) -> str:
    """``format`` as its name: a str, or a pyarrow ``FileFormat`` (``ParquetFileFormat()``
    is "parquet", ``IpcFileFormat()`` "arrow", ``FeatherFileFormat()`` "feather"; others
    are named so that the caller refuses them by name)."""
    if isinstance(format, str):
        return format
    if isinstance(getattr(format, "default_extname", None), str):
        return str(format.default_extname)
    raise TypeError(
        f"format must be a str, a pyarrow FileFormat or None, not {type(format).__name__}"
    )


def _open(
    source: Any,
    format: str | pds.FileFormat,
    partitioning: Any,
    schema: pa.Schema | None,
    filesystem: Any,
    ignore_prefixes: Sequence[str],
    pool: ContextPool | None,
    infer_dictionary: bool = False,
    storage_options: dict[str, Any] | None = None,
    page_checksum_verification: bool = False,
) -> Dataset:
    """``dataset``, with inferred partition types as dictionaries and page checksums
    verified on request (what ``zstdpool.parquet.read_table`` asks for, as pyarrow's does)."""
    given_source, given_options = source, storage_options
    source, storage_options = _fs.resolve(source, filesystem, storage_options, "source")
    fmt = _format_name(format).lower()
    if fmt not in ("parquet", "ipc", "arrow", "feather"):
        raise ValueError(f'format must be "parquet", or "ipc", "arrow" or "feather", not {fmt!r}')
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
    _check_listed_files(src)
    if schema is not None:
        names = schema.names
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"schema: the column {twice[0]!r} is named more than once")
    import pyarrow.dataset as pds

    if isinstance(partitioning, pds.PartitioningFactory):
        partitioning = _discovered(partitioning, src, fmt, ignore_prefixes)
    keywords = _partitioning(partitioning, infer_dictionary)
    scanner = DatasetScanner(
        src,
        format=fmt,
        schema=schema,
        ignore_prefixes=list(ignore_prefixes),
        pool=pool,
        storage_options=storage_options,
        page_checksum_verification=page_checksum_verification,
        **keywords,
    )
    opened = functools.partial(
        _open,
        source=given_source,
        format=format,
        partitioning=partitioning,
        schema=schema,
        filesystem=filesystem,
        ignore_prefixes=tuple(ignore_prefixes),
        pool=pool,
        infer_dictionary=infer_dictionary,
        storage_options=given_options,
        page_checksum_verification=page_checksum_verification,
    )
    return Dataset(scanner, "parquet" if fmt == "parquet" else "ipc", opened=opened)


def _check_listed_files(src: Any) -> None:
    """Refuses a list of files that names a directory, naming it (a directory is read as
    a dataset only when it is the source)."""
    if isinstance(src, list):
        for path in src:
            if not _fs.is_store_url(path) and os.path.isdir(path):
                raise IsADirectoryError(
                    21, f"{path} points to a directory, but only file paths are supported"
                )
    elif isinstance(src, _fs.FileSystemPath) and isinstance(src.keys, list):
        import pyarrow.fs as pafs

        fs = src.adapter.filesystem
        paths = [src.adapter.root + k for k in src.keys]
        for info in fs.get_file_info(paths):
            if info.type == pafs.FileType.Directory:
                raise IsADirectoryError(
                    21, f"{info.path} points to a directory, but only file paths are supported"
                )


def _reopened(opened: functools.partial[Dataset], filter: Any) -> Dataset:
    """The dataset ``opened`` opens, with ``filter``: a pickled dataset lists its source
    again where it is unpickled."""
    dataset = opened()
    return Dataset(dataset._scanner, dataset._format, filter, opened)


def _discovered(
    factory: pds.PartitioningFactory, src: Any, fmt: str, ignore_prefixes: Sequence[str]
) -> Any:
    """The partitioning a pyarrow ``PartitioningFactory`` (``ds.partitioning(field_names=...)``,
    ``HivePartitioning.discover(infer_dictionary=True)``, ...) finds under ``src``, found by
    pyarrow's own discovery: a factory shows nothing of its options (its field names, types or
    dictionaries) but its kind, so pyarrow walks the files once to apply them. A hive factory
    over an object store URL, which pyarrow cannot list with ``storage_options``, reads as
    ``"hive"``; other factories there are refused."""
    import pyarrow.dataset as pds

    if isinstance(src, _fs.FileSystemPath):
        keys = src.keys
        root = src.adapter.root
        paths: Any = [root + k for k in keys] if isinstance(keys, list) else root + keys
        filesystem = src.adapter.filesystem
    elif _fs.is_store_url(src) or (isinstance(src, list) and any(map(_fs.is_store_url, src))):
        if factory.type_name == "hive":
            return "hive"
        raise TypeError(
            f"partitioning: a {factory.type_name} PartitioningFactory cannot be discovered "
            f"in an object store URL; pass a list of field names or a "
            f"{factory.type_name.capitalize()}Partitioning with its schema"
        )
    else:
        paths, filesystem = src, None
    found = pds.dataset(
        paths,
        format="parquet" if fmt == "parquet" else "ipc",
        partitioning=factory,
        filesystem=filesystem,
        ignore_prefixes=list(ignore_prefixes),
    )
    return found.partitioning


# --- writing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class WrittenFile:
    """A file written, as ``file_visitor`` receives it (pyarrow's ``WrittenFile``): its
    ``path`` ("bucket/key" in an object store), ``metadata``, the Parquet footer
    (``pyarrow.parquet.FileMetaData``; None for IPC files and for files that are not local,
    such as an object store's), and its ``size`` in bytes."""

    path: str
    metadata: pq.FileMetaData | None
    size: int


def _is_table_or_batch(item: Any) -> bool:
    import pyarrow as pa

    return isinstance(item, (pa.Table, pa.RecordBatch))


def _write_input(data: Any, schema: pa.Schema | None, use_threads: bool) -> tuple[Any, str | None]:
    """``data`` as what the writer streams (a Table, a RecordBatch, or an Arrow stream), and
    the format of the files it was read from (a dataset's), if any. Datasets and scanners are
    streamed, never read whole."""
    import pyarrow as pa
    import pyarrow.dataset as pds

    if isinstance(data, (list, tuple)):
        if not data and schema is None:
            raise ValueError("data is an empty list: give its schema with schema=")
        for i, item in enumerate(data):
            if not _is_table_or_batch(item):
                raise TypeError(
                    f"data[{i}] must be a pyarrow Table or RecordBatch, not '{type(item).__name__}'"
                )
        want = schema if schema is not None else data[0].schema
        for i, item in enumerate(data):
            if not item.schema.equals(want):
                raise TypeError(
                    f"data[{i}] has schema\n{item.schema}\nwhich does not match the expected "
                    f"schema\n{want}"
                )
        batches = (b for item in data for b in _batches_of(item))
        return pa.RecordBatchReader.from_batches(want, batches), None
    if _is_table_or_batch(data):
        if schema is not None and not data.schema.equals(schema):
            data = data.cast(schema)
        return data, None
    if isinstance(data, pds.Scanner) or isinstance(data, Scanner):
        if schema is not None:
            raise ValueError("Cannot specify a schema when writing a Scanner")
        return data.to_reader(), None
    if isinstance(data, pds.Dataset):
        fmt = data.format.default_extname if isinstance(data, pds.FileSystemDataset) else None
        own = _own_reading(data)
        if own is not None:
            return _with_schema(own.to_reader(use_threads=use_threads), schema), fmt
        reader = data.scanner(use_threads=use_threads).to_reader()
        return _with_schema(reader, schema), fmt
    if isinstance(data, Dataset):
        return _with_schema(data.to_reader(use_threads=use_threads), schema), data.format
    if isinstance(data, pa.RecordBatchReader) or hasattr(data, "__arrow_c_stream__"):
        return (data if schema is None else _with_schema(data, schema)), None
    if hasattr(data, "__arrow_c_array__"):
        return data, None
    if hasattr(data, "__iter__") and not isinstance(data, (str, bytes, dict)):
        if schema is None:
            raise ValueError("data is an iterable of batches: give their schema with schema=")
        return pa.RecordBatchReader.from_batches(schema, _checked_batches(data, schema)), None
    raise TypeError(
        "data must be a Table, RecordBatch, RecordBatchReader, a list of Tables or "
        "RecordBatches, an iterable of RecordBatches (with schema=), a pyarrow or zstdpool "
        f"Dataset or Scanner, or an Arrow stream object, not '{type(data).__name__}'"
    )


def _own_reading(data: pds.Dataset) -> Dataset | None:
    """A pyarrow ``FileSystemDataset`` of local Parquet or IPC files, flat or Hive-partitioned,
    opened with zstdpool's reader (its files, schema and partitioning), which reads a dataset
    of many small files several times faster than pyarrow's scanner; None for any other
    dataset, which pyarrow's scanner then reads."""
    import pyarrow.dataset as pds
    import pyarrow.fs as pfs

    if not isinstance(data, pds.FileSystemDataset):
        return None
    if not isinstance(data.filesystem, pfs.LocalFileSystem):
        return None
    scan_options = getattr(data, "_scan_options", None)
    if scan_options is None or scan_options.get("filter") is not None:
        # A dataset filtered with Dataset.filter: its filter is pyarrow's to apply.
        return None
    if isinstance(data.format, pds.ParquetFileFormat):
        fmt = "parquet"
    elif isinstance(data.format, pds.IpcFileFormat):
        fmt = "ipc"
    else:
        return None
    partitioning = data.partitioning
    if partitioning is not None and len(partitioning.schema) == 0:
        partitioning = None  # pyarrow's "no partitioning"
    # Hive keys name themselves in any path; directory and file name values are positions
    # below a base directory, which a FileSystemDataset does not give.
    if partitioning is not None and not isinstance(partitioning, pds.HivePartitioning):
        return None
    files = list(data.files)
    if not files:
        return None
    try:
        return _open(files, fmt, partitioning, data.schema, None, (), None)
    except (NotImplementedError, ValueError, TypeError):
        # A partitioning zstdpool's reader does not take: pyarrow's scanner reads it.
        return None


def _batches_of(item: pa.Table | pa.RecordBatch) -> list[pa.RecordBatch]:
    import pyarrow as pa

    return [item] if isinstance(item, pa.RecordBatch) else item.to_batches()


def _checked_batches(items: Any, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    for i, item in enumerate(items):
        if not _is_table_or_batch(item):
            raise TypeError(
                f"data: item {i} of the iterable must be a RecordBatch, not '{type(item).__name__}'"
            )
        if not item.schema.equals(schema):
            raise TypeError(
                f"data: item {i} has schema\n{item.schema}\nwhich does not match the given "
                f"schema\n{schema}"
            )
        yield from _batches_of(item)


def _with_schema(stream: Any, schema: pa.Schema | None) -> Any:
    """``stream`` cast to ``schema`` as it is read (as pyarrow's ``from_stream`` casts)."""
    import pyarrow as pa

    if schema is None:
        return stream
    return pa.RecordBatchReader.from_stream(stream, schema=schema)


def _null_fallback(partitioning: Any) -> str | None:
    """What a pyarrow ``HivePartitioning`` names a null value, where it is not
    ``__HIVE_DEFAULT_PARTITION__`` (its ``null_fallback``); None otherwise. pyarrow does not
    show it, but formats a null with it."""
    import urllib.parse

    import pyarrow.compute as pc
    import pyarrow.dataset as pds

    if not isinstance(partitioning, pds.HivePartitioning) or len(partitioning.schema) == 0:
        return None
    directory, _ = partitioning.format(pc.field(partitioning.schema.names[0]).is_null())
    value = urllib.parse.unquote(directory.split("/")[0].split("=", 1)[1])
    return None if value == "__HIVE_DEFAULT_PARTITION__" else value


def _write_partitioning(partitioning: Any, flavor: str | None) -> tuple[list[str], str | None]:
    """pyarrow's ``partitioning`` and ``partitioning_flavor`` as names and a flavor (None:
    directories of values, "hive", "filename")."""
    import pyarrow.dataset as pds

    if flavor not in (None, "hive", "filename"):
        raise ValueError(f'partitioning_flavor must be None, "hive" or "filename", not {flavor!r}')
    if partitioning is None:
        return [], flavor
    if isinstance(partitioning, (list, tuple)):
        names = list(partitioning)
        if not all(isinstance(n, str) for n in names):
            raise TypeError("partitioning: a list of partition columns must hold their names (str)")
        return names, flavor
    if isinstance(partitioning, pds.PartitioningFactory):
        raise ValueError(
            "partitioning: a PartitioningFactory cannot be used (did you call "
            "pyarrow.dataset.partitioning without supplying a schema?)"
        )
    if isinstance(partitioning, pds.Partitioning):
        if flavor is not None:
            raise ValueError(
                "Providing a partitioning_flavor with a Partitioning object is not supported"
            )
        kinds = {
            pds.HivePartitioning: "hive",
            pds.FilenamePartitioning: "filename",
            pds.DirectoryPartitioning: None,
        }
        for kind, named in kinds.items():
            if isinstance(partitioning, kind):
                return list(partitioning.schema.names), named
    raise TypeError(
        "partitioning must be a list of column names, a pyarrow Partitioning (directory, hive "
        f"or filename) or None, not '{type(partitioning).__name__}'"
    )


def _visit(file_visitor: Any, written: list[_Written], fmt: str, local: bool) -> None:
    """Calls ``file_visitor`` with each file written, its Parquet footer read back where the
    files are local (an object store's paths are "bucket/key", as pyarrow gives them)."""
    for f in written:
        metadata = None
        if fmt == "parquet" and local:
            import pyarrow.parquet as pq

            metadata = pq.read_metadata(f["path"])
        file_visitor(WrittenFile(f["path"], metadata, f["size"]))


def write_dataset(
    data: Any,
    base_dir: str | os.PathLike[str],
    *,
    basename_template: str | None = None,
    format: str | pds.FileFormat | None = None,
    partitioning: Any = None,
    partitioning_flavor: str | None = None,
    schema: pa.Schema | None = None,
    filesystem: Any = None,
    file_options: ParquetWriteOptions | dict[str, Any] | None = None,
    use_threads: bool = True,
    preserve_order: bool = False,
    max_partitions: int | None = None,
    max_open_files: int | None = None,
    max_rows_per_file: int | None = None,
    min_rows_per_group: int | None = None,
    max_rows_per_group: int | None = None,
    file_visitor: Any = None,
    existing_data_behavior: str = "error",
    create_dir: bool = True,
    compression: str | None = "zstd",
    level: int | None = None,
    max_pending_bytes: int = 256 << 20,
    threads: int | None = None,
    fsync: bool = False,
    pool: ContextPool | None = None,
    storage_options: dict[str, Any] | None = None,
) -> list[_Written]:
    """Writes ``data`` as a dataset under ``base_dir``, as ``pyarrow.dataset.write_dataset``,
    every file's compression leased from one pool. Returns the files written, as dicts of
    ``path``, ``num_rows`` and ``size``, in no particular order.

    ``data`` is anything pyarrow's takes: a Table or RecordBatch, a RecordBatchReader or Arrow
    stream object, a list of Tables or RecordBatches, an iterable of RecordBatches (with
    ``schema``), or a pyarrow or zstdpool ``Dataset`` or ``Scanner`` (compaction: read a
    dataset and write it back). Readers, iterables, datasets and scanners are streamed batch
    by batch, never read whole. ``schema`` casts the data to it (refused for a scanner).

    ``partitioning`` is a list of column names, whose values name each partition as
    ``partitioning_flavor`` says: None (pyarrow's default) for a directory per value
    (``2026/12/part-0.parquet``), "hive" for ``key=value`` directories, "filename" for a
    file name prefix (``2026_12_part-0.parquet``). Or it is a pyarrow ``Partitioning`` of any
    of the three kinds (``pyarrow.dataset.partitioning(schema, flavor=...)``). Values are
    escaped in every flavor as pyarrow escapes Hive values (so that none can leave its
    directory); nulls are ``__HIVE_DEFAULT_PARTITION__`` in Hive directories and left out
    otherwise (only the last columns may then be null). Partition columns are left out of
    the files.

    ``format`` is "parquet" (the default, or the dataset's own when ``data`` is one), "ipc" or
    "arrow" (``.arrow`` files) or "feather" (``.feather``); ``compression`` and ``level`` are
    the format's (zstd at level 1 by default, as pyarrow's Parquet). Files are named by
    ``basename_template`` (``part-{i}.<extension>`` by default, ``{i}`` counting from 0 in each
    partition). ``existing_data_behavior`` is "error" (refuse a base directory that is not
    empty), "overwrite_or_ignore" or "delete_matching" (empty each partition directory
    written), as in pyarrow.

    Rows keep their order within a partition, whatever ``preserve_order`` says. A partition of
    more than ``max_rows_per_file`` rows is written as several files; row groups (Parquet) and
    record batches (IPC) hold at least ``min_rows_per_group`` rows but for a file's last, and
    at most ``max_rows_per_group`` (the Parquet options' ``row_group_size`` by default). A
    batch split into more than ``max_partitions`` partitions is refused (no limit by default).
    At most ``max_open_files`` files (1024) are open; rows wait in memory until the input ends
    or ``max_pending_bytes`` of them wait. Files are written on ``threads`` threads (None: by
    the work; one with ``use_threads=False``), all leasing contexts from ``pool``.

    ``file_options`` takes the keywords of ``zstdpool.parquet.write_table`` for Parquet files.
    ``file_visitor`` is called with a ``WrittenFile`` (path, metadata, size) for each file
    once the write is done (pyarrow calls it as each file completes).

    Each file is written under a hidden temporary name and renamed into place when complete
    (``fsync=True``: synced with its directory too). If the write fails, the exception has a
    ``completed_files`` attribute with the files that were whole before it; no partial file is
    left under a final name. ``create_dir=False`` refuses a local base directory that does not
    exist (partition directories are made as needed).

    ``base_dir`` may be an object store URL ("s3://bucket/prefix", "gs://..."), with
    ``storage_options`` as polars takes them (see the README's object store section); each
    file is uploaded from Rust as it is completed, and nothing appears under a file's key
    until it is whole. ``filesystem`` may be a pyarrow or fsspec local filesystem, or a
    ``SubTreeFileSystem`` over one.
    """
    if not isinstance(use_threads, bool):
        raise TypeError(f"use_threads must be a bool, not '{type(use_threads).__name__}'")
    if file_options is not None and not isinstance(file_options, dict):
        raise TypeError(
            "file_options must be a dict of zstdpool.parquet.write_table keywords, not "
            f"'{type(file_options).__name__}' (pyarrow's FileWriteOptions are not read)"
        )
    # pyarrow's 0 means no limit, for rows per file; the core checks the bounds together.
    rows_per_file = max_rows_per_file or None
    names, flavor = _write_partitioning(partitioning, partitioning_flavor)
    stream, data_format = _write_input(data, schema, use_threads)
    fmt = data_format or "parquet" if format is None else _format_name(format)
    if not create_dir and isinstance(base_dir, (str, os.PathLike)):
        local = os.fspath(base_dir)
        if not _fs.is_store_url(local) and filesystem is None and not os.path.isdir(local):
            raise FileNotFoundError(
                2, "No such directory (create_dir=False does not make it)", local
            )
    options: dict[str, Any] = {
        "partitioning": names,
        "partitioning_flavor": flavor,
        "format": fmt,
        "compression": compression,
        "level": level,
        "basename_template": basename_template,
        "existing_data_behavior": existing_data_behavior,
        "max_open_files": 1024 if max_open_files is None else max_open_files,
        "max_partitions": max_partitions,
        "null_fallback": _null_fallback(partitioning),
        "max_rows_per_file": rows_per_file,
        "min_rows_per_group": min_rows_per_group or 0,
        "max_rows_per_group": max_rows_per_group,
        "max_pending_bytes": max_pending_bytes,
        "threads": threads if threads is not None or use_threads else 1,
        "fsync": fsync,
        "pool": pool,
        "file_options": file_options,
        "filesystem": filesystem,
        "storage_options": storage_options,
    }
    written = _zstdpool.write_dataset(stream, base_dir, **options)
    if file_visitor is not None:
        fs = _fs.filesystem_of_uri(filesystem) if isinstance(filesystem, str) else filesystem
        is_local = (
            isinstance(base_dir, (str, os.PathLike))
            and not _fs.is_store_url(os.fspath(base_dir))
            and (fs is None or _fs.local_base(fs) is not None)
        )
        _visit(file_visitor, written, "parquet" if fmt.lower() == "parquet" else "ipc", is_local)
    return written
