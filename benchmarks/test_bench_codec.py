"""Codec benchmarks (pytest-benchmark): zstdpool against its peers, grouped by input size.

Benchmarking is off by default (``--benchmark-disable`` in pyproject), so a plain ``pytest``
runs each case once as a smoke test; every case still checks that its result round-trips.
Measure with ``pytest benchmarks --benchmark-enable`` (or ``--benchmark-only``). The data
and the contenders are those of ``python -m zstdpool bench`` (zstdpool._bench.codec).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TypeVar

import pytest
from zstdpool.__main__ import main
from zstdpool._bench import runner as _bench
from zstdpool._bench.codec import (
    COMPRESSORS,
    DECOMPRESSORS,
    MANY_COMPRESSORS,
    CodecImpl,
    check_compressed,
    check_compressed_many,
    check_decompressed,
)
from zstdpool._bench.data import KiB, MiB, format_size, sample_buffers, sample_data, sample_frame
from zstdpool._bench.runner import Timed

SIZES = (1 * KiB, 64 * KiB, 4 * MiB)
LEVEL = 3
MANY = (1000, 16 * KiB)

T = TypeVar("T")


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    """Closes what a contender's setup opened (e.g. a zstdpool lease)."""
    with ExitStack() as s:
        yield s


def bind(impl: CodecImpl[T], stack: ExitStack, arg: T, n: int) -> Timed:
    """The timed call of ``impl``; skips the test if its library or feature is missing."""
    for module in impl.requires:
        pytest.importorskip(module)
    try:
        return impl.bind(stack, arg, n)
    except _bench.Unavailable as e:
        pytest.skip(str(e))


@pytest.mark.parametrize("impl", COMPRESSORS, ids=lambda i: i.id)
@pytest.mark.parametrize("size", SIZES, ids=format_size)
def test_compress(benchmark: Any, stack: ExitStack, size: int, impl: CodecImpl[bytes]) -> None:
    data = sample_data(size)
    fn = bind(impl, stack, data, LEVEL)
    benchmark.group = f"compress {format_size(size)} L{LEVEL}"
    check_compressed(data, benchmark(fn))


@pytest.mark.parametrize("impl", DECOMPRESSORS, ids=lambda i: i.id)
@pytest.mark.parametrize("size", SIZES, ids=format_size)
def test_decompress(benchmark: Any, stack: ExitStack, size: int, impl: CodecImpl[bytes]) -> None:
    fn = bind(impl, stack, sample_frame(size, LEVEL), size)
    benchmark.group = f"decompress {format_size(size)}"
    check_decompressed(sample_data(size), benchmark(fn))


@pytest.mark.parametrize("impl", MANY_COMPRESSORS, ids=lambda i: i.id)
def test_compress_many(benchmark: Any, stack: ExitStack, impl: CodecImpl[list[bytes]]) -> None:
    count, size = MANY
    buffers = sample_buffers(count, size)
    fn = bind(impl, stack, buffers, LEVEL)
    benchmark.group = f"compress_many {count}x{format_size(size)} L{LEVEL}"
    check_compressed_many(buffers, benchmark(fn))


def test_sample_data_is_realistic() -> None:
    """Neither all zeros nor random: compressible, but not trivially."""
    data = sample_data(64 * KiB)
    assert len(data) == 64 * KiB and sample_data(64 * KiB) == data
    ratio = len(sample_frame(64 * KiB, LEVEL)) / len(data)
    assert 0.05 < ratio < 0.6
    assert [len(b) for b in sample_buffers(4, 1 * KiB)] == [1 * KiB] * 4


def test_bench_command_tiny(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``zstdpool bench`` end to end, shrunk to a smoke run so that it cannot rot."""
    monkeypatch.setenv("ZSTDPOOL_BENCH_TINY", "1")
    out = tmp_path / "bench.json"
    assert main(["bench", "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "zstdpool.compress" in table and "ratio" in table
    report = json.loads(out.read_text())
    assert report["profile"]["name"] == "tiny"
    assert report["versions"]["zstdpool"]
    assert {"platform", "cpu_count", "python"} <= report["machine"].keys()
    for workload in report["workloads"]:
        first = workload["contenders"][0]
        assert first["label"].startswith("zstdpool") and first["status"] == "ok"
        assert first["ratio"] == 1.0 and len(first["per_call_ns"]) == workload["rounds"]
        assert all(c["status"] != "failed" for c in workload["contenders"]), workload


def test_bench_command_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main(["bench", "--no-such-flag"]) == 2
    assert main(["bench", "--tiny", "--filter", "no workload is called this"]) == 2
    assert main(["bench", "--help"]) == 0
    assert "--filter" in capsys.readouterr().out


@pytest.mark.parametrize("settle", [False, True])
def test_settle_makes_one_untimed_call_before_each_batch(settle: bool) -> None:
    """A settling workload's contenders are called once more per round, outside the timing."""
    calls: list[int] = []
    workload = _bench.Workload(
        name="settle",
        group="test",
        description="counts calls",
        contenders=(_bench.Contender("counter", lambda stack: lambda: calls.append(1)),),
        settle=settle,
    )
    profile = _bench.PROFILES["tiny"]
    progress = _bench.Progress(io.StringIO(), 1)
    calls_before_rounds: list[int] = []
    real_time_batch = _bench._time_batch

    def time_batch(fn: Timed, n: int) -> int:
        calls_before_rounds.append(len(calls))
        return real_time_batch(fn, n)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_bench, "_time_batch", time_batch)
        result = _bench.measure(workload, profile, progress, 0)
    (contender,) = result.contenders
    assert contender.status == "ok" and len(contender.per_call_ns) == result.rounds
    timed = [b - a for a, b in zip(calls_before_rounds, calls_before_rounds[1:], strict=False)]
    # After calibration, each round's timed batch is preceded by one extra call when settling.
    gaps = timed[-(result.rounds - 1) :] if result.rounds > 1 else []
    assert all(g == contender.batch + (1 if settle else 0) for g in gaps), (gaps, contender.batch)
