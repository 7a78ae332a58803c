"""The environment of subprocesses that import zstdpool, so that they test the same build."""

from __future__ import annotations

import os
from pathlib import Path

import zstdpool

#: The directory that holds the zstdpool package the tests imported.
PACKAGE_ROOT = Path(zstdpool.__file__).resolve().parents[1]


def subprocess_env(**extra: str) -> dict[str, str]:
    """``os.environ`` (and ``extra``) with PYTHONPATH led by :data:`PACKAGE_ROOT`.

    A child process, maybe in another working directory (where a relative PYTHONPATH finds
    nothing), then imports the zstdpool under test, not another one installed elsewhere.
    """
    path = os.pathsep.join(p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, **extra, "PYTHONPATH": path}
