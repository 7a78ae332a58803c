"""zstdpool.zstd's ZstdFile and open(): paths and file objects in every mode, several frames,
seeking, text mode, tarfile reading a .tar.zst through it, and files the peers wrote."""

from __future__ import annotations

import io
import sys
import tarfile
from pathlib import Path

import pytest
import zstdpool
from hypothesis import given, settings
from hypothesis import strategies as st
from zstdpool import zstd

if sys.version_info >= (3, 14):
    from compression import zstd as peer
else:
    peer = pytest.importorskip("backports.zstd")

LINES = [b"row %d, with text that repeats %d\n" % (i, i % 17) for i in range(30000)]
DATA = b"".join(LINES)


@pytest.mark.parametrize("mode", ["w", "wb", "x", "xb"])
def test_written_files_are_read_by_the_peer(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "f.zst"
    with zstd.ZstdFile(path, mode, level=5) as f:
        for i in range(0, len(DATA), 12345):
            assert f.write(DATA[i : i + 12345]) == len(DATA[i : i + 12345])
        assert f.tell() == len(DATA) and f.writable() and not f.readable()
    assert peer.decompress(path.read_bytes()) == DATA
    if mode.startswith("x"):
        with pytest.raises(FileExistsError):
            zstd.ZstdFile(path, mode)


def test_append_adds_a_frame(tmp_path: Path) -> None:
    path = tmp_path / "a.zst"
    with zstd.open(path, "wb") as f:
        f.write(b"one ")
    with zstd.open(path, "ab") as f:
        f.write(b"two")
    assert zstd.decompress(path.read_bytes()) == b"one two"
    with zstd.open(path) as f:
        assert f.read() == b"one two"


def test_reading_what_the_peer_wrote(tmp_path: Path) -> None:
    path = tmp_path / "p.zst"
    with peer.ZstdFile(path, "w", level=3) as f:
        f.write(DATA)
    with zstd.ZstdFile(path) as f:
        assert f.readline() == LINES[0]
        assert f.read(10) == LINES[1][:10]
        assert f.peek(1)[:1] == LINES[1][10:11]
        assert f.read1(5) == LINES[1][10:15]
        rest = f.read()
        assert rest == DATA[len(LINES[0]) + 15 :]
        assert f.read() == b""
    with zstd.ZstdFile(path) as f:
        assert list(f)[:3] == LINES[:3]


def test_file_objects_and_seeking() -> None:
    buf = io.BytesIO()
    with zstd.ZstdFile(buf, "w") as f:
        f.write(DATA[:100000])
        f.flush(zstd.ZstdFile.FLUSH_FRAME)
        f.write(DATA[100000:])
    assert not buf.closed, "a file object given is left open"
    buf.seek(0)
    with zstd.ZstdFile(buf) as f:
        assert f.seekable()
        assert f.seek(250000) == 250000
        assert f.read(100) == DATA[250000:250100]
        assert f.seek(10) == 10
        assert f.read(5) == DATA[10:15]
        assert f.seek(-5, io.SEEK_END) == len(DATA) - 5
        assert f.read() == DATA[-5:]
        assert f.tell() == len(DATA)
        b = bytearray(7)
        f.seek(3)
        assert f.readinto(b) == 7 and bytes(b) == DATA[3:10]


def test_text_mode(tmp_path: Path) -> None:
    path = tmp_path / "t.zst"
    with zstd.open(path, "wt", encoding="utf-8") as f:
        f.write("héllo\nwörld\n")
    with zstd.open(path, "rt", encoding="utf-8") as f:
        assert f.readlines() == ["héllo\n", "wörld\n"]
    with pytest.raises(ValueError, match="encoding"):
        zstd.open(path, "rb", encoding="utf-8")


def test_tarfile_reads_a_tar_zst(tmp_path: Path) -> None:
    members = {f"dir/file{i}.txt": (b"content %d\n" % i) * (i + 1) * 100 for i in range(20)}
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    path = tmp_path / "a.tar.zst"
    path.write_bytes(peer.compress(raw.getvalue()))
    with zstd.ZstdFile(path) as f, tarfile.open(fileobj=f, mode="r|") as tar:
        got = {}
        for m in tar:
            extracted = tar.extractfile(m)
            assert extracted is not None
            got[m.name] = extracted.read()
    assert got == members


def test_truncated_and_bad_files(tmp_path: Path) -> None:
    frame = zstd.compress(DATA)
    path = tmp_path / "cut.zst"
    path.write_bytes(frame[: len(frame) // 2])
    with zstd.ZstdFile(path) as f, pytest.raises(EOFError, match="ended before"):
        f.read()
    with pytest.raises(ValueError, match="Invalid mode"):
        zstd.ZstdFile(path, "rw")
    with pytest.raises(TypeError, match="level"):
        zstd.ZstdFile(path, "r", level=3)
    with pytest.raises(TypeError, match="file must be"):
        zstd.ZstdFile(12.5)
    f = zstd.ZstdFile(path)
    f.close()
    assert f.closed
    with pytest.raises(ValueError, match="closed"):
        f.read()


def test_an_open_file_holds_one_context_and_gives_it_back(tmp_path: Path) -> None:
    before = zstdpool.pool_stats()["leased"]
    with zstd.ZstdFile(tmp_path / "h.zst", "w") as f:
        f.write(b"x" * 1000)
        assert zstdpool.pool_stats()["leased"] == before + 1
    assert zstdpool.pool_stats()["leased"] == before


def test_a_corrupt_frame_read_into_a_buffer_gives_its_context_back() -> None:
    bad = bytearray(zstd.compress(DATA))
    for i in range(40, len(bad) // 2, 97):
        bad[i] ^= 0x5A
    before = zstdpool.pool_stats()["leased"]
    for read in ("readinto", "read"):
        with zstd.ZstdFile(io.BytesIO(bytes(bad))) as f:
            with pytest.raises(zstd.ZstdError):
                if read == "readinto":
                    f.readinto(bytearray(1 << 20))
                else:
                    f.read()
            # The frame failed: its context went back with the error, the file still open.
            assert zstdpool.pool_stats()["leased"] == before


@settings(max_examples=30, deadline=None)
@given(
    chunks=st.lists(st.binary(max_size=20000), max_size=6),
    reads=st.lists(st.integers(min_value=-1, max_value=30000), min_size=1, max_size=6),
)
def test_reads_of_any_size_give_the_data(chunks: list[bytes], reads: list[int]) -> None:
    buf = io.BytesIO()
    with zstd.ZstdFile(buf, "w") as f:
        for c in chunks:
            f.write(c)
    data = b"".join(chunks)
    buf.seek(0)
    if not chunks:
        # Nothing written, not even an empty frame: an empty file, which is no zstd data.
        assert buf.getvalue() == b""
        with pytest.raises(EOFError), zstd.ZstdFile(buf) as f:
            f.read()
        return
    got = b""
    with zstd.ZstdFile(buf) as f:
        for n in reads:
            got += f.read(n)
        got += f.read()
    assert got == data


@settings(max_examples=40, deadline=None)
@given(
    frames=st.lists(st.binary(max_size=300_000), min_size=1, max_size=4),
    sizes=st.lists(st.integers(min_value=0, max_value=400_000), min_size=1, max_size=8).filter(any),
    skippable=st.booleans(),
)
def test_readinto_of_any_size_fills_the_buffer_given(
    frames: list[bytes], sizes: list[int], skippable: bool
) -> None:
    # Reads larger than the file object's own buffer are decompressed into the caller's
    # buffer; smaller ones into that buffer. Frames may hold anything (incompressible data
    # too), and a skippable frame between two is read past.
    parts = [zstdpool.compress(f) for f in frames]
    if skippable:
        parts.insert(1, bytes.fromhex("502a4d18") + (3).to_bytes(4, "little") + b"abc")
    data = b"".join(frames)
    into = bytearray(len(data) + 1)
    view = memoryview(into)
    at = calls = 0
    with zstd.ZstdFile(io.BytesIO(b"".join(parts))) as f:
        while at < len(data):
            size = sizes[calls % len(sizes)]
            n = f.readinto(view[at : at + size])
            assert n <= size
            assert n > 0 or size == 0, f"nothing read at {at} of {len(data)}"
            at += n
            calls += 1
        assert f.readinto(bytearray(10)) == 0
        assert f.tell() == len(data)
    assert at == len(data)
    assert into[:at] == data and into[at] == 0


def test_a_decompressor_never_writes_into_the_input_it_reads() -> None:
    frame = zstdpool.compress(DATA[:50_000])
    buf = bytearray(frame) + bytearray(100_000)
    d = zstd.ZstdDecompressor()
    with pytest.raises(zstdpool.ParameterError, match="data and out overlap"):
        d._decompress_into(memoryview(buf)[: len(frame)], memoryview(buf)[len(frame) - 1 :])
    with pytest.raises(TypeError, match="out must be a writable buffer"):
        d._decompress_into(frame, bytes(10))
    # Neither refusal touched the frame in progress. A call that stops at its output's end
    # keeps its own copy of the input left, so the next call may write over where the input
    # was: here, over the whole buffer, frame included.
    out = bytearray(30_000)
    assert d._decompress_into(memoryview(buf)[: len(frame)], out) == 30_000
    assert not d.needs_input
    rest = d._decompress_into(b"", buf)
    assert d.eof and rest == 20_000
    assert bytes(out) + bytes(buf[:rest]) == DATA[:50_000]
