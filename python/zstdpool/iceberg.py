"""pyiceberg on the pool: Iceberg data files written by zstdpool's ``ParquetWriter``.

pyiceberg (0.12 and later) writes each data file through the Parquet model registered with
its ``FileFormatFactory``: ``create_writer(output_file, file_schema, properties)`` is called
once per file, on pyiceberg's thread pool, and the writer's ``close()`` returns the
``DataFileStatistics`` that go into the manifest. :class:`ParquetModel` is that model with
zstdpool's writer: the same keywords pyiceberg derives from the table's ``write.parquet.*``
properties (codec and level, page and dictionary page sizes, page row limit, row group row
limit), and the statistics computed by pyiceberg's own ``data_file_statistics_from_parquet_
metadata`` from the writer's ``metadata``, so the manifests say exactly what pyiceberg's own
writer would.

pyiceberg's ``register`` refuses a second Parquet model, so :func:`install` puts this one in
its registry's place and :func:`uninstall` puts pyiceberg's back; :func:`installed` does both
around a block. Reads (a table scan) stay pyiceberg's: its scan reads each file with pyarrow
and exposes no hook for another reader.

Install with ``pip install zstdpool[iceberg]``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any, cast

try:
    from pyiceberg.io.fileformat import (
        DataFileStatistics,
        FileFormatFactory,
        FileFormatWriter,
    )
    from pyiceberg.io.pyarrow import (
        _get_parquet_writer_kwargs,
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
    )
    from pyiceberg.manifest import FileFormat
    from pyiceberg.table import TableProperties
    from pyiceberg.typedef import Properties
    from pyiceberg.utils.properties import property_as_int
except ImportError as e:  # pragma: no cover - depends on what is installed
    raise ImportError(
        "zstdpool.iceberg needs pyiceberg 0.12 or later: pip install 'zstdpool[iceberg]'"
    ) from e

import pyarrow as pa

import zstdpool.parquet as zp

if TYPE_CHECKING:
    from pyiceberg.io import OutputFile, OutputStream
    from pyiceberg.schema import Schema
    from pyiceberg.types import NestedField

__all__ = ["ParquetModel", "ParquetWriter", "install", "installed", "uninstall"]


class ParquetWriter(FileFormatWriter):
    """One Iceberg data file, written by zstdpool's ``ParquetWriter`` (see the module).

    pyiceberg makes it through :meth:`ParquetModel.create_writer`: ``output_file`` is the
    pyiceberg ``OutputFile`` to write (created, overwriting, at the first ``write``);
    ``file_schema`` the file's Iceberg schema (its field ids and which statistics to keep);
    ``properties`` the table's properties, whose ``write.parquet.*`` keys give the codec and
    level, the page and dictionary page sizes, the page row limit and the row group row limit.
    """

    _result: DataFileStatistics | None

    def __init__(self, output_file: OutputFile, file_schema: Schema, properties: Properties):
        self._output_file = output_file
        self._file_schema = file_schema
        self._properties = properties
        self._writer: zp.ParquetWriter | None = None
        self._stream: OutputStream | None = None
        self._keywords = _get_parquet_writer_kwargs(properties)
        self._row_group_size = property_as_int(
            properties=properties,
            property_name=TableProperties.PARQUET_ROW_GROUP_LIMIT,
            default=TableProperties.PARQUET_ROW_GROUP_LIMIT_DEFAULT,
        )

    def write(self, table: pa.Table) -> None:
        """pyiceberg's call, once or more per file: writes ``table`` (a ``pyarrow.Table`` in
        the file's schema) in row groups of at most ``write.parquet.row-group-limit`` rows.
        The first call creates the file."""
        if self._writer is None:
            stream = self._output_file.create(overwrite=True)
            try:
                self._writer = zp.ParquetWriter(
                    cast(IO[Any], stream),
                    table.schema,
                    store_decimal_as_integer=True,
                    **self._keywords,
                )
            except BaseException:
                stream.close()
                raise
            self._stream = stream
        self._writer.write(table, row_group_size=self._row_group_size)

    def close(self) -> DataFileStatistics:
        """pyiceberg's call at the end of the file: writes the footer, closes the stream and
        returns the ``DataFileStatistics`` pyiceberg computes from the footer for the
        manifest (the same ones again if called again). A writer that was never written to
        raises ``ValueError``."""
        if self._result is not None:
            return self._result
        if self._writer is None or self._stream is None:
            raise ValueError("Cannot close a writer that was never written to")
        with self._stream:
            self._writer.close()
        metadata = self._writer.metadata
        assert metadata is not None, "a closed writer has its footer"
        self._result = data_file_statistics_from_parquet_metadata(
            parquet_metadata=metadata,
            stats_columns=compute_statistics_plan(self._file_schema, self._properties),
            parquet_column_mapping=parquet_path_to_id_mapping(self._file_schema),
        )
        return self._result


class ParquetModel:
    """pyiceberg's Parquet file-format model, with :class:`ParquetWriter` as its writer.

    ``replaced`` is the model it stands in for (pyiceberg's own, as :func:`install` passes
    it), which still adds the Arrow field metadata.
    """

    def __init__(self, replaced: Any) -> None:
        # Field metadata (field ids) is pyarrow's business either way: the model it
        # replaces adds it.
        self._replaced = replaced

    @property
    def format(self) -> FileFormat:
        return FileFormat.PARQUET

    def file_extension(self) -> str:
        """``"parquet"``: the extension pyiceberg gives the data files."""
        return "parquet"

    def create_writer(
        self, output_file: OutputFile, file_schema: Schema, properties: Properties
    ) -> ParquetWriter:
        """pyiceberg's hook, called once per data file on its thread pool: a
        :class:`ParquetWriter` of ``output_file`` with the file's Iceberg ``file_schema`` and
        the table's ``properties``."""
        return ParquetWriter(output_file, file_schema, properties)

    def add_field_metadata(
        self, field: NestedField, metadata: dict[bytes, bytes], include_field_ids: bool
    ) -> None:
        """pyiceberg's hook for the Arrow field metadata of the files, left to the replaced
        model: it adds ``field``'s field id to the Arrow field's ``metadata`` when
        ``include_field_ids`` is true."""
        self._replaced.add_field_metadata(field, metadata, include_field_ids)


_lock = threading.Lock()
_previous: list[Any] = []


def install() -> None:
    """Makes pyiceberg write its Parquet data files with zstdpool, in this process, until
    :func:`uninstall`. Installing twice is the same as once."""
    with _lock:
        registry = FileFormatFactory._registry
        current = registry.get(FileFormat.PARQUET)
        if isinstance(current, ParquetModel):
            return
        if current is None:
            raise RuntimeError("pyiceberg has no Parquet model registered to replace")
        _previous.append(current)
        registry[FileFormat.PARQUET] = ParquetModel(current)


def uninstall() -> None:
    """Puts pyiceberg's own Parquet model back (nothing if zstdpool's is not installed)."""
    with _lock:
        if _previous:
            FileFormatFactory._registry[FileFormat.PARQUET] = _previous.pop()


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """zstdpool's Parquet model installed for the block, pyiceberg's own after it."""
    with _lock:
        already = isinstance(FileFormatFactory._registry.get(FileFormat.PARQUET), ParquetModel)
    install()
    try:
        yield
    finally:
        if not already:
            uninstall()
