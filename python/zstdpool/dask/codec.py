"""The ``"zstd"`` entry of ``distributed.protocol.compression.compressions``, on the pool.

distributed's own entry builds a ``zstandard.ZstdCompressor`` (and reads two config keys) on
every call, and ``maybe_compress`` calls it twice per frame (a sample, then the frame): each
call pays zstd's context set-up. This one borrows a warm context from zstdpool's default pool.
Frames are standard zstd frames with their size in the header, so a peer that decodes with
python-zstandard reads them, and this entry reads theirs.

Decompression returns a ``bytearray`` (as distributed's lz4 entry does: numpy arrays built on
it are writable without a copy) of exactly the size the frame declares, refused before it is
allocated when that is above ``zstdpool.dask.max-output-size`` (2 GiB by default:
``maybe_compress`` never compresses more than that).
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

import dask.config
import dask.utils

import zstdpool
from zstdpool import errors

__all__ = [
    "CodecStats",
    "codec_stats",
    "comm_level",
    "compress",
    "content_size",
    "count",
    "decompress",
]

#: The config keys read; a change is picked up at the next frame.
LEVEL_KEY = "distributed.comm.zstd.level"
LIMIT_KEY = "zstdpool.dask.max-output-size"

_MAGIC = b"\x28\xb5\x2f\xfd"


class _Setting:
    """One config value, validated when it changes rather than on every frame.

    The value is looked up in the nested config dict (what ``dask.config.set`` and
    ``refresh`` change) and compared with the last one seen; ``dask.config.get`` (key
    splitting, name normalisation) and the validation run only when it differs.
    """

    def __init__(self, key: str, default: Any, parse: Any) -> None:
        self.key = key
        self.path = tuple(key.split("."))
        self.default = default
        self.parse = parse
        self.raw: Any = object()
        self.value: Any = None

    def get(self) -> Any:
        node: Any = dask.config.config
        try:
            for part in self.path:
                node = node[part]
        except (KeyError, TypeError):
            node = dask.config.get(self.key, default=self.default)
        if node is not self.raw and node != self.raw:
            value = self.parse(self.key, node)
            self.raw, self.value = node, value
        return self.value


def _parse_level(key: str, raw: Any) -> int:
    try:
        level = int(raw)
    except (TypeError, ValueError):
        level = zstdpool.MAX_LEVEL + 1
    if not zstdpool.MIN_LEVEL <= level <= zstdpool.MAX_LEVEL or isinstance(raw, bool):
        raise errors.ParameterError(
            f"{key}={raw!r}: expected a zstd level from {zstdpool.MIN_LEVEL} to "
            f"{zstdpool.MAX_LEVEL}"
        )
    return level


def _parse_size(key: str, raw: Any) -> int:
    try:
        size = dask.utils.parse_bytes(raw) if isinstance(raw, str) else int(raw)
    except (TypeError, ValueError):
        size = -1
    if size < 0 or isinstance(raw, bool):
        raise errors.ParameterError(f"{key}={raw!r}: expected a size in bytes, such as '512MiB'")
    return int(size)


_level = _Setting(LEVEL_KEY, 3, _parse_level)
_limit = _Setting(LIMIT_KEY, 2**31, _parse_size)


class CodecStats(NamedTuple):
    """What this process's ``"zstd"`` entry did since it started.

    - ``frames_compressed``: frames the entry compressed (the comm's samples included);
    - ``bytes_compressed``: their bytes before compression;
    - ``frames_decompressed``: frames the entry decompressed;
    - ``bytes_decompressed``: the bytes they decompressed to;
    - ``tables_compressed``: Arrow tables and batches sent with their buffers compressed
      inside the IPC stream (:mod:`zstdpool.dask.arrow`) instead of by the entry;
    - ``bytes_tables``: those tables' and batches' in-memory size (``nbytes``).
    """

    frames_compressed: int
    bytes_compressed: int
    frames_decompressed: int
    bytes_decompressed: int
    #: Arrow tables and batches sent with their buffers compressed inside the IPC stream.
    tables_compressed: int
    bytes_tables: int


_counts = [0, 0, 0, 0, 0, 0]
_counting = threading.Lock()


def codec_stats() -> CodecStats:
    """Frames and (uncompressed) bytes through the entry in this process, both ways, and the
    Arrow tables whose buffers were compressed for a comm instead."""
    with _counting:
        return CodecStats(*_counts)


def count(what: int, nbytes: int) -> None:
    """Counts one frame (``what`` 0: compressed, 2: decompressed, 4: an Arrow table) of
    ``nbytes`` uncompressed bytes in :func:`codec_stats`."""
    with _counting:
        _counts[what] += 1
        _counts[what + 1] += nbytes


def comm_level() -> int:
    """``distributed.comm.zstd.level``, validated."""
    level: int = _level.get()
    return level


def compress(data: Any) -> bytes:
    """One standard zstd frame of ``data`` at ``distributed.comm.zstd.level``."""
    frame = zstdpool.compress(data, comm_level())
    count(0, memoryview(data).nbytes)
    return frame


def content_size(frame: Any) -> int | None:
    """The size a zstd frame declares in its header, or None if it declares none (or if
    ``frame`` does not start with a zstd frame header)."""
    head = bytes(memoryview(frame).cast("B")[:18])
    if len(head) < 6 or head[:4] != _MAGIC:
        return None
    descriptor = head[4]
    single_segment = (descriptor >> 5) & 1
    fcs_flag = descriptor >> 6
    start = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 3]
    width = (single_segment, 2, 4, 8)[fcs_flag]
    if width == 0 or len(head) < start + width:
        return None
    size = int.from_bytes(head[start : start + width], "little")
    return size + 256 if width == 2 else size


def decompress(frame: Any) -> bytearray:
    """The bytes of one zstd frame, in a bytearray of exactly its declared size.

    ``frame`` is any buffer holding the frame. A frame that declares no size is decompressed
    up to ``zstdpool.dask.max-output-size``; one that declares more is refused with
    ``OutputLimitError`` before anything is allocated."""
    limit = _limit.get()
    nbytes = memoryview(frame).nbytes
    size = content_size(frame)
    try:
        if size is None:
            # No declared size (a streaming writer's frame): decompressed up to the limit.
            out = bytearray(zstdpool.decompress(frame, max_output_size=limit))
        elif size > limit:
            raise errors.OutputLimitError(
                f"the frame declares {size} bytes, more than {LIMIT_KEY}={limit}"
            )
        else:
            out = bytearray(size)
            written = zstdpool.decompress_into(frame, out)
            if written != size:
                raise errors.DecompressionError(
                    f"the frame declares {size} bytes but holds {written}"
                )
    except errors.DecompressionError as e:
        # Same class, with where it happened: the message ends up in a task's traceback.
        raise type(e)(f"zstd frame of {nbytes} bytes in a dask message or spill file: {e}") from e
    count(2, len(out))
    return out
