"""Stress tests that free-threaded CPython (3.13t, 3.14t) makes meaningful: one pool, one lease,
and the IPC and Parquet paths used from many threads at once with no GIL between them.

They run on every interpreter and pass there too (with the GIL, only the parts that release
it overlap). Loops are bounded; the join timeouts only guard against a deadlock and are never
a measure of speed.
"""

from __future__ import annotations

import gc
import queue
import random
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Callable

import pyarrow as pa
import pytest
import zstdpool
import zstdpool.ipc as zi
import zstdpool.parquet as zp
from zstdpool import BusyError, ContextPool

from tests.helpers.env import subprocess_env
from tests.helpers.pool import text

THREADS = 8
#: A deadlock guard: far beyond what any of these tests takes, even on a loaded machine.
JOIN_TIMEOUT = 600.0
FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def run_threads(target: Callable[[int], None], n: int = THREADS) -> None:
    """Runs target(0..n-1) on n threads started together; re-raises the first failure."""
    barrier = threading.Barrier(n)
    failures: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=JOIN_TIMEOUT)
            target(i)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            failures.append(e)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_TIMEOUT)
    stuck = [t.name for t in threads if t.is_alive()]
    assert not stuck, f"threads still running after {JOIN_TIMEOUT}s (deadlock?): {stuck}"
    if failures:
        raise failures[0]


def check_balanced(pool: ContextPool) -> dict:
    """Every context the pool created is back: idle or freed, none out on lease."""
    gc.collect()
    s = pool.stats()
    assert s["leased"] == 0, s
    assert s["created"] == s["idle"] + s["dropped"], s
    assert s["reused"] <= s["returned"], s
    assert s["idle"] == sum(k["idle"] for k in s["per_key"]), s
    assert (s["spare_blocks"] == 0) == (s["spare_bytes"] == 0), s
    return s


def check_snapshot(pool: ContextPool) -> None:
    """What holds in any snapshot of the stats, taken while other threads use the pool."""
    s = pool.stats()
    assert s["created"] == s["leased"] + s["idle"] + s["dropped"], s
    assert s["leased"] >= 0 and s["idle"] >= 0, s
    assert s["idle"] == sum(k["idle"] for k in s["per_key"]), s
    assert s["idle_bytes"] == sum(k["bytes"] for k in s["per_key"]), s
    assert (s["spare_blocks"] == 0) == (s["spare_bytes"] == 0), s
    assert s["spare_bytes"] <= pool.max_spare_bytes, s


def test_the_gil_stays_off_in_a_fresh_interpreter():
    """Importing zstdpool and its Arrow modules does not turn the GIL back on."""
    if not FREE_THREADED:
        pytest.skip("not a free-threaded interpreter")
    code = (
        "import sys, zstdpool, zstdpool.ipc, zstdpool.parquet, zstdpool.feather, "
        "zstdpool.dataset\n"
        "zstdpool.ipc.read_stream(zstdpool.ipc.write_stream(__import__('pyarrow').table("
        "{'a': [1]})))\n"
        "print(sys._is_gil_enabled())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False", out.stdout + out.stderr


LEVELS = [-5, 1, 3, 7, 12]
PAYLOADS = [text(size, seed) for seed, size in enumerate([0, 1, 300, 5_000, 70_000, 600_000])]


def test_one_pool_shared_by_threads_mixing_codec_calls():
    pool = ContextPool()
    rounds = 40

    def work(i: int) -> None:
        rng = random.Random(i)
        for _ in range(rounds):
            level = rng.choice(LEVELS)
            data = rng.choice(PAYLOADS)
            op = rng.randrange(6)
            if op == 0:
                frame = zstdpool.compress(data, level, pool=pool)
                assert zstdpool.decompress(frame, pool=pool) == data
            elif op == 1:
                frame = zstdpool.compress(data, level, checksum=True, pool=pool)
                out = bytearray(len(data))
                assert zstdpool.decompress_into(frame, out, pool=pool) == len(data)
                assert out == data
            elif op == 2:
                chunks = rng.sample(PAYLOADS, 4)
                frames = zstdpool.compress_many(chunks, level, threads=2, pool=pool)
                assert zstdpool.decompress_many(frames, threads=2, pool=pool) == chunks
            elif op == 3:
                chunks = rng.sample(PAYLOADS, 3)
                with zstdpool.compressor(level=level, pool=pool) as c:
                    frames = [c.compress(x) for x in chunks]
                with zstdpool.decompressor(pool=pool) as d:
                    assert [d.decompress(f) for f in frames] == chunks
            elif op == 4:
                # A lease dropped without close: returned when collected.
                c = zstdpool.compressor(level=level, window_log=20, pool=pool)
                frame = c.compress(data)
                del c
                assert zstdpool.decompress(frame) == data
            else:
                # The default pool and a private one, side by side.
                frame = zstdpool.compress(data, level)
                assert zstdpool.decompress(frame, pool=pool) == data

    run_threads(work)
    s = check_balanced(pool)
    assert s["created"] + s["reused"] > 0
    pool.clear()
    s = check_balanced(pool)
    assert s["idle"] == 0 and s["created"] == s["dropped"], s


@pytest.mark.parametrize("kind", ["compressor", "decompressor"])
def test_one_lease_raced_by_two_threads(kind: str):
    """Each call on a lease used by two threads at once succeeds with a correct result or
    raises BusyError; the lease's context is never used by both."""
    pool = ContextPool()
    inputs = [text(20_000 + 997 * k, 100 + k) for k in range(8)]
    frames = [zstdpool.compress(x, 3) for x in inputs]
    lease = (
        zstdpool.compressor(level=3, pool=pool)
        if kind == "compressor"
        else zstdpool.decompressor(pool=pool)
    )
    calls = 400
    ok = [0, 0]
    busy = [0, 0]

    def hammer(i: int) -> None:
        rng = random.Random(i)
        for _ in range(calls):
            k = rng.randrange(len(inputs))
            try:
                if kind == "compressor":
                    out = lease.compress(inputs[k])
                    assert zstdpool.decompress(out) == inputs[k]
                else:
                    assert lease.decompress(frames[k]) == inputs[k]
            except BusyError:
                busy[i] += 1
            else:
                ok[i] += 1

    run_threads(hammer, 2)
    assert sum(ok) + sum(busy) == 2 * calls
    # The thread holding the lease always finishes its call, so some calls succeed.
    assert sum(ok) >= 1
    # And the lease still works, alone.
    if kind == "compressor":
        assert zstdpool.decompress(lease.compress(inputs[0])) == inputs[0]
    else:
        assert lease.decompress(frames[0]) == inputs[0]
    lease.close()
    s = check_balanced(pool)
    assert s["created"] == 1, s


def small_table(seed: int, rows: int) -> pa.Table:
    rng = random.Random(seed)
    return pa.table(
        {
            "id": pa.array(range(seed * rows, (seed + 1) * rows), pa.int64()),
            "x": pa.array([rng.random() for _ in range(rows)], pa.float64()),
            "s": pa.array([f"v{rng.randrange(50)}" for _ in range(rows)], pa.string()),
            "n": pa.array(
                [None if rng.random() < 0.1 else rng.randrange(1000) for _ in range(rows)],
                pa.int32(),
            ),
            "b": pa.array([rng.random() < 0.5 for _ in range(rows)], pa.bool_()),
        }
    )


def encode(kind: str, table: pa.Table, level: int, pool: ContextPool) -> bytes:
    if kind == "stream":
        return zi.write_stream(table, compression="zstd", level=level, pool=pool)
    if kind == "file":
        return zi.write_file(table, compression="zstd", level=level, threads=2, pool=pool)
    if kind == "lz4":
        return zi.write_stream(table, compression="lz4", pool=pool)
    data = zp.write_table(table, compression_level=level, row_group_size=3_000, pool=pool)
    assert data is not None
    return data


def decode(kind: str, data: bytes, pool: ContextPool) -> pa.Table:
    if kind in ("stream", "lz4"):
        return zi.read_stream(data, pool=pool)
    if kind == "file":
        return zi.read_file(data, threads=2, pool=pool)
    return zp.read_table(data, pool=pool)


KINDS = ["stream", "file", "lz4", "parquet"]


def test_ipc_and_parquet_writers_and_readers_in_parallel():
    """Every thread writes and reads its own tables; then writers hand their output to readers
    on other threads through a queue, all running at once."""
    pool = ContextPool()
    tables = [small_table(seed, 2_000 + 113 * seed) for seed in range(THREADS * 2)]

    def own(i: int) -> None:
        rng = random.Random(i)
        for r in range(12):
            table = tables[(i + r) % len(tables)]
            kind = KINDS[(i + r) % len(KINDS)]
            data = encode(kind, table, rng.choice([1, 3, 5]), pool)
            assert decode(kind, data, pool).equals(table), (kind, i, r)

    run_threads(own)
    check_balanced(pool)

    handoff: queue.Queue[tuple[int, str, bytes] | None] = queue.Queue()
    writers = THREADS // 2
    per_writer = 10
    writing = [writers]
    lock = threading.Lock()
    read = [0] * THREADS

    def mixed(i: int) -> None:
        if i < writers:
            try:
                for r in range(per_writer):
                    t = (i * per_writer + r) % len(tables)
                    kind = KINDS[(i + r) % len(KINDS)]
                    handoff.put((t, kind, encode(kind, tables[t], 1 + r % 4, pool)))
            finally:
                with lock:
                    writing[0] -= 1
                    last = writing[0] == 0
                if last:  # one end mark per reader, after the last item
                    for _ in range(THREADS - writers):
                        handoff.put(None)
            return
        while (item := handoff.get(timeout=JOIN_TIMEOUT)) is not None:
            t, kind, data = item
            assert decode(kind, data, pool).equals(tables[t]), (kind, t)
            read[i] += 1

    run_threads(mixed)
    assert sum(read) == writers * per_writer
    check_balanced(pool)


def big_stream(rows: int) -> tuple[pa.Table, bytes]:
    """A zstd stream whose body decompresses to well over 1 MiB (the spare-body threshold)."""
    table = pa.table(
        {
            "a": pa.array(range(rows), pa.int64()),
            "b": pa.array([i % 97 for i in range(rows)], pa.int32()),
        }
    )
    return table, zi.write_stream(table, compression="zstd")


def test_trim_and_clear_race_the_spare_bodies():
    """Readers free large bodies into the pool's spares (expiring after 10 ms) while another
    thread trims and clears it in a loop; every snapshot of the stats is consistent."""
    pool = ContextPool(spare_timeout=0.01)
    table, data = big_stream(200_000)
    assert table.nbytes >= 1 << 21
    readers = THREADS - 1
    done = threading.Event()
    remaining = [readers]
    lock = threading.Lock()
    sweeps = [0]

    def reader() -> None:
        try:
            for _ in range(15):
                got = zi.read_stream(data, pool=pool)
                assert got.equals(table)
                del got
        finally:
            with lock:
                remaining[0] -= 1
                if remaining[0] == 0:
                    done.set()

    def sweeper() -> None:
        # Bounded: stops when the readers are done, or after this many sweeps anyway.
        for n in range(200_000):
            if done.is_set():
                break
            if n % 2:
                pool.trim()
            else:
                pool.clear()
            check_snapshot(pool)
            sweeps[0] += 1

    def body(i: int) -> None:
        if i == 0:
            sweeper()
        else:
            reader()

    run_threads(body)
    assert done.is_set()
    assert sweeps[0] >= 1
    check_snapshot(pool)
    check_balanced(pool)
    pool.clear()
    s = check_balanced(pool)
    assert s["idle"] == 0 and s["created"] == s["dropped"], s
