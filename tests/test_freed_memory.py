"""A large write gives the memory it freed back to the system: after it returns, the process's
resident set holds what the pool keeps warm, not the buffers it wrote through (glibc keeps
freed memory in its arenas unless asked; core/src/memory/trim.rs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not Path("/proc/self/status").exists(),
    reason="the resident set is read from Linux's /proc/self/status",
)

#: Run in a fresh interpreter: three writes to files are the only large things the process has
#: done since its allocators gave back what building the input freed. It prints how far the
#: resident set grew over the writes, and what a further `malloc_trim` would still have given
#: back. Outputs go to files: bytes objects would be Python's allocator's to keep (mimalloc's,
#: on a free-threaded CPython).
CHILD = r"""
import ctypes, ctypes.util, gc, json, sys, time
import numpy as np
import pyarrow as pa
import zstdpool.dataset, zstdpool.ipc, zstdpool.parquet

def resident():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))

libc = ctypes.CDLL(ctypes.util.find_library("c"))
kind, out = sys.argv[1], sys.argv[2]
rows = 1_000_000
rng = np.random.default_rng(0)
table = pa.table({
    "id": np.arange(rows, dtype=np.int64),
    "price": rng.random(rows),
    "qty": rng.integers(0, 50, rows, dtype=np.int32),
    "part": rng.integers(0, 4, rows, dtype=np.int32),
    "note": pa.array(np.char.add("item ", rng.integers(0, 20_000, rows).astype(str))),
})
gc.collect()
pa.default_memory_pool().release_unused()
libc.malloc_trim(0)
before = resident()
# One thread: glibc gives back the top of a worker's arena only itself, so what stays
# resident after a parallel write grows with the workers (benchmarks/RESULTS.md#held-after-write).
# A second apart: a trim follows a large write only when none ran in the last second
# (core/src/memory/trim.rs, TRIM_EVERY).
for i in range(3):
    time.sleep(1.1)
    if kind == "parquet":
        zstdpool.parquet.write_table(table, f"{out}-{i}", threads=1)
    elif kind == "ipc":
        zstdpool.ipc.write_stream(table, f"{out}-{i}", level=3, threads=1)
    else:
        zstdpool.dataset.write_dataset(
            table, f"{out}-{i}", format="parquet", partitioning=["part"], threads=1
        )
gc.collect()
after = resident()
libc.malloc_trim(0)
left = after - resident()
print(json.dumps({"grew": after - before, "left_to_trim": left}))
"""


def is_glibc() -> bool:
    import platform

    return platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not is_glibc(), reason="malloc_trim is glibc's")
@pytest.mark.parametrize("kind", ["parquet", "ipc", "dataset"])
def test_a_large_write_leaves_nothing_for_the_allocator_to_give_back(
    kind: str, tmp_path: Path
) -> None:
    pytest.importorskip("numpy")
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    # Each write went through tens of megabytes of buffers (the input is about 40 MB); kept by
    # the allocator, a trim after them gave back 8-42 MB. After the writes' own, nothing.
    assert figures["left_to_trim"] < 2 << 20, figures
    # What the process still holds: the pool's contexts and the allocator's slack, below the
    # input.
    assert figures["grew"] < 32 << 20, figures
