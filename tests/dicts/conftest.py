"""Fixtures of the dictionary tests: log records (trained on one set, measured on another) and
dictionaries trained on them, once per session (training takes a fraction of a second)."""

from __future__ import annotations

import pytest
import zstdpool

from benchmarks.harness.data import log_records

#: Records a dictionary is trained on, and records it is measured on (another seed).
TRAIN = log_records(3000, 1024, seed=1)
RECORDS = log_records(200, 1024, seed=2)


@pytest.fixture(scope="session")
def trained() -> zstdpool.ZstdDict:
    return zstdpool.train_dict(TRAIN, 16 * 1024)


@pytest.fixture(scope="session")
def other() -> zstdpool.ZstdDict:
    """A second trained dictionary, with another id."""
    return zstdpool.train_dict(log_records(3000, 200, seed=3), 8 * 1024)


@pytest.fixture(scope="session")
def raw() -> zstdpool.ZstdDict:
    """Raw content: records laid end to end, no header, no id."""
    return zstdpool.ZstdDict(b"".join(TRAIN[:40]), is_raw=True)
