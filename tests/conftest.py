"""Fixtures shared by every test module."""

from __future__ import annotations

import gc

import pytest
import zstdpool


@pytest.fixture(autouse=True)
def _every_lease_returns():
    """After each test, every context leased from the default pool has come back.

    Leases that were only dropped (not closed) go back when collected, so collect first.
    """
    yield
    gc.collect()
    leased = zstdpool.pool_stats()["leased"]
    assert leased == 0, f"{leased} context(s) of the default pool still out on lease"
