"""The API reference leaves nothing public out: every public module is on a reference page, and
every parameter of every public function, class and method is described in its docstring.

The site renders each object's signature (types and defaults, from the stub or the
annotations) beside its docstring; a parameter the docstring never names is one a reader
meets with no word on what it does. A parameter counts as described when the docstring names
it in backticks (``name``, `name`, or ``**name`` for a keyword bundle), in prose or in a list.
"""

from __future__ import annotations

import enum
import importlib
import importlib.util
import inspect
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zstdpool

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"
#: Modules that need an optional dependency: their absence skips their check, named.
OPTIONAL = {"zstdpool.polars": "polars", "zstdpool.iceberg": "pyiceberg", "zstdpool.ray": "ray"}
OPTIONAL.update({m: "distributed" for m in ("zstdpool.dask",)})
#: Parameters a docstring need not name: the receiver, and pickling's protocol hooks.
IMPLICIT = {"self", "cls", "args", "kwargs"}


def public_modules() -> list[str]:
    """zstdpool and every submodule whose dotted name has no part starting with "_"."""
    names = ["zstdpool"]
    for info in pkgutil.walk_packages(zstdpool.__path__, "zstdpool.", onerror=lambda _: None):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def documented_modules() -> set[str]:
    """The modules the reference pages render (``::: zstdpool.x`` lines)."""
    found: set[str] = set()
    for page in REFERENCE.glob("*.md"):
        found.update(re.findall(r"^::: (zstdpool[\w.]*)\s*$", page.read_text(), re.MULTILINE))
    # A private module's object rendered for its types (a stub's TypedDict) is not a module.
    return {name for name in found if not any(p.startswith("_") for p in name.split("."))}


def dependencies(name: str) -> list[str]:
    """The optional dependencies that module ``name`` (or a package above it) needs."""
    return [
        dep for module, dep in OPTIONAL.items() if name == module or name.startswith(module + ".")
    ]


def load(name: str) -> Any:
    for dependency in dependencies(name):
        pytest.importorskip(dependency, reason=f"{name} needs {dependency}")
    return importlib.import_module(name)


def exported(module: Any) -> Iterator[tuple[str, Any]]:
    for name in getattr(module, "__all__", ()):
        obj = getattr(module, name)
        if not inspect.ismodule(obj):
            yield name, obj


def callables(qualname: str, obj: Any) -> Iterator[tuple[str, Any, str]]:
    """(name, callable, the docstring that must describe its parameters) for a function, or a
    class (its constructor, described by the class's docstring) and its public methods."""
    if inspect.isclass(obj):
        # An enum is called with a member's value (from CPython 3.12 its signature says
        # ``values``), which its members document.
        if not issubclass(obj, enum.Enum):
            yield qualname, obj, obj.__doc__ or ""
        for name, member in vars(obj).items():
            if name.startswith("_") or isinstance(member, property):
                continue
            bound = getattr(obj, name)
            if callable(bound):
                yield f"{qualname}.{name}", bound, bound.__doc__ or ""
    elif callable(obj):
        yield qualname, obj, obj.__doc__ or ""


def undescribed(obj: Any, doc: str) -> list[str]:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # a builtin without a text signature
        return []
    return [
        p.name
        for p in signature.parameters.values()
        if p.name not in IMPLICIT and not re.search(rf"`(?:\*\*?)?{re.escape(p.name)}\b", doc)
    ]


def test_every_public_module_has_a_reference_page() -> None:
    missing = sorted(set(public_modules()) - documented_modules())
    assert not missing, f"no page under docs/reference renders {missing}"


def unavailable(name: str) -> bool:
    """Whether ``name`` needs an optional dependency that is not installed (the package walk
    cannot import it then, and so does not find its submodules)."""
    return any(not importlib.util.find_spec(dep) for dep in dependencies(name))


def test_the_reference_names_only_modules_that_exist() -> None:
    stale = sorted(m for m in documented_modules() - set(public_modules()) if not unavailable(m))
    assert not stale, f"docs/reference renders {stale}, which are not public modules"


@pytest.mark.parametrize("module_name", public_modules())
def test_every_public_name_is_documented(module_name: str) -> None:
    module = load(module_name)
    assert (module.__doc__ or "").strip(), f"{module_name} has no module docstring"
    problems: list[str] = []
    for name, obj in exported(module):
        qualname = f"{module_name}.{name}"
        if callable(obj) and not (obj.__doc__ or "").strip():
            problems.append(f"{qualname}: no docstring")
            continue
        for where, fn, doc in callables(qualname, obj):
            if not doc.strip():
                problems.append(f"{where}: no docstring")
            elif missing := undescribed(fn, doc):
                problems.append(f"{where}: {', '.join(missing)} not described")
    assert not problems, "\n".join(problems)


def test_a_parameter_left_out_is_found() -> None:
    def documented(a: int, *, b: int = 0) -> None:
        """Adds `a`."""

    assert undescribed(documented, documented.__doc__ or "") == ["b"]
    assert undescribed(documented, "Adds `a` and ``b``.") == []

    def bundled(a: int, **options: int) -> None:
        """Adds `a`."""

    assert undescribed(bundled, "Adds `a`.") == ["options"]
    assert undescribed(bundled, "Adds `a` with ``**options``.") == []


def test_an_enum_is_not_asked_to_describe_its_constructor() -> None:
    class Level(enum.IntEnum):
        """Levels."""

        LOW = 1

        def scaled(self, factor: int) -> int:
            """`factor` times the level."""
            return self * factor

    assert [name for name, _, _ in callables("Level", Level)] == ["Level.scaled"]
