"""zstdpool.dask on a LocalCluster: spilling, small Arrow tables, the P2P shuffle.

    python benchmarks/dask_cluster.py [--quick] [--repeat N]

Every cluster has two single-threaded worker processes (spawned), one listening on 127.0.0.1
and one on 127.0.0.2: distributed compresses nothing between two addresses of one host, and a
comm that connects from 127.0.0.1 to 127.0.0.2 counts as between hosts, so what the workers
fetch from the one on 127.0.0.2 is compressed (see tests/dask/conftest.py).

- spill: each worker makes partitions of a pandas DataFrame well past its spill target
  (``distributed.worker.memory.target``), then sums each one, which reads it back.
- arrow: the worker on 127.0.0.2 makes many small ``pyarrow.Table``; tasks on the other
  worker take them twenty at a time, so every table crosses a compressed comm.
- shuffle: a P2P shuffle (``shuffle_method="p2p"``) of a DataFrame persisted on the workers,
  with and without ``zstdpool.dask.compress_shuffle``.

spill and arrow compare distributed's own ``"zstd"`` (python-zstandard) with zstdpool.dask as
a worker, scheduler and client preload, with the same settings (comm and spill compression
"zstd", level 3). The shuffle runs on one cluster that preloads zstdpool.dask, toggling
``compress_shuffle`` (level 1) on its workers. Each configuration has its own cluster, started
once and kept across its repetitions; the runs are interleaved (A B A B ...) and each figure
is the median over the repetitions.

Codec seconds come from distributed's metrics (wall-clock seconds, summed over both
workers): for spill, the ``compress``/``decompress`` (and ``serialize``/``deserialize``)
seconds of the workers' ``SpillBuffer.cumulative_metrics``; for arrow, the same labels in
``Worker.digests_total`` outside task execution (``get-data`` on the sender, the gather on
the receiver). zstdpool.dask compresses an Arrow table inside its IPC stream, while
serializing, so for arrow only (de)serialize + (de)compress compares like with like. The
shuffle's disk bytes are its ``("p2p", ..., "disk-write", "bytes")`` metric: what
``DiskShardsBuffer`` appends to its files under each worker's ``local_directory``.

This process never imports zstdpool.dask: the client and the scheduler of the clusters without
the preload stay on distributed's own codec.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

A_HOST, B_HOST = "127.0.0.1", "127.0.0.2"
PRELOAD = ["zstdpool.dask"]

#: Comm and spill compression by "zstd" at level 3 (distributed's default level), in every
#: configuration; memory thresholds off (spilling is set per workload below).
BASE_CONFIG: dict[str, Any] = {
    "distributed.comm.compression": "zstd",
    "distributed.worker.memory.spill-compression": "zstd",
    "distributed.comm.zstd.level": 3,
    "distributed.worker.memory.target": False,
    "distributed.worker.memory.spill": False,
    "distributed.worker.memory.pause": False,
    "distributed.worker.memory.terminate": False,
    "distributed.scheduler.work-stealing": False,
    "distributed.admin.tick.limit": "1h",
}

PRELOAD_CONFIG: dict[str, Any] = {
    "distributed.worker.preload": PRELOAD,
    "distributed.scheduler.preload": PRELOAD,
    "distributed.client.preload": PRELOAD,
}

#: Spilling driven by the target alone (checked at each insertion): with 256 MiB per worker,
#: about 25 MiB of results stay in memory.
SPILL_CONFIG: dict[str, Any] = {"distributed.worker.memory.target": 0.1}
SPILL_MEMORY_LIMIT = "256MiB"
MEMORY_LIMIT = "4GiB"

CODEC = ("compress", "decompress")
SERDE = ("serialize", "deserialize")


# -- data, made on the workers ---------------------------------------------------------------


def frame(rows: int, seed: int) -> Any:
    """A DataFrame of ``rows`` rows: int64 ids, prices with two decimals, a wide int64 key and
    pyarrow strings from a vocabulary of 997 (about 36 bytes a row)."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    vocab = pa.array([f"item-{i}" for i in range(997)])
    names = vocab.take(pa.array(rng.integers(0, 997, rows)))
    return pd.DataFrame(
        {
            "id": np.arange(rows, dtype=np.int64) + seed * rows,
            "price": np.round(rng.uniform(0, 1000, rows), 2),
            "k": rng.integers(0, 1_000_000, rows),
            "name": pd.Series(pd.arrays.ArrowStringArray(names)),
        }
    )


def table(rows: int, seed: int) -> Any:
    import pyarrow as pa

    return pa.Table.from_pandas(frame(rows, seed), preserve_index=False)


def total(df: Any) -> float:
    return float(df["price"].sum() + df["id"].sum())


def total_tables(*tables: Any) -> float:
    import pyarrow.compute as pc

    return float(sum(pc.sum(t["price"]).as_py() + pc.sum(t["id"]).as_py() for t in tables))


# -- metrics, read on the workers ------------------------------------------------------------


def spill_metrics(dask_worker: Any) -> dict[str, float]:
    """The spill buffer's cumulative metrics, as "label-unit"."""
    return {"-".join(k): v for k, v in dask_worker.data.cumulative_metrics.items()}


def digest_metrics(dask_worker: Any) -> dict[str, float]:
    """``Worker.digests_total`` summed by (first tag, label, unit) for the codec and
    serialization labels, and the P2P shuffle's disk metrics."""
    out: dict[str, float] = {}
    for key, value in list(dask_worker.digests_total.items()):
        if not isinstance(key, tuple) or len(key) < 3:
            continue
        label, unit = key[-2], key[-1]
        if key[0] == "p2p":
            if label in ("disk-write", "disk-read") or label in CODEC + SERDE:
                name = f"p2p-{label}-{unit}"
                out[name] = out.get(name, 0.0) + value
        elif key[0] != "execute" and label in CODEC + SERDE:
            name = f"comm-{label}-{unit}"
            out[name] = out.get(name, 0.0) + value
    return out


def set_compress_shuffle(enabled: bool) -> int | None:
    import zstdpool.dask

    zstdpool.dask.compress_shuffle(enabled, level=1)
    return zstdpool.dask.shuffle_level()


def codec_module() -> str:
    from distributed.protocol.compression import compressions

    return str(compressions["zstd"].compress.__module__)


def summed(client: Any, probe: Callable[..., dict[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for metrics in client.run(probe).values():
        for k, v in metrics.items():
            out[k] = out.get(k, 0.0) + v
    return out


def delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items()}


# -- clusters ---------------------------------------------------------------------------------


@contextlib.contextmanager
def cluster(config: dict[str, Any], memory_limit: str, directory: str) -> Iterator[Any]:
    """A LocalCluster of two single-threaded worker processes, on 127.0.0.1 and 127.0.0.2,
    and a client of it. ``config`` is in force while the cluster starts (the spawned workers
    receive it) and while it runs."""
    import dask
    from distributed import Client, LocalCluster, Nanny

    with (
        dask.config.set({**BASE_CONFIG, **config}),
        LocalCluster(
            n_workers=0,
            processes=True,
            threads_per_worker=1,
            host=A_HOST,
            dashboard_address=None,
            memory_limit=memory_limit,
            local_directory=directory,
        ) as lc,
    ):
        base = lc.new_spec["options"]
        lc.worker_spec = {
            name: {
                "cls": Nanny,
                "options": {**base, "memory_limit": memory_limit, "host": host},
            }
            for name, host in (("a", A_HOST), ("b", B_HOST))
        }
        lc.sync(lc._correct_state)
        with Client(lc) as client:
            client.wait_for_workers(2, timeout=180)
            yield client


def worker_on(client: Any, host: str) -> str:
    (address,) = [a for a in client.scheduler_info()["workers"] if f"//{host}:" in a]
    return address


def settle(client: Any) -> None:
    """Waits until both workers hold no data (the last run's results released)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not any(client.run(lambda dask_worker: len(dask_worker.data)).values()):
            return
        time.sleep(0.05)


# -- workloads --------------------------------------------------------------------------------


def run_spill(client: Any, size: dict[str, int]) -> dict[str, float]:
    from distributed import wait

    a, b = worker_on(client, A_HOST), worker_on(client, B_HOST)
    settle(client)
    before = summed(client, spill_metrics)
    start = time.perf_counter()
    placed = [
        (client.submit(frame, size["spill_rows"], i, workers=[w], pure=False), w)
        for i in range(size["spill_parts"])
        for w in (a, b)
    ]
    parts = [p for p, _ in placed]
    wait(parts)
    sums = [client.submit(total, p, workers=[w]) for p, w in placed]
    got = sum(client.gather(sums))
    wall = time.perf_counter() - start
    spilled = delta(summed(client, spill_metrics), before)
    del placed, parts, sums
    assert got > 0
    return {
        "wall": wall,
        "compress": spilled.get("compress-seconds", 0.0),
        "decompress": spilled.get("decompress-seconds", 0.0),
        "serde": sum(spilled.get(f"{k}-seconds", 0.0) for k in CODEC + SERDE),
        "disk": spilled.get("disk-write-bytes", 0.0),
        "writes": spilled.get("disk-write-count", 0.0),
    }


def run_arrow(client: Any, size: dict[str, int]) -> dict[str, float]:
    a, b = worker_on(client, A_HOST), worker_on(client, B_HOST)
    settle(client)
    before = summed(client, digest_metrics)
    start = time.perf_counter()
    n, per = size["arrow_tables"], 20
    tables = [
        client.submit(table, size["arrow_rows"], i, workers=[b], pure=False) for i in range(n)
    ]
    sums = [
        client.submit(total_tables, *tables[i : i + per], workers=[a]) for i in range(0, n, per)
    ]
    got = sum(client.gather(sums))
    wall = time.perf_counter() - start
    comm = delta(summed(client, digest_metrics), before)
    del tables, sums
    assert got > 0
    return {
        "wall": wall,
        "compress": comm.get("comm-compress-seconds", 0.0),
        "decompress": comm.get("comm-decompress-seconds", 0.0),
        "serde": sum(comm.get(f"comm-{k}-seconds", 0.0) for k in CODEC + SERDE),
    }


def run_shuffle(client: Any, size: dict[str, int], compressed: bool) -> dict[str, float]:
    import dask.dataframe as dd
    from distributed import wait

    levels = set(client.run(set_compress_shuffle, compressed).values())
    assert levels == ({1} if compressed else {None}), levels
    settle(client)
    ddf = dd.from_map(
        frame, [size["shuffle_rows"]] * size["shuffle_parts"], range(99, 99 + size["shuffle_parts"])
    )
    ddf = ddf.persist()
    wait(ddf)
    before = summed(client, digest_metrics)
    start = time.perf_counter()
    lengths = ddf.shuffle("k", shuffle_method="p2p").map_partitions(len).compute()
    wall = time.perf_counter() - start
    p2p = delta(summed(client, digest_metrics), before)
    del ddf
    assert int(lengths.sum()) == size["shuffle_rows"] * size["shuffle_parts"]
    return {"wall": wall, "disk": p2p.get("p2p-disk-write-bytes", 0.0)}


def input_bytes(client: Any, size: dict[str, int]) -> int:
    """Bytes in memory of the shuffle's input (pandas' deep memory usage)."""
    one = client.submit(
        lambda: int(frame(size["shuffle_rows"], 0).memory_usage(deep=True).sum()), pure=False
    ).result()
    return one * size["shuffle_parts"]


# -- the run ----------------------------------------------------------------------------------

SIZES = {
    "full": {
        "spill_parts": 30,
        "spill_rows": 100_000,
        "arrow_tables": 1_000,
        "arrow_rows": 2_000,
        "shuffle_parts": 40,
        "shuffle_rows": 200_000,
    },
    "quick": {
        "spill_parts": 10,
        "spill_rows": 100_000,
        "arrow_tables": 200,
        "arrow_rows": 2_000,
        "shuffle_parts": 10,
        "shuffle_rows": 100_000,
    },
}


def interleaved(
    runs: dict[str, Callable[[], dict[str, float]]], repeat: int
) -> dict[str, list[dict[str, float]]]:
    """Each configuration's run once (not timed: imports, first connections), then ``repeat``
    rounds of A B A B ..."""
    for run in runs.values():
        run()
    out: dict[str, list[dict[str, float]]] = {name: [] for name in runs}
    for i in range(repeat):
        for name, run in runs.items():
            out[name].append(run())
            print(f"  {name} #{i + 1}: {fmt_run(out[name][-1])}", flush=True)
    return out


def fmt_run(run: dict[str, float]) -> str:
    units = {"disk": lambda v: f"{v / 1e6:,.1f} MB", "writes": lambda v: f"{v:,.0f}"}
    return ", ".join(f"{k} {units.get(k, lambda v: f'{v:.3f} s')(v)}" for k, v in run.items())


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def rows_of(
    workload: str, names: tuple[str, str], runs: dict[str, list[dict[str, float]]]
) -> list[list[str]]:
    base, other = names
    out = []
    labels = {
        "wall": "wall time",
        "compress": "compress s",
        "decompress": "decompress s",
        "serde": "(de)serialize + (de)compress s",
        "disk": "bytes written to disk",
        "writes": "spill writes",
    }
    for key, label in labels.items():
        if key not in runs[base][0]:
            continue
        x, y = median(runs[base], key), median(runs[other], key)
        # Below a millisecond (zstdpool's Arrow tables, compressed while serializing, leave
        # the comm's codec next to nothing), a ratio means nothing.
        ratio = f"{x / y:.2f}" if y >= 1e-3 else "-"
        if key == "disk":
            cells = [f"{x / 1e6:,.1f} MB", f"{y / 1e6:,.1f} MB"]
        elif key == "writes":
            cells = [f"{x:,.0f}", f"{y:,.0f}"]
        else:
            cells = [f"{x:.3f} s", f"{y:.3f} s"]
        out.append([workload, label, *cells, ratio])
    return out


def table_md(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("| " + " | ".join(["---", "---"] + ["---:"] * (len(header) - 2)) + " |")
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller data")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions (default 3)")
    args = parser.parse_args(argv)
    size = SIZES["quick" if args.quick else "full"]
    repeat = args.repeat
    if repeat < 1:
        parser.error("--repeat must be at least 1")
    if "zstdpool.dask" in sys.modules:
        raise RuntimeError("this process must not import zstdpool.dask")

    import dask
    import distributed
    import zstandard

    # The shuffle plugin logs each shuffle's start and end as warnings; a worker started
    # next to a busy port says so.
    logging.getLogger("distributed.shuffle").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message="Port .* is already in use")

    print(
        f"Python {sys.version.split()[0]}, dask {dask.__version__}, distributed "
        f"{distributed.__version__}, python-zstandard {zstandard.__version__}, "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at the start",
        flush=True,
    )
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="zstdpool-dask-bench-") as tmp:
        # spill and arrow: distributed's "zstd" against zstdpool's preload.
        for workload, run, config, limit in (
            ("spill", run_spill, SPILL_CONFIG, SPILL_MEMORY_LIMIT),
            ("arrow", run_arrow, {}, MEMORY_LIMIT),
        ):
            with (
                cluster(config, limit, os.path.join(tmp, f"{workload}-a")) as plain,
                cluster(
                    {**config, **PRELOAD_CONFIG}, limit, os.path.join(tmp, f"{workload}-b")
                ) as pooled,
            ):
                modules = (
                    set(plain.run(codec_module).values()),
                    set(pooled.run(codec_module).values()),
                )
                assert modules == ({"distributed.protocol.compression"}, {"zstdpool.dask.codec"})
                print(f"{workload}: distributed zstd vs zstdpool.dask, {repeat} rounds")
                runs = interleaved(
                    {
                        "distributed zstd": lambda r=run, c=plain: r(c, size),
                        "zstdpool.dask": lambda r=run, c=pooled: r(c, size),
                    },
                    repeat,
                )
            rows += rows_of(workload, ("distributed zstd", "zstdpool.dask"), runs)

        # The P2P shuffle, with and without compressed shards, on one preloading cluster.
        with cluster(PRELOAD_CONFIG, MEMORY_LIMIT, os.path.join(tmp, "shuffle")) as client:
            mb = input_bytes(client, size) / 1e6
            print(f"shuffle: {mb:,.0f} MB in memory, without vs with compress_shuffle")
            runs = interleaved(
                {
                    "plain shards": lambda: run_shuffle(client, size, False),
                    "compress_shuffle": lambda: run_shuffle(client, size, True),
                },
                repeat,
            )
            rows += rows_of(f"shuffle {mb:,.0f} MB", ("plain shards", "compress_shuffle"), runs)

    print(f"\nload {os.getloadavg()[0]:.2f} at the end; medians of {repeat} runs\n")
    print(
        table_md(
            ["workload", "figure", "baseline", "zstdpool", "baseline / zstdpool"],
            rows,
        )
    )
    print(
        "\nbaseline: distributed's own zstd (spill, arrow) or the shuffle without "
        "compress_shuffle; zstdpool: zstdpool.dask preloaded (spill, arrow) or with "
        "compress_shuffle (shuffle)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
