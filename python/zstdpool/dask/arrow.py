"""Arrow tables and record batches in dask messages: IPC with pooled zstd.

distributed sends a ``pyarrow.Table`` as an uncompressed IPC stream and then compresses the
stream as one opaque frame (sampling it first). When the comm asks for compression, these
serializers compress the stream's buffers themselves, with zstdpool's pooled contexts at
``distributed.comm.zstd.level``, and mark the frame so that distributed does not compress it
again. The output is standard Arrow IPC: distributed's own deserializer (pyarrow) reads it
on a peer without zstdpool, and these read what that peer sends.

The mark needs a small wrapper around distributed's ``"dask"`` serialization family: a
serializer registered per type hands back a sub-header only, which distributed does not look
into for per-frame compression; the wrapper copies the mark to where it does.

Spilling passes no comm context: tables are written uncompressed and the spill compression
(``distributed.worker.memory.spill-compression``) compresses the frame, as for any object.
"""

from __future__ import annotations

from typing import Any

import zstdpool.ipc
from zstdpool.dask import codec

__all__ = ["deserialize_batch", "deserialize_table", "serialize_batch", "serialize_table"]

#: The sub-header key of a frame whose buffers are compressed inside the IPC stream.
MARK = "zstdpool-compressed"

#: Tables smaller than this are written uncompressed: ``maybe_compress`` skips them too.
MIN_SIZE = 10_000


def _write(data: Any, context: dict[str, Any] | None) -> tuple[dict[str, Any], list[Any]]:
    compress = bool(context and context.get("compression")) and data.nbytes >= MIN_SIZE
    if not compress:
        return {}, [zstdpool.ipc.write_stream(data, compression=None)]
    blob = zstdpool.ipc.write_stream(data, compression="zstd", level=codec.comm_level())
    codec.count(4, data.nbytes)
    return {MARK: True}, [blob]


def serialize_table(table: Any, context: dict[str, Any] | None = None) -> Any:
    """``dask_serialize`` of ``pyarrow.Table``: ``table`` as one IPC stream frame.

    ``context`` is distributed's serialization context: when it has a true ``"compression"``
    and ``table`` holds at least ``MIN_SIZE`` bytes, the buffers are compressed and the frame
    is marked; otherwise (None when spilling) the stream is written uncompressed."""
    return _write(table, context)


def serialize_batch(batch: Any, context: dict[str, Any] | None = None) -> Any:
    """``dask_serialize`` of ``pyarrow.RecordBatch``: ``batch`` as one IPC stream frame,
    compressed as :func:`serialize_table` decides from ``context``."""
    return _write(batch, context)


def deserialize_table(header: dict[str, Any], frames: list[Any]) -> Any:
    """``dask_deserialize`` of ``pyarrow.Table``: any IPC stream, compressed or not, every
    buffer validated before pyarrow sees it.

    ``header`` is the sub-header the serializer returned (not needed: the stream says whether
    it is compressed); ``frames`` holds the one frame, the IPC stream."""
    return zstdpool.ipc.read_stream(frames[0])


def deserialize_batch(header: dict[str, Any], frames: list[Any]) -> Any:
    """``dask_deserialize`` of ``pyarrow.RecordBatch``: the first batch of the IPC stream in
    ``frames[0]``, as :func:`deserialize_table` reads it (``header`` is not needed)."""
    with zstdpool.ipc.open_stream(frames[0]) as reader:
        return reader.read_next_batch()


def mark_family(dumps: Any) -> Any:
    """Wraps the ``"dask"`` family's ``dumps`` so that a marked frame is left uncompressed
    by the comm (``compression`` False for it, which every distributed reads as "none")."""
    if getattr(dumps, "_zstdpool_marks", False):
        return dumps

    def dask_dumps(x: Any, context: Any = None) -> Any:
        header, frames = dumps(x, context=context)
        sub = header.get("sub-header")
        if isinstance(sub, dict) and sub.get(MARK):
            header["compression"] = (False,) * len(frames)
        return header, frames

    dask_dumps._zstdpool_marks = True  # type: ignore[attr-defined]
    dask_dumps.__wrapped__ = dumps  # type: ignore[attr-defined]
    return dask_dumps
