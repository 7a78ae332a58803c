"""The path-sink workload of ``python -m benchmarks``: the ``paths`` group.

One call writes a 256-row table as 1,000 small Arrow IPC files to paths in an empty
directory (emptied before each call, outside the timing): zstdpool without ``fsync`` (the
default, as pyarrow and polars write), zstdpool with ``fsync=True`` (each file synced before
its rename, its directory after), and pyarrow's ``new_file`` to a path. Written under the
temporary directory (``ZSTDPOOL_BENCH_DIR`` chooses another): syncing only means something on
a disk.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import TYPE_CHECKING

from benchmarks.harness.data import have_numpy, int32_table
from benchmarks.harness.runner import Contender, Profile, Timed, Workload, register_source

if TYPE_CHECKING:
    import pyarrow as pa

#: Files per call, per profile.
FILES = {"tiny": 20, "quick": 1000, "full": 1000}


class Writes:
    """`count` files written into `out` from nothing; ``before_each`` empties it untimed."""

    def __init__(self, out: str, count: int, write: Callable[[str], object]) -> None:
        self.out, self.count, self.write = out, count, write

    def __call__(self) -> str:
        os.makedirs(self.out, exist_ok=True)
        for i in range(self.count):
            self.write(os.path.join(self.out, f"{i}.arrow"))
        return self.out

    def before_each(self) -> None:
        shutil.rmtree(self.out, ignore_errors=True)


def _setup(
    count: int, make: Callable[[pa.Table], Callable[[str], object]]
) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        base = tempfile.mkdtemp(
            prefix="zstdpool-bench-paths-", dir=os.environ.get("ZSTDPOOL_BENCH_DIR")
        )
        stack.callback(shutil.rmtree, base, ignore_errors=True)
        return Writes(os.path.join(base, "out"), count, make(int32_table(256)))

    return setup


def _zstdpool(fsync: bool) -> Callable[[pa.Table], Callable[[str], object]]:
    def make(table: pa.Table) -> Callable[[str], object]:
        import zstdpool.ipc

        def write(path: str) -> object:
            return zstdpool.ipc.write_file(table, path, fsync=fsync)

        return write

    return make


def _pyarrow(table: pa.Table) -> Callable[[str], object]:
    import pyarrow as pa

    options = pa.ipc.IpcWriteOptions(compression="zstd")

    def write(path: str) -> object:
        with pa.ipc.new_file(path, table.schema, options=options) as w:
            w.write_table(table)
        return None

    return write


def check_files(count: int, out: object) -> None:
    """Raises AssertionError unless `out` holds `count` readable files."""
    import pyarrow as pa

    assert isinstance(out, str)
    names = os.listdir(out)
    if len(names) != count:
        raise AssertionError(f"{len(names)} files, {count} expected")
    with pa.ipc.open_file(os.path.join(out, names[0])) as r:
        if r.read_all().num_rows != 256:
            raise AssertionError("a file does not hold the table")


@register_source
def path_workloads(profile: Profile) -> Iterator[Workload]:
    """The path-writes workload (none without numpy)."""
    if not have_numpy():
        print(
            "note: the paths workload needs numpy: pip install 'zstdpool[bench]'", file=sys.stderr
        )
        return
    count = FILES.get(profile.name, FILES["quick"])
    yield Workload(
        name=f"paths {count} small files",
        group="paths",
        description=(
            f"Write a 256-row int32 table as {count} Arrow IPC files (zstd) to paths in an empty "
            "directory: zstdpool without and with fsync, pyarrow's new_file."
        ),
        contenders=tuple(
            Contender(
                label, _setup(count, make), check=lambda out: check_files(count, out), requires=req
            )
            for label, make, req in (
                ("zstdpool", _zstdpool(False), ()),
                ("zstdpool fsync=True", _zstdpool(True), ()),
                ("pyarrow new_file", _pyarrow, ("pyarrow",)),
            )
        ),
    )
