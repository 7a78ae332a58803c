"""What the cluster tests run on the workers and the scheduler.

These live apart from the test modules, which import zstdpool.dask: a worker that unpickles a
task function imports its module, and importing zstdpool.dask registers it, which would turn
the worker without the preload (the mixed-cluster test) into one with it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa


def codec_module() -> str:
    """The module of this process's "zstd" compression entry."""
    from distributed.protocol.compression import compressions

    return str(compressions["zstd"].compress.__module__)


def registered() -> bool | None:
    """zstdpool.dask.is_registered() if zstdpool.dask was imported here, else None."""
    if "zstdpool.dask" not in sys.modules:
        return None
    return bool(sys.modules["zstdpool.dask"].is_registered())


def codec_stats() -> tuple[int, int, int, int] | None:
    """zstdpool.dask.codec_stats() if zstdpool.dask was imported here, else None."""
    if "zstdpool.dask" not in sys.modules:
        return None
    return tuple(sys.modules["zstdpool.dask"].codec_stats())  # type: ignore[return-value]


def pid() -> int:
    return os.getpid()


def frame(n: int, seed: int) -> pd.DataFrame:
    """A compressible DataFrame of ``n`` rows: float64 prices, int64 ids, strings."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "id": np.arange(n, dtype=np.int64) + seed * n,
            "price": np.round(rng.uniform(0, 1000, n), 2),
            "k": rng.integers(0, 12, n),
            "name": pd.array([f"item-{i % 997}" for i in range(n)], dtype=object),
        }
    )


def table(n: int, seed: int) -> pa.Table:
    return pa.Table.from_pandas(frame(n, seed), preserve_index=False)


def total(df: Any) -> float:
    """A figure that changes if any row of a frame or table arrives changed."""
    if isinstance(df, pa.Table):
        df = df.to_pandas()
    return float(df["price"].sum() + df["id"].sum() + df["name"].str.len().sum())


def spill_state(dask_worker: Any) -> dict[str, Any]:
    """Keys on disk and the spill metrics of a worker."""
    data = dask_worker.data
    return {
        "spilled": len(data.slow),
        "metrics": {"-".join(k): v for k, v in data.cumulative_metrics.items()},
    }


def deserialize_blob(blob: bytes) -> Any:
    """What a worker does with a spilled object it reads back."""
    from distributed.protocol.serialize import deserialize_bytes

    return deserialize_bytes(blob)
