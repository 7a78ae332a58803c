"""The ``recompress`` and ``inspect`` subcommands of the command line (see ``__main__``).

``recompress SRC DST`` streams the record batches of an Arrow IPC stream or file (Feather v2
included) into a new one with another codec, level or format, one batch at a time. The
output goes to a temporary file renamed over DST only when all went well.

``inspect PATH`` shows the format, schema, batch and row counts, codecs and the compressed
and uncompressed bytes of each column; the byte accounting comes from
``zstdpool._zstdpool.inspect_ipc``.

Exit codes are those of the command line: 0 ok, 1 failure (unreadable or corrupt input, a
failed write), 2 bad usage (bad options, a missing SRC, DST the same file as SRC).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import stat
import struct
import sys
import time
from dataclasses import dataclass
from typing import IO, Any, TextIO

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

KiB = 1 << 10
MiB = 1 << 20

#: Inputs above either threshold get a progress bar (when stderr is a terminal).
PROGRESS_MIN_BYTES = 64 * MiB
PROGRESS_MIN_BATCHES = 100

CODECS = ("zstd", "lz4", "none")
FORMATS = ("stream", "file")
NOT_ARROW = "not an Arrow IPC stream or file"

FILE_MAGIC = b"ARROW1"
CONTINUATION = b"\xff\xff\xff\xff"


class InputError(Exception):
    """Input that is not Arrow IPC (exit 1)."""


# --------------------------------------------------------------------------------------------
# Helpers shared by both commands


def _usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _failure(message: str) -> int:
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


def _open_source(
    parser: argparse.ArgumentParser, path: str, what: str
) -> tuple[io.BufferedReader | None, int]:
    """``path`` opened for reading, or ``(None, exit code)`` after a usage error."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return None, _usage_error(parser, f"{what} {path!r}: no such file")
    except IsADirectoryError:
        return None, _usage_error(parser, f"{what} {path!r}: is a directory")
    except OSError as e:
        return None, _usage_error(parser, f"{what} {path!r}: cannot read: {e.strerror or e}")
    if stat.S_ISDIR(os.fstat(f.fileno()).st_mode):  # where open() succeeds on directories
        f.close()
        return None, _usage_error(parser, f"{what} {path!r}: is a directory")
    return f, EXIT_OK


def _print(text: str) -> None:
    """Prints ``text`` on stdout; a reader that went away (``| head``) is not an error."""
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # Python would complain again when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _regular_size(f: IO[bytes]) -> int | None:
    st = os.fstat(f.fileno())
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _head(f: io.BufferedReader) -> bytes:
    """The first 8 bytes of ``f``, without consuming them."""
    return f.peek(8)[:8]


def _runtime_errors() -> tuple[type[BaseException], ...]:
    """What a bad input or a failed write raises: reported as exit 1, without a traceback."""
    import pyarrow as pa

    from zstdpool.errors import ZstdError

    return (InputError, ZstdError, OSError, ValueError, pa.ArrowException)


# --------------------------------------------------------------------------------------------
# recompress


def add_recompress(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "recompress",
        help="rewrite an Arrow IPC stream or file with another codec, level or format",
        description=(
            "Convert the Arrow IPC stream or file (Feather v2 included) SRC into DST with the "
            "given codec, one record batch at a time, so that inputs larger than memory work. "
            "SRC's format is detected from its first bytes. DST is written to a temporary file "
            "and renamed into place only when complete, so a failure never leaves a partial "
            "DST. Prints the sizes before and after."
        ),
        epilog="Exit codes: 0 ok, 1 failure (e.g. corrupt SRC), 2 bad usage.",
    )
    p.add_argument("src", metavar="SRC", help="the Arrow IPC stream or file to read")
    p.add_argument("dst", metavar="DST", help="where to write; replaced if it exists")
    p.add_argument(
        "--compression",
        "-c",
        choices=CODECS,
        default="zstd",
        help="the codec of DST's buffers (default: zstd)",
    )
    p.add_argument(
        "--level",
        "-l",
        type=int,
        metavar="N",
        help="the zstd level (default: 1, as pyarrow); only with --compression zstd",
    )
    p.add_argument(
        "--format",
        "-f",
        choices=FORMATS,
        help="DST's format: stream, or file (Feather v2); default: SRC's format",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar on stderr (default: for large inputs when stderr is a "
        f"terminal: above {PROGRESS_MIN_BYTES // MiB} MiB or {PROGRESS_MIN_BATCHES} batches)",
    )
    p.set_defaults(run=run_recompress, parser=p)


class Progress:
    """A one-line text progress bar on ``out``, by batches (files) or bytes read (streams)."""

    WIDTH = 30
    INTERVAL = 0.1  # seconds between redraws

    def __init__(
        self,
        out: TextIO,
        mode: bool | None,
        total_bytes: int | None,
        total_batches: int | None,
    ) -> None:
        self.out = out
        self.auto = mode is None and _isatty(out)
        self.total_bytes = total_bytes
        self.total_batches = total_batches
        self.enabled = bool(mode) or (
            self.auto
            and (
                (total_bytes or 0) > PROGRESS_MIN_BYTES
                or (total_batches or 0) > PROGRESS_MIN_BATCHES
            )
        )
        self.last = 0.0
        self.width = 0
        self.drawn = False

    def update(self, batches: int, bytes_read: int, *, final: bool = False) -> None:
        if not self.enabled and self.auto and batches > PROGRESS_MIN_BATCHES:
            self.enabled = True  # a stream turned out long
        if not self.enabled:
            return
        now = time.monotonic()
        if not final and now - self.last < self.INTERVAL:
            return
        self.last = now
        line = self.render(batches, bytes_read)
        pad = max(self.width - len(line), 0)
        self.width = len(line)
        self.out.write("\r" + line + " " * pad)
        self.out.flush()
        self.drawn = True

    def render(self, batches: int, bytes_read: int) -> str:
        fraction: float | None = None
        if self.total_batches:
            fraction = batches / self.total_batches
            counts = f"{batches}/{self.total_batches} batches"
        elif self.total_bytes:
            fraction = bytes_read / self.total_bytes
            counts = f"{format_size(bytes_read)}/{format_size(self.total_bytes)}, {batches} batches"
        else:
            counts = f"{format_size(bytes_read)}, {batches} batches"
        if fraction is None:
            return f"recompress  {counts}"
        fraction = min(max(fraction, 0.0), 1.0)
        filled = int(fraction * self.WIDTH)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        return f"recompress [{bar}] {int(fraction * 100):3d}%  {counts}"

    def finish(self, batches: int, bytes_read: int) -> None:
        if self.enabled:
            self.update(batches, bytes_read, final=True)
        if self.drawn:
            self.out.write("\n")
            self.out.flush()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _same_file(src: str, src_stat: os.stat_result, dst: str) -> bool:
    """Whether ``dst`` names ``src``: the same path, or the same inode (link, symlink)."""
    if os.path.abspath(src) == os.path.abspath(dst):
        return True
    try:
        d = os.stat(dst)
    except OSError:
        return False
    return (d.st_dev, d.st_ino) == (src_stat.st_dev, src_stat.st_ino)


@dataclass
class Recompressed:
    src_format: str
    dst_format: str
    compression: str | None
    level: int | None
    batches: int
    rows: int
    bytes_read: int


def run_recompress(args: argparse.Namespace) -> int:
    from zstdpool import MAX_LEVEL, MIN_LEVEL

    parser: argparse.ArgumentParser = args.parser
    compression = None if args.compression == "none" else args.compression
    if args.level is not None:
        if compression != "zstd":
            return _usage_error(
                parser,
                f"--level applies to --compression zstd only, not to {args.compression}",
            )
        if not MIN_LEVEL <= args.level <= MAX_LEVEL:
            return _usage_error(
                parser,
                f"--level {args.level}: zstd levels run from {MIN_LEVEL} to {MAX_LEVEL}",
            )

    src, dst = args.src, args.dst
    f, code = _open_source(parser, src, "SRC")
    if f is None:
        return code
    with f:
        if _same_file(src, os.fstat(f.fileno()), dst):
            return _usage_error(
                parser,
                f"DST {dst!r} is the same file as SRC {src!r}; refusing to overwrite the "
                "source (write to another path, then rename)",
            )
        if os.path.isdir(dst):
            return _usage_error(parser, f"DST {dst!r} is a directory")
        parent = os.path.dirname(os.path.abspath(dst))
        if not os.path.isdir(parent):
            return _usage_error(parser, f"DST {dst!r}: directory {parent!r} does not exist")

        size = _regular_size(f)
        try:
            src_format = sniff_format(_head(f), size)
        except InputError as e:
            return _failure(f"{src}: {e}")
        except OSError as e:
            return _failure(f"{src}: cannot read: {e}")
        dst_format = args.format or src_format
        try:
            result = _recompress(
                f, src, src_format, size, dst, dst_format, compression, args.level, args.progress
            )
        except _runtime_errors() as e:
            return _failure(f"{src} -> {dst}: {e}" if isinstance(e, OSError) else f"{src}: {e}")

    before = size if size is not None else result.bytes_read
    after = os.path.getsize(dst)
    codec = result.compression or "uncompressed"
    if result.level is not None:
        codec += f" level {result.level}"
    width = len(f"{max(before, after):,}")
    lines = [
        f"{src} -> {dst}",
        f"  {result.src_format} -> {result.dst_format}, {codec}: "
        f"{_plural(result.batches, 'batch')}, {_plural(result.rows, 'row')}",
        f"  before: {before:>{width},} bytes ({format_size(before)})",
        f"  after:  {after:>{width},} bytes ({format_size(after)})",
    ]
    if before:
        lines.append(f"  ratio:  {after / before:.3f} (after / before)")
    _print("\n".join(lines))
    return EXIT_OK


def _recompress(
    f: io.BufferedReader,
    src: str,
    src_format: str,
    size: int | None,
    dst: str,
    dst_format: str,
    compression: str | None,
    level: int | None,
    progress_mode: bool | None,
) -> Recompressed:
    from zstdpool import ipc
    from zstdpool.errors import ZstdError

    metadata: dict[str, str] = {}
    reader: ipc.IpcFileReader | ipc.IpcStreamReader
    if src_format == "file":
        try:
            reader = ipc.open_file(f)
        except (ZstdError, ValueError) as e:
            raise InputError(
                f"starts like an Arrow IPC file but cannot be read as one (truncated?): {e}"
            ) from e
        total_batches: int | None = reader.num_record_batches
        metadata = dict(reader.metadata)
    else:
        try:
            reader = ipc.open_stream(f)
        except (ZstdError, ValueError) as e:
            raise InputError(f"not a valid Arrow IPC stream: {e}") from e
        total_batches = None
    with contextlib.closing(reader):
        if metadata and dst_format == "stream":
            print(
                f"zstdpool: note: the file metadata of {src} ({len(metadata)} key(s)) is "
                "dropped: a stream has no footer to hold it",
                file=sys.stderr,
            )
        progress = Progress(sys.stderr, progress_mode, size, total_batches)
        opener = ipc.new_file if dst_format == "file" else ipc.new_stream
        extra: dict[str, Any] = {"metadata": metadata} if metadata and dst_format == "file" else {}
        writer = opener(dst, reader.schema, compression=compression, level=level, **extra)
        batches = rows = 0
        try:
            for batch in reader:
                writer.write_batch(batch)
                batches += 1
                rows += batch.num_rows
                progress.update(batches, f.tell())
            writer.close()
        except BaseException:
            with contextlib.suppress(Exception):
                writer.abort()
            raise
        finally:
            progress.finish(batches, f.tell())
        return Recompressed(
            src_format=src_format,
            dst_format=dst_format,
            compression=writer.compression,
            level=writer.level,
            batches=batches,
            rows=rows,
            bytes_read=f.tell(),
        )


# --------------------------------------------------------------------------------------------
# inspect


def add_inspect(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "inspect",
        help="show the layout and per-column compression of an Arrow IPC stream or file",
        description=(
            "Show the format (stream or file), schema, number of record batches and rows, "
            "codecs, and for each column its compressed and uncompressed bytes (dictionary "
            "batches included) and their ratio, compressed / uncompressed."
        ),
        epilog="Exit codes: 0 ok, 1 failure (e.g. corrupt input), 2 bad usage.",
    )
    p.add_argument("path", metavar="PATH", help="the Arrow IPC stream or file (Feather v2)")
    p.add_argument(
        "--json",
        action="store_true",
        help="print the figures as JSON (the schema as its string form)",
    )
    p.set_defaults(run=run_inspect, parser=p)


def run_inspect(args: argparse.Namespace) -> int:
    from zstdpool import _zstdpool

    parser: argparse.ArgumentParser = args.parser
    path = args.path
    f, code = _open_source(parser, path, "PATH")
    if f is None:
        return code
    with f:
        size = _regular_size(f)
        try:
            sniff_format(_head(f), size)
        except InputError as e:
            return _failure(f"{path}: {e}")
        except OSError as e:
            return _failure(f"{path}: cannot read: {e}")
    try:
        info = _zstdpool.inspect_ipc(path)
    except _runtime_errors() as e:
        return _failure(f"{path}: {e}")
    if args.json:
        _print(json.dumps(inspect_json(info), indent=2, default=str))
    else:
        _print(format_inspect(path, size, info))
    return EXIT_OK


def inspect_json(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` with its schema as a string, ready for ``json.dumps``."""
    out = dict(info)
    if "schema" in out:
        out["schema"] = str(out["schema"])
    return out


def _ratio(compressed: int, uncompressed: int) -> str:
    return f"{compressed / uncompressed:.3f}" if uncompressed else "-"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "es" if word.endswith("ch") else "s")


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def format_inspect(path: str, size: int | None, info: dict[str, Any]) -> str:
    """The readable report of :func:`run_inspect`: header lines, then a table of columns."""
    columns: list[dict[str, Any]] = list(info.get("columns", []))
    codecs = info.get("codecs") or []
    size_text = f" ({size:,} bytes)" if size is not None else ""
    batches = _plural(info["num_batches"], "record batch")
    dictionaries = info.get("num_dictionary_batches", 0)
    if dictionaries:
        batches += ", " + _plural(dictionaries, "dictionary batch")
    lines = [
        f"path:     {path}{size_text}",
        f"format:   {info['format']}",
        f"codec:    {', '.join(codecs) if codecs else '- (no buffers)'}",
        f"batches:  {batches}",
        f"rows:     {info['num_rows']:,}",
        f"body:     {info.get('body_bytes', 0):,} bytes in message bodies",
        f"schema:   {_plural(len(columns), 'column')}",
    ]
    metadata = getattr(info.get("schema"), "metadata", None)
    if metadata:
        keys = ", ".join(k.decode(errors="replace") for k in metadata)
        lines.append(f"metadata: {_clip(keys, 70)}")
    lines.append("")

    total_c = sum(c["compressed_bytes"] for c in columns)
    total_u = sum(c["uncompressed_bytes"] for c in columns)
    header = ("column", "type", "compressed", "uncompressed", "ratio")
    rows = [
        (
            str(c["name"]),
            _clip(str(c["type"])),
            f"{c['compressed_bytes']:,}",
            f"{c['uncompressed_bytes']:,}",
            _ratio(c["compressed_bytes"], c["uncompressed_bytes"]),
        )
        for c in columns
    ]
    total = ("total", "", f"{total_c:,}", f"{total_u:,}", _ratio(total_c, total_u))
    widths = [max(len(r[i]) for r in [header, *rows, total]) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        left = [cells[i].ljust(widths[i]) for i in range(2)]
        right = [cells[i].rjust(widths[i]) for i in range(2, len(cells))]
        return "  ".join(left + right).rstrip()

    lines.append(line(header))
    lines.append(line(tuple("-" * w for w in widths)))
    lines.extend(line(r) for r in rows)
    lines.append(line(tuple("-" * w for w in widths)))
    lines.append(line(total))
    lines.append("")
    lines.append("ratio = compressed / uncompressed bytes (dictionary batches included)")
    return "\n".join(lines)
