"""An opt-in for zstd in the P2P shuffle's shards, which distributed writes uncompressed.

The P2P shuffle serializes each shard as an Arrow IPC stream, once to send it to the worker
that owns its output partition and once more to append it to that worker's file on disk,
both with ``distributed.shuffle._shuffle.serialize_table``. :func:`compress_shuffle` replaces
that function in this process with one that writes the same stream with its buffers
compressed by zstdpool; pyarrow, which reads the shards back (``read_from_disk``), decodes
compressed IPC natively, so workers with and without it can take part in one shuffle.

This depends on distributed's internals (a private module and function name); it is tested
with the distributed versions pinned in zstdpool's ``test`` extra, and refuses clearly when
the function is not where it expects it.
"""

from __future__ import annotations

import threading
from typing import Any

import zstdpool.ipc
from zstdpool import errors

__all__ = ["compress_shuffle", "shards_compressed", "shuffle_level"]

_shards = 0
_counting = threading.Lock()


def _module() -> Any:
    try:
        from distributed.shuffle import _arrow, _shuffle
    except ImportError as e:
        raise RuntimeError(f"this distributed has no P2P shuffle module: {e}") from e
    if not callable(getattr(_shuffle, "serialize_table", None)) or not callable(
        getattr(_arrow, "serialize_table", None)
    ):
        raise RuntimeError(
            "this distributed's P2P shuffle does not serialize its shards with "
            "distributed.shuffle._shuffle.serialize_table; zstdpool.dask.compress_shuffle "
            "supports the versions in zstdpool's test extra"
        )
    return _shuffle


def _writer(level: int) -> Any:
    def serialize_table(table: Any) -> bytes:
        global _shards
        blob = zstdpool.ipc.write_stream(table, compression="zstd", level=level)
        with _counting:
            _shards += 1
        assert blob is not None
        return blob

    serialize_table._zstdpool_level = level  # type: ignore[attr-defined]
    return serialize_table


def compress_shuffle(enabled: bool = True, *, level: int = 1) -> None:
    """Compresses (or, with ``enabled=False``, stops compressing) the P2P shuffle's shards
    written by this process with zstd at ``level``.

    Call it on every worker (``client.run(zstdpool.dask.compress_shuffle)``), or set
    ``zstdpool.dask.compress-shuffle: true`` (and ``shuffle-level``) with zstdpool.dask as a
    worker preload.
    """
    if isinstance(level, bool) or not zstdpool.MIN_LEVEL <= level <= zstdpool.MAX_LEVEL:
        raise errors.ParameterError(
            f"level={level!r}: expected a zstd level from {zstdpool.MIN_LEVEL} to "
            f"{zstdpool.MAX_LEVEL}"
        )
    shuffle = _module()
    if enabled:
        shuffle.serialize_table = _writer(level)
    else:
        from distributed.shuffle import _arrow

        shuffle.serialize_table = _arrow.serialize_table


def shuffle_level() -> int | None:
    """The level shards are compressed at in this process, or None when they are not."""
    level = getattr(_module().serialize_table, "_zstdpool_level", None)
    return level if isinstance(level, int) else None


def shards_compressed() -> int:
    """Shards this process has compressed since it started."""
    with _counting:
        return _shards
