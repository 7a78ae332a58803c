"""The peak and held memory of whole writes (``python -m benchmarks --peaks``): each row comes
from a fresh process, and zstdpool's writes are held to their output plus
:data:`benchmarks.harness.peaks.HELD_SLACK` once they return."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.harness import peaks

pytestmark = pytest.mark.skipif(peaks.unavailable() is not None, reason=str(peaks.unavailable()))


@pytest.mark.parametrize("kind", ["parquet", "ipc"])
def test_a_write_is_measured_in_a_fresh_process_and_holds_its_output(kind: str) -> None:
    case = peaks.PeakCase(kind, 2_000)
    row: dict[str, Any] = {"case": case.name, "contender": "zstdpool", "write": True}
    row.update(peaks.measure(case, "zstdpool"))
    assert "error" not in row, row
    # The output of 2,000 lineitem rows, compressed: tens of KB, not nothing.
    assert 10_000 < row["output_bytes"] < 1_000_000
    # The resident set after the call cannot be above its highest point during it.
    assert 0 <= row["held_bytes"] <= row["peak_bytes"]
    assert peaks.held_target_met(row) is True
    table = peaks.format_peak_table([row])
    assert f"{case.name:40}  zstdpool" in table
    assert table.splitlines()[2].endswith("met")


def test_the_held_target_is_zstdpools_writes_output_plus_the_slack() -> None:
    row: dict[str, Any] = {
        "case": "ipc lineitem 2000 rows",
        "contender": "zstdpool",
        "write": True,
        "peak_bytes": 200 << 20,
        "held_bytes": (10 << 20) + peaks.HELD_SLACK,
        "output_bytes": 10 << 20,
    }
    assert peaks.held_target_met(row) is True
    over = {**row, "held_bytes": row["held_bytes"] + 1}
    assert peaks.held_target_met(over) is False
    assert "MISSED" in peaks.format_peak_table([over])
    # A peer's row, a read, and a failed run are not held to it.
    assert peaks.held_target_met({**over, "contender": "pyarrow"}) is None
    assert peaks.held_target_met({**over, "write": False}) is None
    failed = {"case": row["case"], "contender": "zstdpool", "error": "x"}
    assert peaks.held_target_met(failed) is None
    assert "failed: x" in peaks.format_peak_table([{**row, "error": "x"}])
