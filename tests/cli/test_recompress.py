"""``zstdpool recompress``, run as ``python -m zstdpool`` in subprocesses: round trips from
every producer, codecs, levels and formats; refusals and failures that leave DST alone; and
the progress bar.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc
import pytest
from zstdpool._cli import files, recompress

from tests.helpers.cli import (
    STREAM_START,
    TABLE,
    read_arrow,
    run,
    truncated_file,
    write_feather,
    write_pa_file,
    write_pa_stream,
)

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # a zstd frame
LZ4_MAGIC = b"\x04\x22\x4d\x18"  # an lz4 frame


def write_polars(stream: bool, codec: str) -> Callable[[Path], pa.Table]:
    def write(path: Path) -> pa.Table:
        pl = pytest.importorskip("polars")
        df = pl.DataFrame(
            {
                "id": list(range(3000)),
                "x": [None if i % 17 == 0 else i / 4 for i in range(3000)],
                "name": [f"name-{i % 50}" for i in range(3000)],
                "flag": [i % 3 == 0 for i in range(3000)],
                "tags": [[i % 5] * (i % 4) for i in range(3000)],
            }
        )
        if stream:
            df.write_ipc_stream(path, compression=codec)
        else:
            df.write_ipc(path, compression=codec)
        return read_arrow(path)  # as polars typed it (string_view, large_list, ...)

    return write


SOURCES: dict[str, Callable[[Path], pa.Table]] = {
    "pyarrow-stream-zstd": write_pa_stream("zstd"),
    "pyarrow-stream-lz4": write_pa_stream("lz4"),
    "pyarrow-stream-none": write_pa_stream(None),
    "pyarrow-file-zstd": write_pa_file("zstd"),
    "pyarrow-file-lz4": write_pa_file("lz4"),
    "pyarrow-file-none": write_pa_file(None),
    "feather-zstd": write_feather("zstd"),
    "feather-lz4": write_feather("lz4"),
    "feather-uncompressed": write_feather("uncompressed"),
    "polars-ipc-zstd": write_polars(False, "zstd"),
    "polars-ipc-stream-lz4": write_polars(True, "lz4"),
    "polars-ipc-uncompressed": write_polars(False, "uncompressed"),
}


def count_batches(path: Path) -> int:
    with open(path, "rb") as f:
        if f.read(6) == b"ARROW1":
            return pa.ipc.open_file(path).num_record_batches
    return sum(1 for _ in pa.ipc.open_stream(path))


def assert_codec(data: bytes, codec: str) -> None:
    """The bodies in ``data`` are compressed with ``codec`` (found by its frame magic)."""
    assert (ZSTD_MAGIC in data) == (codec == "zstd"), codec
    assert (LZ4_MAGIC in data) == (codec == "lz4"), codec


def assert_format(data: bytes, fmt: str) -> None:
    if fmt == "file":
        assert data[:6] == b"ARROW1" and data[-6:] == b"ARROW1"
    else:
        assert data[:4] == STREAM_START and data[-8:] == STREAM_START + bytes(4)


def reported_sizes(stdout: str) -> tuple[int, int]:
    before = re.search(r"before:\s+([\d,]+) bytes", stdout)
    after = re.search(r"after:\s+([\d,]+) bytes", stdout)
    assert before and after, stdout
    return int(before[1].replace(",", "")), int(after[1].replace(",", ""))


def listing(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()}


@pytest.mark.parametrize("source", list(SOURCES))
def test_recompress_round_trips(tmp_path: Path, source: str) -> None:
    """Every source to two targets, a stream and a file, the codecs taking turns: every
    (codec, format) target is met by four sources."""
    src = tmp_path / "src.arrow"
    expected = SOURCES[source](src)
    src_bytes = src.read_bytes()
    src_format = "file" if src_bytes.startswith(b"ARROW1") else "stream"
    i = list(SOURCES).index(source)
    targets = [(recompress.CODECS[i % 3], "stream"), (recompress.CODECS[(i + 1) % 3], "file")]
    for codec, fmt in targets:
        dst = tmp_path / f"dst-{codec}.{fmt}"
        result = run("recompress", src, dst, "--compression", codec, "--format", fmt)
        assert result.returncode == 0, result.stderr
        data = dst.read_bytes()
        assert_format(data, fmt)
        assert_codec(data, codec)
        got = read_arrow(dst)
        assert got.equals(expected, check_metadata=True), (source, codec, fmt)
        assert got.schema.metadata == expected.schema.metadata
        if fmt == "file" and src_format == "file":  # footer metadata carried over
            assert pa.ipc.open_file(dst).metadata == pa.ipc.open_file(src).metadata
        assert reported_sizes(result.stdout) == (len(src_bytes), len(data))
        label = {"zstd": "zstd level 1", "lz4": "lz4", "none": "uncompressed"}[codec]
        assert f"{src_format} -> {fmt}, {label}: " in result.stdout
        batches = files.plural(count_batches(src), "batch")
        assert f"{batches}, {expected.num_rows:,} rows" in result.stdout
    assert src.read_bytes() == src_bytes
    assert not [n for n in listing(tmp_path) if n.endswith(".tmp")]


def test_recompress_format_defaults_to_the_source_format(tmp_path: Path) -> None:
    for name, write in (("in.arrows", write_pa_stream(None)), ("in.arrow", write_pa_file(None))):
        src = tmp_path / name
        write(src)
        dst = tmp_path / f"out-{name}"
        assert run("recompress", src, dst).returncode == 0
        data = dst.read_bytes()
        assert_format(data, "file" if name.endswith(".arrow") else "stream")
        assert_codec(data, "zstd")  # the default codec


def test_recompress_zstd_level(tmp_path: Path) -> None:
    src = tmp_path / "src.arrow"
    write_pa_file(None)(src)
    sizes = {}
    for level in ("1", "19", "-5"):
        dst = tmp_path / f"l{level}.arrow"
        result = run("recompress", src, dst, "--compression", "zstd", f"--level={level}")
        assert result.returncode == 0, result.stderr
        assert f"zstd level {level}:" in result.stdout
        assert read_arrow(dst).equals(TABLE, check_metadata=True)
        sizes[level] = dst.stat().st_size
    assert sizes["19"] < sizes["1"] < sizes["-5"]


def test_recompress_overwrites_an_existing_dst(tmp_path: Path) -> None:
    src, dst = tmp_path / "src.arrows", tmp_path / "dst.arrows"
    write_pa_stream("lz4")(src)
    dst.write_bytes(b"old contents")
    assert run("recompress", src, dst).returncode == 0
    assert read_arrow(dst).equals(TABLE, check_metadata=True)


def test_recompress_empty_stream(tmp_path: Path) -> None:
    src, dst = tmp_path / "src.arrows", tmp_path / "dst.arrow"
    with pa.ipc.new_stream(src, TABLE.schema):
        pass
    result = run("recompress", src, dst, "-f", "file")
    assert result.returncode == 0, result.stderr
    assert "0 batches, 0 rows" in result.stdout
    assert read_arrow(dst).schema.equals(TABLE.schema, check_metadata=True)


def test_recompress_progress(tmp_path: Path) -> None:
    src = tmp_path / "src.arrow"
    write_pa_file("zstd")(src)
    result = run("recompress", src, tmp_path / "a", "--progress")
    assert result.returncode == 0, result.stderr
    assert "100%" in result.stderr and "3/3 batches" in result.stderr
    # Off for small inputs, and when stderr is not a terminal.
    result = run("recompress", src, tmp_path / "b")
    assert result.returncode == 0 and result.stderr == ""


def test_recompress_refuses_to_overwrite_its_source(tmp_path: Path) -> None:
    src = tmp_path / "src.arrow"
    write_pa_file("zstd")(src)
    os.link(src, tmp_path / "hardlink.arrow")
    os.symlink(src, tmp_path / "symlink.arrow")
    before = src.read_bytes()
    for dst in (src, f"{tmp_path}/./src.arrow", "src.arrow", "hardlink.arrow", "symlink.arrow"):
        result = run("recompress", src, dst, "-c", "lz4", cwd=tmp_path)
        assert result.returncode == 2, (dst, result.stderr)
        assert "same file as SRC" in result.stderr and "refusing" in result.stderr
        assert src.read_bytes() == before
    assert listing(tmp_path) == {"src.arrow", "hardlink.arrow", "symlink.arrow"}


def _truncated_stream(path: Path) -> None:
    write_pa_stream("zstd")(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])  # the first batches are whole


def _corrupt_body(path: Path) -> None:
    write_pa_stream("zstd")(path)
    data = bytearray(path.read_bytes())
    frames = [m.start() for m in re.finditer(re.escape(ZSTD_MAGIC), data)]
    last = frames[-1]  # inside the last batch: earlier batches are written first
    data[last + 4 : last + 40] = bytes(36)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("damage", "fmt"),
    [(_truncated_stream, "file"), (truncated_file, "stream"), (_corrupt_body, "stream")],
    ids=["truncated-stream", "truncated-file", "corrupt-body"],
)
def test_recompress_corrupt_source_leaves_nothing(
    tmp_path: Path, damage: Callable[[Path], None], fmt: str
) -> None:
    src = tmp_path / "src"
    damage(src)
    before = src.read_bytes()
    result = run("recompress", src, tmp_path / "dst", "-f", fmt)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(f"zstdpool: error: {src}: "), result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert listing(tmp_path) == {"src"}  # neither dst nor a temporary file
    assert src.read_bytes() == before


def test_recompress_failure_keeps_an_existing_dst(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    _truncated_stream(src)
    dst.write_bytes(b"previous output")
    assert run("recompress", src, dst).returncode == 1
    assert dst.read_bytes() == b"previous output"
    assert listing(tmp_path) == {"src", "dst"}


@pytest.mark.parametrize(
    "contents", [b"", b"just some text, long enough to look at\n", b"PAR1" + bytes(64)]
)
def test_recompress_not_arrow(tmp_path: Path, contents: bytes) -> None:
    src = tmp_path / "src"
    src.write_bytes(contents)
    result = run("recompress", src, tmp_path / "dst")
    assert result.returncode == 1
    assert "not an Arrow IPC stream or file" in result.stderr
    assert listing(tmp_path) == {"src"}


def test_recompress_missing_source(tmp_path: Path) -> None:
    result = run("recompress", tmp_path / "nope", tmp_path / "dst")
    assert result.returncode == 2
    assert "no such file" in result.stderr and "nope" in result.stderr
    assert listing(tmp_path) == set()


def test_recompress_bad_paths(tmp_path: Path) -> None:
    src = tmp_path / "src.arrow"
    write_pa_file(None)(src)
    for src_arg, dst_arg, message in [
        (tmp_path, tmp_path / "dst", "is a directory"),
        (src, tmp_path, "is a directory"),
        (src, tmp_path / "no" / "dst", "does not exist"),
    ]:
        result = run("recompress", src_arg, dst_arg)
        assert result.returncode == 2, result.stderr
        assert message in result.stderr


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--compression", "gzip"], "invalid choice: 'gzip'"),
        (["--format", "parquet"], "invalid choice: 'parquet'"),
        (["--level", "3", "--compression", "lz4"], "--level applies to --compression zstd"),
        (["--level", "3", "--compression", "none"], "--level applies to --compression zstd"),
        (["--level", "99"], "zstd levels run from"),
        (["--level", "high"], "invalid int value"),
        (["--no-such-option"], "unrecognized arguments"),
    ],
)
def test_recompress_bad_options(tmp_path: Path, options: list[str], message: str) -> None:
    src = tmp_path / "src.arrows"
    write_pa_stream(None)(src)
    result = run("recompress", src, tmp_path / "dst", *options)
    assert result.returncode == 2
    assert message in result.stderr and "usage:" in result.stderr
    assert listing(tmp_path) == {"src.arrows"}


def test_recompress_missing_arguments() -> None:
    result = run("recompress")
    assert result.returncode == 2 and "required: SRC, DST" in result.stderr


class _Terminal:
    """A stand-in for stderr on a terminal."""

    def __init__(self) -> None:
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        pass


def test_progress_shows_for_large_inputs_on_a_terminal() -> None:
    big = recompress.PROGRESS_MIN_BYTES + 1
    many = recompress.PROGRESS_MIN_BATCHES + 1
    assert recompress.Progress(_Terminal(), None, big, None).enabled
    assert recompress.Progress(_Terminal(), None, 1000, many).enabled
    assert not recompress.Progress(_Terminal(), None, 1000, 3).enabled
    assert not recompress.Progress(_Terminal(), False, big, many).enabled

    # A stream (batches unknown up front) gets its bar once it turns out long.
    out = _Terminal()
    progress = recompress.Progress(out, None, 1000, None)
    for batch in range(1, many + 1):
        progress.update(batch, batch * 5)
    progress.finish(many, 1000)
    assert f"100%  1000 B/1000 B, {many} batches" in out.text and out.text.endswith("\n")


def test_recompress_keeps_a_private_dst_private_and_can_fsync(tmp_path: Path) -> None:
    src, dst = tmp_path / "src.arrow", tmp_path / "dst.arrow"
    write_pa_file(None)(src)
    dst.write_bytes(b"old")
    dst.chmod(0o600)
    result = run("recompress", src, dst, "--fsync")
    assert result.returncode == 0, result.stderr
    assert (dst.stat().st_mode & 0o777) == 0o600
    assert read_arrow(dst).equals(TABLE, check_metadata=True)
