"""The ``dict`` workloads of ``python -m benchmarks``: small records with a dictionary.

The records are JSON log and telemetry records of about 200 B, 1 KiB and 4 KiB
(:func:`~benchmarks.harness.data.log_records`); the dictionary (16 KiB, 8 KiB for 200-byte
records) is trained on 3,000 records of another seed than the ones measured. One call
compresses (or decompresses) :data:`BATCH` records, one frame each, so the time per record is
the time per call over :data:`BATCH`; the ``bytes`` column is the frames' total, so the ratio
gained by the dictionary reads off the "no dictionary" row.

Contenders: zstdpool with the dictionary (the function, and a lease), python-zstandard with a
reused compressor on a precomputed dictionary and with a new compressor per call (same
precomputed dictionary), ``compression.zstd`` (backports.zstd before Python 3.14) per call
with its digested dictionary, and zstdpool without a dictionary. The threads workload runs
the records on 2 Python threads sharing one dictionary against 1 thread, for zstdpool and
python-zstandard (a compressor per thread, which its objects need).
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from typing import Any

from benchmarks.harness.data import KiB, format_size, log_records
from benchmarks.harness.runner import Contender, Profile, Timed, Workload, register_source
from benchmarks.harness.threads import Gang

#: Python's own zstd module: ``compression.zstd`` from 3.14, ``backports.zstd`` before.
STDLIB_ZSTD = "compression.zstd" if sys.version_info >= (3, 14) else "backports.zstd"


def stdlib_zstd() -> Any:
    """:data:`STDLIB_ZSTD`, imported."""
    return importlib.import_module(STDLIB_ZSTD)


#: Records per call.
BATCH = 100

#: Levels measured, and the level the decompression workloads' frames are written at.
LEVELS = (1, 3)

#: Record size -> dictionary size.
DICT_SIZE = {200: 8 * KiB, 1 * KiB: 16 * KiB, 4 * KiB: 16 * KiB}

_SIZES: dict[str, tuple[int, ...]] = {
    "tiny": (1 * KiB,),
    "quick": (200, 1 * KiB, 4 * KiB),
    "full": (200, 1 * KiB, 4 * KiB),
}


def records(size: int) -> tuple[bytes, ...]:
    """The measured records: :data:`BATCH` of about ``size`` bytes."""
    return log_records(BATCH, size, seed=2)


@functools.cache
def dictionary_content(size: int) -> bytes:
    """A dictionary trained on 3,000 records of another seed than :func:`records`."""
    import zstdpool

    return zstdpool.train_dict(log_records(3000, size, seed=1), DICT_SIZE[size]).dict_content


def _frames(size: int, level: int, with_dict: bool) -> list[bytes]:
    import zstdpool

    d = zstdpool.ZstdDict(dictionary_content(size)) if with_dict else None
    return [zstdpool.compress(r, level, zstd_dict=d) for r in records(size)]


def _loop(fn: Callable[[bytes], object], items: Sequence[bytes]) -> Timed:
    def call() -> list[object]:
        return [fn(x) for x in items]

    return call


# --------------------------------------------------------------------------------------------
# Compressors: bind(stack, size, level) -> a function of one record


Bind = Callable[[ExitStack, int, int], Callable[[bytes], object]]


def _zstdpool_dict(stack: ExitStack, size: int, level: int) -> Callable[[bytes], object]:
    import zstdpool

    d = zstdpool.ZstdDict(dictionary_content(size))
    return functools.partial(zstdpool.compress, level=level, zstd_dict=d)


def _zstdpool_lease(stack: ExitStack, size: int, level: int) -> Callable[[bytes], object]:
    import zstdpool

    d = zstdpool.ZstdDict(dictionary_content(size))
    return stack.enter_context(zstdpool.compressor(level, zstd_dict=d)).compress


def _zstandard_dict(size: int, level: int) -> Any:
    import zstandard

    zd = zstandard.ZstdCompressionDict(dictionary_content(size))
    zd.precompute_compress(level=level)
    return zd


def _zstandard_reused(stack: ExitStack, size: int, level: int) -> Callable[[bytes], object]:
    import zstandard

    compressor = zstandard.ZstdCompressor(level=level, dict_data=_zstandard_dict(size, level))
    compress: Callable[[bytes], object] = compressor.compress
    return compress


def _zstandard_new(stack: ExitStack, size: int, level: int) -> Callable[[bytes], object]:
    from zstandard import ZstdCompressor

    zd = _zstandard_dict(size, level)

    def compress(record: bytes) -> bytes:
        return bytes(ZstdCompressor(level=level, dict_data=zd).compress(record))

    return compress


def _backports(stack: ExitStack, size: int, level: int) -> Callable[[bytes], object]:
    zstd = stdlib_zstd()
    digested = zstd.ZstdDict(dictionary_content(size)).as_digested_dict
    return functools.partial(zstd.compress, level=level, zstd_dict=digested)


def _zstdpool_plain(stack: ExitStack, size: int, level: int) -> Callable[[bytes], object]:
    import zstdpool

    return functools.partial(zstdpool.compress, level=level)


#: (label, bind, uses the dictionary, requires); the first is the baseline.
COMPRESSORS: tuple[tuple[str, Bind, bool, tuple[str, ...]], ...] = (
    ("zstdpool.compress zstd_dict", _zstdpool_dict, True, ()),
    ("zstdpool lease zstd_dict", _zstdpool_lease, True, ()),
    ("zstandard reused, precomputed dict", _zstandard_reused, True, ("zstandard",)),
    ("zstandard new per call", _zstandard_new, True, ("zstandard",)),
    (f"{STDLIB_ZSTD}.compress digested dict", _backports, True, ()),
    ("zstdpool.compress no dictionary", _zstdpool_plain, False, ()),
)


def _check_frames(size: int, with_dict: bool, out: Sequence[bytes]) -> None:
    zstd = stdlib_zstd()
    d = zstd.ZstdDict(dictionary_content(size)) if with_dict else None
    got = [zstd.decompress(f, zstd_dict=d) for f in out]
    if got != list(records(size)):
        raise AssertionError("the frames do not decompress to the records")


def _bytes(out: Sequence[bytes]) -> dict[str, float]:
    return {"bytes": sum(len(f) for f in out)}


def compress_workload(size: int, level: int) -> Workload:
    def setup(bind: Bind) -> Callable[[ExitStack], Timed]:
        return lambda stack: _loop(bind(stack, size, level), records(size))

    return Workload(
        name=f"dict compress {BATCH}x{format_size(size)} L{level}",
        group="dict",
        description=(
            f"{BATCH} JSON log records of about {format_size(size)}, one frame each, at level "
            f"{level}, with a {format_size(DICT_SIZE[size])} dictionary trained on other "
            "records (and zstdpool without one, for the ratio)."
        ),
        contenders=tuple(
            Contender(
                label,
                setup(bind),
                check=functools.partial(_check_frames, size, with_dict),
                extra=_bytes,
                requires=(STDLIB_ZSTD, *requires),
            )
            for label, bind, with_dict, requires in COMPRESSORS
        ),
        nbytes=sum(map(len, records(size))),
    )


# --------------------------------------------------------------------------------------------
# Decompressors


def _d_zstdpool(stack: ExitStack, size: int) -> Callable[[bytes], object]:
    import zstdpool

    d = zstdpool.ZstdDict(dictionary_content(size))
    return functools.partial(zstdpool.decompress, zstd_dict=d)


def _d_zstdpool_lease(stack: ExitStack, size: int) -> Callable[[bytes], object]:
    import zstdpool

    d = zstdpool.ZstdDict(dictionary_content(size))
    return stack.enter_context(zstdpool.decompressor(zstd_dict=d)).decompress


def _d_zstandard_reused(stack: ExitStack, size: int) -> Callable[[bytes], object]:
    import zstandard

    # Its decompressors prepare the dictionary once and keep it on the dictionary object.
    zd = zstandard.ZstdCompressionDict(dictionary_content(size))
    decompress: Callable[[bytes], object] = zstandard.ZstdDecompressor(dict_data=zd).decompress
    return decompress


def _d_zstandard_new(stack: ExitStack, size: int) -> Callable[[bytes], object]:
    import zstandard

    # Its decompressors prepare the dictionary once and keep it on the dictionary object.
    zd = zstandard.ZstdCompressionDict(dictionary_content(size))

    def decompress(frame: bytes) -> bytes:
        return bytes(zstandard.ZstdDecompressor(dict_data=zd).decompress(frame))

    return decompress


def _d_backports(stack: ExitStack, size: int) -> Callable[[bytes], object]:
    zstd = stdlib_zstd()
    # A ZstdDict given as it is is loaded digested for decompression.
    return functools.partial(zstd.decompress, zstd_dict=zstd.ZstdDict(dictionary_content(size)))


def _d_zstdpool_plain(stack: ExitStack, size: int) -> Callable[[bytes], object]:
    import zstdpool

    return zstdpool.decompress


DBind = Callable[[ExitStack, int], Callable[[bytes], object]]

#: (label, bind, decompresses frames written with the dictionary, requires).
DECOMPRESSORS: tuple[tuple[str, DBind, bool, tuple[str, ...]], ...] = (
    ("zstdpool.decompress zstd_dict", _d_zstdpool, True, ()),
    ("zstdpool lease zstd_dict", _d_zstdpool_lease, True, ()),
    ("zstandard reused, precomputed dict", _d_zstandard_reused, True, ("zstandard",)),
    ("zstandard new per call", _d_zstandard_new, True, ("zstandard",)),
    (f"{STDLIB_ZSTD}.decompress digested dict", _d_backports, True, (STDLIB_ZSTD,)),
    ("zstdpool.decompress no dictionary", _d_zstdpool_plain, False, ()),
)


def _check_records(size: int, out: Sequence[object]) -> None:
    if [bytes(x) for x in out] != list(records(size)):  # type: ignore[call-overload]
        raise AssertionError("the records did not come back")


def decompress_workload(size: int, level: int = 3) -> Workload:
    def setup(bind: DBind, with_dict: bool) -> Callable[[ExitStack], Timed]:
        return lambda stack: _loop(bind(stack, size), _frames(size, level, with_dict))

    return Workload(
        name=f"dict decompress {BATCH}x{format_size(size)}",
        group="dict",
        description=(
            f"{BATCH} frames of JSON log records of about {format_size(size)} (level {level}), "
            "written with the dictionary (and without, for zstdpool's last row)."
        ),
        contenders=tuple(
            Contender(
                label,
                setup(bind, with_dict),
                check=functools.partial(_check_records, size),
                requires=requires,
            )
            for label, bind, with_dict, requires in DECOMPRESSORS
        ),
        nbytes=sum(map(len, records(size))),
    )


# --------------------------------------------------------------------------------------------
# Python threads sharing one dictionary


#: Compresses a list of records: bind(stack, size, level) -> function of a list.
BatchBind = Callable[[ExitStack, int, int], Callable[[list[bytes]], list[object]]]


def _per_record(bind: Bind) -> BatchBind:
    def batch(stack: ExitStack, size: int, level: int) -> Callable[[list[bytes]], list[object]]:
        f = bind(stack, size, level)
        return lambda xs: [f(x) for x in xs]

    return batch


def _threaded(bind: BatchBind, size: int, level: int, threads: int) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        items = list(records(size)) * 4
        # Each thread binds its own callable (python-zstandard needs a compressor per
        # thread); zstdpool's share one dictionary object whichever way they are bound.
        jobs = [
            functools.partial(bind(stack, size, level), items[t::threads]) for t in range(threads)
        ]
        gang = Gang(jobs)
        stack.callback(gang.close)

        def call() -> list[object]:
            parts: list[Any] = gang()
            # Back in input order: thread t did items t, t + threads, ...
            return [parts[i % threads][i // threads] for i in range(len(items))]

        return call

    return setup


@functools.cache
def _shared(size: int) -> Any:
    import zstdpool

    return zstdpool.ZstdDict(dictionary_content(size))


def _shared_dict(stack: ExitStack, size: int, level: int) -> Callable[[bytes], object]:
    import zstdpool

    return functools.partial(zstdpool.compress, level=level, zstd_dict=_shared(size))


def _shared_dict_many(
    stack: ExitStack, size: int, level: int
) -> Callable[[list[bytes]], list[object]]:
    import zstdpool

    d = _shared(size)

    def many(xs: list[bytes]) -> list[object]:
        return list(zstdpool.compress_many(xs, level, zstd_dict=d, threads=1))

    return many


def threads_workload(size: int, level: int = 3, threads: int = 2) -> Workload:
    labels: tuple[tuple[str, BatchBind, tuple[str, ...]], ...] = (
        ("zstdpool.compress shared zstd_dict", _per_record(_shared_dict), ()),
        ("zstdpool.compress_many shared zstd_dict", _shared_dict_many, ()),
        ("zstandard compressor per thread", _per_record(_zstandard_reused), ("zstandard",)),
    )

    def check(out: Sequence[bytes]) -> None:
        _check_frames(size, True, out[:BATCH])

    return Workload(
        name=f"dict {threads} Python threads {4 * BATCH}x{format_size(size)} L{level}",
        group="dict",
        description=(
            f"{4 * BATCH} records of about {format_size(size)} per call, split over {threads} "
            f"pre-started Python threads or done on 1, with one dictionary: zstdpool shares one "
            "ZstdDict and one pool (a call per record, or one compress_many per thread's share, "
            "threads=1); python-zstandard needs a compressor per thread (its objects are not "
            f"thread-safe). Throughput of {threads} threads over 1: a contender's 1-thread row "
            f"over its {threads}-thread row."
        ),
        contenders=tuple(
            Contender(
                f"{label}, {t} Py thread{'s' if t > 1 else ''}",
                _threaded(bind, size, level, t),
                check=check,
                extra=_bytes,
                requires=(STDLIB_ZSTD, *requires),
            )
            for label, bind, requires in labels
            for t in (threads, 1)
        ),
        nbytes=4 * sum(map(len, records(size))),
        settle=True,
    )


@register_source
def dict_workloads(profile: Profile) -> Iterator[Workload]:
    """The dictionary workloads: compress and decompress per record size, and 2 threads."""
    sizes = _SIZES.get(profile.name, _SIZES["quick"])
    for size in sizes:
        for level in LEVELS:
            yield compress_workload(size, level)
    for size in sizes:
        yield decompress_workload(size)
    for size in sizes[-2:]:
        yield threads_workload(size)
