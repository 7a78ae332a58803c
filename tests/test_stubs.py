"""The .pyi stubs must describe the compiled module exactly, and every public name has help()."""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import zstdpool
import zstdpool.errors
import zstdpool.ipc

from tests.helpers.env import subprocess_env


def test_stubtest_finds_no_difference(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    config = tmp_path / "mypy.ini"
    # pyarrow ships no type information; the stubs only name its types.
    config.write_text("[mypy]\nignore_missing_imports = True\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy.stubtest",
            "zstdpool._zstdpool",
            "--mypy-config-file",
            str(config),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(),
        timeout=600,
    )
    assert result.returncode == 0, textwrap.shorten(result.stdout + result.stderr, 4000)


def _public(module: object) -> list[tuple[str, object]]:
    names = getattr(module, "__all__", [])
    return [(n, getattr(module, n)) for n in names if callable(getattr(module, n))]


@pytest.mark.parametrize(
    ("name", "obj"),
    _public(zstdpool) + _public(zstdpool.ipc) + _public(zstdpool.errors),
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_every_public_name_has_a_docstring(name: str, obj: object) -> None:
    doc = inspect.getdoc(obj)
    assert doc and len(doc) > 20, f"{name} has no docstring"
    if inspect.isclass(obj):
        for attr, member in vars(obj).items():
            if attr.startswith("_") or not (callable(member) or inspect.isgetsetdescriptor(member)):
                continue
            assert inspect.getdoc(member), f"{name}.{attr} has no docstring"
