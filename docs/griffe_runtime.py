"""A griffe extension: docstrings of the compiled module, taken from the module itself, and
the constructors of its classes.

griffe reads ``zstdpool._zstdpool`` from its stub (``_zstdpool.pyi``), which gives every
signature its types and defaults but carries few docstrings: those are written once, beside
the Rust code, and reach Python as ``__doc__``. For each object of the package that has no
docstring, this imports the object and takes its ``__doc__``.

The stub's classes are built by ``__new__`` (as PyO3 builds them), where the reference shows
a class's signature from ``__init__``: each such class gets an ``__init__`` with the same
parameters, so that its signature is shown with the class.

A public module may make names in its ``__getattr__`` (``zstdpool.ipc`` imports pyarrow only
when its options or stats classes are first used), which static analysis cannot see: each
such name of ``__all__`` becomes an alias of the object it is, where that object is
zstdpool's, or an attribute that says whose object it is, where it is another library's.
"""

from __future__ import annotations

import importlib
from typing import Any

import griffe


def _runtime(path: str) -> Any:
    """The live object at a dotted path, or None where there is none (a stub-only name)."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj
    return None


def _fill(obj: griffe.Object) -> None:
    for member in obj.members.values():
        if isinstance(member, griffe.Alias):
            continue
        if member.docstring is None:
            live = _runtime(member.path)
            doc = getattr(live, "__doc__", None)
            # A constant's __doc__ is its type's (int's, str's), and a class without a
            # docstring of its own inherits object's: neither describes the member.
            inherited = doc == type(live).__doc__ or doc == object.__doc__
            if isinstance(doc, str) and doc.strip() and not inherited:
                member.docstring = griffe.Docstring(doc, parent=member)
        if isinstance(member, griffe.Class):
            _constructor(member)
        if isinstance(member, (griffe.Module, griffe.Class)):
            _fill(member)


def _constructor(cls: griffe.Class) -> None:
    """An ``__init__`` with ``__new__``'s parameters, for a class that has only ``__new__``."""
    new = cls.members.get("__new__")
    if new is None or "__init__" in cls.members or not isinstance(new, griffe.Function):
        return
    params = list(new.parameters)[1:]  # without `cls`
    init = griffe.Function(
        "__init__",
        lineno=new.lineno,
        endlineno=new.endlineno,
        parameters=griffe.Parameters(
            griffe.Parameter("self", kind=griffe.ParameterKind("positional or keyword")), *params
        ),
        returns="None",
    )
    cls.set_member("__init__", init)


def _lazy_names(module: griffe.Module) -> None:
    """Members for the names of ``__all__`` that the module makes in ``__getattr__``."""
    for sub in module.members.values():
        # A submodule, not another module imported under a name (an alias).
        if isinstance(sub, griffe.Module) and not sub.name.startswith("_"):
            _lazy_names(sub)
    exports = module.exports or []
    missing = [name for name in exports if isinstance(name, str) and name not in module.members]
    if not missing:
        return
    live_module = importlib.import_module(module.path)
    for name in missing:
        live = getattr(live_module, name)
        origin = f"{live.__module__}.{live.__qualname__}"
        if origin.split(".")[0] == module.package.name:
            module.set_member(name, griffe.Alias(name, origin, parent=module))
        else:
            attribute = griffe.Attribute(name, value=origin, parent=module)
            attribute.docstring = griffe.Docstring(
                f"`{origin}`, {origin.split('.')[0]}'s own class, re-exported: zstdpool takes it "
                "as it is.",
                parent=attribute,
            )
            module.set_member(name, attribute)


class RuntimeDocstrings(griffe.Extension):
    """Fills the docstrings a stub leaves out from the imported objects."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        _lazy_names(pkg)
        _fill(pkg)
