"""The built documentation site, shared by the docs tests.

scripts/check.sh builds the site once with ``mkdocs build --strict`` (a step of its own, which
fails on any warning) and passes its folder in ``ZSTDPOOL_DOCS_SITE`` (or, if that build
failed, its log in ``ZSTDPOOL_DOCS_SITE_FAILED``); without either, the first test that needs
the site builds it here, strictly, into a temporary folder.

The docs tools (the ``docs`` extra) and Chromium are not installed by every run of the suite
(the release matrix's venvs have neither): their tests skip, naming what is missing, unless
``ZSTDPOOL_DOCS_REQUIRED=1`` (the test command sets it), which makes a missing tool a failure.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = os.environ.get("ZSTDPOOL_DOCS_REQUIRED") == "1"


def need_module(name: str) -> None:
    try:
        found = importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a dotted name whose parent is missing
        found = False
    if not found:
        message = f"{name} is not installed (the docs extra: pip install '.[docs]')"
        if REQUIRED:
            pytest.fail(f"ZSTDPOOL_DOCS_REQUIRED=1 but {message}")
        pytest.skip(message)


def from_file(path: Path, name: str) -> Any:
    """The module in ``path``, which is no package's (docs/hooks.py, a script of scripts/)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered first, as an import would: a dataclass looks its module up while it is made.
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def hooks() -> Any:
    """docs/hooks.py, the site's hooks."""
    return from_file(ROOT / "docs" / "hooks.py", "zstdpool_docs_hooks")


def docs_examples() -> Any:
    """scripts/docs_examples.py, which runs the pages' examples (and says which pages)."""
    return from_file(ROOT / "scripts" / "docs_examples.py", "zstdpool_docs_examples")


def build_site(dest: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(dest)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=600,
    )


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built site's folder."""
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python", "griffe"):
        need_module(module)
    need_module("matplotlib")  # the benchmark page's charts
    failed = os.environ.get("ZSTDPOOL_DOCS_SITE_FAILED")
    if failed:
        pytest.fail(f"mkdocs build --strict failed in the test command: see {failed}")
    given = os.environ.get("ZSTDPOOL_DOCS_SITE")
    if given:
        path = Path(given)
        assert (path / "index.html").is_file(), f"ZSTDPOOL_DOCS_SITE={given} holds no built site"
        return path
    dest = tmp_path_factory.mktemp("site")
    result = build_site(dest)
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stderr[-4000:]}"
    return dest


@pytest.fixture(scope="session")
def chromium() -> tuple[str, str]:
    """The Chromium binary and its driver (Debian's chromium and chromium-driver)."""
    need_module("selenium")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        message = "Chromium or chromedriver is not installed (Debian: chromium chromium-driver)"
        if REQUIRED:
            pytest.fail(f"ZSTDPOOL_DOCS_REQUIRED=1 but {message}")
        pytest.skip(message)
    return browser, driver
