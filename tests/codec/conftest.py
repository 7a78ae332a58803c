"""Fixtures of the codec tests."""

from __future__ import annotations

import pytest
import zstdpool


@pytest.fixture
def pool() -> zstdpool.ContextPool:
    return zstdpool.ContextPool()
