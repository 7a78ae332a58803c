"""What a ContextPool counts (created, reused, returned, dropped, leased, idle, per key), and
the default pool that the module functions use.
"""

from __future__ import annotations

import zstdpool
from zstdpool import ContextPool

from tests.helpers.pool import STAT_KEYS, check_consistent, compress_keys, text


def test_fresh_pool_is_empty():
    s = ContextPool().stats()
    # Prepared dictionaries are counted for the whole process, not per pool.
    assert s.pop("prepared_dicts") >= 0 and s.pop("prepared_dict_bytes") >= 0
    assert s == {
        "created": 0,
        "reused": 0,
        "returned": 0,
        "dropped": 0,
        "leased": 0,
        "idle": 0,
        "idle_bytes": 0,
        "scratch_bytes": 0,
        "peak_idle_bytes": 0,
        "per_key": [],
        "spare_blocks": 0,
        "spare_bytes": 0,
        "spare_reused": 0,
    }


def test_created_and_reused_counting():
    pool = ContextPool()
    data = text(20_000)
    frame = zstdpool.compress(data, pool=pool)
    s = check_consistent(pool)
    assert (s["created"], s["reused"], s["returned"], s["idle"]) == (1, 0, 1, 1)
    assert s["idle_bytes"] > 0
    for i in range(1, 6):
        assert zstdpool.compress(data, pool=pool) == frame
        s = check_consistent(pool)
        assert (s["created"], s["reused"], s["returned"], s["idle"]) == (1, i, 1 + i, 1)
    # a decompressor is another kind of context
    assert zstdpool.decompress(frame, pool=pool) == data
    assert zstdpool.decompress(frame, pool=pool) == data
    s = check_consistent(pool)
    assert (s["created"], s["reused"], s["idle"]) == (2, 6, 2)
    # two leases at once need two contexts
    with zstdpool.compressor(pool=pool) as a, zstdpool.compressor(pool=pool) as b:
        assert check_consistent(pool)["leased"] == 2
        assert a.compress(data) == b.compress(data) == frame
    s = check_consistent(pool)
    assert (s["created"], s["reused"], s["leased"]) == (3, 7, 0)
    assert compress_keys(s)[(3, False, 0)]["idle"] == 2


def test_leases_count_while_out():
    pool = ContextPool()
    leases = [zstdpool.compressor(pool=pool) for _ in range(3)]
    leases.append(zstdpool.decompressor(pool=pool))
    s = check_consistent(pool)
    assert (s["leased"], s["created"], s["idle"]) == (4, 4, 0)
    for i, lease in enumerate(leases, 1):
        lease.close()
        assert check_consistent(pool)["leased"] == 4 - i


def test_private_pool_leaves_default_pool_alone():
    before = zstdpool.pool_stats()
    pool = ContextPool()
    for level in (1, 2, 3):
        zstdpool.decompress(zstdpool.compress(b"abc" * 100, level, pool=pool), pool=pool)
    after = zstdpool.pool_stats()
    for key in ("created", "reused", "returned", "dropped", "leased"):
        assert after[key] == before[key], key


def test_per_key_separation():
    pool = ContextPool()
    data = text(10_000)
    params = [
        {"level": 1},
        {"level": 2},
        {"level": 1, "checksum": True},
        {"level": 1, "window_log": 12},
        {"level": -4},
    ]
    for p in params:
        zstdpool.compress(data, pool=pool, **p)
    zstdpool.decompress(zstdpool.compress(data, 1, pool=pool), pool=pool)
    s = check_consistent(pool)
    assert (s["created"], s["reused"], s["idle"]) == (6, 1, 6)
    keys = compress_keys(s)
    assert set(keys) == {(1, False, 0), (2, False, 0), (1, True, 0), (1, False, 12), (-4, False, 0)}
    assert all(k["idle"] == 1 and k["bytes"] > 0 for k in keys.values())
    dkeys = [k for k in s["per_key"] if k["kind"] == "decompress"]
    assert len(dkeys) == 1
    assert dkeys[0]["window_log_max"] == 0 and dkeys[0]["idle"] == 1
    # Each parameter set reuses only its own context.
    for p in params:
        zstdpool.compress(data, pool=pool, **p)
    s = check_consistent(pool)
    assert (s["created"], s["reused"], s["idle"]) == (6, 6, 6)
    assert compress_keys(s).keys() == keys.keys()
    # and a context never changes its parameters: output equals a fresh pool's
    for p in params:
        assert zstdpool.compress(data, pool=pool, **p) == zstdpool.compress(
            data, pool=ContextPool(), **p
        )


def test_stats_is_a_snapshot():
    pool = ContextPool()
    s = pool.stats()
    s["created"] = 99
    s["per_key"].append("junk")
    assert pool.stats()["created"] == 0 and pool.stats()["per_key"] == []
    assert "ContextPool" in repr(pool)


def without_spares(s: dict) -> dict:
    """Stats without the spare-body counters, which a reaper thread or the collection of an
    earlier test's arrays may change between two calls."""
    return {k: v for k, v in s.items() if not k.startswith("spare_")}


def test_default_pool():
    pool = zstdpool.default_pool()
    assert isinstance(pool, ContextPool)
    assert zstdpool.default_pool() is pool
    s = zstdpool.pool_stats()
    assert set(s) == STAT_KEYS
    assert without_spares(s) == without_spares(pool.stats())
    check_consistent(pool)


def test_default_pool_is_what_module_functions_use():
    pool = zstdpool.default_pool()
    before = pool.stats()
    frame = zstdpool.compress(text(5000))
    zstdpool.decompress(frame, pool=pool)
    after = zstdpool.pool_stats()
    leases = lambda s: s["created"] + s["reused"]  # noqa: E731
    assert leases(after) == leases(before) + 2
    assert without_spares(after) == without_spares(pool.stats())
    check_consistent(pool)
