"""The command line as a whole: every command's help, the commands listed, and telling an
Arrow IPC file from a stream by its first bytes.

(``bench`` is tested in benchmarks/test_harness.py and benchmarks/test_memory_table.py.)
"""

from __future__ import annotations

import pytest
from zstdpool._cli import files

from tests.helpers.cli import STREAM_START, run


@pytest.mark.parametrize("command", ["recompress", "inspect"])
def test_help(command: str) -> None:
    result = run(command, "--help")
    assert result.returncode == 0
    assert result.stdout.startswith(f"usage: zstdpool {command}")
    assert "Exit codes" in result.stdout


def test_commands_listed() -> None:
    result = run("--help")
    assert result.returncode == 0
    assert "recompress" in result.stdout and "inspect" in result.stdout


def test_sniff_format() -> None:
    assert files.sniff_format(b"ARROW1\0\0", 100) == "file"
    assert files.sniff_format(STREAM_START + b"\x10\0\0\0", 100) == "stream"
    legacy = (120).to_bytes(4, "little") + (16).to_bytes(4, "little")
    assert files.sniff_format(legacy, 200) == "stream"  # before Arrow 0.15
    for head, size in [(b"", 0), (b"hello wo", 100), (legacy, 100), (b"PAR1\0\0\0\0", 8)]:
        with pytest.raises(files.InputError, match="not an Arrow IPC stream or file"):
            files.sniff_format(head, size)
