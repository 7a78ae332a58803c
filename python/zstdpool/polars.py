"""polars on the pool: a ``LazyFrame`` over a dataset read by zstdpool's reader, and a
LazyFrame or DataFrame written as a dataset by zstdpool's writer.

``scan_dataset`` registers an IO source with polars (``polars.io.plugins.register_io_source``)
whose reads are zstdpool's: the columns polars asks for are the columns read, ``n_rows`` stops
the read, ``batch_size`` sizes the batches, and the predicate prunes partitions, row groups
and pages where it translates into zstdpool's filters (comparisons of a column with a value,
``is_null``, ``is_not_null``, and/or of those). polars applies every predicate to the rows
read as well, so a predicate that does not translate, or translates only in part, still
filters exactly: translation only decides what is not read.

``write_dataset`` streams a LazyFrame's batches (``collect_batches``) into
``zstdpool.dataset.write_dataset``, never collecting it whole.

Install with ``pip install zstdpool[polars]``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

try:
    import polars as pl
    from polars.io.plugins import register_io_source
except ImportError as e:  # pragma: no cover - depends on what is installed
    raise ImportError("zstdpool.polars needs polars: pip install 'zstdpool[polars]'") from e

import zstdpool.dataset as _zd

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc

    from zstdpool._zstdpool import ContextPool
    from zstdpool._zstdpool import WrittenFile as _Written

__all__ = ["scan_dataset", "write_dataset"]

#: polars' comparison operators, as pyarrow's Expression methods name them.
_COMPARISONS = {
    "Eq": "__eq__",
    "NotEq": "__ne__",
    "Lt": "__lt__",
    "LtEq": "__le__",
    "Gt": "__gt__",
    "GtEq": "__ge__",
}

#: The operator a comparison becomes when its sides swap (``3 < a`` is ``a > 3``).
_SWAPPED = {"Eq": "Eq", "NotEq": "NotEq", "Lt": "Gt", "LtEq": "GtEq", "Gt": "Lt", "GtEq": "LtEq"}


#: The literal types read as plain values: polars' dynamic integers and floats, and scalars of
#: integer, float, string and boolean types.
_PLAIN = {
    "Int",
    "Float",
    "String",
    "Boolean",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
}


def _literal(node: Any) -> tuple[bool, Any]:
    """A plain value of a serialized polars literal: (True, value), or (False, None) for a
    literal this does not read (null, floats of a declared type, lists, temporal values)."""
    if not isinstance(node, dict) or set(node) != {"Literal"}:
        return False, None
    inner = node["Literal"]
    if not isinstance(inner, dict) or len(inner) != 1:
        return False, None
    [(kind, typed)] = inner.items()
    if kind not in ("Dyn", "Scalar") or not isinstance(typed, dict) or len(typed) != 1:
        return False, None
    [(name, value)] = typed.items()
    if name in _PLAIN and type(value) in (bool, int, float, str):
        return True, value
    return False, None


def _column(node: Any) -> str | None:
    if isinstance(node, dict) and set(node) == {"Column"} and isinstance(node["Column"], str):
        return str(node["Column"])
    return None


def _translate(node: Any, exact: frozenset[str]) -> pc.Expression | None:
    """A pyarrow Expression keeping every row ``node`` (a serialized polars expression) keeps,
    and perhaps more; None when nothing of it translates. A conjunction keeps the parts that
    translate; a disjunction translates whole or not at all. Only columns in ``exact`` are
    compared: polars orders NaN above every number where pyarrow's comparisons with it are
    false, so a comparison of a floating-point column is left to polars."""
    import pyarrow.compute as pc

    if not isinstance(node, dict) or len(node) != 1:
        return None
    [(kind, body)] = node.items()
    if kind == "BinaryExpr" and isinstance(body, dict):
        op = body.get("op")
        left, right = body.get("left"), body.get("right")
        if op == "And":
            a, b = _translate(left, exact), _translate(right, exact)
            if a is None or b is None:
                return a if b is None else b
            return a & b
        if op == "Or":
            a, b = _translate(left, exact), _translate(right, exact)
            return None if a is None or b is None else a | b
        if op in _COMPARISONS:
            name, (known, value) = _column(left), _literal(right)
            if name is None:
                name, (known, value) = _column(right), _literal(left)
                op = _SWAPPED[op]
            if name is None or name not in exact or not known or value is None:
                return None
            result: pc.Expression = getattr(pc.field(name), _COMPARISONS[op])(value)
            return result
        return None
    if kind == "Function" and isinstance(body, dict):
        function = body.get("function")
        inputs = body.get("input") or []
        if function in ({"Boolean": "IsNull"}, {"Boolean": "IsNotNull"}) and len(inputs) == 1:
            name = _column(inputs[0])
            if name is None:
                return None
            null = pc.field(name).is_null()
            return null if function == {"Boolean": "IsNull"} else ~null
    return None


def translate(predicate: pl.Expr, schema: pa.Schema) -> pc.Expression | None:
    """The part of a polars predicate over ``schema`` zstdpool can prune by, as a pyarrow
    Expression (see the module's comment); None when no part of it translates."""
    import pyarrow as pa

    try:
        tree = json.loads(predicate.meta.serialize(format="json"))
    except Exception:  # a polars that serializes otherwise: nothing is pruned
        return None
    exact = frozenset(
        f.name
        for f in schema
        if pa.types.is_integer(f.type)
        or pa.types.is_string(f.type)
        or pa.types.is_large_string(f.type)
        or pa.types.is_boolean(f.type)
    )
    return _translate(tree, exact)


def _polars_schema(schema: pa.Schema) -> pl.Schema:
    """The polars schema of what a read of ``schema`` becomes."""
    frame = pl.from_arrow(schema.empty_table())
    assert isinstance(frame, pl.DataFrame)
    return frame.schema


def scan_dataset(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    format: str = "parquet",
    partitioning: Any = "hive",
    schema: pa.Schema | None = None,
    filesystem: Any = None,
    storage_options: dict[str, Any] | None = None,
    pool: ContextPool | None = None,
    readahead_bytes: int = _zd.DEFAULT_READAHEAD_BYTES,
) -> pl.LazyFrame:
    """A polars ``LazyFrame`` of the dataset at ``source`` (the arguments of
    ``zstdpool.dataset.dataset``), read by zstdpool with the projection, the predicate,
    ``n_rows`` and ``batch_size`` polars pushes down.

    - ``source``: a directory, a file, a list of files, a URI or an object store URL.
    - ``format``: "parquet" (the default), or "ipc", "arrow" or "feather" for Arrow IPC files.
    - ``partitioning``: "hive" (the default), a list of directory field names, a pyarrow
      Partitioning, or None.
    - ``schema``: the schema to read the files as; None takes the first file's.
    - ``filesystem``, ``storage_options``: a pyarrow or fsspec filesystem to read through,
      and an object store's options, as ``zstdpool.dataset.dataset`` takes them.
    - ``pool``: the ``ContextPool`` that decompresses the files; None is the default pool.
    - ``readahead_bytes``: how much decoded data is read ahead of polars (64 MiB by default),
      as in ``Dataset.to_batches``.
    """
    dataset = _zd.dataset(
        source,
        format=format,
        partitioning=partitioning,
        schema=schema,
        filesystem=filesystem,
        storage_options=storage_options,
        pool=pool,
    )
    names = dataset.schema.names

    def read(
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        columns = None
        if with_columns is not None:
            needed = set(with_columns)
            if predicate is not None:
                needed.update(predicate.meta.root_names())
            columns = [n for n in names if n in needed]
        pruning = translate(predicate, dataset.schema) if predicate is not None else None
        left = n_rows
        if left is not None and left <= 0:
            return
        # The files' batches are gathered into frames of about batch_size rows: a frame
        # made, filtered and handed over per file cost more than the read itself.
        target = batch_size or 65536
        gathered: list[pa.RecordBatch] = []
        rows = 0

        def frame_of(batches: list[pa.RecordBatch]) -> pl.DataFrame:
            import pyarrow as pa

            frame = pl.from_arrow(pa.Table.from_batches(batches))
            assert isinstance(frame, pl.DataFrame)
            if predicate is not None:
                frame = frame.filter(predicate)
            if with_columns is not None:
                frame = frame.select(with_columns)
            return frame

        def stream() -> Iterator[pl.DataFrame]:
            nonlocal rows
            for batch in dataset.to_batches(
                columns=columns, filter=pruning, readahead_bytes=readahead_bytes
            ):
                gathered.append(batch)
                rows += batch.num_rows
                # A limit asks for rows soon: the first frames are handed over as they come.
                if rows >= target or (left is not None and rows >= left):
                    yield frame_of(gathered)
                    gathered.clear()
                    rows = 0
            if gathered:
                yield frame_of(gathered)

        for frame in stream():
            if left is not None:
                frame = frame.head(left)
                left -= frame.height
            if frame.height:
                yield frame
            if left == 0:
                return

    return register_io_source(
        read,
        schema=_polars_schema(dataset.schema),
        explain_name="zstdpool.dataset",
        explain_detail=f"{len(dataset.files)} {dataset.format} files",
    )


def write_dataset(
    data: pl.LazyFrame | pl.DataFrame,
    base_dir: str | os.PathLike[str],
    *,
    chunk_size: int | None = None,
    **options: Any,
) -> list[_Written]:
    """Writes ``data`` as a dataset under ``base_dir`` (a directory, or an object store URL)
    with ``zstdpool.dataset.write_dataset`` (``options`` are its keywords:
    ``partitioning``, ``format``, ``storage_options``, ...). A LazyFrame is streamed batch
    by batch (``collect_batches``, batches of ``chunk_size`` rows by default polars' own),
    never collected whole; a DataFrame is written as it is."""
    if isinstance(data, pl.DataFrame):
        return _zd.write_dataset(data.to_arrow(), base_dir, **options)
    if not isinstance(data, pl.LazyFrame):
        raise TypeError(
            f"data must be a polars LazyFrame or DataFrame, not '{type(data).__name__}'"
        )
    schema = pl.DataFrame(schema=data.collect_schema()).to_arrow().schema

    def batches() -> Iterator[pa.RecordBatch]:
        for frame in data.collect_batches(chunk_size=chunk_size):
            yield from frame.to_arrow().cast(schema).to_batches()

    return _zd.write_dataset(batches(), base_dir, schema=schema, **options)
