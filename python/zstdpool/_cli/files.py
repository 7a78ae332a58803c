"""What the ``recompress`` and ``inspect`` commands share: opening an Arrow IPC input given on
the command line, telling a file from a stream by its first bytes, and reporting failures.

Exit codes are those of the command line (:mod:`zstdpool._cli`): 0 ok, 1 failure (unreadable
or corrupt input, a failed write), 2 bad usage (bad options, a missing input).
"""

from __future__ import annotations

import argparse
import io
import os
import stat
import struct
import sys
from typing import IO

from zstdpool._cli import EXIT_FAILURE, EXIT_OK, usage_error

NOT_ARROW = "not an Arrow IPC stream or file"

FILE_MAGIC = b"ARROW1"
CONTINUATION = b"\xff\xff\xff\xff"


class InputError(Exception):
    """Input that is not Arrow IPC (exit 1)."""


def failure(message: str) -> int:
    """Prints ``message`` as the command's error; returns the exit code of a failure."""
    print(f"zstdpool: error: {message}", file=sys.stderr)
    return EXIT_FAILURE


def format_size(n: int) -> str:
    """``n`` bytes in binary units, e.g. ``'1.5 MiB'``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def plural(n: int, word: str) -> str:
    """``'3 batches'``, ``'1 row'``: ``n`` and ``word``, in the plural unless ``n`` is 1."""
    return f"{n:,} {word}" + ("" if n == 1 else "es" if word.endswith("ch") else "s")


def sniff_format(head: bytes, size: int | None) -> str:
    """``'file'`` or ``'stream'`` from the first 8 bytes of an input of ``size`` bytes.

    A file starts with the ``ARROW1`` magic; a stream with the ``0xFFFFFFFF`` continuation
    marker, or (written before Arrow 0.15) directly with the length of its first message.
    Raises :class:`InputError` for anything else.
    """
    if head.startswith(FILE_MAGIC):
        return "file"
    if head[:4] == CONTINUATION:
        return "stream"
    if len(head) >= 8:
        # Legacy stream: an int32 metadata length, then a flatbuffer whose first word is the
        # offset of its root table, inside the metadata.
        length, root = struct.unpack("<iI", head[:8])
        if length >= 8 and 0 < root < length and (size is None or length + 4 <= size):
            return "stream"
    if not head:
        raise InputError(f"empty file: {NOT_ARROW}")
    raise InputError(NOT_ARROW)


def open_source(
    parser: argparse.ArgumentParser, path: str, what: str
) -> tuple[io.BufferedReader | None, int]:
    """``path`` opened for reading, or ``(None, exit code)`` after a usage error."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return None, usage_error(parser, f"{what} {path!r}: no such file")
    except IsADirectoryError:
        return None, usage_error(parser, f"{what} {path!r}: is a directory")
    except OSError as e:
        return None, usage_error(parser, f"{what} {path!r}: cannot read: {e.strerror or e}")
    if stat.S_ISDIR(os.fstat(f.fileno()).st_mode):  # where open() succeeds on directories
        f.close()
        return None, usage_error(parser, f"{what} {path!r}: is a directory")
    return f, EXIT_OK


def print_out(text: str) -> None:
    """Prints ``text`` on stdout; a reader that went away (``| head``) is not an error."""
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # Python would complain again when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def regular_size(f: IO[bytes]) -> int | None:
    st = os.fstat(f.fileno())
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def head(f: io.BufferedReader) -> bytes:
    """The first 8 bytes of ``f``, without consuming them."""
    return f.peek(8)[:8]


def runtime_errors() -> tuple[type[BaseException], ...]:
    """What a bad input or a failed write raises: reported as exit 1, without a traceback."""
    import pyarrow as pa

    from zstdpool.errors import ZstdError

    return (InputError, ZstdError, OSError, ValueError, pa.ArrowException)
