"""Writes the shared keywords of the extension's stub from one table.

Every reader and writer of the extension ends its signature with keywords it shares with the
others (``fsync``, ``pool``, ``filesystem``, ``storage_options``), appended by the bindings'
``shared_keywords!`` macro (``src/shared_keywords.rs``) or written out by hand. Their types
are written here, once: for every function and constructor of
``python/zstdpool/_zstdpool.pyi`` whose runtime signature ends with keywords of ``SHARED``,
this puts that run, in the runtime's order and with the table's types, at the end of the
stub's keyword-only parameters. A keyword shared by every reader is then added in the
bindings and in ``SHARED``; the stub follows.

Usage: python scripts/stub_keywords.py [--check]
  --check   write nothing; list the definitions that would change, and exit 1 if any
Imports the built extension (``zstdpool._zstdpool``), whose signatures are the source.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

STUB = Path(__file__).resolve().parent.parent / "python" / "zstdpool" / "_zstdpool.pyi"

# Keyword: (annotation, default), as the stub writes them.
SHARED: dict[str, tuple[str, str]] = {
    "fsync": ("bool", "False"),
    "pool": ("ContextPool | None", "None"),
    "filesystem": ("Any | None", "None"),
    "storage_options": ("dict[str, Any] | None", "None"),
}


def runtime_tail(obj: Any) -> list[str]:
    """The keywords of ``SHARED`` that end ``obj``'s runtime signature, in order."""
    try:
        params = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return []
    tail: list[str] = []
    for p in reversed(params):
        if p.name not in SHARED or p.kind is not inspect.Parameter.KEYWORD_ONLY:
            break
        tail.insert(0, p.name)
    return tail


def definitions(tree: ast.Module, module: Any) -> list[tuple[ast.FunctionDef, Any]]:
    """The stub's module-level functions and class constructors (``__new__``, ``__init__``),
    each with its runtime object."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and hasattr(module, node.name):
            found.append((node, getattr(module, node.name)))
        elif isinstance(node, ast.ClassDef) and hasattr(module, node.name):
            cls = getattr(module, node.name)
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name in ("__new__", "__init__"):
                    found.append((item, cls))
    return found


def shared_text(name: str) -> str:
    annotation, default = SHARED[name]
    return f"{name}: {annotation} = {default}"


def param_text(arg: ast.arg, default: ast.expr | None) -> str:
    annotation = ast.unparse(arg.annotation) if arg.annotation else ""
    return f"{arg.arg}: {annotation} = {ast.unparse(default) if default else ''}"


def rewritten(node: ast.FunctionDef, tail: list[str]) -> ast.arguments | None:
    """``node``'s parameters with ``tail`` written from the table at the end of its
    keyword-only ones; None when they are already so."""
    args = node.args
    given = list(zip(args.kwonlyargs, args.kw_defaults, strict=True))
    kept = [(a, d) for a, d in given if a.arg not in tail]
    now = [param_text(a, d) for a, d in given]
    want = [param_text(a, d) for a, d in kept] + [shared_text(name) for name in tail]
    if now == want:
        return None
    new = ast.parse(f"def f(*, {', '.join(shared_text(n) for n in tail)}): ...").body[0]
    assert isinstance(new, ast.FunctionDef)
    return ast.arguments(
        posonlyargs=args.posonlyargs,
        args=args.args,
        vararg=args.vararg,
        kwonlyargs=[a for a, _ in kept] + new.args.kwonlyargs,
        kw_defaults=[d for _, d in kept] + new.args.kw_defaults,
        kwarg=args.kwarg,
        defaults=args.defaults,
    )


def header_span(text: str, lines: list[str], node: ast.FunctionDef) -> tuple[int, int]:
    """Offsets (in ``text``) of ``def ...(...) -> ...:``, up to and including its colon. A
    header with a comment inside is refused: rewriting it would drop the comment."""
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def at(lineno: int, col: int) -> int:
        # ast's columns count UTF-8 bytes; the offsets count characters.
        line = lines[lineno - 1]
        return offsets[lineno - 1] + len(line.encode()[:col].decode())

    start = at(node.lineno, node.col_offset)
    returns = node.returns
    if returns is None:
        # No annotation to end at: the colon after the last closing parenthesis.
        end = at(node.body[0].lineno, node.body[0].col_offset)
        colon = text.index(":", text.rindex(")", start, end), end)
    else:
        assert returns.end_lineno is not None and returns.end_col_offset is not None
        colon = text.index(":", at(returns.end_lineno, returns.end_col_offset))
    if "#" in text[start:colon]:
        raise ValueError(
            f"{STUB.name}:{node.lineno} {node.name}: a comment inside the signature; "
            "move it out, then run this again"
        )
    return start, colon + 1


def update(text: str, module: Any) -> tuple[str, list[str]]:
    """``text`` with its shared runs written from the table, and the definitions changed."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    edits = []
    for node, obj in definitions(tree, module):
        tail = runtime_tail(obj)
        if not tail:
            continue
        positional = {a.arg for a in node.args.posonlyargs + node.args.args}
        if positional & set(tail):
            raise ValueError(
                f"{STUB.name}:{node.lineno} {node.name}: the stub takes "
                f"{sorted(positional & set(tail))} positionally, where the runtime takes them "
                "by keyword only"
            )
        params = rewritten(node, tail)
        if params is None:
            continue
        returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
        start, end = header_span(text, lines, node)
        edits.append((start, end, f"def {node.name}({ast.unparse(params)}){returns}:", node))
    changed = []
    for start, end, header, node in sorted(edits, key=lambda e: e[0], reverse=True):
        text = text[:start] + header + text[end:]
        changed.append(f"{STUB.name}:{node.lineno} {node.name}")
    return text, changed[::-1]


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    if argv and not check:
        print(__doc__, file=sys.stderr)
        return 2
    import zstdpool._zstdpool as module

    text, changed = update(STUB.read_text(), module)
    if check:
        for c in changed:
            print(f"{c}: its shared keywords differ from scripts/stub_keywords.py's table")
        return 1 if changed else 0
    if changed:
        STUB.write_text(text)
        # ast.unparse writes one line per signature; ruff gives it the tree's format.
        subprocess.run([sys.executable, "-m", "ruff", "format", str(STUB)], check=True)
        print("\n".join(changed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
