"""Adds up the tests that pytest and cargo test report in the logs named on the command line.

Usage: python3 scripts/ci_totals.py LOG...

Prints one line, "N passed, N failed" (", N skipped" after it), from each pytest log's summary
line and each of cargo test's "test result:" lines; errors count as failed. Exits non-zero
when a log that exists has no summary, so that a run that died half-way cannot pass for one
that ran nothing.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def pytest_counts(text: str) -> dict[str, int] | None:
    """passed, failed, skipped from pytest's last summary line, or None without one."""
    lines = [x for x in text.splitlines() if re.search(r"\bin [0-9.]+s\b", x)]
    if not lines:
        return None
    last = re.sub(r"[0-9]+ subtests? \w+", "", lines[-1])

    def n(word: str) -> int:
        return sum(int(m) for m in re.findall(rf"([0-9]+) {word}\b", last))

    return {
        "passed": n("passed") + n("xpassed"),
        "failed": n("failed") + n("errors?"),
        "skipped": n("skipped") + n("xfailed") + n("deselected"),
    }


def cargo_counts(text: str) -> dict[str, int] | None:
    """The sum of cargo test's "test result:" lines, or None without one."""
    found = re.findall(
        r"test result: \w+\. ([0-9]+) passed; ([0-9]+) failed; ([0-9]+) ignored", text
    )
    if not found:
        return None
    return {
        "passed": sum(int(p) for p, _, _ in found),
        "failed": sum(int(f) for _, f, _ in found),
        "skipped": sum(int(i) for _, _, i in found),
    }


def main(paths: list[str]) -> int:
    total = {"passed": 0, "failed": 0, "skipped": 0}
    status = 0
    for path in paths:
        p = Path(path)
        if not p.is_file():
            continue
        text = p.read_text(errors="replace")
        counts = cargo_counts(text) if "test result:" in text else pytest_counts(text)
        if counts is None:
            print(f"{path}: no test summary (the step died or ran nothing)", file=sys.stderr)
            status = 1
            continue
        for k in total:
            total[k] += counts[k]
    print(f"{total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped")
    return status or (1 if total["failed"] else 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
