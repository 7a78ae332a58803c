"""The codec workloads of ``python -m benchmarks``: compress, decompress, compress_many.

Each workload is one call on :func:`~benchmarks.harness.data.sample_data` done by zstdpool (the
baseline: the module function, then a lease) and by its peers: python-zstandard (a reused
compressor, and a new one per call), backports.zstd (the function, and a reused compressor),
cramjam and pyarrow's Codec. Every result is checked against an implementation independent
of zstdpool (python-zstandard when installed).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from benchmarks.harness.data import format_size, sample_buffers, sample_data, sample_frame
from benchmarks.harness.runner import (
    Contender,
    Profile,
    Timed,
    Unavailable,
    Workload,
    register_source,
)

# --------------------------------------------------------------------------------------------
# Checks


def as_bytes(result: object) -> bytes:
    """The bytes of a result (bytes, a cramjam Buffer, a zstandard segment...)."""
    return result if isinstance(result, bytes) else bytes(result)  # type: ignore[call-overload]


def reference_decompress(frame: bytes) -> bytes:
    """Decompresses one frame with an implementation independent of zstdpool when installed."""
    try:
        import zstandard
    except ImportError:
        import zstdpool

        data: bytes = zstdpool.decompress(frame)
        return data
    return bytes(zstandard.ZstdDecompressor().decompressobj().decompress(frame))


def check_compressed(data: bytes, result: object) -> None:
    """Raises AssertionError unless ``result`` is a zstd frame of ``data``."""
    if reference_decompress(as_bytes(result)) != data:
        raise AssertionError("the frame does not decompress to the input")


def check_decompressed(data: bytes, result: object) -> None:
    """Raises AssertionError unless ``result`` holds the bytes of ``data``."""
    if as_bytes(result) != data:
        raise AssertionError("the output differs from the original data")


def check_compressed_many(buffers: Sequence[bytes], result: Any) -> None:
    """Raises AssertionError unless ``result`` holds one frame of each buffer, in order."""
    frames = [as_bytes(result[i]) for i in range(len(result))]
    if len(frames) != len(buffers):
        raise AssertionError(f"{len(frames)} frames for {len(buffers)} buffers")
    for i, (frame, data) in enumerate(zip(frames, buffers, strict=True)):
        if reference_decompress(frame) != data:
            raise AssertionError(f"frame {i} does not decompress to buffer {i}")


def _frame_bytes(result: object) -> dict[str, float]:
    return {"bytes": len(as_bytes(result))}


def _frames_bytes(result: Any) -> dict[str, float]:
    return {"bytes": sum(len(as_bytes(result[i])) for i in range(len(result)))}


# --------------------------------------------------------------------------------------------
# Contenders

T = TypeVar("T")


@dataclass(frozen=True)
class CodecImpl(Generic[T]):
    """A codec function of one library; ``bind(stack, input, n)`` returns the timed call.

    For compressors ``n`` is the level; for decompressors it is the decompressed size (which
    only pyarrow needs to be told).
    """

    label: str
    bind: Callable[[ExitStack, T, int], Timed]
    requires: tuple[str, ...] = ()


def _zstdpool_compress(stack: ExitStack, data: bytes, level: int) -> Timed:
    import zstdpool

    return functools.partial(zstdpool.compress, data, level)


def _zstdpool_compress_lease(stack: ExitStack, data: bytes, level: int) -> Timed:
    import zstdpool

    c = stack.enter_context(zstdpool.compressor(level))
    return functools.partial(c.compress, data)


def _zstandard_compress_reused(stack: ExitStack, data: bytes, level: int) -> Timed:
    import zstandard

    return functools.partial(zstandard.ZstdCompressor(level=level).compress, data)


def _zstandard_compress_new(stack: ExitStack, data: bytes, level: int) -> Timed:
    from zstandard import ZstdCompressor

    def call() -> bytes:
        return bytes(ZstdCompressor(level=level).compress(data))

    return call


def _backports_compress(stack: ExitStack, data: bytes, level: int) -> Timed:
    from backports import zstd

    return functools.partial(zstd.compress, data, level)


def _backports_compress_reused(stack: ExitStack, data: bytes, level: int) -> Timed:
    from backports import zstd

    c = zstd.ZstdCompressor(level)
    # In its streaming API, FLUSH_FRAME ends the frame; the next call starts a new one.
    return functools.partial(c.compress, data, zstd.ZstdCompressor.FLUSH_FRAME)


def _cramjam_compress(stack: ExitStack, data: bytes, level: int) -> Timed:
    import cramjam

    return functools.partial(cramjam.zstd.compress, data, level)


def _pyarrow_compress(stack: ExitStack, data: bytes, level: int) -> Timed:
    import pyarrow as pa

    codec = pa.Codec("zstd", compression_level=level)
    return functools.partial(codec.compress, data, asbytes=True)


#: Ways to compress one buffer into one frame; the first is the baseline.
COMPRESSORS: tuple[CodecImpl[bytes], ...] = (
    CodecImpl("zstdpool.compress", _zstdpool_compress),
    CodecImpl("zstdpool lease", _zstdpool_compress_lease),
    CodecImpl("zstandard reused", _zstandard_compress_reused, ("zstandard",)),
    CodecImpl("zstandard new per call", _zstandard_compress_new, ("zstandard",)),
    CodecImpl("backports.zstd.compress", _backports_compress, ("backports.zstd",)),
    CodecImpl("backports.zstd reused", _backports_compress_reused, ("backports.zstd",)),
    CodecImpl("cramjam", _cramjam_compress, ("cramjam",)),
    CodecImpl("pyarrow Codec", _pyarrow_compress, ("pyarrow",)),
)


def _zstdpool_decompress(stack: ExitStack, frame: bytes, size: int) -> Timed:
    import zstdpool

    return functools.partial(zstdpool.decompress, frame)


def _zstdpool_decompress_lease(stack: ExitStack, frame: bytes, size: int) -> Timed:
    import zstdpool

    d = stack.enter_context(zstdpool.decompressor())
    return functools.partial(d.decompress, frame)


def _zstandard_decompress_reused(stack: ExitStack, frame: bytes, size: int) -> Timed:
    import zstandard

    return functools.partial(zstandard.ZstdDecompressor().decompress, frame)


def _zstandard_decompress_new(stack: ExitStack, frame: bytes, size: int) -> Timed:
    from zstandard import ZstdDecompressor

    def call() -> bytes:
        return bytes(ZstdDecompressor().decompress(frame))

    return call


def _backports_decompress(stack: ExitStack, frame: bytes, size: int) -> Timed:
    from backports import zstd

    return functools.partial(zstd.decompress, frame)


def _cramjam_decompress(stack: ExitStack, frame: bytes, size: int) -> Timed:
    import cramjam

    return functools.partial(cramjam.zstd.decompress, frame)


def _pyarrow_decompress(stack: ExitStack, frame: bytes, size: int) -> Timed:
    import pyarrow as pa

    codec = pa.Codec("zstd")
    return functools.partial(codec.decompress, frame, decompressed_size=size, asbytes=True)


#: Ways to decompress one frame; the first is the baseline.
DECOMPRESSORS: tuple[CodecImpl[bytes], ...] = (
    CodecImpl("zstdpool.decompress", _zstdpool_decompress),
    CodecImpl("zstdpool lease", _zstdpool_decompress_lease),
    CodecImpl("zstandard reused", _zstandard_decompress_reused, ("zstandard",)),
    CodecImpl("zstandard new per call", _zstandard_decompress_new, ("zstandard",)),
    CodecImpl("backports.zstd.decompress", _backports_decompress, ("backports.zstd",)),
    CodecImpl("cramjam", _cramjam_decompress, ("cramjam",)),
    CodecImpl("pyarrow Codec", _pyarrow_decompress, ("pyarrow",)),
)


def _zstdpool_many(stack: ExitStack, buffers: list[bytes], level: int) -> Timed:
    import zstdpool

    return functools.partial(zstdpool.compress_many, buffers, level)


def _zstdpool_many_1(stack: ExitStack, buffers: list[bytes], level: int) -> Timed:
    import zstdpool

    return functools.partial(zstdpool.compress_many, buffers, level, threads=1)


def _zstdpool_loop(stack: ExitStack, buffers: list[bytes], level: int) -> Timed:
    from zstdpool import compress

    def call() -> list[bytes]:
        return [compress(b, level) for b in buffers]

    return call


def _zstandard_multi(stack: ExitStack, buffers: list[bytes], level: int) -> Timed:
    import zstandard

    zc = zstandard.ZstdCompressor(level=level)
    if not hasattr(zc, "multi_compress_to_buffer"):
        raise Unavailable(f"zstandard {zstandard.__version__} has no multi_compress_to_buffer")
    try:
        zc.multi_compress_to_buffer([b"probe"])
    except NotImplementedError as e:
        raise Unavailable(
            f"multi_compress_to_buffer is not implemented by the {zstandard.backend} backend"
        ) from e
    # threads=-1: one thread per CPU, like compress_many's default.
    inputs: list[bytes | bytearray | memoryview] = list(buffers)
    return functools.partial(zc.multi_compress_to_buffer, inputs, threads=-1)


def _zstandard_loop(stack: ExitStack, buffers: list[bytes], level: int) -> Timed:
    import zstandard

    compress = zstandard.ZstdCompressor(level=level).compress

    def call() -> list[bytes]:
        return [compress(b) for b in buffers]

    return call


#: Ways to compress many buffers into one frame each; the first is the baseline.
MANY_COMPRESSORS: tuple[CodecImpl[list[bytes]], ...] = (
    CodecImpl("zstdpool.compress_many", _zstdpool_many),
    CodecImpl("zstdpool.compress_many threads=1", _zstdpool_many_1),
    CodecImpl("zstdpool.compress loop", _zstdpool_loop),
    CodecImpl("zstandard multi_compress_to_buffer", _zstandard_multi, ("zstandard",)),
    CodecImpl("zstandard reused loop", _zstandard_loop, ("zstandard",)),
)


# --------------------------------------------------------------------------------------------
# Workloads


def _bound(impl: CodecImpl[T], make_input: Callable[[], T], n: int) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        return impl.bind(stack, make_input(), n)

    return setup


def compress_workload(size: int, level: int) -> Workload:
    """Compressing ``sample_data(size)`` into one frame at ``level``."""
    data = functools.partial(sample_data, size)
    return Workload(
        name=f"compress {format_size(size)} L{level}",
        group="codec",
        description=f"One zstd frame from {format_size(size)} of sample data at level {level}.",
        contenders=tuple(
            Contender(
                impl.label,
                _bound(impl, data, level),
                check=lambda out: check_compressed(sample_data(size), out),
                extra=_frame_bytes,
                requires=impl.requires,
            )
            for impl in COMPRESSORS
        ),
        nbytes=size,
    )


def decompress_workload(size: int, level: int = 3) -> Workload:
    """Decompressing the frame of ``sample_data(size)`` (which declares its size)."""
    frame = functools.partial(sample_frame, size, level)
    return Workload(
        name=f"decompress {format_size(size)}",
        group="codec",
        description=(
            f"Decompress one frame of {format_size(size)} of sample data (level {level})."
        ),
        contenders=tuple(
            Contender(
                impl.label,
                _bound(impl, frame, size),
                check=lambda out: check_decompressed(sample_data(size), out),
                requires=impl.requires,
            )
            for impl in DECOMPRESSORS
        ),
        nbytes=size,
    )


def compress_many_workload(count: int, size: int, level: int) -> Workload:
    """Compressing ``count`` buffers of ``size`` bytes, one frame each, in one call."""
    buffers = functools.partial(sample_buffers, count, size)
    return Workload(
        name=f"compress_many {count}x{format_size(size)} L{level}",
        group="codec",
        description=f"{count} buffers of {format_size(size)}, one frame each, at level {level}.",
        contenders=tuple(
            Contender(
                impl.label,
                _bound(impl, buffers, level),
                check=lambda out: check_compressed_many(sample_buffers(count, size), out),
                extra=_frames_bytes,
                requires=impl.requires,
            )
            for impl in MANY_COMPRESSORS
        ),
        nbytes=count * size,
    )


@register_source
def codec_workloads(profile: Profile) -> Iterator[Workload]:
    """The codec workloads: compress, decompress and compress_many."""
    level = 3
    for size in profile.sizes:
        yield compress_workload(size, level)
        if size in profile.fast_level_sizes:
            yield compress_workload(size, 1)
    for size in profile.sizes:
        yield decompress_workload(size, level)
    for count, size in profile.many:
        yield compress_many_workload(count, size, level)
