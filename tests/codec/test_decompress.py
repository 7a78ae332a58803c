"""Decompression: frames written by other zstd implementations, bad data, and output limits
checked before anything is allocated.
"""

from __future__ import annotations

import io
import random

import pyarrow as pa
import pytest
import zstdpool
from hypothesis import given
from hypothesis import strategies as st
from zstdpool import DecompressionError, OutputLimitError

from tests.helpers.codec import assert_balanced, few, make_data, no_size_frame, quick
from tests.helpers.peers import bzstd, np, zstandard


def declared_size_frame(n: int) -> bytes:
    """A complete, well-formed frame whose header declares `n` bytes of content and holds none.

    Magic, a header descriptor with an 8-byte Frame_Content_Size, a 2 MiB window, the size,
    then one empty last raw block.
    """
    magic = (0xFD2FB528).to_bytes(4, "little")
    return magic + bytes([0xC0, 0x58]) + n.to_bytes(8, "little") + (1).to_bytes(3, "little")


def patch_content_size(frame: bytes, new: int) -> bytes:
    """`frame` with its Frame_Content_Size field replaced by `new` (field width kept)."""
    fhd = frame[4]
    fcs_flag, single, did_flag = fhd >> 6, (fhd >> 5) & 1, fhd & 3
    pos = 5 + (0 if single else 1) + [0, 1, 2, 4][did_flag]
    width = [1 if single else 0, 2, 4, 8][fcs_flag]
    assert width, "frame has no content size field"
    value = new - 256 if width == 2 else new
    return frame[:pos] + value.to_bytes(width, "little") + frame[pos + width :]


def skippable_frame(payload: bytes) -> bytes:
    return (0x184D2A50).to_bytes(4, "little") + len(payload).to_bytes(4, "little") + payload


def stream_frame(chunks: list[bytes]) -> bytes:
    """A frame written by python-zstandard's stream_writer (no content size, several blocks)."""
    sink = io.BytesIO()
    with zstandard.ZstdCompressor(level=3).stream_writer(sink, closefd=False) as w:
        for chunk in chunks:
            w.write(chunk)
            w.flush(zstandard.FLUSH_BLOCK)
    frame = sink.getvalue()
    assert zstandard.frame_content_size(frame) == -1
    return frame


@quick
@given(data=st.binary(max_size=20_000), level=st.sampled_from([-3, 1, 3, 12]))
def test_frames_from_zstandard(data, level):
    with_size = zstandard.ZstdCompressor(level=level).compress(data)
    assert zstdpool.decompress(with_size) == data
    checked = zstandard.ZstdCompressor(level=level, write_checksum=True).compress(data)
    assert zstdpool.decompress(checked) == data
    no_size = no_size_frame(data, level)
    assert zstdpool.decompress(no_size) == data
    out = bytearray(len(data))
    assert zstdpool.decompress_into(no_size, out) == len(data)
    assert out == data


@quick
@given(data=st.binary(max_size=20_000), level=st.sampled_from([-3, 1, 3, 12]))
def test_frames_from_backports_zstd(data, level):
    frame = bzstd.compress(data, level)
    assert zstdpool.decompress(frame) == data
    checked = bzstd.compress(data, options={bzstd.CompressionParameter.checksum_flag: 1})
    assert zstdpool.decompress(checked) == data
    c = bzstd.ZstdCompressor(level)
    streamed = c.compress(data) + c.flush()
    assert zstdpool.decompress(streamed) == data
    # our frames in the other direction
    ours = zstdpool.compress(data, level, checksum=True)
    assert bzstd.decompress(ours) == data
    assert bzstd.get_frame_info(ours).decompressed_size == len(data)


def test_stream_writer_frames():
    chunks = [make_data("mixed", n, n) for n in (0, 1, 70_000, 300_000, 5)]
    frame = stream_frame(chunks)
    data = b"".join(chunks)
    assert zstdpool.decompress(frame) == data
    assert zstdpool.decompress_many([frame, frame], threads=2) == [data, data]
    out = bytearray(len(data) + 10)
    assert zstdpool.decompress_into(frame, out) == len(data)
    assert out[: len(data)] == data
    with zstdpool.decompressor() as d:
        assert d.decompress(frame) == data


def test_multi_frame_concatenations():
    parts = [make_data(k, n, n) for k, n in (("text", 1000), ("random", 0), ("zeros", 200_000))]
    parts.append(make_data("mixed", 150_000, 9))
    frames = [
        zstdpool.compress(parts[0], checksum=True),
        no_size_frame(parts[1]),
        zstandard.ZstdCompressor(write_checksum=True).compress(parts[2]),
        bzstd.compress(parts[3]),
    ]
    joined = b"".join(frames)
    expected = b"".join(parts)
    assert zstdpool.decompress(joined) == expected
    assert bzstd.decompress(joined) == expected
    out = bytearray(len(expected))
    assert zstdpool.decompress_into(joined, out) == len(expected)
    assert out == expected
    with zstdpool.decompressor() as d:
        assert d.decompress(joined) == expected
    assert zstdpool.decompress_many([joined]) == [expected]
    # our own frames concatenated
    ours = [zstdpool.compress(p, lvl) for p, lvl in zip(parts, (1, 5, -2, 3), strict=True)]
    assert zstdpool.decompress(b"".join(ours)) == expected
    assert bzstd.decompress(b"".join(ours)) == expected


def test_skippable_frames_are_skipped():
    data = make_data("text", 5000, 10)
    frame = zstdpool.compress(data)
    skip = skippable_frame(b"metadata")
    for joined in (skip + frame, frame + skip, skip + frame + skip + frame):
        expected = data * joined.count(frame)
        assert zstdpool.decompress(joined) == expected
        out = bytearray(len(expected))
        assert zstdpool.decompress_into(joined, out) == len(expected)
        assert out == expected


@pytest.mark.parametrize(
    "empty", [b"", bytearray(), memoryview(b"abc")[1:1], np.empty(0, np.uint8)]
)
def test_empty_input_is_a_decompression_error(empty):
    with pytest.raises(DecompressionError, match="empty"):
        zstdpool.decompress(empty)
    with pytest.raises(DecompressionError):
        zstdpool.decompress_into(empty, bytearray(10))
    with zstdpool.decompressor() as d:
        with pytest.raises(DecompressionError):
            d.decompress(empty)
        with pytest.raises(DecompressionError):
            d.decompress_into(empty, bytearray(10))
    with pytest.raises(DecompressionError, match=r"buffers\[1\]"):
        zstdpool.decompress_many([zstdpool.compress(b"a"), empty])


@pytest.mark.parametrize(
    "garbage",
    [b"x", b"not zstd at all", b"\x28\xb5\x2f", b"\x28\xb5\x2f\xfd", bytes(100), b"\xff" * 64],
)
def test_garbage_is_a_decompression_error(garbage):
    with pytest.raises(DecompressionError):
        zstdpool.decompress(garbage)
    with pytest.raises(DecompressionError):
        zstdpool.decompress_into(garbage, bytearray(1000))
    with pytest.raises(DecompressionError):
        zstdpool.decompress_many([garbage])


def test_trailing_garbage_is_a_decompression_error():
    frame = zstdpool.compress(b"hello world" * 100)
    for tail in (b"\0", b"junk", frame[:10]):
        with pytest.raises(DecompressionError):
            zstdpool.decompress(frame + tail)
        with pytest.raises(DecompressionError):
            zstdpool.decompress_into(frame + tail, bytearray(5000))


@pytest.mark.parametrize("source", ["ours", "no-size", "checksum"])
def test_every_truncation_is_a_decompression_error(source):
    data = make_data("text", 4000, 11)
    frame = {
        "ours": zstdpool.compress(data),
        "no-size": no_size_frame(data),
        "checksum": zstdpool.compress(data, checksum=True),
    }[source]
    pool = zstdpool.ContextPool(max_idle_per_key=1)
    with zstdpool.decompressor(pool=pool) as d:
        for cut in range(len(frame)):
            piece = frame[:cut]
            with pytest.raises(DecompressionError):
                zstdpool.decompress(piece, pool=pool)
            with pytest.raises(DecompressionError):
                d.decompress(piece)
            with pytest.raises(DecompressionError):
                zstdpool.decompress_into(piece, bytearray(len(data)), pool=pool)
        # both the lease and the pooled context still work after all those failures
        assert d.decompress(frame) == data
    assert zstdpool.decompress(frame, pool=pool) == data
    assert_balanced(pool)


def test_legacy_frames_are_refused():
    # A zstd v0.7 frame (magic 0xFD2FB527): single segment, content size 5, one raw block
    # "hello", end block. Decoders built with legacy support read it (pyarrow's does); the
    # old decoders are not built into zstdpool, which reads untrusted input.
    frame = (
        bytes.fromhex("27b52ffd") + bytes([0x20, 5, 0x40, 0, 5]) + b"hello" + bytes([0xC0, 0, 0])
    )
    try:
        decoded = pa.Codec("zstd").decompress(frame, decompressed_size=5).to_pybytes()
    except pa.ArrowException:
        decoded = None  # a pyarrow whose zstd is built without legacy support either
    assert decoded in (None, b"hello")
    with pytest.raises(DecompressionError, match="frame header"):
        zstdpool.decompress(frame)
    with pytest.raises(DecompressionError):
        zstdpool.decompress_into(frame, bytearray(5))
    with pytest.raises(DecompressionError, match=r"buffers\[0\]"):
        zstdpool.decompress_many([frame])


def test_bad_checksum_is_detected():
    data = make_data("text", 30_000, 12)
    frame = zstdpool.compress(data, checksum=True)
    for i in range(1, 5):
        bad = bytearray(frame)
        bad[-i] ^= 0x01
        with pytest.raises(DecompressionError):
            zstdpool.decompress(bytes(bad))
        with pytest.raises(DecompressionError):
            zstdpool.decompress_into(bytes(bad), bytearray(len(data)))
        with pytest.raises(DecompressionError):
            zstdpool.decompress_many([bytes(bad)])
    # and in a frame without content size (the streaming path)
    bad = bytearray(no_size_frame(data, checksum=True))
    bad[-1] ^= 0x80
    with pytest.raises(DecompressionError):
        zstdpool.decompress(bytes(bad))


@few
@given(seed=st.integers(0, 2**32 - 1), flips=st.integers(1, 4))
def test_corrupted_checksummed_frames_never_decode_to_wrong_data(seed, flips):
    rng = random.Random(seed)
    data = make_data("text", 8000, seed)
    frame = bytearray(zstdpool.compress(data, checksum=True))
    for _ in range(flips):
        frame[rng.randrange(len(frame))] ^= 1 << rng.randrange(8)
    try:
        out = zstdpool.decompress(bytes(frame), max_output_size=1 << 20)
    except DecompressionError:
        return
    # A flip in a header field that does not change the content (e.g. the window
    # descriptor) may leave a valid frame; the content must then be the original.
    assert out == data


@pytest.mark.parametrize("declared_delta", [-700, -1, 1, 500])
def test_frame_that_lies_about_its_size(declared_delta):
    data = make_data("text", 1024, 13)
    frame = zstdpool.compress(data, 1)
    lying = patch_content_size(frame, len(data) + declared_delta)
    assert zstandard.frame_content_size(lying) == len(data) + declared_delta
    with pytest.raises(DecompressionError):
        zstdpool.decompress(lying)
    with pytest.raises(DecompressionError):
        zstdpool.decompress_into(lying, bytearray(4096))
    with pytest.raises(DecompressionError):
        zstdpool.decompress_many([lying])


@pytest.mark.parametrize("declared", [(1 << 30) + 1, 1 << 40, 1 << 60, (1 << 63) + 12345])
def test_huge_declared_size_is_refused_before_allocating(declared):
    frame = declared_size_frame(declared)
    assert zstandard.frame_content_size(frame) == declared
    with pytest.raises(OutputLimitError, match=str(zstdpool.DEFAULT_MAX_OUTPUT_SIZE)):
        zstdpool.decompress(frame)
    with pytest.raises(OutputLimitError, match="12345"):
        zstdpool.decompress(frame, max_output_size=12345)
    with pytest.raises(OutputLimitError, match="12345"):
        zstdpool.decompress_many([frame], max_output_size=12345)
    with pytest.raises(OutputLimitError):
        zstdpool.decompress_into(frame, bytearray(100))
    with zstdpool.decompressor(max_output_size=999) as d:
        with pytest.raises(OutputLimitError, match="999"):
            d.decompress(frame)
    # also when the lying frame is the first of several
    with pytest.raises(OutputLimitError):
        zstdpool.decompress(frame + zstdpool.compress(b"x"))


def test_declared_size_at_the_limit():
    data = make_data("text", 5000, 14)
    frame = zstdpool.compress(data)
    assert zstdpool.decompress(frame, max_output_size=5000) == data
    with pytest.raises(OutputLimitError, match=r"max_output_size \(4999 bytes\)"):
        zstdpool.decompress(frame, max_output_size=4999)
    assert zstdpool.decompress(zstdpool.compress(b""), max_output_size=0) == b""
    with pytest.raises(OutputLimitError):
        zstdpool.decompress(zstdpool.compress(b"a"), max_output_size=0)


@pytest.mark.parametrize("size", [1, 1000, 65536, 65537, 300_000])
def test_frame_without_size_over_the_limit(size):
    data = make_data("mixed", size, size)
    frame = no_size_frame(data)
    assert zstdpool.decompress(frame, max_output_size=size) == data
    assert zstdpool.decompress(frame, max_output_size=size + 1) == data
    with pytest.raises(OutputLimitError, match=f"max_output_size \\({size - 1} bytes\\)"):
        zstdpool.decompress(frame, max_output_size=size - 1)
    with pytest.raises(OutputLimitError, match=f"{size // 2}"):
        zstdpool.decompress(frame, max_output_size=size // 2)
    with pytest.raises(OutputLimitError, match=r"buffers\[1\]"):
        zstdpool.decompress_many([zstdpool.compress(b""), frame], max_output_size=size - 1)
    with zstdpool.decompressor(max_output_size=size - 1) as d:
        with pytest.raises(OutputLimitError):
            d.decompress(frame)
        # the per-call limit overrides the lease's
        assert d.decompress(frame, max_output_size=size) == data
        # and the context is fine after the refusal
        assert d.decompress(frame, max_output_size=size) == data


def test_frame_without_size_holding_nothing():
    frame = no_size_frame(b"")
    assert zstdpool.decompress(frame) == b""
    assert zstdpool.decompress(frame, max_output_size=0) == b""
    assert zstdpool.decompress_into(frame, bytearray()) == 0


def test_multi_frame_total_over_the_limit():
    part = make_data("text", 40_000, 15)
    frame = zstdpool.compress(part)
    joined = frame * 3
    assert zstdpool.decompress(joined, max_output_size=120_000) == part * 3
    with pytest.raises(OutputLimitError, match="119999"):
        zstdpool.decompress(joined, max_output_size=119_999)
    with pytest.raises(OutputLimitError):
        zstdpool.decompress(joined, max_output_size=50_000)


def test_decompression_bomb_is_bounded():
    # 64 MiB of zeros compresses to a few KiB; a small limit must stop it early.
    frame = no_size_frame(bytes(16 << 20), level=1)
    assert len(frame) < 16 << 10
    with pytest.raises(OutputLimitError, match=str(1 << 20)):
        zstdpool.decompress(frame, max_output_size=1 << 20)


@pytest.mark.parametrize(
    "where",
    [
        pytest.param(lambda n: (slice(0, n), slice(0, None)), id="same start"),
        pytest.param(lambda n: (slice(0, n), slice(n - 1, None)), id="last byte shared"),
        pytest.param(lambda n: (slice(100, 100 + n), slice(0, 101)), id="out ends inside data"),
    ],
)
def test_decompress_into_refuses_an_output_that_overlaps_its_input(where):
    data = make_data("text", 20_000, 3)
    frame = zstdpool.compress(data)
    buf = bytearray(len(frame) + 100 + len(data))
    buf[: len(frame)] = frame
    buf[100 : 100 + len(frame)] = frame
    src, dst = where(len(frame))
    view = memoryview(buf)
    with pytest.raises(zstdpool.ParameterError, match="data and out overlap"):
        zstdpool.decompress_into(view[src], view[dst])
    with zstdpool.decompressor() as d, pytest.raises(zstdpool.ParameterError, match="overlap"):
        d.decompress_into(view[src], view[dst])
    # Side by side in one buffer is fine.
    buf[: len(frame)] = frame
    assert zstdpool.decompress_into(view[: len(frame)], view[len(frame) :]) == len(data)
    assert buf[len(frame) : len(frame) + len(data)] == data
