"""The documentation names only files and folders that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["README.md", "fuzz/README.md", "benchmarks/RESULTS.md"]
#: A path inside the repository: it starts with one of its top-level folders.
PATH = re.compile(r"(?<![\w./-])(?:benchmarks|core|fuzz|python|scripts|src|tests)/[\w./-]*")


def named_paths(text: str) -> list[str]:
    return sorted({m.group(0).rstrip(".,;:") for m in PATH.finditer(text)})


@pytest.mark.parametrize("doc", DOCS)
def test_paths_named_in_the_docs_exist(doc: str) -> None:
    named = named_paths((ROOT / doc).read_text(encoding="utf-8"))
    missing = [p for p in named if not (ROOT / p).exists()]
    assert not missing, f"{doc} names {missing}, which the repository does not have"


def test_named_paths_are_found() -> None:
    text = "see `tests/ipc/test_conformance.py`, [x](fuzz/README.md) and src/ipc/reader.rs."
    assert named_paths(text) == [
        "fuzz/README.md",
        "src/ipc/reader.rs",
        "tests/ipc/test_conformance.py",
    ]
    assert named_paths("../../shared/arrow-testing/data and artifacts/ipc_reader/") == []
