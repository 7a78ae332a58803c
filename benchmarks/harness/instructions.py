"""Instructions per call, counted by valgrind's callgrind: ``python -m benchmarks
--instructions``. A shared, noisy machine moves times by tens of percent between runs; the
instructions a call executes barely move (same binary, same input), so per-call work
(allocations, hashing of pool keys, Python objects made, copies) shows here first.

Each contender runs in a child process under callgrind, which makes ``calls`` calls after
its setup between two calls of ``os.getpgrp()``; callgrind dumps its counts before each of
them (``--dump-before=getpgrp``), so the second dump holds the loop alone: the interpreter's
start, the imports and the setup are in the first. Over 200 and 2,000 calls of a 1 KiB
compress the count per call agreed to 0.3%. The loop's own Python work (a ``for`` and a call)
is in every contender's count alike, and work a call hands to other threads is counted with
it. Contenders that empty a directory before each call (``before_each``) are not counted:
the reset would be counted with them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass

from benchmarks.harness import child_env
from benchmarks.harness.runner import (
    Profile,
    Workload,
    before_each,
    load_workloads,
    module_of,
    prepare,
)

#: Calls counted.
CALLS = 200


@dataclass
class Counted:
    """What one contender's call executes, or why it was not counted."""

    workload: str
    label: str
    instructions: float | None
    note: str = ""


def unavailable() -> str | None:
    """Why instructions cannot be counted here, or None."""
    if shutil.which("valgrind") is None:
        return "valgrind is not installed (Debian: apt install valgrind)"
    return None


def _total(out_file: str) -> int:
    """The instructions (Ir) a callgrind output file (or dump) counts in all."""
    with open(out_file, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"(?:summary|totals):\s+(\d+)", line)
            if m:
                return int(m.group(1))
    raise RuntimeError(f"{out_file} holds no callgrind totals")


def _run(profile: str, workload: str, label: str, calls: int, module: str | None) -> int:
    """The instructions ``calls`` calls of the contender execute, counted in a child."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--dump-before=getpgrp",
                f"--callgrind-out-file={out}",
                sys.executable,
                "-m",
                "benchmarks.harness.instructions",
                profile,
                workload,
                label,
                str(calls),
                module or "",
            ],
            capture_output=True,
            text=True,
            env=child_env(),
            timeout=1800,
            check=False,
        )
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"the child failed ({done.returncode}): {tail}")
        # Dump 1: up to the first mark (start, imports, setup); dump 2: the loop.
        return _total(f"{out}.2")


def count(profile: Profile, workloads: list[Workload], calls: int = CALLS) -> list[Counted]:
    """Instructions per call of every contender of ``workloads``."""
    rows = []
    for w in workloads:
        module = module_of(profile, w.name)
        for c in w.contenders:
            try:
                total = _run(profile.name, w.name, c.label, calls, module)
            except RuntimeError as e:
                rows.append(Counted(w.name, c.label, None, str(e)))
                continue
            rows.append(Counted(w.name, c.label, total / calls))
    return rows


def format_table(rows: list[Counted]) -> str:
    """The counts as a table, each with its ratio to the workload's first contender."""
    out = [f"{'workload':60}  {'contender':34}  {'instructions':>14}  {'ratio':>6}"]
    out.append(f"{'-' * 60}  {'-' * 34}  {'-' * 14}  {'-' * 6}")
    first: dict[str, float | None] = {}
    for r in rows:
        base = first.setdefault(r.workload, r.instructions)
        if r.instructions is None:
            out.append(f"{r.workload:60}  {r.label:34}  {'-':>14}  {'-':>6}  {r.note}")
            continue
        ratio = f"{r.instructions / base:.2f}" if base else "-"
        out.append(f"{r.workload:60}  {r.label:34}  {r.instructions:>14,.0f}  {ratio:>6}")
    out.append(
        f"instructions: executed per call (callgrind's Ir over a loop of {CALLS} calls, "
        "dumped apart from the start and setup); ratio: contender / zstdpool (above 1: "
        "zstdpool executes fewer)."
    )
    return "\n".join(out)


def _child(profile_name: str, workload_name: str, label: str, calls: int, module: str) -> None:
    """Sets the contender up, then makes ``calls`` calls: what callgrind counts."""
    from benchmarks.harness.runner import PROFILES

    profile = PROFILES[profile_name]
    loaded = load_workloads(profile, [workload_name], [module] if module else None)
    [workload] = [w for w in loaded if w.name == workload_name]
    [contender] = [c for c in workload.contenders if c.label == label]
    with ExitStack() as stack:
        fn, _ = prepare(contender, stack)
        if before_each(fn) is not None:
            raise SystemExit("a call with a reset before it is not counted")
        os.getpgrp()  # callgrind dumps here: what came before is counted apart
        for _ in range(calls):
            fn()
        os.getpgrp()


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
