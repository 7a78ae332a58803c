"""The memory table of ``python -m benchmarks --memory`` (benchmarks.harness.memory) as tests.

Each input of the table is written once by zstdpool (level 3, threads None, 1 and 2, after
warm-up writes), and its targets are asserted so that a regression fails:

- held after the write <= compressed size + 1% (+ 4 KiB for tiny inputs);
- peak during the write <= 1 MiB + compressed size + one compressBound of the largest buffer
  per compressing thread.

The small (``--tiny``) inputs run under a plain ``pytest`` in a few seconds; the table's full
inputs (up to 64 MiB and a 1,000,000-row lineitem table) only with ZSTDPOOL_BENCH_FULL=1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("numpy")
pytest.importorskip("pyarrow")

import zstdpool  # noqa: E402
from zstdpool._zstdpool import _resolve_threads  # noqa: E402

from benchmarks.__main__ import main  # noqa: E402
from benchmarks.harness import data, memory  # noqa: E402
from benchmarks.harness.memory import MemoryCase, compress_bound, measure_zstdpool  # noqa: E402

pytestmark = pytest.mark.skipif(
    not zstdpool.memory_stats()["counting"], reason="built without the alloc-stats feature"
)

#: Allowance on top of the held target for tiny inputs (1% of a few KiB is a few bytes).
HELD_CONSTANT = 4 * 1024

FULL = os.environ.get("ZSTDPOOL_BENCH_FULL", "").strip().lower() in {"1", "true", "yes", "on"}
needs_full = pytest.mark.skipif(not FULL, reason="full-size memory rows: ZSTDPOOL_BENCH_FULL=1")

CASES = [pytest.param(c, id=f"tiny-{c.kind}-{c.size}") for c in memory.MEMORY_CASES["tiny"]] + [
    pytest.param(c, id=f"full-{c.kind}-{c.size}", marks=needs_full)
    for c in memory.MEMORY_CASES["full"]
]


@pytest.mark.parametrize("threads", [None, 1, 2], ids=lambda t: f"threads{t}")
@pytest.mark.parametrize("case", CASES)
def test_zstdpool_write_meets_the_memory_targets(case: MemoryCase, threads: int | None) -> None:
    table = case.table()
    m = measure_zstdpool(table, threads)
    out = m.pop("output")
    assert len(out) == m["compressed"]
    # What stays: the output, and (almost) nothing the writer or the pool kept.
    assert m["held"] <= m["held_limit"] + HELD_CONSTANT, m
    # The peak: the output as it grows, plus one compressBound of the largest buffer per
    # compressing thread; never a copy of the input.
    bound = compress_bound(memory.largest_buffer(table))
    assert m["peak_limit"] == memory.PEAK_OVERHEAD + len(out) + m["threads"] * bound
    assert m["peak"] <= m["peak_limit"], {k: v for k, v in m.items() if k != "output"}


@pytest.mark.parametrize("threads", [None, 1, 2, 3], ids=lambda t: f"threads{t}")
def test_the_peak_target_counts_the_threads_the_core_uses(threads: int | None) -> None:
    """The peak target allows one compressBound per compressing thread. That count is the
    core's own rule (``_resolve_threads``), for batches below, at and above the 1 MiB where
    ``threads=None`` starts to compress in parallel; a copy of the rule in the harness that
    drifted from the core's would fail here."""
    import numpy as np
    import pyarrow as pa

    for nbytes in (256 << 10, (1 << 20) - 64, 1 << 20, 4 << 20, 16 << 20):
        rows = nbytes // 64  # eight int64 columns, one batch
        table = pa.table(
            {name: np.arange(rows, dtype=np.int64) * i for i, name in enumerate("abcdefgh")}
        )
        (batch,) = table.to_batches()
        sizes = [b.size for column in batch.columns for b in column.buffers() if b and b.size]
        assert sum(sizes) == nbytes
        expected = _resolve_threads(threads, sum(sizes), len(sizes))
        assert memory.compressing_threads(table, threads) == expected, nbytes
        assert measure_zstdpool(table, threads)["threads"] == expected, nbytes
    # The rule the module's docstring states: one thread below 1 MiB of buffers (by size),
    # else up to one per CPU, never more than the buffers; an explicit count is capped by them.
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert _resolve_threads(None, (1 << 20) - 1, 8) == 1
    assert _resolve_threads(None, 64 << 20, 64) == min(cpus or 1, 64)
    assert _resolve_threads(None, 64 << 20, 1) == 1
    assert _resolve_threads(3, 10, 2) == 2


def test_compress_bound_is_zstds() -> None:
    assert compress_bound(0) == 64
    assert compress_bound(1000) == 1000 + 3 + ((128 * 1024 - 1000) >> 11)
    assert compress_bound(1 << 20) == (1 << 20) + (1 << 12)


def test_inputs_are_deterministic_and_sized() -> None:
    for case in memory.MEMORY_CASES["tiny"]:
        a, b = case.table(), case.table()
        assert a.equals(b), case.name
        if case.kind.endswith("_bytes"):
            assert 0.9 * case.size <= a.nbytes <= 1.1 * case.size, (case.name, a.nbytes)
        else:
            assert a.num_rows == case.size
    uuids = data.uuid_table(3).column(0).to_pylist()
    assert all(len(u) == 36 and u[14] == "4" and u.count("-") == 4 for u in uuids)
    text = data.json_text_table(8 * 1024).column(0)[0].as_py()
    assert json.loads(text) and 7 * 1024 <= len(text) <= 10 * 1024


def test_pyarrow_measurement_sees_the_ipc_writer() -> None:
    """The subprocess measurement sees pyarrow's compressed buffers, not only its sink.

    A proxy pool set with ``pa.set_memory_pool`` sees the output buffer alone (the IPC writer
    allocates from the C++ default pool), so its peak is below the real one.
    """
    m = memory.measure_pyarrow(MemoryCase("lineitem", 20_000), use_threads=True)
    assert m["compressed"] > 0
    assert m["held"] >= m["compressed"]  # the output buffer, at its capacity
    assert m["peak"] >= m["held"]
    assert m["peak"] > m["proxy_peak"] == m["proxy_held"]
    assert not m["peak_hidden"]


def test_bench_memory_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZSTDPOOL_BENCH_TINY", "1")
    out = tmp_path / "memory.json"
    assert main(["--memory", "--filter", "sequential", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "int64 sequential 10,000 rows" in text
    assert "targets (zstdpool)" in text
    data = json.loads(out.read_text())
    (row,) = data["memory"]["rows"]
    assert row["zstdpool"]["None"]["compressed"] > 0
    assert row["pyarrow"]["True"]["compressed"] > 0
    assert {c["threads"] for c in row["targets"]} == {"None", "1", "2"}

    assert main(["--memory", "--list"]) == 0
    assert "UUID strings" in capsys.readouterr().out
    assert main(["--memory", "--filter", "no input is called this"]) == 2
    assert main(["--memory", "--plot", str(tmp_path / "x.png")]) == 2
