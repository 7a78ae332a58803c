"""One dictionary and one pool shared by many threads, with mixed levels and dictionaries."""

from __future__ import annotations

import gc
import threading

import zstdpool

from tests.dicts.conftest import RECORDS

THREAD_TIMEOUT = 120  # seconds; only a deadlock guard, never a performance assertion


def test_sixteen_threads_share_one_dictionary_and_one_pool(
    trained: zstdpool.ZstdDict, other: zstdpool.ZstdDict
) -> None:
    pool = zstdpool.ContextPool()
    dicts = (trained, other, None)
    errors: list[BaseException] = []
    start = threading.Barrier(16)

    def work(t: int) -> None:
        try:
            start.wait()
            for i in range(150):
                record = RECORDS[(t * 7 + i) % len(RECORDS)]
                level = (1, 3, 5, 9)[(t + i) % 4]
                d = dicts[(t + i) % 3]
                if i % 10 == 0:
                    with zstdpool.compressor(level, zstd_dict=d, pool=pool) as c:
                        frame = c.compress(record)
                else:
                    frame = zstdpool.compress(record, level, zstd_dict=d, pool=pool)
                # A frame is the same whichever context wrote it.
                assert frame == zstdpool.compress(record, level, zstd_dict=d)
                assert zstdpool.decompress(frame, zstd_dict=d, pool=pool) == record
        except BaseException as e:  # reported below, with the thread that raised it
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(THREAD_TIMEOUT)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert not errors, errors[0]
    gc.collect()
    stats = pool.stats()
    assert stats["leased"] == 0
    # Every lease came back, kept or freed (nothing idle was evicted: no timeout, room left).
    assert stats["created"] + stats["reused"] == stats["returned"] + stats["dropped"]
    assert stats["idle"] <= len(stats["per_key"]) * pool.max_idle_per_key
