"""zstdpool in Dask: pooled zstd for distributed's comms, spilling, Arrow data and P2P shuffle.

Use it as a preload (``distributed.worker.preload``, ``distributed.scheduler.preload``,
``distributed.client.preload``: ``[zstdpool.dask]``), or import it and call :func:`register`.
Importing it registers, because a worker imports its preloads before it builds its spill
buffer, which checks ``distributed.worker.memory.spill-compression`` once; ``dask_setup``
runs later. What it registers in this process:

- the ``"zstd"`` entry of ``distributed.protocol.compression.compressions``, backed by the
  pool (:mod:`zstdpool.dask.codec`); turn it on with ``distributed.comm.compression: zstd``
  and ``distributed.worker.memory.spill-compression: zstd``;
- serializers of ``pyarrow.Table`` and ``RecordBatch`` that compress inside the IPC stream
  when the comm compresses (:mod:`zstdpool.dask.arrow`);
- with ``zstdpool.dask.compress-shuffle: true``, zstd in the P2P shuffle's shards
  (:mod:`zstdpool.dask.shuffle`, which depends on distributed's internals).

:func:`to_dataset` writes a Dask DataFrame as a Hive dataset through
:func:`zstdpool.dataset.write_dataset` on the workers.
"""

from __future__ import annotations

import threading
from typing import Any

import dask.config

from zstdpool.dask import arrow, codec
from zstdpool.dask.codec import CodecStats, codec_stats
from zstdpool.dask.dataset import to_dataset
from zstdpool.dask.shuffle import compress_shuffle, shards_compressed, shuffle_level

__all__ = [
    "CodecStats",
    "codec_stats",
    "compress_shuffle",
    "dask_setup",
    "is_registered",
    "register",
    "shards_compressed",
    "shuffle_level",
    "to_dataset",
]

#: zstdpool's config keys, under ``zstdpool.dask``.
DEFAULTS: dict[str, Any] = {
    "zstdpool": {
        "dask": {
            # The most bytes one compressed frame may decompress to; a frame that declares
            # more is refused before anything is allocated. maybe_compress never compresses
            # more than 2 GiB at once.
            "max-output-size": 2**31,
            # zstd in the P2P shuffle's shards (register() applies it), and at which level.
            "compress-shuffle": False,
            "shuffle-level": 1,
        }
    }
}

dask.config.update_defaults(DEFAULTS)

_registering = threading.Lock()


def _entry() -> Any:
    from distributed.protocol.compression import Compression

    return Compression("zstd", codec.compress, codec.decompress)


def register() -> None:
    """Registers zstdpool's codec and Arrow serializers in this process; idempotent.

    Also applies ``zstdpool.dask.compress-shuffle`` when it is true.
    """
    import pyarrow as pa
    from distributed.protocol import compression
    from distributed.protocol.serialize import (
        dask_deserialize,
        dask_serialize,
        families,
        register_serialization_family,
    )

    with _registering:
        current = compression.compressions.get("zstd")
        if current is None or current.compress is not codec.compress:
            compression.compressions["zstd"] = _entry()

        # distributed registers its pyarrow serializers lazily, on the first pyarrow object
        # it meets, which would replace these: run its registration now and drop the hook.
        import distributed.protocol.arrow  # noqa: F401

        for dispatch in (dask_serialize, dask_deserialize):
            dispatch._lazy.pop("pyarrow", None)
        dask_serialize.register(pa.Table, arrow.serialize_table)
        dask_serialize.register(pa.RecordBatch, arrow.serialize_batch)
        dask_deserialize.register(pa.Table, arrow.deserialize_table)
        dask_deserialize.register(pa.RecordBatch, arrow.deserialize_batch)

        dumps, loads, _ = families["dask"]
        marked = arrow.mark_family(dumps)
        if marked is not dumps:
            register_serialization_family("dask", marked, loads)

    if dask.config.get("zstdpool.dask.compress-shuffle"):
        compress_shuffle(level=int(dask.config.get("zstdpool.dask.shuffle-level")))


def is_registered() -> bool:
    """True if this process's ``"zstd"`` compression and Arrow serializers are zstdpool's."""
    import pyarrow as pa
    from distributed.protocol import compression
    from distributed.protocol.serialize import dask_deserialize, dask_serialize, families

    entry = compression.compressions.get("zstd")
    return (
        entry is not None
        and entry.compress is codec.compress
        and dask_serialize.dispatch(pa.Table) is arrow.serialize_table
        and dask_deserialize.dispatch(pa.RecordBatch) is arrow.deserialize_batch
        and bool(getattr(families["dask"][0], "_zstdpool_marks", False))
    )


def dask_setup(server: Any) -> None:
    """The preload hook: registration already happened when the module was imported; this
    makes it again after anything that may have replaced it since. ``server`` is what
    distributed passes to a preload's ``dask_setup`` (the worker, scheduler or client);
    it is not used."""
    register()


register()
