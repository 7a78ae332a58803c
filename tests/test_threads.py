"""Many threads on one pool: codec calls, writers and readers at once, some failing half-way.
Every output must round-trip and every context must come back. No timing is asserted here;
the speed-up from threads is shown by `python -m benchmarks --filter threads`."""

from __future__ import annotations

import io
import random
import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest
import zstdpool
import zstdpool.ipc as zi

from tests.helpers.peers import np

THREADS = 32
ROUNDS = 12


class HalfWay(Exception):
    pass


def table_for(rng: random.Random) -> pa.Table:
    n = rng.choice([0, 1, 100, 4096, 50_000])
    return pa.table(
        {
            "i": np.arange(n, dtype=np.int64) * rng.randint(1, 9),
            "s": pa.array([f"row {j % 97}" for j in range(n)]),
            "d": pa.array([["a", "b", "c"][j % 3] for j in range(n)]).dictionary_encode(),
        }
    )


def worker(seed: int, pool: zstdpool.ContextPool, barrier: threading.Barrier) -> int:
    rng = random.Random(seed)
    barrier.wait()
    checked = 0
    for _ in range(ROUNDS):
        table = table_for(rng)
        compression = rng.choice(["zstd", "lz4", None])
        level = rng.choice([-1, 1, 3, 9]) if compression == "zstd" else None
        threads = rng.choice([None, 1, 2])
        kind = rng.choice(["codec", "stream", "file", "abandon", "read-fail"])
        if kind == "codec":
            data = np.arange(rng.randint(0, 200_000), dtype=np.int32).tobytes()
            frame = zstdpool.compress(data, level or 3, pool=pool)
            assert zstdpool.decompress(frame, pool=pool) == data
            frames = zstdpool.compress_many([data, data[:100]], threads=threads, pool=pool)
            assert zstdpool.decompress_many(frames, threads=threads, pool=pool) == [
                data,
                data[:100],
            ]
        elif kind in ("stream", "file"):
            write = zi.write_stream if kind == "stream" else zi.write_file
            read = zi.read_stream if kind == "stream" else zi.read_file
            blob = write(table, compression=compression, level=level, threads=threads, pool=pool)
            assert read(blob, threads=threads, pool=pool).equals(table)
        elif kind == "abandon":
            sink = io.BytesIO()
            with pytest.raises(HalfWay):
                with zi.new_stream(sink, table.schema, compression=compression, pool=pool) as w:
                    w.write(table)
                    raise HalfWay
        else:
            blob = zi.write_stream(table, compression=compression, level=level, pool=pool)
            with pytest.raises(zstdpool.ZstdError):
                zi.open_stream(blob[: len(blob) // 2], pool=pool).read_all()
        checked += 1
    return checked


def test_32_threads_share_one_pool():
    pool = zstdpool.ContextPool(max_idle_bytes=1 << 40)
    barrier = threading.Barrier(THREADS)
    with ThreadPoolExecutor(THREADS) as ex:
        done = list(ex.map(worker, range(THREADS), [pool] * THREADS, [barrier] * THREADS))
    assert done == [ROUNDS] * THREADS
    stats = pool.stats()
    assert stats["leased"] == 0
    # Every context ever made is out, idle or freed.
    assert stats["created"] == stats["leased"] + stats["idle"] + stats["dropped"]
    assert stats["reused"] > stats["created"], stats


@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_thread_count_does_not_change_bytes_or_tables(compression):
    rng = np.random.default_rng(1)
    table = pa.table(
        {f"c{i}": rng.integers(0, 1000, 300_000) for i in range(6)}
        | {"s": pa.array([f"text {i % 1000}" for i in range(300_000)])}
    )
    outputs = {t: zi.write_file(table, compression=compression, threads=t) for t in (None, 1, 2, 8)}
    assert len(set(outputs.values())) == 1
    blob = outputs[1]
    tables = [zi.read_file(blob, threads=t) for t in (None, 1, 2, 8)]
    assert all(t.equals(table) for t in tables)


def test_bytes_output_grows_while_other_threads_hold_the_gil():
    # write_stream(sink=None) grows its bytes object without the GIL, taking it back only for
    # each resize: writes of many batches (dozens of resizes each) from four threads, while
    # a fifth runs pure Python (holding the GIL between switch intervals), all finish and
    # round-trip.
    rng = np.random.default_rng(7)
    table = pa.table({"v": rng.integers(0, 1 << 40, 400_000)}).combine_chunks()
    batches = table.to_batches(max_chunksize=10_000)
    stop = threading.Event()

    def spin() -> int:
        n = 0
        while not stop.is_set():
            n += sum(range(100))
        return n

    def write(_: int) -> bytes:
        return zi.write_stream(pa.RecordBatchReader.from_batches(table.schema, batches))

    with ThreadPoolExecutor(5) as ex:
        spinner = ex.submit(spin)
        try:
            outputs = list(ex.map(write, range(8)))
        finally:
            stop.set()
        assert spinner.result() > 0
    assert len(set(outputs)) == 1
    assert len(outputs[0]) > 1 << 20  # well past the 64 KiB the output starts with
    assert pa.ipc.open_stream(outputs[0]).read_all().equals(table)
    assert zstdpool.pool_stats()["leased"] == 0


def test_threads_reading_big_bodies_share_spares_without_mixing_them():
    # Four threads read two different streams with bodies of nearly the same size, so each
    # read may reuse a body another thread's table just gave back; every table must equal
    # its source while the others come and go, and with threads=2 inside each read too.
    pool = zstdpool.ContextPool(spare_timeout=60)
    rng = np.random.default_rng(11)
    tables = [
        pa.table({"a": rng.integers(0, 1 << 30, 150_000), "b": rng.random(150_000)}),
        pa.table({"a": rng.integers(0, 1 << 30, 149_000), "b": rng.random(149_000)}),
    ]
    streams = [zi.write_stream(t) for t in tables]

    def read(i: int) -> int:
        for n in range(12):
            k = (i + n) % 2
            got = zi.read_stream(streams[k], pool=pool, threads=1 + n % 2)
            assert got.equals(tables[k]), (i, n)
        return n + 1

    with ThreadPoolExecutor(4) as ex:
        assert sum(ex.map(read, range(4))) == 48
    s = pool.stats()
    assert s["spare_reused"] > 0, s
    # At most two bodies per thread were alive at once (the table read and the one it
    # replaces), so at most eight came back.
    assert s["leased"] == 0 and 0 < s["spare_blocks"] <= 8, s
