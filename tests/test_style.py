"""The tree stays formatted, lint-clean and type-checked (ruff and mypy for Python, rustfmt for
Rust)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("args", [("check",), ("format", "--check")], ids=["lint", "format"])
def test_ruff(args: tuple[str, ...]) -> None:
    pytest.importorskip("ruff")
    result = run(
        sys.executable,
        "-m",
        "ruff",
        *args,
        "python",
        "tests",
        "benchmarks",
        "docs",
        "scripts/docs_examples.py",
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy() -> None:
    """mypy --strict over python/, as configured in pyproject.toml ([tool.mypy])."""
    pytest.importorskip("mypy")
    result = run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_rustfmt() -> None:
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not installed")
    result = run("cargo", "fmt", "--check")
    assert result.returncode == 0, result.stdout + result.stderr
