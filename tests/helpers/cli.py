"""Inputs and checks shared by the command-line tests (tests/cli): a table written by every
producer (pyarrow, Feather, polars), and the command run in a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.ipc

from tests.helpers.env import subprocess_env

STREAM_START = b"\xff\xff\xff\xff"


def run(*args: str | os.PathLike[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zstdpool", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=subprocess_env(),
        timeout=120,
    )


def make_table(rows: int = 3000) -> pa.Table:
    """Compressible columns of several kinds, nulls and a dictionary among them."""
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("x", pa.float64()),
            pa.field("name", pa.string()),
            pa.field("flag", pa.bool_()),
            pa.field("tags", pa.list_(pa.int32())),
            pa.field("city", pa.dictionary(pa.int32(), pa.string())),
        ],
        metadata={"origin": "test_cli"},
    )
    cities = ["Lyon", "Oslo", "Quito", "Perth"]
    return pa.table(
        {
            "id": list(range(rows)),
            "x": [None if i % 17 == 0 else i / 4 for i in range(rows)],
            "name": [f"name-{i % 50}" for i in range(rows)],
            "flag": [i % 3 == 0 for i in range(rows)],
            "tags": [[i % 5] * (i % 4) for i in range(rows)],
            "city": pa.array([cities[i % 4] for i in range(rows)]).dictionary_encode(),
        },
        schema=schema,
    )


TABLE = make_table()
BATCH = 1000  # rows per batch: 3 batches


def pa_options(codec: str | None) -> pa.ipc.IpcWriteOptions:
    return pa.ipc.IpcWriteOptions(compression=codec)


def write_pa_stream(codec: str | None) -> Callable[[Path], pa.Table]:
    def write(path: Path) -> pa.Table:
        with pa.ipc.new_stream(path, TABLE.schema, options=pa_options(codec)) as w:
            w.write_table(TABLE, max_chunksize=BATCH)
        return TABLE

    return write


def write_pa_file(codec: str | None) -> Callable[[Path], pa.Table]:
    def write(path: Path) -> pa.Table:
        with pa.ipc.new_file(
            path, TABLE.schema, options=pa_options(codec), metadata={"footer": "kept"}
        ) as w:
            w.write_table(TABLE, max_chunksize=BATCH)
        return TABLE

    return write


def write_feather(codec: str) -> Callable[[Path], pa.Table]:
    def write(path: Path) -> pa.Table:
        feather.write_feather(TABLE, path, compression=codec, chunksize=BATCH)
        return TABLE

    return write


def read_arrow(path: Path) -> pa.Table:
    """``path`` read by pyarrow, whichever its format."""
    with open(path, "rb") as f:
        is_file = f.read(6) == b"ARROW1"
    with pa.OSFile(str(path)) as source:
        reader = pa.ipc.open_file(source) if is_file else pa.ipc.open_stream(source)
        return reader.read_all()


def truncated_file(path: Path) -> None:
    write_pa_file("zstd")(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
