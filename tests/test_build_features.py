"""The extension is built with what pyproject.toml's [tool.maturin] names: every wheel, the
stable-ABI one included (maturin's --features replaces the configured list rather than adding
to it), counts its allocations, which memory_stats() and the memory tests rely on."""

from __future__ import annotations

import zstdpool


def test_allocations_are_counted() -> None:
    zstdpool.compress(b"x" * 100_000)
    stats = zstdpool.memory_stats()
    assert stats["counting"], "built without the alloc-stats feature: memory_stats() counts nothing"
    assert stats["peak_bytes"] > 0
