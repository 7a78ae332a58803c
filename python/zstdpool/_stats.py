"""The records IPC writers and readers report in ``stats``, with pyarrow's field names."""

from __future__ import annotations

from typing import NamedTuple


class WriteStats(NamedTuple):
    """What an IPC writer has written. The first five fields are ``pyarrow.ipc.WriteStats``'s
    and count as it does: messages (the schema's, written with the first batch or at close,
    among them; the end-of-stream marker not), record batches, dictionary batches, deltas
    and replaced dictionaries. The last two are the message bodies' bytes as laid out
    uncompressed and as written."""

    num_messages: int
    num_record_batches: int
    num_dictionary_batches: int
    num_dictionary_deltas: int
    num_replaced_dictionaries: int
    total_raw_body_size: int
    total_serialized_body_size: int


class ReadStats(NamedTuple):
    """What an IPC reader has read, as ``pyarrow.ipc.ReadStats`` counts it (the schema's
    message is counted at open)."""

    num_messages: int
    num_record_batches: int
    num_dictionary_batches: int
    num_dictionary_deltas: int
    num_replaced_dictionaries: int
