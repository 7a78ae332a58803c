"""The benchmark harness itself (benchmarks.harness): its inputs, checks, runner and command line.

The contenders are run, one case each, by ``test_workloads.py``; here are the parts that
case cannot see: inputs that are what they claim, checks that reject wrong output, the
runner's timing loop, the Python-threads gang, and ``python -m benchmarks`` end to end.
"""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from benchmarks.__main__ import main
from benchmarks.harness import runner
from benchmarks.harness.data import KiB, lineitem_table, sample_buffers, sample_data, sample_frame
from benchmarks.harness.runner import Contender, Timed, Unavailable, Workload, prepare, verify

LEVEL = 3


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
    """``python -m benchmarks`` end to end, shrunk to a smoke run so that it cannot rot."""
    monkeypatch.setenv("ZSTDPOOL_BENCH_TINY", "1")
    out = tmp_path / "bench.json"
    assert main(["--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "zstdpool.compress" in table and "ratio" in table
    report = json.loads(out.read_text())
    assert report["profile"]["name"] == "tiny"
    assert report["versions"]["zstdpool"]
    assert {"platform", "cpu_count", "python"} <= report["machine"].keys()
    for workload in report["workloads"]:
        first = workload["contenders"][0]
        assert first["label"].startswith("zstdpool"), workload
        assert all(c["status"] != "failed" for c in workload["contenders"]), workload
        if first["status"] == "skipped":
            # An engine that is not installed here (pyiceberg and polars on the free-threaded
            # build): its workloads say so, and nothing of them is timed.
            assert workload["group"] == "engines" and "not installed" in first["note"], workload
            assert all(c["status"] == "skipped" for c in workload["contenders"]), workload
            continue
        assert first["status"] == "ok", workload
        assert first["ratio"] == 1.0 and len(first["per_call_ns"]) == workload["rounds"]


def test_bench_command_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--no-such-flag"]) == 2
    assert main(["--tiny", "--filter", "no workload is called this"]) == 2
    assert main(["--help"]) == 0
    assert "--filter" in capsys.readouterr().out


@pytest.mark.parametrize("settle", [False, True])
def test_settle_makes_one_untimed_call_before_each_batch(settle: bool) -> None:
    """A settling workload's contenders are called once more per round, outside the timing."""
    calls: list[int] = []
    workload = Workload(
        name="settle",
        group="test",
        description="counts calls",
        contenders=(Contender("counter", lambda stack: lambda: calls.append(1)),),
        settle=settle,
    )
    profile = runner.PROFILES["tiny"]
    progress = runner.Progress(io.StringIO(), 1)
    calls_before_rounds: list[int] = []
    real_time_batch = runner._time_batch

    def time_batch(fn: Timed, n: int) -> int:
        calls_before_rounds.append(len(calls))
        return real_time_batch(fn, n)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "_time_batch", time_batch)
        result = runner.measure(workload, profile, progress, 0)
    (contender,) = result.contenders
    assert contender.status == "ok" and len(contender.per_call_ns) == result.rounds
    timed = [b - a for a, b in zip(calls_before_rounds, calls_before_rounds[1:], strict=False)]
    # After calibration, each round's timed batch is preceded by one extra call when settling.
    gaps = timed[-(result.rounds - 1) :] if result.rounds > 1 else []
    assert all(g == contender.batch + (1 if settle else 0) for g in gaps), (gaps, contender.batch)


def test_prepare_and_verify_are_the_runners_contract() -> None:
    """What the pytest cases and the command line share: a missing library is Unavailable
    (skipped), a failed check raises, and the first call's figures come back."""

    def wrong(out: object) -> None:
        raise AssertionError("wrong")

    missing = Contender("missing", lambda stack: lambda: 1, requires=("no_such_module_here",))
    with ExitStack() as stack, pytest.raises(Unavailable, match="no_such_module_here"):
        prepare(missing, stack)
    counted = Contender("counted", lambda stack: lambda: b"abc", extra=lambda out: {"n": len(out)})
    with ExitStack() as stack:
        fn, first = prepare(counted, stack)
        assert first == b"abc" and fn() == b"abc"
        assert verify(counted, first) == {"n": 3.0}
    checked = Contender("checked", lambda stack: lambda: 1, check=wrong)
    with ExitStack() as stack:
        _, first = prepare(checked, stack)
        with pytest.raises(AssertionError, match="wrong"):
            verify(checked, first)
    # The runner reports the same three outcomes as skipped, ok and failed.
    results = runner.measure(
        Workload("contract", "test", "three contenders", (counted, missing, checked)),
        runner.PROFILES["tiny"],
        runner.Progress(io.StringIO(), 1),
        0,
    ).contenders
    assert [r.status for r in results] == ["ok", "skipped", "failed"]
    assert results[0].extra == {"n": 3.0} and results[2].note.startswith("check: ")


def test_inputs_are_deterministic_and_realistic() -> None:
    """Same tables every time; lineitem has TPC-H's 16 columns and compresses, but not to dust."""
    pytest.importorskip("numpy")
    import pyarrow as pa

    from benchmarks.harness.ipc import TableCase

    table = lineitem_table(2_000)
    assert table.num_columns == 16 and table.num_rows == 2_000
    assert table.equals(lineitem_table.__wrapped__(2_000))
    assert {str(t) for t in table.schema.types} >= {"int64", "decimal128(15, 2)", "date32[day]"}
    comments = table.column("l_comment").to_pylist()
    assert all(10 <= len(c) <= 40 for c in comments) and len(set(comments)) > 1_900
    stream = TableCase("lineitem", 2_000).pyarrow_stream()
    assert 0.1 < len(stream) / table.nbytes < 0.6
    small = TableCase("small_batches", 1024, 256)
    assert small.name == "4x256-row batches"
    assert len(list(pa.ipc.open_stream(small.pyarrow_stream()))) == 4


def test_gang_runs_each_job_on_its_own_thread() -> None:
    from benchmarks.harness.threads import Gang

    seen: list[set[int]] = [set(), set()]

    def job(i: int) -> Any:
        def run() -> list[int]:
            seen[i].add(threading.get_ident())
            return [i]

        return run

    gang = Gang([job(0), job(1)])
    try:
        assert gang() == [[0], [1]] and gang() == [[0], [1]]
    finally:
        gang.close()
    assert len(seen[0]) == len(seen[1]) == 1 and seen[0] != seen[1]
    assert threading.get_ident() not in seen[0] | seen[1]

    def boom() -> Any:
        raise ValueError("job failed")

    gang = Gang([boom])
    try:
        with pytest.raises(ValueError, match="job failed"):
            gang()
    finally:
        gang.close()


@pytest.mark.parametrize("single", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
def test_python_threads_contenders(threads: int, single: bool) -> None:
    """Every contender of the Python-threads workloads, checked, with a few small tables."""
    pytest.importorskip("numpy")
    from benchmarks.harness.threads import python_threads_workload

    workload = python_threads_workload(count=5, rows=4096, threads=threads, single=single)
    assert len(workload.contenders) == (8 if single else 4)
    with ExitStack() as stack:
        for contender in workload.contenders:
            for module in contender.requires:
                pytest.importorskip(module)
            fn = contender.setup(stack)
            out = fn()
            assert contender.check is not None
            contender.check(out)


def test_checks_reject_wrong_output() -> None:
    pytest.importorskip("numpy")
    import zstdpool
    from zstdpool import ipc

    from benchmarks.harness.ipc import TableCase, check_read, check_written
    from benchmarks.harness.threads import check_frame_list, check_stream_list, table_buffers

    table = TableCase("int32", 4096).table()
    stream = ipc.write_stream(table)
    check_stream_list(table, 2, [stream, stream])
    with pytest.raises(AssertionError):
        check_stream_list(table, 2, [stream])
    with pytest.raises(AssertionError):
        check_written(table, ipc.write_stream(table.slice(1)))
    with pytest.raises(AssertionError):
        check_read(table, table.rename_columns(["other"]))
    (data,) = [b.to_pybytes() for b in table_buffers(table)]
    check_frame_list(table, 1, [zstdpool.compress(data, 1)])
    with pytest.raises(AssertionError):
        check_frame_list(table, 1, [zstdpool.compress(data[1:], 1)])


def test_instruction_counts_are_differences_of_callgrind_totals(tmp_path: Path) -> None:
    from benchmarks.harness import instructions

    out = tmp_path / "callgrind.out"
    out.write_text("events: Ir\nsummary: 1234567\n")
    assert instructions._total(str(out)) == 1234567
    rows = [
        instructions.Counted("w", "zstdpool", 1000.0),
        instructions.Counted("w", "peer", 1500.0),
        instructions.Counted("w", "missing", None, "not installed"),
    ]
    table = instructions.format_table(rows)
    assert "1.50" in table and "not installed" in table


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_instructions_of_a_small_call_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """One real count: a 1 KiB compress executes thousands of instructions, not millions
    (the start and the setup are dumped apart from the loop)."""
    from benchmarks.harness import instructions, runner

    monkeypatch.setenv("ZSTDPOOL_BENCH_TINY", "1")
    profile = runner.PROFILES["tiny"]
    [workload] = [
        w
        for w in runner.load_workloads(profile, ["compress 1KiB L3"])
        if w.name == "compress 1KiB L3"
    ]
    first = dataclasses.replace(workload, contenders=workload.contenders[:1])
    [row] = instructions.count(profile, [first], calls=20)
    assert row.instructions is not None, row.note
    assert 5_000 < row.instructions < 200_000, row.instructions
