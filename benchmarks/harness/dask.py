"""The ``dask`` workloads of ``python -m benchmarks``: distributed's comm compression.

One call is what distributed does to a frame it sends and receives: ``maybe_compress`` (a
sample of up to 5 x 10 KB compressed first, then the frame) and ``decompress``. The frames
are a pandas DataFrame of float64 prices and strings, pickled as distributed pickles it, at
16 KiB, 64 KiB and 1 MiB. Contenders: zstdpool.dask's "zstd" entry, and distributed's own
(python-zstandard, a new compressor per call and a new decompressor per frame), each put
under the name "zstd" for its call, so that both run the same distributed code.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

from benchmarks.harness.data import KiB, MiB, format_size
from benchmarks.harness.runner import (
    Contender,
    Profile,
    Timed,
    Unavailable,
    Workload,
    register_source,
)

#: Frame sizes per profile.
SIZES: dict[str, tuple[int, ...]] = {
    "tiny": (16 * KiB,),
    "quick": (16 * KiB, 64 * KiB, 1 * MiB),
    "full": (16 * KiB, 64 * KiB, 1 * MiB),
}

_REQUIRES = ("distributed", "pandas", "numpy")


@functools.lru_cache(maxsize=8)
def pickled_frame(size: int) -> bytes:
    """``size`` bytes of a pickled DataFrame: float64 prices with two decimals and strings."""
    import numpy as np
    import pandas as pd

    rows = size // 12 + 100
    rng = np.random.default_rng(size)
    df = pd.DataFrame(
        {
            "price": np.round(rng.lognormal(4, 1, rows), 2),
            "qty": rng.integers(1, 500, rows).astype("float64"),
            "sku": [f"SKU-{i % 4093:05d}-{'ABCDEFGH'[i % 8]}" for i in range(rows)],
        }
    )
    return pickle.dumps(df, protocol=5)[:size]


def _entry(which: str) -> Any:
    if which == "zstdpool":
        import zstdpool.dask

        return zstdpool.dask._entry()
    try:
        from distributed.protocol.compression import Compression, zstd_compress, zstd_decompress
    except ImportError as e:
        raise Unavailable("distributed has no zstd here (python-zstandard missing)") from e
    return Compression("zstd", zstd_compress, zstd_decompress)


def _round_trip(which: str, data: bytes, stack: ExitStack) -> Timed:
    from distributed.protocol import compression

    entry = _entry(which)
    previous = compression.compressions.get("zstd")
    stack.callback(compression.compressions.__setitem__, "zstd", previous)

    def call() -> object:
        compression.compressions["zstd"] = entry
        name, frame = compression.maybe_compress(data, compression="zstd")
        return name, compression.decompress({"compression": (name,)}, [frame])[0]

    return call


def _check(data: bytes, result: Any) -> None:
    name, out = result
    if name != "zstd":
        raise AssertionError(f"the frame was not compressed ({name!r})")
    if bytes(out) != data:
        raise AssertionError("the frame did not come back equal")


@register_source
def dask_workloads(profile: Profile) -> Iterator[Workload]:
    for size in SIZES.get(profile.name, SIZES["quick"]):
        data = pickled_frame(size) if _have_pandas() else b""
        yield Workload(
            name=f"dask maybe_compress+decompress {format_size(size)}",
            group="dask",
            description=(
                f"distributed's maybe_compress then decompress of one {format_size(size)} "
                "frame of a pickled pandas DataFrame (float64 and string columns), "
                "distributed.comm.zstd.level 3."
            ),
            contenders=(
                Contender(
                    "zstdpool.dask",
                    functools.partial(_round_trip, "zstdpool", data),
                    check=functools.partial(_check, data),
                    requires=_REQUIRES,
                ),
                Contender(
                    "distributed zstd (zstandard)",
                    functools.partial(_round_trip, "distributed", data),
                    check=functools.partial(_check, data),
                    requires=(*_REQUIRES, "zstandard"),
                ),
            ),
            nbytes=size,
        )


def _have_pandas() -> bool:
    try:
        import numpy  # noqa: F401
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True
