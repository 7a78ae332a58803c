"""The documentation names only files and folders that exist, and the figures the code cites
by anchor are in benchmarks/RESULTS.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [
    "README.md",
    "fuzz/README.md",
    "benchmarks/RESULTS.md",
    "benchmarks/RESULTS-archive.md",
    *sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("docs/**/*.md")),
]
#: A path inside the repository: it starts with one of its top-level folders.
PATH = re.compile(r"(?<![\w./-])(?:benchmarks|core|docs|fuzz|python|scripts|src|tests)/[\w./-]*")


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


#: A citation of a figure: benchmarks/RESULTS.md#anchor, in a comment of the code.
CITED = re.compile(r"RESULTS\.md#([\w-]+)")


def test_cited_figures_have_their_anchor() -> None:
    anchors = set(
        re.findall(r'<a id="([\w-]+)"></a>', (ROOT / "benchmarks/RESULTS.md").read_text())
    )
    cited: dict[str, str] = {}
    for folder in ("core/src", "src", "python", "benchmarks/harness", "docs"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in {".rs", ".py", ".md"}:
                for anchor in CITED.findall(path.read_text(encoding="utf-8")):
                    cited.setdefault(anchor, str(path.relative_to(ROOT)))
    assert cited, "no figure is cited by anchor: the pattern no longer matches the comments"
    missing = {a: where for a, where in cited.items() if a not in anchors}
    assert not missing, f"cited in the code but not anchored in benchmarks/RESULTS.md: {missing}"
