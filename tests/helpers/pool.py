"""Helpers shared by the ContextPool tests (tests/pool): pool invariants and test data."""

from __future__ import annotations

import random

from zstdpool import ContextPool

STAT_KEYS = {
    "created",
    "reused",
    "returned",
    "dropped",
    "leased",
    "idle",
    "idle_bytes",
    "scratch_bytes",
    "peak_idle_bytes",
    "per_key",
    "spare_blocks",
    "spare_bytes",
    "spare_reused",
    "prepared_dicts",
    "prepared_dict_bytes",
}


def text(size: int, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    words = [rng.randbytes(rng.randint(1, 6)).hex().encode() for _ in range(300)]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words) + b" "
    return bytes(out[:size])


def check_consistent(pool: ContextPool) -> dict:
    """Invariants that hold between any two operations on a pool."""
    s = pool.stats()
    assert set(s) == STAT_KEYS
    assert s["idle"] == sum(k["idle"] for k in s["per_key"]), s
    assert s["idle_bytes"] == sum(k["bytes"] for k in s["per_key"]), s
    assert 0 <= s["scratch_bytes"] <= s["idle_bytes"] <= s["peak_idle_bytes"], s
    assert all(k["idle"] > 0 for k in s["per_key"]), s
    assert (s["idle"] == 0) == (s["idle_bytes"] == 0), s
    # every context created is out on lease, idle, or freed
    assert s["created"] == s["leased"] + s["idle"] + s["dropped"], s
    assert s["reused"] <= s["returned"], s
    assert (s["spare_blocks"] == 0) == (s["spare_bytes"] == 0), s
    assert s["spare_bytes"] <= pool.max_spare_bytes, s
    return s


def compress_keys(s: dict) -> dict:
    return {
        (k["level"], k["checksum"], k["window_log"]): k
        for k in s["per_key"]
        if k["kind"] == "compress"
    }
