"""The ``zstd`` workloads of ``python -m benchmarks``: ``zstdpool.zstd`` against the module
it mirrors (``compression.zstd`` on 3.14, ``backports.zstd`` before) and python-zstandard's
streaming objects, used as code written for them uses them.

- A new compressor per message (``compress`` and ``flush``), where ``compression.zstd`` makes
  and frees a context each time and zstdpool takes a warm one from the pool.
- A new decompressor per frame over many small frames.
- ``ZstdFile`` writing and reading a large file at level 3, alone and with ``nb_workers=2``
  (zstd's worker threads; python-zstandard's ``threads=2``).
- Two threads calling the module functions at once (the free-threaded build is where the
  peers' objects refuse to be shared, CPython #133885; the module functions are shared by
  every library).

Every result is checked: frames are decompressed by an implementation independent of
zstdpool, and what is read is compared with what was written.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks.harness.codec import check_compressed, reference_decompress
from benchmarks.harness.data import MiB, format_size, sample_buffers, sample_data
from benchmarks.harness.runner import Contender, Profile, Timed, Workload, register_source
from benchmarks.harness.threads import Gang

LEVEL = 3

#: The module zstdpool.zstd mirrors, by the name this interpreter has it under.
PEER = "compression.zstd" if sys.version_info >= (3, 14) else "backports.zstd"


def _peer() -> ModuleType:
    import importlib

    return importlib.import_module(PEER)


def _ours() -> ModuleType:
    from zstdpool import zstd

    return zstd


@dataclass(frozen=True)
class Sizes:
    """What each profile measures."""

    #: Message sizes for a compressor per message.
    messages: tuple[int, ...]
    #: Frames (and the size of each) for a decompressor per frame.
    frames: tuple[int, int]
    #: The size of the file that ZstdFile writes and reads.
    file: int
    #: Calls per thread, and the size of each, for the threads sharing the module functions.
    shared: tuple[int, int]


SIZES: dict[str, Sizes] = {
    "tiny": Sizes(messages=(1024,), frames=(100, 512), file=256 * 1024, shared=(20, 4096)),
    "quick": Sizes(
        messages=(1024, 16 * 1024), frames=(10_000, 512), file=32 * MiB, shared=(200, 16 * 1024)
    ),
    "full": Sizes(
        messages=(1024, 16 * 1024), frames=(10_000, 512), file=256 * MiB, shared=(500, 16 * 1024)
    ),
}


def _sizes(profile: Profile) -> Sizes:
    return SIZES.get(profile.name, SIZES["quick"])


# --------------------------------------------------------------------------------------------
# A new compressor per message


def _per_message(module: Callable[[], ModuleType], data: bytes) -> Callable[[ExitStack], Timed]:
    """``compression.zstd``'s API (ours or the peer's): a compressor made, fed and flushed."""

    def setup(stack: ExitStack) -> Timed:
        compressor = module().ZstdCompressor

        def call() -> bytes:
            c = compressor(LEVEL)
            return bytes(c.compress(data) + c.flush())

        return call

    return setup


def _zstandard_per_message(data: bytes) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        import zstandard

        def call() -> bytes:
            c = zstandard.ZstdCompressor(level=LEVEL).compressobj()
            return bytes(c.compress(data) + c.flush())

        return call

    return setup


def per_message_workload(size: int) -> Workload:
    data = sample_data(size, seed=3)
    makers = (
        ("zstdpool.zstd", _per_message(_ours, data), ()),
        (PEER, _per_message(_peer, data), (PEER,)),
        ("zstandard compressobj", _zstandard_per_message(data), ("zstandard",)),
    )
    return Workload(
        name=f"zstd: new compressor per {format_size(size)} message",
        group="zstd",
        description=(
            f"ZstdCompressor(level={LEVEL}), then compress() and flush() of one "
            f"{format_size(size)} message: a new object per message."
        ),
        contenders=tuple(
            Contender(
                label, setup, check=lambda out: check_compressed(data, out), requires=requires
            )
            for label, setup, requires in makers
        ),
        nbytes=size,
    )


# --------------------------------------------------------------------------------------------
# A new decompressor per frame


def _frames(count: int, size: int) -> tuple[list[bytes], list[bytes]]:
    import zstdpool

    messages = sample_buffers(count, size)
    return messages, [zstdpool.compress(m, LEVEL) for m in messages]


def _per_frame(
    module: Callable[[], ModuleType], frames: list[bytes]
) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        decompressor = module().ZstdDecompressor

        def call() -> list[bytes]:
            return [decompressor().decompress(f) for f in frames]

        return call

    return setup


def _zstandard_per_frame(frames: list[bytes]) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        import zstandard

        def call() -> list[bytes]:
            return [zstandard.ZstdDecompressor().decompressobj().decompress(f) for f in frames]

        return call

    return setup


def per_frame_workload(count: int, size: int) -> Workload:
    messages, frames = _frames(count, size)

    def check(out: list[bytes]) -> None:
        if out != messages:
            raise AssertionError("the frames did not decompress to the messages")

    makers = (
        ("zstdpool.zstd", _per_frame(_ours, frames), ()),
        (PEER, _per_frame(_peer, frames), (PEER,)),
        ("zstandard decompressobj", _zstandard_per_frame(frames), ("zstandard",)),
    )
    return Workload(
        name=f"zstd: new decompressor per frame, {count}x{format_size(size)}",
        group="zstd",
        description=(
            f"{count} frames of {format_size(size)}, each decompressed by a new "
            "ZstdDecompressor (one call is all of them)."
        ),
        contenders=tuple(
            Contender(label, setup, check=check, requires=requires)
            for label, setup, requires in makers
        ),
        nbytes=count * size,
    )


# --------------------------------------------------------------------------------------------
# ZstdFile


def _file_data(size: int) -> bytes:
    """``size`` bytes: a 16 MiB sample repeated (further apart than level 3's window, so each
    copy is compressed as new data), or one sample when smaller."""
    piece = sample_data(min(size, 16 * MiB), seed=11)
    return (piece * -(-size // len(piece)))[:size]


def _scratch(stack: ExitStack) -> Path:
    """A directory for the files written, removed with the stack."""
    where = Path(tempfile.mkdtemp(prefix="zstdpool-bench-zstdfile-"))
    stack.callback(shutil.rmtree, where, True)
    return where


#: What each write() or readinto() call passes: a 1 MiB piece, as a copy loop would.
PIECE = 1 * MiB


def _write_with(open_file: Callable[[Path], Any], data: bytes) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        path = _scratch(stack) / "data.zst"
        view = memoryview(data)

        def call() -> Path:
            with open_file(path) as f:
                for at in range(0, len(view), PIECE):
                    f.write(view[at : at + PIECE])
            return path

        return call

    return setup


def _zstdfile_writer(module: Callable[[], ModuleType], workers: int) -> Callable[[Path], Any]:
    def open_file(path: Path) -> Any:
        zstd = module()
        options = {zstd.CompressionParameter.compression_level: LEVEL}
        if workers:
            options[zstd.CompressionParameter.nb_workers] = workers
        return zstd.ZstdFile(path, "wb", options=options)

    return open_file


def _zstandard_writer(workers: int) -> Callable[[Path], Any]:
    def open_file(path: Path) -> Any:
        import zstandard

        cctx = zstandard.ZstdCompressor(level=LEVEL, threads=workers)
        return zstandard.open(path, "wb", cctx=cctx)

    return open_file


def zstdfile_write_workload(size: int, workers: int) -> Workload:
    data = _file_data(size)

    def check(path: Path) -> None:
        if reference_decompress(path.read_bytes()) != data:
            raise AssertionError("the file does not decompress to the data written")

    threads = f", nb_workers={workers}" if workers else ""
    makers = (
        ("zstdpool.zstd.ZstdFile", _zstdfile_writer(_ours, workers), ()),
        (f"{PEER}.ZstdFile", _zstdfile_writer(_peer, workers), (PEER,)),
        ("zstandard.open", _zstandard_writer(workers), ("zstandard",)),
    )
    return Workload(
        name=f"zstd: ZstdFile write {format_size(size)}{threads}",
        group="zstd",
        description=(
            f"Write {format_size(size)} to a new file through ZstdFile at level {LEVEL}"
            f"{threads}, in 1 MiB pieces."
        ),
        contenders=tuple(
            Contender(label, _write_with(open_file, data), check=check, requires=requires)
            for label, open_file, requires in makers
        ),
        nbytes=size,
        settle=bool(workers),
    )


def _read_with(open_file: Callable[[Path], Any], data: bytes) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        import zstdpool

        path = _scratch(stack) / "data.zst"
        with zstdpool.compressor(LEVEL) as c:
            path.write_bytes(c.compress(data))
        into = bytearray(len(data))
        view = memoryview(into)

        def call() -> bytearray:
            at = 0
            with open_file(path) as f:
                while n := f.readinto(view[at : at + PIECE]):
                    at += n
            if at != len(into):
                raise AssertionError(f"read {at} bytes of {len(into)}")
            return into

        return call

    return setup


def zstdfile_read_workload(size: int) -> Workload:
    data = _file_data(size)

    def check(out: bytearray) -> None:
        if out != data:
            raise AssertionError("what was read differs from the data")

    def ours(path: Path) -> Any:
        return _ours().ZstdFile(path)

    def peer(path: Path) -> Any:
        return _peer().ZstdFile(path)

    def zstandard_open(path: Path) -> Any:
        import zstandard

        return zstandard.open(path, "rb")

    makers = (
        ("zstdpool.zstd.ZstdFile", ours, ()),
        (f"{PEER}.ZstdFile", peer, (PEER,)),
        ("zstandard.open", zstandard_open, ("zstandard",)),
    )
    return Workload(
        name=f"zstd: ZstdFile read {format_size(size)}",
        group="zstd",
        description=(
            f"Read a {format_size(size)} file (one frame, level {LEVEL}) through ZstdFile, "
            "1 MiB at a time into one buffer."
        ),
        contenders=tuple(
            Contender(label, _read_with(open_file, data), check=check, requires=requires)
            for label, open_file, requires in makers
        ),
        nbytes=size,
    )


# --------------------------------------------------------------------------------------------
# Threads sharing the module functions


def _shared_functions(
    module: Callable[[], ModuleType], threads: int, calls: int, size: int
) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        zstd = module()
        messages = sample_buffers(threads * calls, size)

        def job(mine: list[bytes]) -> Callable[[], list[bytes]]:
            def run() -> list[bytes]:
                return [zstd.decompress(zstd.compress(m, LEVEL)) for m in mine]

            return run

        gang = Gang([job(messages[t * calls : (t + 1) * calls]) for t in range(threads)])
        stack.callback(gang.close)
        return gang

    return setup


def shared_functions_workload(threads: int, calls: int, size: int) -> Workload:
    messages = sample_buffers(threads * calls, size)

    def check(out: list[list[bytes]]) -> None:
        if [m for part in out for m in part] != messages:
            raise AssertionError("the threads' round trips differ from their messages")

    makers = [
        (f"zstdpool.zstd, {threads} threads", _shared_functions(_ours, threads, calls, size), ()),
        (f"{PEER}, {threads} threads", _shared_functions(_peer, threads, calls, size), (PEER,)),
        ("zstdpool.zstd, 1 thread", _shared_functions(_ours, 1, threads * calls, size), ()),
    ]
    free_threaded = not getattr(sys, "_is_gil_enabled", lambda: True)()
    return Workload(
        name=f"zstd: {threads} threads x {calls} compress+decompress of {format_size(size)}",
        group="zstd",
        description=(
            f"{threads} threads each compress and decompress {calls} messages of "
            f"{format_size(size)} with the module functions, at once"
            + (" (free-threaded build)." if free_threaded else " (the GIL is on here).")
        ),
        contenders=tuple(
            Contender(label, setup, check=check, requires=requires)
            for label, setup, requires in makers
        ),
        nbytes=threads * calls * size,
        settle=True,
    )


@register_source
def zstd_module_workloads(profile: Profile) -> Iterator[Workload]:
    """zstdpool.zstd against compression.zstd (or backports.zstd) and python-zstandard."""
    sizes = _sizes(profile)
    for size in sizes.messages:
        yield per_message_workload(size)
    yield per_frame_workload(*sizes.frames)
    workers = 2 if (os.cpu_count() or 1) >= 2 else 0
    yield zstdfile_write_workload(sizes.file, 0)
    if workers:
        yield zstdfile_write_workload(sizes.file, workers)
    yield zstdfile_read_workload(sizes.file)
    yield shared_functions_workload(2, *sizes.shared)
