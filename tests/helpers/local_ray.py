"""A local Ray of two CPUs, for zstdpool.ray's tests and the engine benchmarks: started once
per process and quiet (no dashboard, no progress bars, Ray Data's per-execution INFO logs
off). ``local_ray`` is the tests' fixture: import it into a test module to use it there."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


def start() -> bool:
    """Starts Ray here unless it runs already; whether this call started it."""
    import logging

    import ray

    if ray.is_initialized():
        return False
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level="ERROR",
        log_to_driver=False,
        configure_logging=False,
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    return True


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    """Ray for the module's tests, stopped after them if they started it."""
    import ray

    started = start()
    yield
    if started:
        ray.shutdown()
