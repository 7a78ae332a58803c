"""Run the README's tour as a user would: its ```python blocks, in order, in one namespace.

Usage: python scripts/readme_tour.py [README]

Reads the section "## A short tour" (up to the next "## " heading) of README (default: the
README.md beside this script's folder), and runs each ```python block with exec in one
namespace, in a fresh temporary directory (relative paths land there; it is removed after).
Tracebacks name the README's lines ("README.md:<line>"). Prints each block's first line
and OK; a block that needs a missing optional module (ModuleNotFoundError for one of
OPTIONAL) is skipped with the reason, any other error fails the run. Exits non-zero naming
the block that failed.

Run it from outside the repository to test the installed zstdpool, not the source tree.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from pathlib import Path

SECTION = "## A short tour"
#: Modules a block may need that the wheel does not install: a block that cannot import one
#: is skipped, with the reason printed. Any other missing module is a failure.
OPTIONAL = {"polars", "dask", "pandas", "fsspec"}

#: The README's "After": pyarrow code runs on zstdpool with these imports changed and nothing
#: else, so a block with them runs a second time, changed.
AFTER = {
    "import pyarrow.ipc as ipc": "import zstdpool.ipc as ipc",
    "import pyarrow.feather as feather": "import zstdpool.feather as feather",
}


def variants(code: str) -> list[tuple[str, str]]:
    """The block as written, and, where it imports pyarrow's IPC or Feather modules, the same
    block on zstdpool's."""
    after = code
    for theirs, ours in AFTER.items():
        after = after.replace(theirs, ours)
    return [("", code)] + ([(" (after: on zstdpool)", after)] if after != code else [])


def blocks(text: str) -> list[tuple[int, str]]:
    """The ```python blocks of the tour section: (line of the block's first code line, code)."""
    lines = text.splitlines()
    try:
        start = lines.index(SECTION)
    except ValueError:
        raise SystemExit(f"no {SECTION!r} heading in the README") from None
    found: list[tuple[int, str]] = []
    i = start + 1
    while i < len(lines) and not lines[i].startswith("## "):
        if lines[i].strip() == "```python":
            first = i + 1
            end = first
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            if end == len(lines):
                raise SystemExit(f"README.md:{i + 1}: the ```python block is not closed")
            found.append((first + 1, "\n".join(lines[first:end]) + "\n"))
            i = end
        i += 1
    return found


def missing_optional(exc: BaseException) -> str | None:
    """The optional module whose absence caused ``exc``, if that is what it is."""
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".")[0]
        if top in OPTIONAL:
            return top
    return None


def main(argv: list[str]) -> int:
    readme = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1] / "README.md"
    found = blocks(readme.read_text(encoding="utf-8"))
    if not found:
        print(f"{readme}: no ```python blocks under {SECTION!r}", file=sys.stderr)
        return 1
    namespace: dict[str, object] = {"__name__": "__main__"}
    ok = skipped = 0
    failed: str | None = None
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="readme-tour-") as tmp:
        os.chdir(tmp)
        try:
            runs = [(line, how, code) for line, block in found for how, code in variants(block)]
            for line, how, code in runs:
                name = f"README.md:{line}{how}"
                title = code.strip().splitlines()[0] if code.strip() else "(empty)"
                # Padded so that the compiled code's line numbers are the README's.
                compiled = compile("\n" * (line - 1) + code, name, "exec")
                try:
                    exec(compiled, namespace)
                except Exception as exc:
                    module = missing_optional(exc)
                    if module is not None:
                        skipped += 1
                        print(f"SKIP {name}  {title}  ({module} is not installed)")
                        continue
                    failed = name
                    print(f"FAIL {name}  {title}", flush=True)
                    traceback.print_exc()
                    break
                ok += 1
                print(f"OK   {name}  {title}", flush=True)
        finally:
            os.chdir(cwd)
    if failed is not None:
        print(f"the tour failed at {failed}", file=sys.stderr)
        return 1
    print(f"the tour ran: {ok} blocks OK, {skipped} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
