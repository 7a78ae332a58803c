"""``zstdpool inspect``: in subprocesses on real inputs, and its report in process with a
stand-in for inspect_ipc.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc
import pytest
import zstdpool
import zstdpool._zstdpool
from zstdpool.__main__ import main

from tests.helpers.cli import (
    TABLE,
    read_arrow,
    run,
    truncated_file,
    write_feather,
    write_pa_file,
    write_pa_stream,
)


@pytest.mark.parametrize(
    ("write", "fmt", "codec"),
    [
        (write_pa_stream("zstd"), "stream", "zstd"),
        (write_pa_file("lz4"), "file", "lz4"),
        (write_feather("uncompressed"), "file", "none"),
    ],
    ids=["stream-zstd", "file-lz4", "feather-uncompressed"],
)
def test_inspect(tmp_path: Path, write: Callable[[Path], pa.Table], fmt: str, codec: str) -> None:
    path = tmp_path / "data"
    write(path)
    result = run("inspect", path, "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["format"] == fmt
    assert info["num_batches"] == 3 and info["num_rows"] == 3000
    assert info["num_dictionary_batches"] >= 1
    assert info["codecs"] == [codec]
    assert [c["name"] for c in info["columns"]] == TABLE.column_names
    assert all(isinstance(c["type"], str) and c["type"] for c in info["columns"])
    assert info["schema"] == str(read_arrow(path).schema)
    for c in info["columns"]:
        assert c["compressed_bytes"] > 0 and c["uncompressed_bytes"] > 0
    compressed = sum(c["compressed_bytes"] for c in info["columns"])
    uncompressed = sum(c["uncompressed_bytes"] for c in info["columns"])
    assert compressed <= info["body_bytes"]
    if codec != "none":
        assert compressed < uncompressed
    assert info["body_bytes"] < path.stat().st_size

    result = run("inspect", path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert re.search(rf"^format:\s+{fmt}$", out, re.M)
    assert re.search(rf"^codec:\s+{codec}$", out, re.M)
    assert re.search(r"^batches:\s+3 record batches", out, re.M)
    assert re.search(r"^rows:\s+3,000$", out, re.M)
    for name in TABLE.column_names:
        assert re.search(rf"^{name}\s", out, re.M), name


def test_inspect_corrupt_input(tmp_path: Path) -> None:
    path = tmp_path / "data"
    truncated_file(path)
    result = run("inspect", path)
    assert result.returncode == 1
    assert result.stderr.startswith("zstdpool: error: ")


def test_inspect_usage_errors(tmp_path: Path) -> None:
    result = run("inspect", tmp_path / "nope")
    assert result.returncode == 2 and "no such file" in result.stderr
    text = tmp_path / "text"
    text.write_text("hello, this is not Arrow at all\n")
    result = run("inspect", text)
    assert result.returncode == 1 and "not an Arrow IPC stream or file" in result.stderr


def _fake_info(source: Any) -> dict[str, Any]:
    schema = TABLE.schema
    return {
        "format": "file",
        "schema": schema,
        "num_batches": 3,
        "num_rows": 3000,
        "num_dictionary_batches": 1,
        "codecs": ["zstd"],
        "body_bytes": 9999,
        "columns": [
            {
                "name": f.name,
                "type": str(f.type),
                "compressed_bytes": 100 * (i + 1),
                "uncompressed_bytes": 0 if f.name == "flag" else 1000 * (i + 1),
            }
            for i, f in enumerate(schema)
        ],
    }


def test_inspect_report_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "data.arrow"
    write_pa_file("zstd")(path)
    monkeypatch.setattr(zstdpool._zstdpool, "inspect_ipc", _fake_info)

    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"path:     {path} ({path.stat().st_size:,} bytes)" in out
    assert "format:   file" in out and "codec:    zstd" in out
    assert "batches:  3 record batches, 1 dictionary batch" in out
    assert "rows:     3,000" in out and "schema:   6 columns" in out
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("column"))
    assert header.split() == ["column", "type", "compressed", "uncompressed", "ratio"]
    assert next(line for line in lines if line.startswith("id ")).split() == [
        "id",
        "int64",
        "100",
        "1,000",
        "0.100",
    ]
    assert next(line for line in lines if line.startswith("flag ")).split()[-1] == "-"
    assert next(line for line in lines if line.startswith("total")).split() == [
        "total",
        "2,100",
        "17,000",
        "0.124",
    ]

    assert main(["inspect", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["schema"] == str(TABLE.schema)
    assert info["columns"][0] == {
        "name": "id",
        "type": "int64",
        "compressed_bytes": 100,
        "uncompressed_bytes": 1000,
    }


def test_inspect_has_no_fallback_for_a_build_without_inspect_ipc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every build of the extension has inspect_ipc. One without it is broken, and inspect
    fails with the AttributeError instead of reporting it as a failure of the input (exit 1)."""
    path = tmp_path / "data.arrow"
    write_pa_file("zstd")(path)
    assert callable(zstdpool._zstdpool.inspect_ipc)
    monkeypatch.delattr(zstdpool._zstdpool, "inspect_ipc")
    with pytest.raises(AttributeError, match="inspect_ipc"):
        main(["inspect", str(path)])
