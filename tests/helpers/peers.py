"""The optional libraries the tests compare zstdpool with, imported when first used.

A peer may be missing where the wheel is tested: polars, duckdb and python-zstandard have no
wheel for every interpreter (free-threaded CPython among them). Each name here stands for its
module and imports it at its first attribute access; where the module is missing, that access
skips the test using it (or the whole module, when the access happens at import) with the
reason, instead of failing the collection.

`bzstd` is PEP 784's zstd module: `compression.zstd` from Python 3.14 on, the backports.zstd
package before.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any

import pytest


class Peer:
    """A module imported on first use; a test touching a missing one is skipped."""

    def __init__(self, *names: str) -> None:
        # The first of `names` that imports is the module; the last one is the one reported.
        self._names = names
        self._module: ModuleType | None = None

    def module(self) -> ModuleType:
        if self._module is None:
            for name in self._names[:-1]:
                try:
                    self._module = importlib.import_module(name)
                    break
                except ImportError:
                    continue
            else:
                name = self._names[-1]
                self._module = pytest.importorskip(
                    name, reason=f"{name} is not installed for this interpreter"
                )
        return self._module

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self.module(), attr)

    def __repr__(self) -> str:
        return f"<peer {' or '.join(self._names)}>"


def available(name: str) -> bool:
    """Whether `name` imports (it is then imported)."""
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


zstandard = Peer("zstandard")
bzstd = (
    Peer("compression.zstd", "backports.zstd")
    if sys.version_info >= (3, 14)
    else Peer("backports.zstd")
)
pl = Peer("polars")
pd = Peer("pandas")
np = Peer("numpy")
arro3_core = Peer("arro3.core")
