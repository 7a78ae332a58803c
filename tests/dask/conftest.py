"""Clusters of the Dask tests: real worker processes (spawned), on two loopback addresses.

distributed does not compress between two processes whose addresses are on one host, so one
worker listens on 127.0.0.2: a comm from the other worker (or the client, or the scheduler),
which connects from 127.0.0.1, counts as between hosts and is compressed. (A connection to
127.0.0.1 starts from 127.0.0.1 too, whoever makes it: only data fetched *from* the worker
on 127.0.0.2 is compressed.)
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("distributed")
pytest.importorskip("dask.dataframe")

import dask  # noqa: E402
from distributed import Client, LocalCluster, Nanny  # noqa: E402

PRELOAD = ["zstdpool.dask"]

#: Comm and spill compression by "zstd"; spilling driven by the target threshold alone
#: (whose check is synchronous, at each insertion), never by the process memory.
CONFIG: dict[str, Any] = {
    "distributed.comm.compression": "zstd",
    "distributed.worker.memory.spill-compression": "zstd",
    "distributed.worker.memory.target": 0.1,
    "distributed.worker.memory.spill": False,
    "distributed.worker.memory.pause": False,
    "distributed.worker.memory.terminate": False,
    "distributed.scheduler.work-stealing": False,
    "distributed.admin.tick.limit": "1h",
}

#: Memory limit of each worker: with target 0.1, about 25 MiB of results stay in memory.
MEMORY_LIMIT = "256MiB"


@contextlib.contextmanager
def cluster(hosts: dict[str, dict[str, Any]], **config: Any) -> Iterator[Client]:
    """A LocalCluster with one single-threaded worker process per entry of ``hosts``
    (name: Nanny options such as ``host`` and ``preload``), and a client of it."""
    with (
        dask.config.set({**CONFIG, **config}),
        LocalCluster(
            n_workers=0,
            processes=True,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address=None,
            memory_limit=MEMORY_LIMIT,
        ) as lc,
    ):
        base = lc.new_spec["options"]
        lc.worker_spec = {
            name: {"cls": Nanny, "options": {**base, "memory_limit": MEMORY_LIMIT, **opts}}
            for name, opts in hosts.items()
        }
        lc.sync(lc._correct_state)
        with Client(lc) as client:
            client.wait_for_workers(len(hosts), timeout=120)
            yield client


def worker_on(client: Client, host: str, timeout: float = 60.0) -> str:
    """The address of the worker listening on ``host``, waited for: on a loaded machine the
    scheduler's list has been seen without it at the start of a test."""
    deadline = time.monotonic() + timeout
    while True:
        workers: list[str] = list(client.scheduler_info()["workers"])
        found = [a for a in workers if f"//{host}:" in a]
        if len(found) == 1 or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    assert len(found) == 1, f"no single worker on {host} after {timeout}s: {workers}"
    return found[0]
