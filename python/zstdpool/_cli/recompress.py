"""The ``recompress`` command: an Arrow IPC stream or file rewritten with another codec,
level or format.

``recompress SRC DST`` streams the record batches of an Arrow IPC stream or file (Feather v2
included) into a new one, one batch at a time, so that inputs larger than memory work. The
output goes to a temporary file renamed over DST only when all went well.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Literal, TextIO

from zstdpool._cli import EXIT_OK, usage_error
from zstdpool._cli.files import (
    InputError,
    failure,
    format_size,
    head,
    open_source,
    plural,
    print_out,
    regular_size,
    runtime_errors,
    sniff_format,
)

MiB = 1 << 20

#: Inputs above either threshold get a progress bar (when stderr is a terminal).
PROGRESS_MIN_BYTES = 64 * MiB
PROGRESS_MIN_BATCHES = 100

CODECS = ("zstd", "lz4", "none")
#: What --compression gives the writer ("none" is None).
Codec = Literal["zstd", "lz4"]
FORMATS = ("stream", "file")


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
        "--fsync",
        action="store_true",
        help="sync DST and its directory before finishing, so that it survives a power loss "
        "(default: renamed into place unsynced, as pyarrow and polars write)",
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
    compression: Codec | None
    level: int | None
    batches: int
    rows: int
    bytes_read: int


def run_recompress(args: argparse.Namespace) -> int:
    from zstdpool import MAX_LEVEL, MIN_LEVEL

    parser: argparse.ArgumentParser = args.parser
    compression: Codec | None = None if args.compression == "none" else args.compression
    if args.level is not None:
        if compression != "zstd":
            return usage_error(
                parser,
                f"--level applies to --compression zstd only, not to {args.compression}",
            )
        if not MIN_LEVEL <= args.level <= MAX_LEVEL:
            return usage_error(
                parser,
                f"--level {args.level}: zstd levels run from {MIN_LEVEL} to {MAX_LEVEL}",
            )

    src, dst = args.src, args.dst
    f, code = open_source(parser, src, "SRC")
    if f is None:
        return code
    with f:
        if _same_file(src, os.fstat(f.fileno()), dst):
            return usage_error(
                parser,
                f"DST {dst!r} is the same file as SRC {src!r}; refusing to overwrite the "
                "source (write to another path, then rename)",
            )
        if os.path.isdir(dst):
            return usage_error(parser, f"DST {dst!r} is a directory")
        parent = os.path.dirname(os.path.abspath(dst))
        if not os.path.isdir(parent):
            return usage_error(parser, f"DST {dst!r}: directory {parent!r} does not exist")

        size = regular_size(f)
        try:
            src_format = sniff_format(head(f), size)
        except InputError as e:
            return failure(f"{src}: {e}")
        except OSError as e:
            return failure(f"{src}: cannot read: {e}")
        dst_format = args.format or src_format
        try:
            result = _recompress(
                f,
                src,
                src_format,
                size,
                dst,
                dst_format,
                compression,
                args.level,
                args.progress,
                args.fsync,
            )
        except runtime_errors() as e:
            return failure(f"{src} -> {dst}: {e}" if isinstance(e, OSError) else f"{src}: {e}")

    before = size if size is not None else result.bytes_read
    after = os.path.getsize(dst)
    codec: str = result.compression or "uncompressed"
    if result.level is not None:
        codec += f" level {result.level}"
    width = len(f"{max(before, after):,}")
    lines = [
        f"{src} -> {dst}",
        f"  {result.src_format} -> {result.dst_format}, {codec}: "
        f"{plural(result.batches, 'batch')}, {plural(result.rows, 'row')}",
        f"  before: {before:>{width},} bytes ({format_size(before)})",
        f"  after:  {after:>{width},} bytes ({format_size(after)})",
    ]
    if before:
        lines.append(f"  ratio:  {after / before:.3f} (after / before)")
    print_out("\n".join(lines))
    return EXIT_OK


def _recompress(
    f: io.BufferedReader,
    src: str,
    src_format: str,
    size: int | None,
    dst: str,
    dst_format: str,
    compression: Codec | None,
    level: int | None,
    progress_mode: bool | None,
    fsync: bool = False,
) -> Recompressed:
    from zstdpool import ipc
    from zstdpool.errors import ZstdError

    metadata: dict[bytes, bytes] = {}
    reader: ipc.RecordBatchFileReader | ipc.RecordBatchStreamReader
    if src_format == "file":
        try:
            reader = ipc.open_file(f)
        except (ZstdError, ValueError) as e:
            raise InputError(
                f"starts like an Arrow IPC file but cannot be read as one (truncated?): {e}"
            ) from e
        total_batches: int | None = reader.num_record_batches
        metadata = reader.metadata or {}
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
        writer = opener(
            dst, reader.schema, compression=compression, level=level, fsync=fsync, **extra
        )
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
