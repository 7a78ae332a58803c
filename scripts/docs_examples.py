"""Run the documentation's examples as a user would, and check the output they show.

Usage: python scripts/docs_examples.py [PAGE.md ...]

With no arguments: README.md and every page under docs/. Each page's ```python blocks run in
order, with exec, in one namespace of their own, in a fresh temporary directory (relative
paths land there; it is removed after). Tracebacks name the page's lines ("docs/x.md:<line>").

A block followed by a ```text title="Output" block must print exactly that text (trailing
spaces aside). A block that needs a missing optional module (ModuleNotFoundError for one of
OPTIONAL) skips the rest of its page, with the reason printed; any other error fails the run.
A block that imports pyarrow's IPC or Feather module runs a second time on zstdpool's (the
guide's "after": pyarrow code runs with the import changed and nothing else).

Prints each block's first line and OK; exits non-zero naming the blocks that failed. Run it
from outside the repository to test the installed zstdpool, not the source tree.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Modules a block may need that the wheel does not install: a page that cannot import one
#: is skipped from there on, with the reason printed. Any other missing module is a failure.
OPTIONAL = {"polars", "dask", "distributed", "pandas", "fsspec", "pyiceberg", "ray"}

#: pyarrow code runs on zstdpool with these imports changed and nothing else, so a block with
#: them runs a second time, changed.
AFTER = {
    "import pyarrow.ipc as ipc": "import zstdpool.ipc as ipc",
    "import pyarrow.feather as feather": "import zstdpool.feather as feather",
}
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>.*)$")
OUTPUT_INFO = re.compile(r'^text\s+title="Output"\s*$')


@dataclass
class Block:
    line: int  # the line of the block's first code line, counted from 1
    code: str
    output: str | None  # what it must print, where the page shows it


def variants(code: str) -> list[tuple[str, str]]:
    """The block as written, and, where it imports pyarrow's IPC or Feather modules, the same
    block on zstdpool's."""
    after = code
    for theirs, ours in AFTER.items():
        after = after.replace(theirs, ours)
    return [("", code)] + ([(" (after: on zstdpool)", after)] if after != code else [])


def fences(text: str, name: str) -> list[tuple[str, int, str]]:
    """Every fenced block of a page: (info string, line of its first content line, content)."""
    lines = text.splitlines()
    found: list[tuple[str, int, str]] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        indent = len(m.group("indent"))
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            raise SystemExit(f"{name}:{i + 1}: the ``` block is not closed")
        body = [line[indent:] for line in lines[i + 1 : end]]
        found.append((m.group("info").strip(), i + 2, "\n".join(body) + "\n"))
        i = end + 1
    return found


def blocks(text: str, name: str) -> list[Block]:
    """The page's ```python blocks, each with the output block that follows it, if any."""
    found = fences(text, name)
    result: list[Block] = []
    for k, (info, line, code) in enumerate(found):
        if OUTPUT_INFO.match(info):
            if k == 0 or found[k - 1][0] != "python":
                raise SystemExit(f"{name}:{line - 1}: an Output block must follow a python block")
            continue
        if info != "python":
            continue
        nxt = found[k + 1] if k + 1 < len(found) else None
        output = nxt[2] if nxt is not None and OUTPUT_INFO.match(nxt[0]) else None
        result.append(Block(line, code, output))
    return result


def missing_optional(exc: BaseException) -> str | None:
    """The optional module whose absence caused ``exc``, if that is what it is."""
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".")[0]
        if top in OPTIONAL:
            return top
    return None


def same_output(printed: str, shown: str) -> bool:
    def norm(s: str) -> list[str]:
        return [line.rstrip() for line in s.strip("\n").splitlines()]

    return norm(printed) == norm(shown)


def run_page(page: Path) -> tuple[int, int, list[str]]:
    """Runs a page's blocks: (blocks OK, blocks skipped, names of the failed ones)."""
    try:
        name = str(page.resolve().relative_to(ROOT))
    except ValueError:
        name = str(page)
    found = blocks(page.read_text(encoding="utf-8"), name)
    namespace: dict[str, object] = {"__name__": "__main__"}
    ok = skipped = 0
    failed: list[str] = []
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="docs-examples-") as tmp:
        os.chdir(tmp)
        try:
            runs = [(b, how, code) for b in found for how, code in variants(b.code)]
            for n, (block, how, code) in enumerate(runs):
                where = f"{name}:{block.line}{how}"
                title = code.strip().splitlines()[0] if code.strip() else "(empty)"
                # Padded so that the compiled code's line numbers are the page's.
                compiled = compile("\n" * (block.line - 1) + code, where, "exec")
                printed = io.StringIO()
                try:
                    with contextlib.redirect_stdout(printed):
                        exec(compiled, namespace)
                except Exception as exc:
                    module = missing_optional(exc)
                    if module is not None:
                        skipped += len(runs) - n
                        print(
                            f"SKIP {where}  {title}  ({module} is not installed; the rest of "
                            f"the page is skipped)"
                        )
                        break
                    failed.append(where)
                    print(printed.getvalue(), end="")
                    print(f"FAIL {where}  {title}", flush=True)
                    traceback.print_exc()
                    break
                if block.output is not None and not same_output(printed.getvalue(), block.output):
                    failed.append(where)
                    print(
                        f"FAIL {where}  {title}: printed\n{printed.getvalue()}"
                        f"where the page shows\n{block.output}",
                        flush=True,
                    )
                    break
                ok += 1
                checked = " (output checked)" if block.output is not None else ""
                print(f"OK   {where}  {title}{checked}", flush=True)
        finally:
            os.chdir(cwd)
    return ok, skipped, failed


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def main(argv: list[str]) -> int:
    chosen = [Path(a) for a in argv[1:]] or pages()
    ok = skipped = 0
    failed: list[str] = []
    for page in chosen:
        o, s, f = run_page(page)
        ok, skipped, failed = ok + o, skipped + s, failed + f
    if failed:
        print(f"the examples failed at {', '.join(failed)}", file=sys.stderr)
        return 1
    print(f"the examples ran: {ok} blocks OK, {skipped} skipped, in {len(chosen)} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
