"""Side-by-side benchmarks of zstdpool and its peers, run by ``python -m zstdpool bench``.

A *workload* is one operation on one input (say, "compress 64KiB at level 3") done by several
*contenders*: the first is zstdpool, the others are peers (python-zstandard, backports.zstd,
cramjam, pyarrow, ...). The runner verifies each contender's result once, then times them
interleaved: for each round it runs every contender for a calibrated batch of calls, so that
noise from a shared machine hits all of them alike; it reports the median time per call over
the rounds and the ratio to zstdpool (peer time / zstdpool time: above 1, zstdpool is faster).

Adding workloads
----------------
A workload is a :class:`Workload`; each contender is a :class:`Contender` whose ``setup``
returns a zero-argument callable, the thing that is timed::

    from zstdpool._bench import Contender, Workload, check_compressed, register

    DATA = b"..."

    def _setup_zstdpool(stack):              # stack: contextlib.ExitStack, closed after timing
        import zstdpool
        return functools.partial(zstdpool.compress, DATA)

    def _setup_polars(stack):                # may raise Unavailable("why") to be skipped
        ...

    register(Workload(
        name="compress my data",             # unique; --filter matches name or group
        group="ipc",
        description="What one call does.",
        contenders=(                          # the first one is the baseline (zstdpool)
            Contender(
                "zstdpool",
                _setup_zstdpool,
                check=functools.partial(check_compressed, DATA),  # raises if wrong
                extra=lambda out: {"bytes": len(out)},            # figures for the table
            ),
            Contender("polars", _setup_polars, requires=("polars",)),
        ),
        nbytes=len(DATA),                    # input bytes per call, for the MB/s column
    ))

Workloads whose size depends on ``--tiny``/``--quick``/``--full`` are listed by a function of
the :class:`Profile` instead, registered with the :func:`register_source` decorator::

    @register_source
    def ipc_workloads(profile: Profile) -> Iterable[Workload]:
        for size in profile.sizes:
            yield Workload(...)

Put such code in its own module (e.g. ``zstdpool/_bench_ipc.py``) and add the module's name to
:data:`WORKLOAD_MODULES` below; :func:`load_workloads` imports those modules before listing.
:func:`sample_data` gives realistic bytes of any size. A contender whose ``requires`` modules
are missing, or whose setup raises :class:`Unavailable` or ModuleNotFoundError, is skipped
with a note; any other exception, or a failed check, marks it failed (exit code 1).
``check(result)`` runs once on the result of a call and must raise (e.g. AssertionError) if
it is wrong; ``extra(result)`` returns figures shown and saved next to the timing (e.g.
``{"bytes": ...}``).
"""

from __future__ import annotations

import functools
import gc
import importlib
import importlib.metadata
import json
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, Generic, TextIO, TypeVar

KiB = 1024
MiB = 1024 * KiB

#: Modules imported by :func:`load_workloads`; each registers its workloads on import.
WORKLOAD_MODULES: list[str] = ["zstdpool._bench_ipc"]

#: The timed thing: one call is one operation.
Timed = Callable[[], object]


class Unavailable(Exception):
    """Raised by a contender's setup when it cannot run here; it is skipped with a note."""


# --------------------------------------------------------------------------------------------
# Profiles


@dataclass(frozen=True)
class Profile:
    """How big and how long: sizes of the inputs and the timing budget."""

    name: str
    #: Input sizes in bytes for per-call workloads.
    sizes: tuple[int, ...]
    #: Sizes also compressed at level 1.
    fast_level_sizes: tuple[int, ...]
    #: (count, size) cases for the many-buffers workloads.
    many: tuple[tuple[int, int], ...]
    #: Rounds per workload: at least ``min_rounds``, at most ``max_rounds``, as many as fit
    #: in ``workload_seconds``.
    min_rounds: int
    max_rounds: int
    workload_seconds: float
    #: Target duration of one batch of calls of one contender.
    batch_seconds: float
    #: Calls made before calibration (after the correctness check).
    warmup_calls: int


PROFILES: dict[str, Profile] = {
    "tiny": Profile(
        name="tiny",
        sizes=(1 * KiB, 16 * KiB),
        fast_level_sizes=(1 * KiB,),
        many=((16, 4 * KiB),),
        min_rounds=2,
        max_rounds=2,
        workload_seconds=0.0,
        batch_seconds=0.0002,
        warmup_calls=1,
    ),
    "quick": Profile(
        name="quick",
        sizes=(1 * KiB, 64 * KiB, 4 * MiB),
        fast_level_sizes=(1 * KiB,),
        many=((1000, 16 * KiB),),
        min_rounds=5,
        max_rounds=21,
        workload_seconds=2.5,
        batch_seconds=0.003,
        warmup_calls=3,
    ),
    "full": Profile(
        name="full",
        sizes=(1 * KiB, 16 * KiB, 64 * KiB, 1 * MiB, 4 * MiB, 32 * MiB),
        fast_level_sizes=(1 * KiB, 64 * KiB),
        many=((1000, 16 * KiB), (10000, 1 * KiB)),
        min_rounds=11,
        max_rounds=51,
        workload_seconds=12.0,
        batch_seconds=0.01,
        warmup_calls=10,
    ),
}


def tiny_requested() -> bool:
    """True when ZSTDPOOL_BENCH_TINY asks for a smoke run (used by the test suite)."""
    return os.environ.get("ZSTDPOOL_BENCH_TINY", "").strip().lower() in {"1", "true", "yes", "on"}


# --------------------------------------------------------------------------------------------
# Workloads and the registry


@dataclass(frozen=True)
class Contender:
    """One way of doing a workload's operation."""

    label: str
    #: Builds the timed callable; may enter contexts on the stack (closed after timing).
    setup: Callable[[ExitStack], Timed]
    #: Raises if the result of one call is wrong.
    check: Callable[[Any], None] | None = None
    #: Figures to report from the result of one call, e.g. {"bytes": 1234}.
    extra: Callable[[Any], Mapping[str, float]] | None = None
    #: Modules that must import, else the contender is skipped with a note.
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class Workload:
    """An operation on a given input, done by each contender; the first is the baseline."""

    name: str
    group: str
    description: str
    contenders: tuple[Contender, ...]
    #: Input bytes one call processes (for MB/s); 0 when it does not apply.
    nbytes: int = 0
    #: Make one untimed call before each timed batch: multi-threaded contenders that follow a
    #: single-threaded one would otherwise time how long the idle CPU takes to come back
    #: (on a VM, up to a third of a 30 ms call, for every library alike).
    settle: bool = False

    def matches(self, filters: Sequence[str]) -> bool:
        """True if no filter is given or one is a substring of the name or group."""
        if not filters:
            return True
        hay = f"{self.group} {self.name}".lower()
        return any(f.lower() in hay for f in filters)


WorkloadSource = Callable[[Profile], Iterable[Workload]]

_FIXED: list[Workload] = []
_SOURCES: list[WorkloadSource] = []


def register(workload: Workload) -> Workload:
    """Registers a workload that is the same under every profile; returns it."""
    _FIXED.append(workload)
    return workload


def register_source(source: WorkloadSource) -> WorkloadSource:
    """Registers a function listing workloads for a profile (usable as a decorator)."""
    _SOURCES.append(source)
    return source


def load_workloads(profile: Profile, filters: Sequence[str] = ()) -> list[Workload]:
    """All registered workloads for ``profile`` that match ``filters``, in registration order."""
    for module in WORKLOAD_MODULES:
        importlib.import_module(module)
    found: list[Workload] = [w for source in _SOURCES for w in source(profile)]
    found += _FIXED
    seen: set[str] = set()
    for w in found:
        if w.name in seen:
            raise ValueError(f"two benchmark workloads are named {w.name!r}")
        seen.add(w.name)
        if not w.contenders:
            raise ValueError(f"benchmark workload {w.name!r} has no contenders")
    return [w for w in found if w.matches(filters)]


# --------------------------------------------------------------------------------------------
# Sample data


def format_size(n: int) -> str:
    """1024 -> '1KiB', 4194304 -> '4MiB', 300 -> '300B'."""
    for unit, scale in (("MiB", MiB), ("KiB", KiB)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"


_WORDS = (
    "GET POST PUT /api/v1/users /api/v1/orders /api/v1/items /health INFO WARN DEBUG ERROR "
    "alice bob carol dave erin frank ok cache_miss timeout retry eu-west-1 us-east-2 "
    "checkout login logout search basket payment shipped pending refunded"
).split()


def _int_column(nbytes: int, seed: int) -> bytes:
    """A little-endian int64 column of slowly varying values (a timestamp-like random walk)."""
    count = -(-nbytes // 8)
    try:
        import numpy as np
    except ImportError:
        import random
        from array import array

        rng = random.Random(seed)
        col = array("q")
        value = 1_700_000_000_000
        for _ in range(count):
            value += rng.randint(-3, 3) + (
                rng.randint(-(10**6), 10**6) if rng.random() < 1e-3 else 0
            )
            col.append(value)
        if sys.byteorder == "big":
            col.byteswap()
        return col.tobytes()[:nbytes]
    gen = np.random.default_rng(seed)
    steps = gen.integers(-3, 4, size=count)
    jumps = np.where(gen.random(count) < 1e-3, gen.integers(-(10**6), 10**6, size=count), 0)
    values = 1_700_000_000_000 + np.cumsum(steps + jumps)
    return bytes(values.astype("<i8").tobytes()[:nbytes])


def _log_text(nbytes: int, seed: int) -> bytes:
    """Log-like text lines: a timestamp, words from a small vocabulary and some numbers."""
    import random

    rng = random.Random(seed)
    lines: list[str] = []
    total = 0
    ts = 1_700_000_000
    while total < nbytes:
        ts += rng.randint(0, 2)
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 6)))
        status = rng.choice((200, 200, 200, 404, 500))
        line = f"{ts} {words} status={status} ms={rng.randint(1, 999)}\n"
        lines.append(line)
        total += len(line)
    return "".join(lines).encode()[:nbytes]


@functools.lru_cache(maxsize=32)
def sample_data(size: int, seed: int = 0) -> bytes:
    """``size`` bytes of realistic data: half an int64 column, half log-like text."""
    half = size // 2
    return _int_column(half, seed) + _log_text(size - half, seed + 1)


@functools.lru_cache(maxsize=32)
def sample_frame(size: int, level: int = 3) -> bytes:
    """``sample_data(size)`` compressed into one zstd frame by zstdpool."""
    import zstdpool

    frame: bytes = zstdpool.compress(sample_data(size), level)
    return frame


@functools.lru_cache(maxsize=4)
def sample_buffers(count: int, size: int) -> list[bytes]:
    """``count`` distinct buffers of ``size`` bytes each, cut from one sample."""
    data = sample_data(count * size, seed=7)
    return [data[i * size : (i + 1) * size] for i in range(count)]


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


# --------------------------------------------------------------------------------------------
# Codec contenders (shared with benchmarks/test_bench_codec.py)

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

    @property
    def id(self) -> str:
        """A name fit for a pytest id."""
        return self.label.replace(" ", "-").replace("=", "")


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
        return ZstdCompressor(level=level).compress(data)

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
        return ZstdDecompressor().decompress(frame)

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


# --------------------------------------------------------------------------------------------
# Timing


@dataclass
class ContenderResult:
    """What was measured for one contender of a workload."""

    label: str
    #: "ok", "skipped" (not available here) or "failed" (setup or check raised).
    status: str = "ok"
    note: str = ""
    #: Calls per batch.
    batch: int = 0
    #: Time per call of each round, in nanoseconds.
    per_call_ns: list[float] = field(default_factory=list)
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def median_ns(self) -> float | None:
        """The median over rounds of the time per call."""
        return statistics.median(self.per_call_ns) if self.per_call_ns else None

    @property
    def spread(self) -> float | None:
        """The interquartile range of the rounds relative to the median."""
        med = self.median_ns
        if med is None or len(self.per_call_ns) < 2 or med <= 0:
            return None
        q1, _, q3 = statistics.quantiles(self.per_call_ns, n=4, method="inclusive")
        return (q3 - q1) / med


@dataclass
class WorkloadResult:
    """The results of a workload's contenders, the first being the baseline."""

    workload: Workload
    rounds: int
    seconds: float
    contenders: list[ContenderResult]

    def ratio(self, result: ContenderResult) -> float | None:
        """Contender time / baseline time (above 1: the baseline is faster)."""
        base = self.contenders[0].median_ns
        mine = result.median_ns
        if base is None or mine is None or base <= 0:
            return None
        return mine / base


@dataclass
class Report:
    """A whole run."""

    profile: Profile
    results: list[WorkloadResult]
    machine: dict[str, Any]
    versions: dict[str, str | None]

    @property
    def failed(self) -> list[tuple[str, ContenderResult]]:
        """(workload name, result) of every contender that failed."""
        return [
            (r.workload.name, c) for r in self.results for c in r.contenders if c.status == "failed"
        ]

    def notes(self) -> list[str]:
        """One line per distinct skip or failure."""
        seen: dict[str, list[str]] = {}
        for r in self.results:
            for c in r.contenders:
                if c.status != "ok":
                    seen.setdefault(f"{c.label} {c.status}: {c.note}", []).append(r.workload.name)
        return [
            f"{note} ({', '.join(names) if len(names) <= 2 else f'{len(names)} workloads'})"
            for note, names in seen.items()
        ]


def _time_batch(fn: Timed, n: int) -> int:
    """Nanoseconds taken by ``n`` calls of ``fn``, with the garbage collector paused."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        return time.perf_counter_ns() - t0
    finally:
        if enabled:
            gc.enable()


def calibrate(fn: Timed, target_ns: float) -> tuple[int, float]:
    """Returns (calls per batch so a batch takes about ``target_ns``, ns per call)."""
    n = 1
    while True:
        elapsed = max(_time_batch(fn, n), 1)
        if elapsed * 2 >= target_ns or n >= 1 << 24:
            break
        n *= max(2, min(100, int(target_ns / elapsed)))
    per_call = elapsed / n
    return max(1, round(target_ns / per_call)), per_call


def _prepare(contender: Contender, stack: ExitStack, result: ContenderResult) -> Timed | None:
    """Sets a contender up and checks one call; None (and a note) if it is skipped or broken."""
    try:
        for module in contender.requires:
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as e:
                raise Unavailable(f"{module} is not installed") from e
        fn = contender.setup(stack)
        out = fn()
    except Unavailable as e:
        result.status, result.note = "skipped", str(e)
        return None
    except ModuleNotFoundError as e:
        result.status, result.note = "skipped", f"{e.name} is not installed"
        return None
    except Exception as e:
        result.status, result.note = "failed", f"setup: {type(e).__name__}: {e}"
        return None
    try:
        if contender.check is not None:
            contender.check(out)
        if contender.extra is not None:
            result.extra = {k: float(v) for k, v in contender.extra(out).items()}
    except Exception as e:
        result.status, result.note = "failed", f"check: {type(e).__name__}: {e}"
        return None
    return fn


class Progress:
    """A one-line text progress bar on a tty; plain lines otherwise."""

    WIDTH = 24

    def __init__(self, stream: TextIO, total: int) -> None:
        self.stream = stream
        self.total = max(total, 1)
        self.live = stream.isatty()
        self._shown = 0
        self._noted: set[str] = set()

    def update(self, done: float, text: str) -> None:
        """Redraws the bar: ``done`` workloads of ``total`` finished, then ``text``."""
        if not self.live:
            return
        filled = int(self.WIDTH * min(done / self.total, 1.0))
        bar = "#" * filled + "." * (self.WIDTH - filled)
        line = f"[{bar}] {int(done)}/{self.total} {text}"
        cols = shutil.get_terminal_size((80, 24)).columns - 1
        line = line[:cols]
        self.stream.write("\r" + line + " " * max(0, self._shown - len(line)))
        self.stream.flush()
        self._shown = len(line)

    def clear(self) -> None:
        """Erases the bar."""
        if self.live and self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self.stream.flush()
            self._shown = 0

    def line(self, text: str) -> None:
        """Prints a full line above the bar."""
        self.clear()
        self.stream.write(text + "\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        """Prints a note once, however often it is given."""
        if text not in self._noted:
            self._noted.add(text)
            self.line(f"note: {text}")


def measure(workload: Workload, profile: Profile, progress: Progress, index: int) -> WorkloadResult:
    """Checks, warms up, calibrates and times the contenders of one workload, interleaved."""
    t_start = time.perf_counter()
    results = [ContenderResult(c.label) for c in workload.contenders]
    progress.update(index, f"{workload.name}: setting up")
    with ExitStack() as stack:
        ready: list[tuple[ContenderResult, Timed]] = []
        for contender, result in zip(workload.contenders, results, strict=True):
            fn = _prepare(contender, stack, result)
            if fn is None:
                where = f"{workload.name}: " if result.status == "failed" else ""
                progress.note(f"{where}{result.label} {result.status}: {result.note}")
                continue
            for _ in range(profile.warmup_calls):
                fn()
            ready.append((result, fn))
        target_ns = profile.batch_seconds * 1e9
        round_ns = 0.0
        for result, fn in ready:
            result.batch, per_call = calibrate(fn, target_ns)
            round_ns += result.batch * per_call
        fit = int(profile.workload_seconds * 1e9 / round_ns) if round_ns else 0
        rounds = max(profile.min_rounds, min(profile.max_rounds, fit))
        for r in range(rounds):
            progress.update(index + r / rounds, f"{workload.name}: round {r + 1}/{rounds}")
            shift = r % len(ready) if ready else 0
            for result, fn in ready[shift:] + ready[:shift]:
                if workload.settle:
                    fn()
                result.per_call_ns.append(_time_batch(fn, result.batch) / result.batch)
    seconds = time.perf_counter() - t_start
    progress.line(
        f"[{index + 1}/{progress.total}] {workload.name}: {len(ready)} contenders "
        f"x {rounds} rounds, {seconds:.1f}s"
    )
    return WorkloadResult(workload, rounds, seconds, results)


# --------------------------------------------------------------------------------------------
# Machine and versions


def machine_info() -> dict[str, Any]:
    """Where the run happened."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if hasattr(os, "sched_getaffinity"):
        info["usable_cpus"] = len(os.sched_getaffinity(0))
    if hasattr(os, "getloadavg"):
        info["loadavg"] = list(os.getloadavg())
    return info


def module_version(module: str) -> str | None:
    """The installed version of a module's distribution, or None if it is not installed."""
    try:
        return importlib.metadata.version(module)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    return str(getattr(mod, "__version__", "unknown"))


def versions(workloads: Iterable[Workload]) -> dict[str, str | None]:
    """zstdpool, the zstd it links, and every peer the workloads require."""
    import zstdpool

    found: dict[str, str | None] = {
        "zstdpool": zstdpool.__version__,
        "libzstd (zstdpool)": zstdpool.ZSTD_VERSION,
    }
    for module in sorted({m for w in workloads for c in w.contenders for m in c.requires}):
        found[module] = module_version(module)
    return found


# --------------------------------------------------------------------------------------------
# Running and reporting


def run(workloads: Sequence[Workload], profile: Profile, err: TextIO | None = None) -> Report:
    """Measures ``workloads`` one after another, with progress on ``err`` (default stderr)."""
    progress = Progress(err if err is not None else sys.stderr, len(workloads))
    results: list[WorkloadResult] = []
    try:
        for i, workload in enumerate(workloads):
            results.append(measure(workload, profile, progress, i))
    finally:
        progress.clear()
    return Report(profile, results, machine_info(), versions(workloads))


def _fmt_us(ns: float | None) -> str:
    if ns is None:
        return "-"
    us = ns / 1e3
    if us < 10:
        return f"{us:.2f}"
    if us < 1000:
        return f"{us:.1f}"
    return f"{us:,.0f}"


def format_table(report: Report) -> str:
    """The results as a plain-text table, with notes on skipped and failed contenders."""
    extra_keys = sorted({k for r in report.results for c in r.contenders for k in c.extra})
    header = ["workload", "contender", "us/call", "+-%", "MB/s", "ratio", *extra_keys]
    rows: list[list[str]] = []
    for r in report.results:
        first = True
        for c in r.contenders:
            if c.status != "ok":
                continue
            med = c.median_ns
            ratio = r.ratio(c)
            spread = c.spread
            mbps = r.workload.nbytes / med * 1e3 if r.workload.nbytes and med else None
            rows.append(
                [
                    r.workload.name if first else "",
                    c.label,
                    _fmt_us(med),
                    f"{spread * 100:.0f}" if spread is not None else "-",
                    f"{mbps:,.0f}" if mbps is not None else "-",
                    f"{ratio:.2f}" if ratio is not None else "-",
                    *(f"{c.extra[k]:,.0f}" if k in c.extra else "" for k in extra_keys),
                ]
            )
            first = False
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    left = {0, 1}

    def fmt(row: list[str]) -> str:
        cells = [
            cell.ljust(widths[i]) if i in left else cell.rjust(widths[i])
            for i, cell in enumerate(row)
        ]
        return "  ".join(cells).rstrip()

    lines = [fmt(header), "  ".join("-" * w for w in widths)]
    for row in rows:
        if row[0] and len(lines) > 2:
            lines.append("")
        lines.append(fmt(row))
    lines += [
        "",
        f"profile {report.profile.name}; us/call: median over rounds; +-%: interquartile range "
        "/ median; ratio: contender time / zstdpool time (above 1: zstdpool is faster).",
    ]
    lines += [f"note: {n}" for n in report.notes()]
    return "\n".join(lines)


def to_json(report: Report) -> dict[str, Any]:
    """Everything measured, as JSON-ready data."""
    p = report.profile
    return {
        "profile": {k: getattr(p, k) for k in p.__dataclass_fields__},
        "machine": report.machine,
        "versions": report.versions,
        "workloads": [
            {
                "name": r.workload.name,
                "group": r.workload.group,
                "description": r.workload.description,
                "nbytes": r.workload.nbytes,
                "rounds": r.rounds,
                "seconds": r.seconds,
                "baseline": r.contenders[0].label,
                "contenders": [
                    {
                        "label": c.label,
                        "status": c.status,
                        "note": c.note,
                        "batch": c.batch,
                        "per_call_ns": c.per_call_ns,
                        "median_ns": c.median_ns,
                        "ratio": r.ratio(c),
                        "extra": c.extra,
                    }
                    for c in r.contenders
                ],
            }
            for r in report.results
        ],
    }


def write_json(report: Report, path: str | os.PathLike[str]) -> None:
    """Writes :func:`to_json` to ``path``."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(to_json(report), f, indent=1)
        f.write("\n")


PLOT_HINT = "--plot needs matplotlib: pip install zstdpool[plot]"


def have_matplotlib() -> bool:
    """True if matplotlib can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot(report: Report, path: str | os.PathLike[str]) -> None:
    """Draws the ratios of every peer to zstdpool as horizontal bars (log scale) into ``path``."""
    try:
        import matplotlib
        import matplotlib.ticker

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise RuntimeError(PLOT_HINT) from e

    bars: list[tuple[float, float, str]] = []  # (y, ratio, contender label)
    ticks: list[tuple[float, str]] = []
    y = 0.0
    for r in report.results:
        peers = [(c.label, r.ratio(c)) for c in r.contenders[1:]]
        shown = [(label, ratio) for label, ratio in peers if ratio is not None]
        if not shown:
            continue
        ticks.append((y + (len(shown) - 1) / 2, r.workload.name))
        for label, ratio in shown:
            bars.append((y, ratio, label))
            y += 1
        y += 0.8
    if not bars:
        raise RuntimeError("nothing to plot: no contender was timed against zstdpool")
    labels = list(dict.fromkeys(label for _, _, label in bars))
    cmap = plt.get_cmap("tab20" if len(labels) > 10 else "tab10")
    colors = {label: cmap(i % cmap.N) for i, label in enumerate(labels)}
    fig, ax = plt.subplots(figsize=(11, 1.5 + 0.22 * y))
    for label in labels:
        mine = [(yy, ratio) for yy, ratio, lab in bars if lab == label]
        # Bars grow from 1 (as fast as zstdpool): right when the peer is slower, left if faster.
        ax.barh(
            [yy for yy, _ in mine],
            [ratio - 1 for _, ratio in mine],
            left=1,
            height=0.9,
            color=colors[label],
            label=label,
        )
    for yy, ratio, _ in bars:
        ax.annotate(
            f"{ratio:.2f}",
            (ratio, yy),
            xytext=(3 if ratio >= 1 else -3, 0),
            textcoords="offset points",
            ha="left" if ratio >= 1 else "right",
            va="center",
            fontsize="x-small",
        )
    ratios = [ratio for _, ratio, _ in bars]
    ax.set_xscale("log")
    lo, hi = min(0.5, min(ratios)) / 1.3, max(2.0, max(ratios)) * 1.3
    ax.set_xlim(lo, hi)
    steps = [m * 10.0**e for e in range(-4, 5) for m in (1, 2, 5)]
    ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator([t for t in steps if lo <= t <= hi]))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks([t for t, _ in ticks])
    ax.set_yticklabels([name for _, name in ticks])
    ax.set_ylim(y - 0.4, -0.6)
    ax.set_xlabel("time relative to zstdpool (log scale; above 1: zstdpool is faster)")
    ax.set_title(f"zstdpool {report.versions.get('zstdpool')} vs peers ({report.profile.name})")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
