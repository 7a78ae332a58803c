"""The records IPC writers and readers report in ``stats``: pyarrow's own ``WriteStats`` and
``ReadStats``, subclassed, so that ``isinstance`` checks and comparisons with pyarrow's tuples
hold. Imported on first use (it imports pyarrow)."""

from __future__ import annotations

from typing import Any

import pyarrow.ipc


# pyarrow has no type information: its records are `Any` to mypy.
class WriteStats(pyarrow.ipc.WriteStats):  # type: ignore[misc]
    """What an IPC writer has written: ``pyarrow.ipc.WriteStats``'s five fields, counted as it
    counts them, and two attributes that are not tuple items, so that the record still
    equals pyarrow's:

    - ``num_messages``: the messages written, the schema's among them and the end-of-stream
      marker not;
    - ``num_record_batches``: the record batches;
    - ``num_dictionary_batches``: the dictionary batches, deltas and replacements included;
    - ``num_dictionary_deltas``: the dictionary batches that were deltas;
    - ``num_replaced_dictionaries``: the dictionary batches that replaced a dictionary;
    - ``total_raw_body_size``: the message bodies' bytes as laid out uncompressed (0 when
      not given);
    - ``total_serialized_body_size``: the message bodies' bytes as written (0 when not
      given).
    """

    total_raw_body_size: int
    total_serialized_body_size: int

    def __new__(
        cls,
        num_messages: int,
        num_record_batches: int,
        num_dictionary_batches: int,
        num_dictionary_deltas: int,
        num_replaced_dictionaries: int,
        total_raw_body_size: int = 0,
        total_serialized_body_size: int = 0,
    ) -> WriteStats:
        self: WriteStats = super().__new__(
            cls,
            num_messages,
            num_record_batches,
            num_dictionary_batches,
            num_dictionary_deltas,
            num_replaced_dictionaries,
        )
        self.total_raw_body_size = total_raw_body_size
        self.total_serialized_body_size = total_serialized_body_size
        return self

    def __repr__(self) -> str:
        return (
            f"{super().__repr__()[:-1]}, total_raw_body_size={self.total_raw_body_size}, "
            f"total_serialized_body_size={self.total_serialized_body_size})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (*self, self.total_raw_body_size, self.total_serialized_body_size))


class ReadStats(pyarrow.ipc.ReadStats):  # type: ignore[misc]
    """What an IPC reader has read, as ``pyarrow.ipc.ReadStats`` counts it: ``num_messages``
    (the schema's message is counted at open), ``num_record_batches``,
    ``num_dictionary_batches`` (deltas and replacements included), ``num_dictionary_deltas``
    and ``num_replaced_dictionaries`` (dictionary batches that replaced a dictionary)."""

    __slots__ = ()
