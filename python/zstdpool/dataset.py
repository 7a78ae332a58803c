"""Partitioned datasets with pooled zstd compression.

``write_dataset(data, base_dir, partitioning=[...])`` follows ``pyarrow.dataset.write_dataset``:
it writes a table or a stream into Hive directories (``key=value/``) of Parquet or Arrow IPC
files, splitting rows by their partition values in Rust and writing the files on several
threads, every file's compression leased from one pool (a write of a thousand partitions makes
about as many zstd contexts as it runs threads). pyarrow (``pyarrow.dataset.dataset(base_dir,
partitioning="hive")``), polars (``scan_parquet(..., hive_partitioning=True)``, ``scan_ipc``)
and duckdb read the result.
"""

from __future__ import annotations

from zstdpool._zstdpool import write_dataset

__all__ = ["write_dataset"]
