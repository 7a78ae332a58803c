"""Fixtures shared by every test module."""

from __future__ import annotations

import gc
import os
import sys
import sysconfig
from pathlib import Path

import pytest
import zstdpool

#: Set by scripts/test-matrix.sh: the tests must run against an installed wheel (zstdpool
#: imported from this interpreter's site-packages, not from a checkout's python/).
EXPECT_INSTALLED = os.environ.get("ZSTDPOOL_EXPECT_INSTALLED") == "1"
#: Set by scripts/test-matrix.sh on a free-threaded interpreter: the GIL must stay disabled
#: through the whole run (importing an extension that does not declare itself safe without
#: it turns it back on, for every thread).
EXPECT_FREETHREADED = os.environ.get("ZSTDPOOL_EXPECT_FREETHREADED") == "1"


def gil_enabled() -> bool:
    """Whether the GIL is on: always, on an interpreter without sys._is_gil_enabled."""
    check = getattr(sys, "_is_gil_enabled", None)
    return True if check is None else bool(check())


def pytest_configure(config: pytest.Config) -> None:
    if EXPECT_INSTALLED:
        where = Path(zstdpool.__file__).resolve()
        site = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
        if not any(where.is_relative_to(s) for s in site):
            raise pytest.UsageError(
                f"ZSTDPOOL_EXPECT_INSTALLED=1 but zstdpool was imported from {where}, "
                f"outside site-packages ({', '.join(map(str, sorted(site)))})"
            )
    if EXPECT_FREETHREADED and gil_enabled():
        raise pytest.UsageError(
            "ZSTDPOOL_EXPECT_FREETHREADED=1 but the GIL is enabled after importing zstdpool "
            f"({sys.version})"
        )


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [
        f"zstdpool {zstdpool.__version__} from {Path(zstdpool.__file__).parent}",
        f"GIL enabled: {gil_enabled()}",
    ]


#: The first test after which the GIL was found enabled, on a free-threaded run.
_gil_turned_on_by: list[str] = []


def pytest_runtest_teardown(item: pytest.Item) -> None:
    if EXPECT_FREETHREADED and not _gil_turned_on_by and gil_enabled():
        _gil_turned_on_by.append(item.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A test that imported something turning the GIL back on fails the run."""
    if EXPECT_FREETHREADED and gil_enabled():
        where = _gil_turned_on_by[0] if _gil_turned_on_by else "collection"
        sys.stderr.write(
            "\nZSTDPOOL_EXPECT_FREETHREADED=1 but the GIL was enabled during the run "
            f"(first seen after {where})\n"
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _every_lease_returns():
    """After each test, every context leased from the default pool has come back.

    Leases that were only dropped (not closed) go back when collected, so collect first.
    """
    yield
    gc.collect()
    leased = zstdpool.pool_stats()["leased"]
    assert leased == 0, f"{leased} context(s) of the default pool still out on lease"
