"""A Dask DataFrame written as one Hive dataset, each partition by the worker that holds it.

Each partition goes through :func:`zstdpool.dataset.write_dataset` on its worker, into the
same base directory: file names carry the partition's number (``part-{n}-{i}.parquet``), so
partitions never write the same file, and the existing-data check is made once, up front.
The base directory must be one that every worker and the client see: a local path on one
machine, a shared file system, or an object store URL ("s3://bucket/prefix", "gs://...")
with ``storage_options``, which every worker writes to itself.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import zstdpool.dataset
from zstdpool import _fs, errors
from zstdpool._zstdpool import _check_dataset_options, _store_delete, _store_list

if TYPE_CHECKING:
    from zstdpool._zstdpool import WrittenFile

__all__ = ["to_dataset"]


def _write_partition(
    part: Any,
    base_dir: str,
    template: str,
    partitioning: list[str] | None,
    format: str,
    options: dict[str, Any],
) -> list[WrittenFile]:
    return zstdpool.dataset.write_dataset(
        part,
        base_dir,
        partitioning=partitioning,
        partitioning_flavor="hive",
        format=format,
        basename_template=template,
        existing_data_behavior="overwrite_or_ignore",
        **options,
    )


def _finish(
    written: list[list[WrittenFile]],
    delete_matching: bool,
    base: str,
    storage_options: dict[str, Any] | None,
) -> list[WrittenFile]:
    files = [f for part in written for f in part]
    if delete_matching and _fs.is_store_url(base):
        # As below, by key: the objects of each partition written that no writer wrote.
        scheme = base.split("://", 1)[0]
        keep = {f"{scheme}://{f['path']}" for f in files}
        partitions = {url.rsplit("/", 1)[0] + "/" for url in keep}
        stale = [
            url
            for url, _ in _store_list(base, storage_options)
            if url not in keep and url.rsplit("/", 1)[0] + "/" in partitions
        ]
        _store_delete(stale, storage_options)
    elif delete_matching:
        # pyarrow's "delete_matching" empties each partition directory written; with several
        # writers in one directory that is done once they all finished, sparing their files.
        keep = {os.path.abspath(f["path"]) for f in files}
        for directory in {os.path.dirname(p) for p in keep}:
            for entry in os.scandir(directory):
                if entry.is_file() and os.path.abspath(entry.path) not in keep:
                    os.remove(entry.path)
    return files


def to_dataset(
    ddf: Any,
    base_dir: str | os.PathLike[str],
    *,
    partitioning: Sequence[str] | None = None,
    format: str = "parquet",
    existing_data_behavior: str = "error",
    compute: bool = True,
    **options: Any,
) -> Any:
    """Writes the Dask DataFrame ``ddf`` under ``base_dir`` as a Hive dataset (``key=value/``
    directories by the ``partitioning`` columns) of Parquet or Arrow IPC files (``format``
    as :func:`zstdpool.dataset.write_dataset`), partition by partition on the workers.

    Returns the files written (dicts of ``path``, ``num_rows``, ``size``), or with
    ``compute=False`` a ``dask.delayed`` object that writes them when computed. ``options``
    go to ``write_dataset`` (``compression``, ``level``, ``max_rows_per_file``, ...).
    ``existing_data_behavior`` is checked on the client before anything is written.
    """
    import dask

    # The core's own checks, so that a bad value fails here, worded as write_dataset words it.
    ext = _check_dataset_options(
        format,
        existing_data_behavior,
        options.get("compression", "zstd"),
        options.get("level"),
    )
    if "basename_template" in options:
        raise errors.ParameterError(
            "basename_template: to_dataset names the files itself, after their partition, "
            "so that partitions written in parallel never write the same file"
        )
    storage_options = options.get("storage_options")
    base = base_dir if _fs.is_store_url(base_dir) else os.fspath(base_dir)
    if _fs.is_store_url(base):
        if existing_data_behavior == "error" and _store_list(base, storage_options):
            raise FileExistsError(
                f"{base}: objects exist below it (existing_data_behavior='error'; pass "
                "'overwrite_or_ignore' or 'delete_matching' to write there)"
            )
    elif existing_data_behavior == "error" and os.path.isdir(base) and os.listdir(base):
        raise FileExistsError(
            f"{base}: the directory is not empty (existing_data_behavior='error'; pass "
            "'overwrite_or_ignore' or 'delete_matching' to write into it)"
        )
    keys = list(partitioning) if partitioning is not None else None
    write = dask.delayed(_write_partition, pure=False)
    writes = [
        write(part, base, f"part-{n}-{{i}}.{ext}", keys, format, options)
        for n, part in enumerate(ddf.to_delayed())
    ]
    result = dask.delayed(_finish, pure=False)(
        writes, existing_data_behavior == "delete_matching", base, storage_options
    )
    return result.compute() if compute else result
