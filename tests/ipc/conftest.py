"""Fixtures of the IPC tests."""

from __future__ import annotations

import pytest

from tests.helpers.ipc_reader import compressible_table, write_zstdpool


@pytest.fixture
def compressed():
    """Batches whose buffers compress (so that reading leases a decompression context)."""
    table = compressible_table(30_000)
    batches = table.to_batches(max_chunksize=10_000)
    return batches, write_zstdpool(batches, compression="zstd")
