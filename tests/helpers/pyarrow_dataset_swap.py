"""A pytest plugin that runs pyarrow's own ``test_dataset.py`` with its import changed: in
the test module, ``ds`` is a namespace where ``dataset``, ``write_dataset``, ``Dataset`` and
``Scanner`` are zstdpool's, and the rest (expressions, partitionings, formats, filesystems'
helpers) stays pyarrow's, as zstdpool takes them. Each test's outcome is written as JSON
lines to the file named by ``ZSTDPOOL_SUITE_OUT``, for ``tests/dataset/test_pyarrow_suite.py``
to compare with its list of what is left out."""

from __future__ import annotations

import json
import os
import types
from typing import Any

import pyarrow.dataset as pds
import zstdpool.dataset as zds

SWAPPED = ("dataset", "write_dataset", "Dataset", "Scanner")

changed = types.ModuleType("zstdpool_as_pyarrow_dataset")
changed.__dict__.update({k: getattr(pds, k) for k in dir(pds) if not k.startswith("__")})
for name in SWAPPED:
    setattr(changed, name, getattr(zds, name))


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and getattr(module, "ds", None) is pds:
            module.ds = changed


def pytest_runtest_logreport(report: Any) -> None:
    out = os.environ.get("ZSTDPOOL_SUITE_OUT")
    if not out or (report.when != "call" and report.outcome != "failed"):
        return
    with open(out, "a", encoding="utf-8") as f:
        line = {
            "test": report.nodeid.split("::")[-1],
            "outcome": report.outcome,
            "message": str(report.longrepr)[-600:] if report.failed else "",
        }
        f.write(json.dumps(line) + "\n")
