"""zstdpool's IPC readers against the apache/arrow-testing corpus.

- Gold files (``data/arrow-ipc-stream/integration/<producer>/*.stream`` and ``*.arrow_file``):
  zstdpool must read what pyarrow reads, equal to it, batch by batch; where pyarrow refuses a
  file, zstdpool must refuse it too with one of its own exceptions.
- Fuzz regression files (``data/arrow-ipc-stream/`` and ``data/arrow-ipc-file/``): read in a
  subprocess (``tests/helpers/hostile_reader.py``) so that a crash or a hang is a test failure
  naming the input, not the end of the test session. Every read must end in a valid table or
  a ``zstdpool.ZstdError``.

The corpus is found at ``$ARROW_TESTING_DATA``, by default ``../shared/arrow-testing/data``
next to the repository. Without it these tests are skipped.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from functools import cache
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc
import pytest
import zstdpool
from zstdpool import ipc

from tests.helpers.env import subprocess_env

DATA = Path(
    os.environ.get("ARROW_TESTING_DATA")
    or Path(__file__).resolve().parents[3] / "shared" / "arrow-testing" / "data"
)
INTEGRATION = DATA / "arrow-ipc-stream" / "integration"
MISSING = (
    f"the arrow-testing corpus is not at {DATA} (clone apache/arrow-testing to "
    "../shared/arrow-testing, or set ARROW_TESTING_DATA to its data directory)"
)

# The producers whose gold files zstdpool must read like pyarrow.
GOLD_DIRS = ["2.0.0-compression", "cpp-21.0.0", "4.0.0-shareddict"]

# Big-endian gold files: pyarrow reads them (swapping to native order); zstdpool refuses them by
# design, cleanly. A conformance gap, kept visible as strict xfails.
BIG_ENDIAN_DIR = "1.0.0-bigendian"
BIG_ENDIAN_GAP = (
    "conformance gap: zstdpool refuses big-endian IPC data (IpcError 'big-endian IPC data is "
    "not supported', raised from the schema check in src/ipc/reader.rs); pyarrow reads these "
    "files and byte-swaps them"
)

# Fuzz files that expose a bug on the Rust side: (directory, name) -> reason.
KNOWN_FUZZ_BUGS: dict[tuple[str, str], str] = {}

HOSTILE_SCRIPT = Path(__file__).resolve().parents[1] / "helpers" / "hostile_reader.py"
# Seconds one subprocess may take for its chunk of files (about one second when all is well).
HOSTILE_TIMEOUT = 60
HOSTILE_CHUNK = 16
# What one fuzz input may add to the reading process's peak memory: the inputs are at most a
# few tens of KB, so anything near this means a hostile length was believed.
HOSTILE_MAX_RSS_GROWTH_KB = 512 * 1024


def _missing_param():
    return [pytest.param(None, marks=pytest.mark.skip(reason=MISSING), id="arrow-testing-missing")]


def _gold_params(suffix: str, dirs=(*GOLD_DIRS, BIG_ENDIAN_DIR)):
    if not INTEGRATION.is_dir():
        return _missing_param()
    params = []
    for d in dirs:
        marks = []
        if d == BIG_ENDIAN_DIR:
            marks = [
                pytest.mark.xfail(strict=True, raises=zstdpool.IpcError, reason=BIG_ENDIAN_GAP)
            ]
        for path in sorted((INTEGRATION / d).glob(f"*{suffix}")):
            params.append(pytest.param(path, marks=marks, id=f"{d}/{path.stem}"))
    return params


def _fuzz_files(directory: str) -> list[Path]:
    root = DATA / directory
    return sorted(p for p in root.iterdir() if p.is_file() and p.name != "README.md")


def _fuzz_params(directory: str, mode: str):
    if not (DATA / directory).is_dir():
        return _missing_param()
    params = []
    for path in _fuzz_files(directory):
        reason = KNOWN_FUZZ_BUGS.get((directory, path.name))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param((mode, path), marks=marks, id=f"{mode}/{path.name}"))
    return params


def _pyarrow_read(path: Path, file_format: bool):
    """pyarrow's table and batches, or the exception it raised."""
    try:
        if file_format:
            r = pyarrow.ipc.open_file(path)
            batches = [r.get_batch(i) for i in range(r.num_record_batches)]
            footer = r.metadata
        else:
            r = pyarrow.ipc.open_stream(path)
            batches = list(r)
            footer = None
        return r.schema, batches, footer, None
    except Exception as e:  # noqa: BLE001 - the test checks zstdpool refuses it too
        return None, None, None, e


def _assert_same_schema(expected: pa.Schema, got: pa.Schema):
    assert got.equals(expected, check_metadata=True), f"\nexpected {expected}\ngot {got}"


def _assert_same_batches(expected: list[pa.RecordBatch], got: list[pa.RecordBatch]):
    assert len(got) == len(expected)
    for i, (e, g) in enumerate(zip(expected, got, strict=True)):
        g.validate(full=True)
        assert g.equals(e, check_metadata=True), f"batch {i} differs:\n{e}\n!=\n{g}"


def _assert_refused_like_pyarrow(path: Path, read, pyarrow_error: Exception):
    """pyarrow refused `path`: zstdpool must refuse it too, with its own exception."""
    with pytest.raises(zstdpool.ZstdError) as info:
        read(path)
    print(
        f"{path.name}: pyarrow {type(pyarrow_error).__name__}: {pyarrow_error}; "
        f"zstdpool {type(info.value).__name__}: {info.value}"
    )


@pytest.mark.parametrize("path", _gold_params(".stream"))
def test_gold_stream_reads_like_pyarrow(path):
    schema, batches, _, error = _pyarrow_read(path, file_format=False)
    if error is not None:
        _assert_refused_like_pyarrow(path, ipc.read_stream, error)
        return
    table = ipc.read_stream(path)
    table.validate(full=True)
    assert table.equals(pa.Table.from_batches(batches, schema), check_metadata=True)
    _assert_same_schema(schema, table.schema)
    # Batch by batch, from memory.
    with ipc.open_stream(path.read_bytes()) as reader:
        _assert_same_schema(schema, reader.schema)
        _assert_same_batches(batches, list(reader))


@pytest.mark.parametrize("path", _gold_params(".arrow_file"))
def test_gold_file_reads_like_pyarrow(path):
    schema, batches, footer, error = _pyarrow_read(path, file_format=True)
    if error is not None:
        _assert_refused_like_pyarrow(path, ipc.read_file, error)
        return
    table = ipc.read_file(path)
    table.validate(full=True)
    assert table.equals(pa.Table.from_batches(batches, schema), check_metadata=True)
    _assert_same_schema(schema, table.schema)
    # Random access, from memory: the batches in reverse order, by negative index too.
    with ipc.open_file(path.read_bytes()) as reader:
        _assert_same_schema(schema, reader.schema)
        assert reader.num_record_batches == len(reader) == len(batches)
        assert reader.metadata == footer
        n = len(batches)
        backwards = [reader.get_batch(i) for i in reversed(range(n))]
        _assert_same_batches(batches, backwards[::-1])
        _assert_same_batches(batches[::-1], [reader.get_batch(-i) for i in range(1, n + 1)])
        _assert_same_batches(batches, list(reader))


@pytest.mark.parametrize("path", _gold_params(".stream", dirs=["2.0.0-compression"]))
def test_gold_compressed_stream_with_threads_and_file_object(path):
    """The compressed gold files through the parallel path and a Python file object."""
    expected = pyarrow.ipc.open_stream(path).read_all()
    got = ipc.read_stream(io.BytesIO(path.read_bytes()), threads=2)
    got.validate(full=True)
    assert got.equals(expected, check_metadata=True)
    file_path = path.with_suffix(".arrow_file")
    with open(file_path, "rb") as f:
        got = ipc.read_file(f, threads=2)
    assert got.equals(pyarrow.ipc.open_file(file_path).read_all(), check_metadata=True)


def test_gold_big_endian_is_refused_cleanly():
    """What zstdpool does with the big-endian files it does not read: a clear IpcError."""
    if not (INTEGRATION / BIG_ENDIAN_DIR).is_dir():
        pytest.skip(MISSING)
    for path in sorted((INTEGRATION / BIG_ENDIAN_DIR).glob("*.stream")):
        with pytest.raises(zstdpool.IpcError, match="big-endian"):
            ipc.open_stream(path)
        with pytest.raises(zstdpool.IpcError, match="big-endian"):
            ipc.open_file(path.with_suffix(".arrow_file"))


# --- Fuzz regression files, in subprocesses ------------------------------------------------


def _text(out) -> str:
    if out is None:
        return ""
    return out.decode("utf-8", "replace") if isinstance(out, bytes) else out


def _describe_exit(returncode: int | None, hung: bool, timeout: float) -> str:
    if hung:
        return f"hang: no result within {timeout} s"
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"crash: killed by {name}"
    return f"the reader process exited with status {returncode}"


def _run_hostile(
    mode: str, paths: list[Path], script: Path = HOSTILE_SCRIPT, timeout: float = HOSTILE_TIMEOUT
) -> dict[str, dict]:
    """Runs the hostile reader over `paths`; returns each path's RESULT, or a `failure` entry
    naming the crash or hang it caused. After a crash the remaining paths run in a new process.
    """
    results: dict[str, dict] = {}
    todo = [str(p) for p in paths]
    while todo:
        chunk, todo = todo[:HOSTILE_CHUNK], todo[HOSTILE_CHUNK:]
        try:
            proc = subprocess.run(
                [sys.executable, str(script), mode, *chunk],
                capture_output=True,
                timeout=timeout,
                env=subprocess_env(RUST_BACKTRACE="1"),
            )
            out, err, returncode, hung = proc.stdout, proc.stderr, proc.returncode, False
        except subprocess.TimeoutExpired as e:
            out, err, returncode, hung = e.stdout, e.stderr, None, True
        out, err = _text(out), _text(err)
        current = None
        for line in out.splitlines():
            if line.startswith("BEGIN "):
                current = line[len("BEGIN ") :]
            elif line.startswith("RESULT "):
                r = json.loads(line[len("RESULT ") :])
                results[r["path"]] = r
                current = None
        if current is None and returncode == 0 and out.rstrip().endswith("DONE"):
            continue
        # The process died or hung: on `current` if a file was being read, else around it.
        culprit = current if current is not None else chunk[0]
        failure = f"{_describe_exit(returncode, hung, timeout)}; stderr tail:\n{err[-3000:]}"
        if current is None:
            failure = f"outside any one input: {failure}"
        results[culprit] = {"path": culprit, "failure": failure}
        rest = chunk[chunk.index(culprit) + 1 :]
        todo = [p for p in rest if p not in results] + todo
    return results


@cache
def _hostile_results(mode: str, directory: str) -> dict[str, dict]:
    return _run_hostile(mode, _fuzz_files(directory))


def _check_fuzz_result(result: dict | None, path: Path):
    assert result is not None, f"{path.name}: the reader process produced no result for it"
    assert "failure" not in result, f"{path.name}: {result['failure']}"
    bad = [r for r in result["results"] if r["outcome"] == "bad"]
    assert not bad, f"{path.name}: " + "\n".join(
        f"{r['how']}: {r['type']}: {r['msg']}\n{r.get('traceback', '')}" for r in bad
    )
    growth = result["maxrss_kb_after"] - result["maxrss_kb_before"]
    assert growth < HOSTILE_MAX_RSS_GROWTH_KB, (
        f"{path.name}: reading it raised the peak memory by {growth} KB"
    )
    for r in result["results"]:
        assert r["outcome"] in ("table", "error"), r
        if r["outcome"] == "error":
            assert r["type"] in ("IpcError", "DecompressionError", "OutputLimitError"), r
    # Every way of reading the input as a stream (path, bytes, file object, threads) ends the
    # same way; so does every way of reading it as a file (which may fail at different
    # batches, so only table-or-error and the rows are compared).
    for group in ("stream", "file"):
        ways = [r for r in result["results"] if r["group"] == group]
        seen = {
            (r["outcome"], r.get("rows"), r.get("type") if group == "stream" else None)
            for r in ways
        }
        assert len(seen) <= 1, f"{path.name}: read as a {group}, the ways disagree: {ways}"


def _compare_with_pyarrow(result: dict, path: Path):
    """Where zstdpool read a fuzz input to a table, pyarrow (if it reads it) agrees."""
    for group, read, pa_read in (
        ("stream", ipc.read_stream, lambda p: pyarrow.ipc.open_stream(p).read_all()),
        ("file", ipc.read_file, lambda p: pyarrow.ipc.open_file(p).read_all()),
    ):
        if not any(r["group"] == group and r["outcome"] == "table" for r in result["results"]):
            continue
        try:
            expected = pa_read(path)
            expected.validate(full=True)
        except Exception:  # noqa: BLE001 - pyarrow refusing what zstdpool reads is allowed
            continue
        assert read(path).equals(expected), f"{path.name} read as a {group}: differs from pyarrow"


@pytest.mark.parametrize("case", _fuzz_params("arrow-ipc-stream", "stream"))
def test_fuzz_stream_ends_cleanly(case):
    mode, path = case
    result = _hostile_results(mode, "arrow-ipc-stream").get(str(path))
    _check_fuzz_result(result, path)
    _compare_with_pyarrow(result, path)


@pytest.mark.parametrize("case", _fuzz_params("arrow-ipc-file", "file"))
def test_fuzz_file_ends_cleanly(case):
    """Read as a file (whole, by negative index, from a file object), then as a stream."""
    mode, path = case
    result = _hostile_results(mode, "arrow-ipc-file").get(str(path))
    _check_fuzz_result(result, path)
    _compare_with_pyarrow(result, path)


_FAULTY_READER = """
import os, sys, time
sys.path.insert(0, {helpers!r})
import hostile_reader as h
real = h._stream_reads
def faulty(data, path):
    if path.endswith("abort-me"):
        os.abort()
    if path.endswith("hang-me"):
        time.sleep(600)
    return real(data, path)
h._stream_reads = faulty
sys.exit(h.main(sys.argv[1:]))
"""


def test_hostile_runner_names_the_input_of_a_crash_or_hang(tmp_path):
    """The harness itself: a reader process that aborts or hangs on an input names that
    input, and the inputs after it are still read."""
    gold = INTEGRATION / "cpp-21.0.0" / "generated_primitive.stream"
    if not gold.is_file():
        pytest.skip(MISSING)
    script = tmp_path / "faulty_reader.py"
    script.write_text(_FAULTY_READER.format(helpers=str(HOSTILE_SCRIPT.parent)))
    names = ["good-1", "abort-me", "good-2", "hang-me", "good-3"]
    paths = []
    for name in names:
        paths.append(tmp_path / name)
        paths[-1].write_bytes(gold.read_bytes())
    results = _run_hostile("stream", paths, script=script, timeout=6)
    by_name = {Path(k).name: v for k, v in results.items()}
    assert by_name.keys() == set(names)
    assert "crash: killed by SIGABRT" in by_name["abort-me"]["failure"]
    assert "hang: no result within 6 s" in by_name["hang-me"]["failure"]
    for name in ("good-1", "good-2", "good-3"):
        _check_fuzz_result(by_name[name], paths[names.index(name)])
        assert {r["outcome"] for r in by_name[name]["results"]} == {"table"}
