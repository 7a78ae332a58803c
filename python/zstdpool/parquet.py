"""Parquet files with pooled zstd compression.

The names follow ``pyarrow.parquet`` so that switching costs a changed import:

- ``write_table(data, where=None)`` writes in one call and returns bytes when ``where`` is
  None; ``ParquetWriter(where, schema)`` writes a file batch by batch.
- ``read_table(source, columns=None)`` returns a ``pyarrow.Table``; ``ParquetFile(source)``
  gives the schema, the footer's metadata, row groups one by one and ``iter_batches``;
  ``read_schema(source)`` reads the schema alone.

Writers take pyarrow tables, batches and readers, pandas DataFrames (their index comes back
from ``to_pandas()``), and anything with the Arrow PyCapsule interface (polars, duckdb, arro3).
Files are standard Parquet, with the ``ARROW:schema`` metadata and page indexes, that pyarrow,
polars and duckdb read. zstd is written at level 1 by default, as pyarrow does; each page is
compressed with a context leased from the pool, never one made per page or per column chunk.
"""

from __future__ import annotations

from zstdpool._zstdpool import (
    ParquetBatches,
    ParquetFile,
    ParquetWriter,
    read_schema,
    read_table,
    write_table,
)

__all__ = [
    "ParquetBatches",
    "ParquetFile",
    "ParquetWriter",
    "read_schema",
    "read_table",
    "write_table",
]
