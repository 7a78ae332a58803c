"""The boundaries of the layout hold: the core has no Python in it, and every exception the
extension raises is built in one place (src/errors.rs)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Ways to build a Python exception in PyO3 code.
EXCEPTION_SITE = re.compile(
    r"::new_err\(|PyErr::new::<|PyErr::from_type|PyErr::from_value|import_exception!|"
    r"create_exception!|pyo3::exceptions::"
)


def exception_sites(sources: dict[str, str]) -> list[str]:
    """Every line outside errors.rs that builds an exception, as "file:line: text"."""
    found = []
    for name, text in sources.items():
        if Path(name).name == "errors.rs":
            continue
        for n, line in enumerate(text.splitlines(), 1):
            code = line.split("//", 1)[0]
            if EXCEPTION_SITE.search(code):
                found.append(f"{name}:{n}: {line.strip()}")
    return found


def test_exceptions_are_built_only_in_errors_rs() -> None:
    sources = {str(p.relative_to(ROOT)): p.read_text() for p in (ROOT / "src").rglob("*.rs")}
    assert "src/errors.rs" in sources
    assert exception_sites(sources) == []


def test_the_check_finds_an_exception_built_elsewhere() -> None:
    sources = {
        "src/errors.rs": "PyTypeError::new_err(msg)",
        "src/io.rs": (
            'let e = PyValueError::new_err("bad"); // a stray raise\n// new_err( in a comment'
        ),
    }
    assert exception_sites(sources) == [
        'src/io.rs:1: let e = PyValueError::new_err("bad"); // a stray raise'
    ]


def test_the_core_crate_does_not_depend_on_python() -> None:
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not installed")
    result = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--offline"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0:
        result = subprocess.run(
            ["cargo", "metadata", "--format-version", "1"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert result.returncode == 0, result.stderr
    meta = json.loads(result.stdout)
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    core = next(i for i, p in packages.items() if p["name"] == "zstdpool-core")
    seen, todo = set(), [core]
    while todo:
        node = nodes[todo.pop()]
        for dep in node["deps"]:
            kinds = {k["kind"] for k in dep["dep_kinds"]}
            if kinds - {"dev"} and dep["pkg"] not in seen:
                seen.add(dep["pkg"])
                todo.append(dep["pkg"])
    names = {packages[i]["name"] for i in seen}
    assert not {n for n in names if n.startswith("pyo3")}, sorted(names)
