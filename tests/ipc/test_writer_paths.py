"""A path sink appears under its name, whole, when the writer closes; an abandoned or failed
write leaves nothing (and keeps a file that was there before).
"""

from __future__ import annotations

import gc
import pathlib

import pyarrow as pa
import pytest
import zstdpool.ipc as zi
from zstdpool.errors import IpcError, ParameterError

from tests.helpers.ipc_writer import (
    FORMATS,
    INPUT_TABLE,
    TEMP_GLOB,
    assert_tables_equal,
    failing_reader,
    leased,
    leftovers,
    new_writer,
    pa_read,
    write_one,
)


def test_path_appears_only_at_close(tmp_path):
    path = tmp_path / "out.arrow"
    w = zi.new_file(path, INPUT_TABLE.schema)
    w.write(INPUT_TABLE)
    assert not path.exists()
    temps = list(tmp_path.glob(TEMP_GLOB))
    # Hidden, so that dataset readers listing the directory skip it.
    assert len(temps) == 1 and temps[0].name.startswith(".out.arrow.")
    w.close()
    assert leftovers(tmp_path) == ["out.arrow"]
    assert_tables_equal(pa_read("file", str(path)), INPUT_TABLE)


def abandon_a_path(tmp_path: pathlib.Path, fmt: str, how: str) -> None:
    path = tmp_path / f"out.{fmt}"
    schema = INPUT_TABLE.schema
    if how == "abort":
        w = new_writer(fmt, path, schema)
        w.write(INPUT_TABLE)
        w.abort()
        assert w.closed
        w.abort()
        w.close()  # after abort: nothing to do
    elif how == "with_raises":
        with pytest.raises(KeyError):
            with new_writer(fmt, path, schema) as w:
                w.write(INPUT_TABLE)
                raise KeyError("in the block")
        assert w.closed
    elif how == "failed_write_in_with":
        with pytest.raises(IpcError):
            with new_writer(fmt, path, schema) as w:
                w.write(INPUT_TABLE)
                w.write(pa.table({"other": [1]}))
    elif how == "gc":
        w = new_writer(fmt, path, schema)
        w.write(INPUT_TABLE)
        assert list(tmp_path.glob(TEMP_GLOB))
        del w
        gc.collect()
    elif how == "one_shot":
        batches = INPUT_TABLE.to_batches(max_chunksize=10)
        with pytest.raises(IpcError, match="stop"):
            write_one(fmt, failing_reader(schema, batches, RuntimeError("stop")), path)
    else:
        raise AssertionError(how)


def test_abandoned_paths_leave_nothing(tmp_path, subtests):
    for fmt in FORMATS:
        for how in ("abort", "with_raises", "failed_write_in_with", "gc", "one_shot"):
            with subtests.test(fmt=fmt, how=how):
                abandon_a_path(tmp_path, fmt, how)
                assert leftovers(tmp_path) == []
                assert leased() == 0


def test_abandoned_path_keeps_the_previous_file(tmp_path):
    path = tmp_path / "out.arrow"
    path.write_bytes(b"previous contents")
    w = zi.new_file(path, INPUT_TABLE.schema)
    w.write(INPUT_TABLE)
    w.abort()
    assert path.read_bytes() == b"previous contents"
    with zi.new_file(path, INPUT_TABLE.schema) as w:
        w.write(INPUT_TABLE)
        assert path.read_bytes() == b"previous contents"
    assert_tables_equal(pa_read("file", str(path)), INPUT_TABLE)
    assert leftovers(tmp_path) == ["out.arrow"]


def test_bad_options_with_a_path_leave_nothing(tmp_path):
    path = tmp_path / "out.arrow"
    with pytest.raises(ParameterError):
        zi.new_file(path, INPUT_TABLE.schema, level=99)
    with pytest.raises(ParameterError):
        zi.write_stream(INPUT_TABLE, path, compression="gzip")
    with pytest.raises(ParameterError):
        zi.new_stream(path, INPUT_TABLE.schema, threads=0)
    assert leftovers(tmp_path) == []
