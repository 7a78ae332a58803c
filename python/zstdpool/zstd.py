"""Python's ``compression.zstd`` (3.14; ``backports.zstd`` before) on zstdpool's pool.

Code written for ``compression.zstd`` runs with its import changed::

    from zstdpool import zstd                      # for: from compression import zstd

The difference is where contexts come from. A ``compression.zstd.ZstdCompressor`` owns a
zstd context for its whole life, so a new compressor per message allocates and initializes
one every time. Here a ``ZstdCompressor`` takes a warm context from the pool with the first
call of a frame and gives it back when the frame ends (``FLUSH_FRAME``, ``flush()``) or when
it is collected; a ``ZstdDecompressor`` takes one with its first call and gives it back at
the frame's end. The pool is keyed by every parameter of ``options``. A ``ZstdFile`` holds
its context while a frame is open.

Each object's calls are serialized by its own lock, taken without the GIL, as
``compression.zstd`` serializes them: an object may be shared by threads. The module-level
functions hold no lock while zstd runs.

What differs from ``compression.zstd``, on purpose (the README lists these too):

- ``as_undigested_dict`` is loaded as the digested form (its frames decompress the same).
- A malformed dictionary is refused when the ``ZstdDict`` is made, not at its first use.
- ``ZstdCompressor`` and ``ZstdDecompressor`` take ``pool=`` (a ``zstdpool.ContextPool``) too.
"""

from __future__ import annotations

import builtins
import dataclasses
import enum
import io
import os
import sys
from typing import TYPE_CHECKING, Any

from zstdpool._zstdpool import ZSTD_VERSION as zstd_version
from zstdpool._zstdpool import (
    ZstdCompressor,
    ZstdDecompressor,
    ZstdDict,
    _compression_bounds,
    _decompression_bounds,
    _frame_info,
    _frame_size,
    finalize_dict,
    train_dict,
)
from zstdpool.errors import ZstdError

if TYPE_CHECKING:
    from collections.abc import Callable

    from typing_extensions import Buffer

__all__ = [
    "COMPRESSION_LEVEL_DEFAULT",
    "CompressionParameter",
    "DecompressionParameter",
    "FrameInfo",
    "Strategy",
    "ZstdCompressor",
    "ZstdDecompressor",
    "ZstdDict",
    "ZstdError",
    "ZstdFile",
    "compress",
    "decompress",
    "finalize_dict",
    "get_frame_info",
    "get_frame_size",
    "open",
    "train_dict",
    "zstd_version",
    "zstd_version_info",
]

#: The level a compressor uses when given none: zstd's default.
COMPRESSION_LEVEL_DEFAULT = 3

#: The zstd library's version, as numbers.
zstd_version_info: tuple[int, int, int] = tuple(  # type: ignore[assignment]
    int(part) for part in zstd_version.split(".")
)


class CompressionParameter(enum.IntEnum):
    """zstd's compression parameters, the keys of a compressor's ``options``.

    As for any ``IntEnum``, ``CompressionParameter(value)`` is the member numbered
    ``value``. The call's other parameters, ``names``, ``module``, ``qualname``, ``type``,
    ``start`` and ``boundary``, are ``enum``'s functional API for making an enum, which an
    enum with members refuses.
    """

    compression_level = 100
    window_log = 101
    hash_log = 102
    chain_log = 103
    search_log = 104
    min_match = 105
    target_length = 106
    strategy = 107
    enable_long_distance_matching = 160
    ldm_hash_log = 161
    ldm_min_match = 162
    ldm_bucket_size_log = 163
    ldm_hash_rate_log = 164
    content_size_flag = 200
    checksum_flag = 201
    dict_id_flag = 202
    nb_workers = 400
    job_size = 401
    overlap_log = 402

    def bounds(self) -> tuple[int, int]:
        """The lowest and highest values zstd takes for this parameter."""
        return _compression_bounds(self.value)


class DecompressionParameter(enum.IntEnum):
    """zstd's decompression parameters, the keys of a decompressor's ``options``.

    As for any ``IntEnum``, ``DecompressionParameter(value)`` is the member numbered
    ``value``. The call's other parameters, ``names``, ``module``, ``qualname``, ``type``,
    ``start`` and ``boundary``, are ``enum``'s functional API for making an enum, which an
    enum with members refuses.
    """

    window_log_max = 100

    def bounds(self) -> tuple[int, int]:
        """The lowest and highest values zstd takes for this parameter."""
        return _decompression_bounds(self.value)


class Strategy(enum.IntEnum):
    """zstd's match-finding strategies, from the fastest to the strongest: the values of
    ``CompressionParameter.strategy``.

    As for any ``IntEnum``, ``Strategy(value)`` is the member numbered ``value``. The call's
    other parameters, ``names``, ``module``, ``qualname``, ``type``, ``start`` and
    ``boundary``, are ``enum``'s functional API for making an enum, which an enum with
    members refuses.
    """

    fast = 1
    dfast = 2
    greedy = 3
    lazy = 4
    lazy2 = 5
    btlazy2 = 6
    btopt = 7
    btultra = 8
    btultra2 = 9


@dataclasses.dataclass(frozen=True, slots=True)
class FrameInfo:
    """What a frame's header says: ``decompressed_size``, its data's size (None when it was
    not written), and ``dictionary_id``, the id of the dictionary it needs (0 for none).
    Read-only, as ``compression.zstd``'s."""

    decompressed_size: int | None
    dictionary_id: int


def get_frame_info(frame_buffer: Buffer) -> FrameInfo:
    """The header of the frame at the start of ``frame_buffer`` (a whole header at least)."""
    size, dict_id = _frame_info(frame_buffer)
    return FrameInfo(size, dict_id)


def get_frame_size(frame_buffer: Buffer) -> int:
    """The size of the whole frame at the start of ``frame_buffer``, in bytes."""
    return _frame_size(frame_buffer)


def compress(
    data: Buffer,
    level: int | None = None,
    options: dict[int, int] | None = None,
    zstd_dict: ZstdDict | tuple[ZstdDict, int] | None = None,
) -> bytes:
    """``data`` as one zstd frame, with a context from the pool. As in ``compression.zstd``,
    ``level`` (``COMPRESSION_LEVEL_DEFAULT``, 3, when None) or ``options`` (a dict of
    ``CompressionParameter`` to values; not both) sets the compression, and ``zstd_dict``
    is a ``ZstdDict`` to compress with (or one of its ``as_digested_dict``,
    ``as_undigested_dict`` or ``as_prefix`` forms)."""
    compressor = ZstdCompressor(level=level, options=options, zstd_dict=zstd_dict)
    return compressor.compress(data, mode=ZstdCompressor.FLUSH_FRAME)


def decompress(
    data: Buffer,
    zstd_dict: ZstdDict | tuple[ZstdDict, int] | None = None,
    options: dict[int, int] | None = None,
) -> bytes:
    """The data of every frame of ``data``, one after another (skippable frames give none).
    Raises ZstdError when the data ends inside a frame. As in ``compression.zstd``,
    ``zstd_dict`` is the ``ZstdDict`` the frames were compressed with (or one of its
    ``as_*`` forms), and ``options`` a dict of ``DecompressionParameter`` to values."""
    parts = []
    while True:
        decompressor = ZstdDecompressor(zstd_dict=zstd_dict, options=options)
        parts.append(decompressor.decompress(data))
        if not decompressor.eof:
            raise ZstdError("Compressed data ended before the end-of-stream marker was reached")
        data = decompressor.unused_data
        if not data:
            break
    return b"".join(parts)


# --- ZstdFile -------------------------------------------------------------------------------

#: What a reader reads from its file at a time: zstd's recommended input size.
_READ_SIZE = 131075
#: zstd's recommended output size for a decompression call (ZSTD_DStreamOutSize): a block.
_DSTREAM_OUT_SIZE = 128 * 1024

_MODE_CLOSED, _MODE_READ, _MODE_WRITE = 0, 1, 2


class _FrameReader(io.RawIOBase):
    """The decompressed data of a file of frames, as a raw stream that ``io.BufferedReader``
    buffers: a decompressor per frame, each frame read in pieces of at most what is asked."""

    def __init__(self, fp: Any, zstd_dict: Any, options: Any) -> None:
        self._fp = fp
        self._dict = zstd_dict
        self._options = options
        self._decompressor = ZstdDecompressor(zstd_dict=zstd_dict, options=options)
        self._eof = False
        self._pos = 0
        # The decompressed size, once the end was reached.
        self._size = -1

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return bool(self._fp.seekable())

    def close(self) -> None:
        self._decompressor = None  # type: ignore[assignment]
        super().close()

    def readinto(self, b: Any) -> int:
        # Decompressed straight into the caller's buffer (which io.BufferedReader passes on
        # for reads larger than its own), not into bytes copied there
        # (benchmarks/RESULTS.md#decompressor-output).
        with memoryview(b) as view, view.cast("B") as byte_view:
            if not byte_view:
                return 0
            n: int = self._next(lambda d, data: d._decompress_into(data, byte_view)) or 0
        self._pos += n
        return n

    def readall(self) -> bytes:
        # As large pieces as zstd gives (RawIOBase's would ask for 8 KiB at a time).
        chunks = []
        while data := self._read(sys.maxsize):
            chunks.append(data)
        return b"".join(chunks)

    def _read(self, size: int) -> bytes:
        """Up to ``size`` bytes: b"" at the end of the file."""
        if size <= 0:
            return b""
        data: bytes = self._next(lambda d, data: d.decompress(data, size)) or b""
        self._pos += len(data)
        return data

    def _next(self, take: Callable[[ZstdDecompressor, bytes], Any]) -> Any:
        """What ``take(decompressor, input)`` gives first that is not empty (bytes, or a count
        of bytes written), feeding it input and starting a decompressor per frame; None at
        the end of the file, which may fall only between frames (EOFError otherwise, an empty
        file included, as ``compression.zstd`` has it)."""
        if self._eof:
            return None
        piece = None
        while not piece:
            d = self._decompressor
            if d.eof:
                rest = d.unused_data or self._fp.read(_READ_SIZE)
                if not rest:
                    break
                # The next frame.
                d = self._decompressor = ZstdDecompressor(
                    zstd_dict=self._dict, options=self._options
                )
                piece = take(d, rest)
            elif d.needs_input:
                raw = self._fp.read(_READ_SIZE)
                if not raw:
                    raise EOFError(
                        "Compressed file ended before the end-of-stream marker was reached"
                    )
                piece = take(d, raw)
            else:
                piece = take(d, b"")
        if not piece:
            self._eof = True
            self._size = self._pos
            return None
        return piece

    def _rewind(self) -> None:
        self._fp.seek(0)
        self._eof = False
        self._pos = 0
        self._decompressor = ZstdDecompressor(zstd_dict=self._dict, options=self._options)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            pass
        elif whence == io.SEEK_CUR:
            offset = self._pos + offset
        elif whence == io.SEEK_END:
            if self._size < 0:
                while self._read(io.DEFAULT_BUFFER_SIZE * 8):
                    pass
            offset = self._size + offset
        else:
            raise ValueError(f"Invalid value for whence: {whence}")
        if offset < self._pos:
            self._rewind()
        else:
            offset -= self._pos
        # Read forward to the offset (zstd frames cannot be entered in the middle).
        while offset > 0:
            data = self._read(min(io.DEFAULT_BUFFER_SIZE * 8, offset))
            if not data:
                break
            offset -= len(data)
        return self._pos

    def tell(self) -> int:
        return self._pos


class ZstdFile(io.BufferedIOBase):
    """A file object that reads and writes zstd data, as ``compression.zstd.ZstdFile``.

    ``file`` is a path (str, bytes or ``os.PathLike``) or a binary file object; ``mode`` is
    "r", "rb", "w", "wb", "x", "xb", "a" or "ab". Reading handles several frames and skippable
    frames, and seeks by reading (backwards, from the start). Writing compresses into one
    frame, ended at ``close()``; ``flush()`` ends a block (``FLUSH_BLOCK``, the default) or
    the frame (``FLUSH_FRAME``).

    When writing, ``level`` (3 when None) or ``options`` (a dict of ``CompressionParameter``
    to values; not both) sets the compression; when reading, ``options`` is a dict of
    ``DecompressionParameter`` to values and a ``level`` is refused. ``zstd_dict`` is the
    ``ZstdDict`` the frames are compressed with (or one of its ``as_*`` forms).
    """

    FLUSH_BLOCK = ZstdCompressor.FLUSH_BLOCK
    FLUSH_FRAME = ZstdCompressor.FLUSH_FRAME

    def __init__(
        self,
        file: Any,
        /,
        mode: str = "r",
        *,
        level: int | None = None,
        options: dict[int, int] | None = None,
        zstd_dict: ZstdDict | tuple[ZstdDict, int] | None = None,
    ) -> None:
        self._fp: Any = None
        self._close_fp = False
        self._mode = _MODE_CLOSED
        self._buffer: io.BufferedReader | None = None

        if not isinstance(mode, str):
            raise ValueError("mode must be a str")
        if options is not None and not isinstance(options, dict):
            raise TypeError("options must be a dict or None")
        mode = mode.removesuffix("b")  # "rb" -> "r"
        if mode == "r":
            if level is not None:
                raise TypeError("level is illegal in read mode")
            self._mode = _MODE_READ
        elif mode in {"w", "a", "x"}:
            if level is not None and not isinstance(level, int):
                raise TypeError("level must be int or None")
            self._mode = _MODE_WRITE
            self._compressor: ZstdCompressor | None = ZstdCompressor(
                level=level, options=options, zstd_dict=zstd_dict
            )
            self._pos = 0
        else:
            raise ValueError(f"Invalid mode: {mode!r}")

        if isinstance(file, (str, bytes, os.PathLike)):
            self._fp = builtins.open(file, mode + "b")
            self._close_fp = True
        elif (mode == "r" and hasattr(file, "read")) or (mode != "r" and hasattr(file, "write")):
            self._fp = file
        else:
            raise TypeError("file must be a file-like object or a str, bytes, or PathLike object")

        if self._mode == _MODE_READ:
            raw = _FrameReader(self._fp, zstd_dict, options)
            self._buffer = io.BufferedReader(raw)

    def close(self) -> None:
        """Ends the frame (when writing) and closes the file (and the underlying one, when
        it was opened here)."""
        if self._fp is None:
            return
        try:
            if self._mode == _MODE_READ:
                if getattr(self, "_buffer", None):
                    assert self._buffer is not None
                    self._buffer.close()
                    self._buffer = None
            elif self._mode == _MODE_WRITE:
                self.flush(self.FLUSH_FRAME)
                self._compressor = None
        finally:
            self._mode = _MODE_CLOSED
            try:
                if self._close_fp:
                    self._fp.close()
            finally:
                self._fp = None
                self._close_fp = False

    def write(self, data: Buffer) -> int:
        """Compresses ``data`` into the frame; returns its length in bytes."""
        self._check_can_write()
        length = data.nbytes if isinstance(data, memoryview) else memoryview(data).nbytes
        assert self._compressor is not None
        compressed = self._compressor.compress(data)
        self._fp.write(compressed)
        self._pos += length
        return length

    def flush(self, mode: int = FLUSH_BLOCK) -> None:
        """Writes out what the compressor holds: with ``mode`` ``FLUSH_BLOCK`` (the default)
        the block, with ``FLUSH_FRAME`` the frame's end. Does nothing when reading, or when
        the last flush had the same ``mode``."""
        if self._mode == _MODE_READ:
            return
        self._check_not_closed()
        if mode not in {self.FLUSH_BLOCK, self.FLUSH_FRAME}:
            raise ValueError(
                "Invalid mode argument, expected either ZstdFile.FLUSH_FRAME or "
                "ZstdFile.FLUSH_BLOCK"
            )
        assert self._compressor is not None
        if self._compressor.last_mode == mode:
            return
        data = self._compressor.flush(mode)
        self._fp.write(data)
        if hasattr(self._fp, "flush"):
            self._fp.flush()

    def read(self, size: int | None = -1) -> bytes:
        """Up to ``size`` decompressed bytes (all that is left for a negative size or None)."""
        if size is None:
            size = -1
        self._check_can_read()
        assert self._buffer is not None
        return self._buffer.read(size)

    def read1(self, size: int = -1) -> bytes:
        """Up to ``size`` decompressed bytes, with at most one read of the underlying file."""
        self._check_can_read()
        assert self._buffer is not None
        if size < 0:
            # zstd's recommended output size, which holds a whole block (as compression.zstd).
            size = _DSTREAM_OUT_SIZE
        return self._buffer.read1(size)

    def readinto(self, b: Any) -> int:
        """Decompressed bytes into ``b`` (a writable buffer), as many as fit or are left;
        returns how many (0 at the end)."""
        self._check_can_read()
        assert self._buffer is not None
        return self._buffer.readinto(b)

    def readinto1(self, b: Any) -> int:
        """Decompressed bytes into ``b`` (a writable buffer), with at most one read of the
        underlying file; returns how many (0 at the end)."""
        self._check_can_read()
        assert self._buffer is not None
        return self._buffer.readinto1(b)

    def readline(self, size: int | None = -1) -> bytes:
        """One line of decompressed data (up to ``size`` bytes)."""
        self._check_can_read()
        assert self._buffer is not None
        return self._buffer.readline(-1 if size is None else size)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Moves to ``offset`` of the decompressed data, by reading (from the start, when
        backwards): slow. ``whence`` is ``io.SEEK_SET`` (the default: from the start),
        ``io.SEEK_CUR`` (from the position) or ``io.SEEK_END`` (from the end, which reads the
        whole file first). Returns the new position; reading only."""
        self._check_can_read()
        assert self._buffer is not None
        return self._buffer.seek(offset, whence)

    def peek(self, size: int = -1) -> bytes:
        """Decompressed bytes ahead, without moving (at least one, unless at the end).
        ``size`` is a hint, as for ``io.BufferedReader.peek``: more or fewer may come."""
        self._check_can_read()
        assert self._buffer is not None
        return self._buffer.peek(size)

    def __next__(self) -> bytes:
        line = self.readline()
        if line:
            return line
        raise StopIteration

    def tell(self) -> int:
        """The position in the decompressed data (written, when writing)."""
        self._check_not_closed()
        if self._mode == _MODE_READ:
            assert self._buffer is not None
            return self._buffer.tell()
        return self._pos

    def fileno(self) -> int:
        """The file descriptor of the underlying file."""
        self._check_not_closed()
        return int(self._fp.fileno())

    @property
    def name(self) -> Any:
        self._check_not_closed()
        return self._fp.name

    @property
    def mode(self) -> str:
        return "wb" if self._mode == _MODE_WRITE else "rb"

    @property
    def closed(self) -> bool:
        return self._mode == _MODE_CLOSED

    def seekable(self) -> bool:
        """True when reading a seekable file (``seek`` reads to its target)."""
        return self.readable() and bool(self._buffer is not None and self._buffer.seekable())

    def readable(self) -> bool:
        """True when the file was opened for reading."""
        self._check_not_closed()
        return self._mode == _MODE_READ

    def writable(self) -> bool:
        """True when the file was opened for writing."""
        self._check_not_closed()
        return self._mode == _MODE_WRITE

    def _check_not_closed(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed file")

    def _check_can_read(self) -> None:
        if not self.readable():
            raise io.UnsupportedOperation("File not open for reading")

    def _check_can_write(self) -> None:
        if not self.writable():
            raise io.UnsupportedOperation("File not open for writing")


def open(  # noqa: A001 - compression.zstd's name
    file: Any,
    /,
    mode: str = "rb",
    *,
    level: int | None = None,
    options: dict[int, int] | None = None,
    zstd_dict: ZstdDict | tuple[ZstdDict, int] | None = None,
    encoding: str | None = None,
    errors: str | None = None,
    newline: str | None = None,
) -> Any:
    """A ``ZstdFile`` on ``file`` in binary ``mode`` ("rb", the default, "wb", "ab", "xb"),
    or a text stream over one in text mode ("rt", "wt", "at", "xt"), with ``encoding``,
    ``errors`` and ``newline`` as ``io.TextIOWrapper`` takes them. ``level``, ``options``
    and ``zstd_dict`` are ``ZstdFile``'s: the compression level or parameters (not both),
    and the dictionary."""
    text = "t" in mode
    if "b" in mode and text:
        raise ValueError(f"Invalid mode: {mode!r}")
    if not text:
        if encoding is not None:
            raise ValueError("Argument 'encoding' not supported in binary mode")
        if errors is not None:
            raise ValueError("Argument 'errors' not supported in binary mode")
        if newline is not None:
            raise ValueError("Argument 'newline' not supported in binary mode")
    binary = ZstdFile(
        file, mode.replace("t", ""), level=level, options=options, zstd_dict=zstd_dict
    )
    if text:
        return io.TextIOWrapper(binary, encoding, errors, newline)
    return binary
