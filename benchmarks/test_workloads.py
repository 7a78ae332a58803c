"""The workloads of ``python -m benchmarks`` under pytest-benchmark, one case per contender.

The cases are the workloads and contenders declared once in :mod:`benchmarks.harness` (codec,
ipc, threads, parquet, dataset, paths), exactly those the command line times. Each case sets
its contender up, makes its first call and checks the result with the contender's own check
(as the command line does before timing: a long-lived writer's later results are not whole
streams), then hands the timed callable to the ``benchmark`` fixture, grouped by workload.

Benchmarking is off by default (``--benchmark-disable`` in pyproject), so a plain ``pytest``
runs each case on the inputs of the ``tiny`` profile, as a smoke test of every contender;
``pytest benchmarks --benchmark-enable`` measures on the ``quick`` profile's inputs.
Contenders whose library is missing here are skipped with the reason.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import pytest

from benchmarks.harness.runner import (
    PROFILES,
    Contender,
    Unavailable,
    Workload,
    before_each,
    load_workloads,
    prepare,
    verify,
)


def _benchmarking(config: pytest.Config) -> bool:
    """Whether pytest-benchmark times the cases (its own rule for --benchmark-disable)."""
    return not (config.getoption("benchmark_disable") and not config.getoption("benchmark_enable"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case" not in metafunc.fixturenames:
        return
    profile = PROFILES["quick" if _benchmarking(metafunc.config) else "tiny"]
    metafunc.parametrize(
        "case",
        [
            pytest.param((w, c), id=f"{w.name}/{c.label}".replace(" ", "-"))
            for w in load_workloads(profile)
            for c in w.contenders
        ],
    )


def test_contender(benchmark: Any, case: tuple[Workload, Contender]) -> None:
    workload, contender = case
    with ExitStack() as stack:
        try:
            fn, first = prepare(contender, stack)
        except Unavailable as e:
            pytest.skip(str(e))
        verify(contender, first)
        benchmark.group = workload.name
        reset = before_each(fn)
        if reset is None:
            benchmark(fn)
        else:  # a writer of a directory writes into an emptied one each round, as in the CLI
            benchmark.pedantic(fn, setup=reset, rounds=5)
