"""The pages of a Parquet column chunk, read from their headers: where a writer ended its
pages, and how many of a file's page bytes a deduplicating store already holds from another
file (the ``parquet_cdc`` workloads' figure, and the content-defined chunking tests'). pyarrow
reads footers but shows no page. A page header is a Thrift compact struct; this reads the few
fields looked at here and skips the rest."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

DATA_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 2, 3


@dataclass(frozen=True)
class Page:
    kind: int
    #: Values in a data page (nulls included); None for a dictionary page.
    values: int | None
    #: The page's body as stored (compressed).
    body: bytes


def _varint(data: bytes, at: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        byte = data[at]
        at += 1
        n |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return n, at


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def _value(data: bytes, at: int, kind: int) -> tuple[Any, int]:
    if kind in (1, 2):  # a bool, held in the field header
        return kind == 1, at
    if kind == 3:  # byte
        return data[at], at + 1
    if kind in (4, 5, 6):  # i16, i32, i64
        n, at = _varint(data, at)
        return _zigzag(n), at
    if kind == 7:  # double
        return None, at + 8
    if kind == 8:  # binary
        n, at = _varint(data, at)
        return data[at : at + n], at + n
    if kind in (9, 10):  # list, set
        head = data[at]
        at += 1
        count, element = head >> 4, head & 0x0F
        if count == 15:
            count, at = _varint(data, at)
        items = []
        for _ in range(count):
            item, at = _value(data, at, 2 if element == 1 else element)
            items.append(item)
        return items, at
    if kind == 12:
        return _struct(data, at)
    raise ValueError(f"Thrift compact type {kind} at byte {at}")


def _struct(data: bytes, at: int) -> tuple[dict[int, Any], int]:
    fields: dict[int, Any] = {}
    field = 0
    while True:
        head = data[at]
        at += 1
        if head == 0:
            return fields, at
        kind, delta = head & 0x0F, head >> 4
        if delta:
            field += delta
        else:
            n, at = _varint(data, at)
            field = _zigzag(n)
        fields[field], at = _value(data, at, kind)


def pages(data: bytes, row_group: int, column: int) -> list[Page]:
    """Every page of a column chunk, in file order."""
    import pyarrow.parquet as pq

    chunk = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(row_group).column(column)
    at = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    end = at + chunk.total_compressed_size
    out = []
    while at < end:
        header, at = _struct(data, at)
        kind, size = header[1], header[3]
        values = {DATA_PAGE: header.get(5, {}).get(1), DATA_PAGE_V2: header.get(8, {}).get(1)}
        out.append(Page(kind, values.get(kind), bytes(data[at : at + size])))
        at += size
    if at != end:
        raise ValueError(f"the pages end at byte {at}, and the column chunk at {end}")
    return out


def data_page_values(data: bytes, row_group: int, column: int) -> list[int]:
    """The values of each data page of a column chunk."""
    return [p.values or 0 for p in pages(data, row_group, column) if p.kind != DICTIONARY_PAGE]


def shared_bytes(old: bytes, new: bytes) -> float:
    """The share of `new`'s page bytes found as whole pages in `old`: what a store that keeps
    each distinct page once would not store again."""

    import pyarrow.parquet as pq

    def bodies(data: bytes) -> list[bytes]:
        md = pq.ParquetFile(io.BytesIO(data)).metadata
        return [
            p.body
            for rg in range(md.num_row_groups)
            for c in range(md.num_columns)
            for p in pages(data, rg, c)
        ]

    known = set(bodies(old))
    fresh = bodies(new)
    return sum(len(b) for b in fresh if b in known) / sum(len(b) for b in fresh)
