"""Writers and threads: threads= never changes the bytes, many writers at once share the pool,
and one writer is for one thread at a time.
"""

from __future__ import annotations

import functools
import gc
import io
import threading

import pyarrow as pa
import pytest
import zstdpool
import zstdpool.ipc as zi
from zstdpool.errors import ClosedError

from tests.helpers.arrow_data import chunked, typed_table
from tests.helpers.ipc_writer import (
    CODEC_LEVELS,
    FORMATS,
    INPUT_TABLE,
    TEMP_GLOB,
    THREAD_TIMEOUT,
    assert_tables_equal,
    leased,
    new_writer,
    pa_read,
    sliceable_table,
    write_one,
)
from tests.helpers.peers import np


def blocking_reader(table: pa.Table, started: threading.Event, release: threading.Event):
    """A reader that yields one batch, then waits for `release` before the second."""

    def batches():
        yield table.to_batches()[0]
        started.set()
        release.wait(THREAD_TIMEOUT)
        yield table.to_batches()[0]

    return pa.RecordBatchReader.from_batches(table.schema, batches())


def test_a_writer_is_for_one_thread_at_a_time():
    table = INPUT_TABLE
    sink = io.BytesIO()
    w = zi.new_stream(sink, table.schema)
    started, release = threading.Event(), threading.Event()
    errors = []

    def write():
        try:
            w.write(blocking_reader(table, started, release))
        except BaseException as e:  # reported in the main thread
            errors.append(e)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    try:
        assert started.wait(THREAD_TIMEOUT)
        with pytest.raises(zstdpool.BusyError):
            w.write(table)
        assert not w.closed
    finally:
        release.set()
        thread.join(THREAD_TIMEOUT)
    assert not thread.is_alive() and errors == []
    w.write(table)  # free again
    w.close()
    assert_tables_equal(pa_read("stream", sink.getvalue()), pa.concat_tables([table] * 3))


def test_close_from_another_thread_during_a_write(tmp_path):
    path = tmp_path / "out.arrow"
    table = INPUT_TABLE
    w = zi.new_file(path, table.schema)
    started, release = threading.Event(), threading.Event()
    errors = []

    def write(writer):
        try:
            writer.write(blocking_reader(table, started, release))
        except Exception as e:  # a deferred close may end the write: either is fine
            errors.append(e)

    thread = threading.Thread(target=write, args=(w,), daemon=True)
    thread.start()
    closed_during_the_write = False
    try:
        assert started.wait(THREAD_TIMEOUT)
        with pytest.raises(zstdpool.BusyError):
            w.write(table)
        try:
            w.close()
            closed_during_the_write = True
        except zstdpool.BusyError:
            pass  # refusing to close a busy writer would be fine too
    finally:
        release.set()
        thread.join(THREAD_TIMEOUT)
    assert not thread.is_alive()
    w.close()
    del w
    gc.collect()
    # Only a close that went through while the write ran may end it, and only as closed.
    if closed_during_the_write:
        assert all(isinstance(e, ClosedError) for e in errors), errors
    else:
        assert errors == [], errors
    # Either the file was completed, or nothing is left; never a stray temp file.
    assert list(tmp_path.glob(TEMP_GLOB)) == []
    if path.exists():
        pa_read("file", str(path))
    if not errors:  # the write ran to its end: the file holds both of its batches
        batch = table.to_batches()[0]
        assert_tables_equal(pa_read("file", str(path)), pa.Table.from_batches([batch] * 2))


@functools.cache
def big_table() -> pa.Table:
    """About 6 MiB over several columns (so a batch has many buffers to spread)."""
    rng = np.random.default_rng(42)
    n = 150_000
    return pa.table(
        {
            "walk": pa.array(np.cumsum(rng.integers(-3, 4, n)), pa.int64()),
            "noise": pa.array(rng.random(n)),
            "small": pa.array(rng.integers(0, 100, n).astype(np.int32), mask=rng.random(n) < 0.1),
            "text": pa.array(np.array(["alpha", "beta", "gamma", "delta"])[rng.integers(0, 4, n)]),
            "raw": pa.array(rng.integers(0, 2**63, n, dtype=np.int64)),
        }
    )


def test_thread_count_does_not_change_the_bytes():
    table = big_table()
    assert table.nbytes > 5 * 2**20
    for fmt, codec in (("stream", "zstd"), ("file", "zstd"), ("stream", "lz4")):
        # one big batch, and the same table in four batches
        for data in (table, chunked(table, 40_000)):
            outputs = [write_one(fmt, data, compression=codec, threads=k) for k in (1, 2, None)]
            assert outputs[0] == outputs[1] == outputs[2], (fmt, codec)
        assert_tables_equal(pa_read(fmt, outputs[0]), table)


def test_sixteen_threads_write_concurrently():
    n_threads = 16
    jobs = []
    for i in range(n_threads):
        fmt = FORMATS[i % 2]
        codec, level = CODEC_LEVELS[i % len(CODEC_LEVELS)]
        if level == 9:
            level = 2
        if fmt == "stream":
            # tables built apart: dictionaries are replaced between them
            tables = [typed_table(20 + 7 * j, seed=100 * i + j) for j in range(3)]
        else:
            # slices of one table: one dictionary per field, as the file format needs
            whole = sliceable_table(60, 100 + i)
            tables = [whole.slice(0, 15 + i), whole.slice(15 + i, 30), whole.slice(45 + i)]
        jobs.append((fmt, codec, level, tables))
    barrier = threading.Barrier(n_threads)
    results: list = [None] * n_threads

    def work(i):
        fmt, codec, level, tables = jobs[i]
        try:
            barrier.wait(THREAD_TIMEOUT)
            sink = io.BytesIO()
            with new_writer(fmt, sink, tables[0].schema, compression=codec, level=level) as w:
                for t in tables:
                    w.write(t)
            results[i] = sink.getvalue()
        except BaseException as e:  # reported below, in the main thread
            results[i] = e

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(THREAD_TIMEOUT)
    assert not any(t.is_alive() for t in threads)
    for (fmt, _, _, tables), out in zip(jobs, results, strict=True):
        assert isinstance(out, bytes), out
        assert_tables_equal(pa_read(fmt, out), pa.concat_tables(tables))
    assert leased() == 0


def test_custom_pool_lends_and_takes_back():
    pool = zstdpool.ContextPool()
    sink = io.BytesIO()
    w = zi.new_stream(sink, INPUT_TABLE.schema, pool=pool, level=4)
    assert pool.stats()["leased"] == 1
    assert leased() == 0  # not the default pool
    w.write(INPUT_TABLE)
    w.close()
    assert pool.stats()["leased"] == 0
    zi.write_file(INPUT_TABLE, pool=pool)
    assert pool.stats()["leased"] == 0
    assert_tables_equal(pa_read("stream", sink.getvalue()), INPUT_TABLE)
