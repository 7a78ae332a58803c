"""The codec API: one-shot compress/decompress, leases, compress_many/decompress_many."""

from __future__ import annotations

import array
import gc
import io
import random
import threading

import numpy as np
import pyarrow as pa
import pytest
import zstandard
import zstdpool
from backports import zstd as bzstd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zstdpool import (
    BusyError,
    ClosedError,
    DecompressionError,
    OutputLimitError,
    ParameterError,
    ZstdError,
)

FAST_LEVELS = [-7, -1, 1, 3]
ALL_LEVELS = [-7, -1, 1, 3, 6, 9, 12, 19, 22]

# Hypothesis: fast and reproducible; no example database written into the checkout.
quick = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
few = settings(
    max_examples=12,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

THREAD_TIMEOUT = 120  # seconds; only a deadlock guard, never a performance assertion


# --------------------------------------------------------------------------------------
# Helpers


def make_data(kind: str, size: int, seed: int) -> bytes:
    """Deterministic test data of `size` bytes: random, repetitive, zeros, text or mixed."""
    rng = random.Random(seed)
    if kind == "random":
        return rng.randbytes(size)
    if kind == "zeros":
        return bytes(size)
    if kind == "repeat":
        unit = rng.randbytes(rng.randint(1, 300)) or b"\0"
        return (unit * (size // len(unit) + 1))[:size]
    if kind == "text":
        words = [rng.randbytes(rng.randint(1, 8)).hex().encode() for _ in range(200)]
        out = bytearray()
        while len(out) < size:
            out += rng.choice(words) + b" "
        return bytes(out[:size])
    if kind == "mixed":
        out = bytearray()
        while len(out) < size:
            n = rng.randint(1, 65536)
            out += rng.randbytes(n) if rng.random() < 0.3 else bytes([rng.randrange(256)]) * n
        return bytes(out[:size])
    raise AssertionError(kind)


def frame_size(frame: bytes) -> int:
    """The size of the first zstd frame in `frame`, as another implementation reads it."""
    return bzstd.get_frame_size(frame)


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


def no_size_frame(data: bytes, level: int = 3, checksum: bool = False) -> bytes:
    """A frame without Frame_Content_Size, from python-zstandard."""
    cctx = zstandard.ZstdCompressor(level=level, write_content_size=False, write_checksum=checksum)
    frame = cctx.compress(data)
    assert zstandard.frame_content_size(frame) == -1
    return frame


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


def assert_balanced(pool: zstdpool.ContextPool) -> dict:
    s = pool.stats()
    assert s["leased"] == 0, s
    # Every context ever created is now idle or freed.
    assert s["created"] == s["idle"] + s["dropped"], s
    return s


@pytest.fixture
def pool() -> zstdpool.ContextPool:
    return zstdpool.ContextPool()


# --------------------------------------------------------------------------------------
# Module surface


def test_constants_and_exports():
    assert zstdpool.MIN_LEVEL < 0 < zstdpool.DEFAULT_LEVEL <= zstdpool.MAX_LEVEL
    assert zstdpool.DEFAULT_LEVEL == 3
    assert zstdpool.MAX_LEVEL == 22
    assert zstdpool.DEFAULT_MAX_OUTPUT_SIZE == 1 << 30
    assert isinstance(zstdpool.ZSTD_VERSION, str) and zstdpool.ZSTD_VERSION.count(".") == 2
    for name in zstdpool.__all__:
        assert hasattr(zstdpool, name), name


def test_error_hierarchy():
    assert issubclass(ParameterError, ZstdError) and issubclass(ParameterError, ValueError)
    assert issubclass(DecompressionError, ValueError)
    assert issubclass(OutputLimitError, DecompressionError)
    assert issubclass(ClosedError, ValueError)
    assert issubclass(BusyError, RuntimeError) and issubclass(BusyError, ZstdError)


# --------------------------------------------------------------------------------------
# Round trips


@quick
@given(
    data=st.binary(max_size=4096),
    level=st.sampled_from(ALL_LEVELS),
    checksum=st.booleans(),
)
def test_round_trip_small(data, level, checksum):
    frame = zstdpool.compress(data, level, checksum=checksum)
    assert type(frame) is bytes
    assert frame_size(frame) == len(frame)
    assert zstandard.frame_content_size(frame) == len(data)
    assert zstdpool.decompress(frame) == data
    assert zstandard.ZstdDecompressor().decompress(frame) == data
    assert bzstd.decompress(frame) == data
    # Deterministic: same input and parameters, same bytes.
    assert zstdpool.compress(data, level, checksum=checksum) == frame


@few
@given(
    size=st.integers(0, 3 << 20),
    kind=st.sampled_from(["random", "repeat", "zeros", "text", "mixed"]),
    seed=st.integers(0, 2**32 - 1),
    level=st.sampled_from(FAST_LEVELS),
)
def test_round_trip_large(size, kind, seed, level):
    data = make_data(kind, size, seed)
    frame = zstdpool.compress(data, level)
    assert frame_size(frame) == len(frame)
    assert zstdpool.decompress(frame) == data
    assert zstandard.ZstdDecompressor().decompress(frame) == data
    out = bytearray(size + 7)
    assert zstdpool.decompress_into(frame, out) == size
    assert out[:size] == data


@pytest.mark.parametrize("size", [1 << 20, (2 << 20) + 12345])
@pytest.mark.parametrize("kind", ["random", "mixed", "repeat"])
def test_round_trip_multi_megabyte(size, kind):
    data = make_data(kind, size, size)
    for level in (-1, 3):
        frame = zstdpool.compress(data, level)
        assert frame_size(frame) == len(frame)
        assert zstdpool.decompress(frame) == data


@pytest.mark.parametrize("level", ALL_LEVELS + [0])
def test_every_level_round_trips(level):
    data = make_data("text", 50_000, level & 0xFF)
    frame = zstdpool.compress(data, level)
    assert zstdpool.decompress(frame) == data
    assert zstandard.ZstdDecompressor().decompress(frame) == data


def test_extreme_levels():
    data = make_data("text", 10_000, 1)
    for level in (zstdpool.MIN_LEVEL, zstdpool.MAX_LEVEL):
        assert zstdpool.decompress(zstdpool.compress(data, level)) == data


def test_level_zero_means_default():
    data = make_data("text", 20_000, 2)
    assert zstdpool.compress(data, 0) == zstdpool.compress(data, 3) == zstdpool.compress(data)


def test_empty_input_round_trips():
    frame = zstdpool.compress(b"")
    assert frame_size(frame) == len(frame)
    assert zstandard.frame_content_size(frame) == 0
    assert zstdpool.decompress(frame) == b""
    assert zstdpool.decompress_into(frame, bytearray()) == 0
    assert zstdpool.decompress_many([frame]) == [b""]


def test_higher_levels_compress_better():
    data = make_data("text", 200_000, 3)
    sizes = [len(zstdpool.compress(data, lvl)) for lvl in (-7, 3, 19)]
    assert sizes[0] > sizes[1] > sizes[2]


def test_checksum_flag_written():
    data = make_data("text", 10_000, 4)
    with_sum = zstdpool.compress(data, checksum=True)
    without = zstdpool.compress(data)
    assert zstandard.get_frame_parameters(with_sum).has_checksum
    assert not zstandard.get_frame_parameters(without).has_checksum
    assert len(with_sum) == len(without) + 4
    assert zstdpool.decompress(with_sum) == data


@pytest.mark.parametrize("window_log", [10, 12, 17])
def test_window_log_sets_the_window(window_log):
    data = make_data("mixed", 300_000, 5)
    frame = zstdpool.compress(data, 3, window_log=window_log)
    assert zstandard.get_frame_parameters(frame).window_size == 1 << window_log
    assert zstdpool.decompress(frame) == data
    assert zstdpool.compress(data, 3, window_log=window_log) == frame
    with zstdpool.compressor(3, window_log=window_log) as c:
        assert c.window_log == window_log
        assert c.compress(data) == frame


def test_window_log_bounds_accepted():
    data = b"abc" * 1000
    for wl in (10, 30):
        assert zstdpool.decompress(zstdpool.compress(data, 1, window_log=wl)) == data


# --------------------------------------------------------------------------------------
# Input types


def test_bytes_like_inputs_are_equivalent():
    data = make_data("text", 30_000, 6)
    ref = zstdpool.compress(data)
    assert zstdpool.compress(bytearray(data)) == ref
    assert zstdpool.compress(memoryview(data)) == ref
    assert zstdpool.compress(memoryview(bytearray(data))) == ref
    assert zstdpool.compress(np.frombuffer(data, dtype=np.uint8)) == ref
    assert zstdpool.compress(array.array("B", data)) == ref
    # memoryview slices (contiguous) are compressed as exactly the slice
    mv = memoryview(data)
    assert zstdpool.compress(mv[100:20_000]) == zstdpool.compress(data[100:20_000])
    assert zstdpool.compress(mv[5:5]) == zstdpool.compress(b"")
    # the frame itself may be any bytes-like object too
    assert zstdpool.decompress(bytearray(ref)) == data
    assert zstdpool.decompress(memoryview(ref)) == data
    assert zstdpool.decompress(np.frombuffer(ref, dtype=np.uint8)) == data
    padded = b"xx" + ref + b"yy"
    assert zstdpool.decompress(memoryview(padded)[2:-2]) == data


@pytest.mark.parametrize(
    "arr",
    [
        np.arange(100_000, dtype=np.int64),
        np.random.default_rng(7).random(50_000, dtype=np.float32),
        np.arange(240_000, dtype=np.int32).reshape(400, 600),
        np.random.default_rng(8).random((64, 33)).astype(np.float32),
        np.zeros((0, 5), dtype=np.float64),
    ],
    ids=["int64", "float32", "int32-2d", "float32-2d", "empty-2d"],
)
def test_numpy_arrays(arr):
    assert arr.flags.c_contiguous
    frame = zstdpool.compress(arr)
    assert frame == zstdpool.compress(arr.tobytes())
    back = np.frombuffer(zstdpool.decompress(frame), dtype=arr.dtype).reshape(arr.shape)
    np.testing.assert_array_equal(back, arr)
    out = np.empty_like(arr)
    assert zstdpool.decompress_into(frame, out) == arr.nbytes
    np.testing.assert_array_equal(out, arr)
    # a reinterpretation of the same bytes works as an output as well
    raw = np.empty(arr.nbytes, dtype=np.uint8)
    assert zstdpool.decompress_into(frame, raw) == arr.nbytes
    assert raw.tobytes() == arr.tobytes()


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(1000, dtype=np.int64)[::2],
        lambda: np.arange(1000, dtype=np.int64).reshape(20, 50).T,
        lambda: np.asfortranarray(np.arange(1000, dtype=np.int16).reshape(20, 50)),
        lambda: np.arange(1000, dtype=np.int64).reshape(20, 50)[:, :10],
        lambda: memoryview(bytes(range(100)))[::3],
    ],
    ids=["strided", "transposed", "fortran", "column-slice", "memoryview-step"],
)
def test_non_contiguous_inputs_raise_buffer_error(make):
    obj = make()
    with pytest.raises(BufferError, match="contiguous"):
        zstdpool.compress(obj)
    with pytest.raises(BufferError):
        zstdpool.decompress(obj)
    with pytest.raises(BufferError):
        zstdpool.compress_many([b"ok", obj])
    with zstdpool.compressor() as c:
        with pytest.raises(BufferError):
            c.compress(obj)


def test_non_contiguous_output_raises_buffer_error():
    frame = zstdpool.compress(bytes(800))
    out = np.zeros(200, dtype=np.int64)[::2]
    with pytest.raises(BufferError):
        zstdpool.decompress_into(frame, out)
    assert not out.any()


@pytest.mark.parametrize(
    "obj, type_name",
    [("text", "str"), (12, "int"), (None, "NoneType"), ([1, 2], "list"), (1.5, "float")],
)
def test_non_buffer_inputs_raise_type_error(obj, type_name):
    frame = zstdpool.compress(b"abc")
    calls = [
        lambda: zstdpool.compress(obj),
        lambda: zstdpool.decompress(obj),
        lambda: zstdpool.decompress_into(obj, bytearray(10)),
        lambda: zstdpool.decompress_into(frame, obj),
    ]
    for call in calls:
        with pytest.raises(TypeError, match=f"'{type_name}'"):
            call()
    with zstdpool.compressor() as c:
        with pytest.raises(TypeError, match=f"'{type_name}'"):
            c.compress(obj)
    with zstdpool.decompressor() as d:
        with pytest.raises(TypeError, match=f"'{type_name}'"):
            d.decompress(obj)
        with pytest.raises(TypeError, match=f"'{type_name}'"):
            d.decompress_into(frame, obj)


# --------------------------------------------------------------------------------------
# Interoperability


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


# --------------------------------------------------------------------------------------
# Bad data


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


# --------------------------------------------------------------------------------------
# Output limits


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


# --------------------------------------------------------------------------------------
# decompress_into


def test_decompress_into_bytearray_and_views():
    data = make_data("text", 10_000, 16)
    frame = zstdpool.compress(data)
    out = bytearray(12_000)
    assert zstdpool.decompress_into(frame, out) == len(data)
    assert out[: len(data)] == data
    big = bytearray(b"\xbb" * 20_000)
    assert zstdpool.decompress_into(frame, memoryview(big)[100:10_100]) == len(data)
    assert big[100:10_100] == data
    assert big[:100] == b"\xbb" * 100 and big[10_100:] == b"\xbb" * 9900
    arr = array.array("B", bytes(len(data)))
    assert zstdpool.decompress_into(frame, arr) == len(data)
    assert arr.tobytes() == data


@pytest.mark.parametrize("kind", ["sized", "no-size", "multi"])
def test_decompress_into_leaves_the_rest_of_out_untouched(kind):
    # decompress_into "returns the number of bytes written": the bytes of `out` after
    # them belong to the caller and must keep their values.
    data = make_data("text", 10_000, 16)
    frame = {
        "sized": zstdpool.compress(data),
        "no-size": no_size_frame(data),
        "multi": zstdpool.compress(data[:4000]) + zstdpool.compress(data[4000:]),
    }[kind]
    out = bytearray(b"\xaa" * 12_000)
    assert zstdpool.decompress_into(frame, out) == len(data)
    assert out[: len(data)] == data
    clobbered = [i for i in range(len(data), len(out)) if out[i] != 0xAA]
    assert not clobbered, f"{len(clobbered)} bytes past the output changed, from {clobbered[0]}"


def test_decompress_into_numpy():
    values = np.arange(25_000, dtype=np.float32) / 7
    frame = zstdpool.compress(values)
    out = np.full(30_000, -1, dtype=np.float32)
    assert zstdpool.decompress_into(frame, out) == values.nbytes
    np.testing.assert_array_equal(out[:25_000], values)
    assert (out[25_000:] == -1).all()
    grid = np.empty((250, 100), dtype=np.float32)
    assert zstdpool.decompress_into(frame, grid) == values.nbytes
    np.testing.assert_array_equal(grid.ravel(), values)


@pytest.mark.parametrize("kind", ["sized", "no-size", "multi"])
def test_decompress_into_too_small(kind):
    data = make_data("mixed", 50_000, 17)
    frame = {
        "sized": zstdpool.compress(data),
        "no-size": no_size_frame(data),
        "multi": zstdpool.compress(data[:25_000]) + zstdpool.compress(data[25_000:]),
    }[kind]
    for room in (0, 1, 49_999):
        with pytest.raises(OutputLimitError, match=str(room)):
            zstdpool.decompress_into(frame, bytearray(room))
        with pytest.raises(OutputLimitError):
            zstdpool.decompress_into(frame, np.empty(room, dtype=np.uint8))
    with zstdpool.decompressor() as d:
        with pytest.raises(OutputLimitError):
            d.decompress_into(frame, bytearray(100))
        out = bytearray(50_000)
        assert d.decompress_into(frame, out) == 50_000
        assert out == data


def test_decompress_into_read_only_outputs():
    frame = zstdpool.compress(b"abc" * 100)
    ro = np.zeros(300, dtype=np.uint8)
    ro.flags.writeable = False
    for out in (bytes(300), memoryview(bytes(300)), memoryview(bytearray(300)).toreadonly(), ro):
        with pytest.raises(TypeError, match="writable"):
            zstdpool.decompress_into(frame, out)
        with zstdpool.decompressor() as d:
            with pytest.raises(TypeError, match="writable"):
                d.decompress_into(frame, out)
    assert not ro.any()


# --------------------------------------------------------------------------------------
# Parameters


@pytest.mark.parametrize(
    "kwargs",
    [
        {"level": zstdpool.MAX_LEVEL + 1},
        {"level": zstdpool.MIN_LEVEL - 1},
        {"level": 100},
        {"window_log": 9},
        {"window_log": 31},
        {"window_log": 5},
        {"window_log": 1},
    ],
)
def test_invalid_parameters(kwargs):
    for call in (
        lambda: zstdpool.compress(b"data", **kwargs),
        lambda: zstdpool.compressor(**kwargs),
        lambda: zstdpool.compress_many([b"data"], **kwargs),
        lambda: zstdpool.compress_many([], **kwargs),
    ):
        with pytest.raises(ParameterError) as info:
            call()
        assert isinstance(info.value, ValueError)
        name = next(iter(kwargs))
        assert name.replace("_", "") in str(info.value).replace("_", "")


@pytest.mark.parametrize(
    "kwargs",
    [{"window_log": -1}, {"level": 2**40}, {"level": -(2**40)}],
    ids=["negative-window_log", "huge-level", "huge-negative-level"],
)
def test_out_of_range_integer_parameters_are_value_errors(kwargs):
    # errors.py: "Errors about ... bad arguments are also ValueErrors".
    with pytest.raises(ValueError):
        zstdpool.compress(b"data", **kwargs)
    with pytest.raises(ValueError):
        zstdpool.compressor(**kwargs)


@pytest.mark.parametrize("threads", [0])
def test_invalid_thread_count(threads):
    with pytest.raises(ParameterError):
        zstdpool.compress_many([b"a", b"b"], threads=threads)
    with pytest.raises(ParameterError):
        zstdpool.decompress_many([zstdpool.compress(b"a")], threads=threads)


# --------------------------------------------------------------------------------------
# Leases


def test_compressor_properties():
    with zstdpool.compressor(7, checksum=True, window_log=15) as c:
        assert (c.level, c.checksum, c.window_log, c.closed) == (7, True, 15, False)
        assert "level=7" in repr(c)
    assert c.closed and "closed" in repr(c)
    with zstdpool.compressor() as c:
        assert (c.level, c.checksum, c.window_log) == (3, False, None)
    with zstdpool.decompressor(max_output_size=1234) as d:
        assert d.max_output_size == 1234 and not d.closed
    assert d.closed
    with zstdpool.decompressor() as d:
        assert d.max_output_size == zstdpool.DEFAULT_MAX_OUTPUT_SIZE


def test_compressor_matches_one_shot():
    data = [make_data("mixed", n, n) for n in (0, 1, 1000, 200_000)]
    for level, checksum in ((1, False), (19, True), (-5, False)):
        with zstdpool.compressor(level, checksum=checksum) as c:
            for d in data:
                frame = c.compress(d)
                assert frame == zstdpool.compress(d, level, checksum=checksum)
                assert frame_size(frame) == len(frame)


def test_compressor_lease_lifecycle(pool):
    c = zstdpool.compressor(5, pool=pool)
    assert pool.stats()["leased"] == 1
    frame = c.compress(b"abc" * 100)
    assert zstdpool.decompress(frame) == b"abc" * 100
    c.close()
    s = pool.stats()
    assert (s["leased"], s["returned"], s["idle"], c.closed) == (0, 1, 1, True)
    c.close()  # idempotent
    assert pool.stats() == s
    with pytest.raises(ClosedError, match="closed"):
        c.compress(b"abc")
    with pytest.raises(ValueError):
        c.compress(b"abc")
    with pytest.raises(ClosedError):
        with c:
            pass
    assert pool.stats() == s


def test_decompressor_lease_lifecycle(pool):
    frame = zstdpool.compress(b"xyz" * 100)
    d = zstdpool.decompressor(pool=pool)
    assert pool.stats()["leased"] == 1
    assert d.decompress(frame) == b"xyz" * 100
    d.close()
    s = pool.stats()
    assert (s["leased"], s["returned"], d.closed) == (0, 1, True)
    d.close()
    assert pool.stats() == s
    with pytest.raises(ClosedError):
        d.decompress(frame)
    with pytest.raises(ClosedError):
        d.decompress_into(frame, bytearray(300))
    with pytest.raises(ClosedError):
        with d:
            pass


def test_context_manager_returns_lease_when_block_raises(pool):
    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with zstdpool.compressor(pool=pool) as c:
            c.compress(b"data")
            raise Boom
    assert c.closed
    with pytest.raises(Boom):
        with zstdpool.decompressor(pool=pool) as d:
            raise Boom
    assert d.closed
    s = pool.stats()
    assert (s["leased"], s["returned"], s["created"]) == (0, 2, 2)


def test_context_manager_enter_returns_self(pool):
    c = zstdpool.compressor(pool=pool)
    with c as entered:
        assert entered is c
    d = zstdpool.decompressor(pool=pool)
    with d as entered:
        assert entered is d


def test_exit_after_a_failed_call_returns_the_context(pool):
    with pytest.raises(DecompressionError):
        with zstdpool.decompressor(pool=pool) as d:
            d.decompress(b"garbage!")
    with pytest.raises(TypeError):
        with zstdpool.compressor(pool=pool) as c:
            c.compress("text")
    assert_balanced(pool)
    assert pool.stats()["returned"] == 2


def test_garbage_collection_returns_the_lease(pool):
    c = zstdpool.compressor(pool=pool)
    c.compress(b"abc")
    d = zstdpool.decompressor(pool=pool)
    assert pool.stats()["leased"] == 2
    del c, d
    gc.collect()
    s = pool.stats()
    assert (s["leased"], s["returned"], s["idle"]) == (0, 2, 2)
    # also from inside a reference cycle
    holder: list = [zstdpool.compressor(pool=pool)]
    holder.append(holder)
    del holder
    gc.collect()
    assert pool.stats()["leased"] == 0


def test_one_shot_calls_return_their_context(pool):
    frame = zstdpool.compress(b"abc" * 1000, pool=pool)
    zstdpool.decompress(frame, pool=pool)
    zstdpool.decompress_into(frame, bytearray(3000), pool=pool)
    for bad in (b"", b"junk", frame[:-3]):
        with pytest.raises(DecompressionError):
            zstdpool.decompress(bad, pool=pool)
        with pytest.raises(DecompressionError):
            zstdpool.decompress_into(bad, bytearray(3000), pool=pool)
    with pytest.raises(OutputLimitError):
        zstdpool.decompress_into(frame, bytearray(10), pool=pool)
    with pytest.raises(TypeError):
        zstdpool.compress("str", pool=pool)
    s = assert_balanced(pool)
    assert s["created"] == 2  # one compressor, one decompressor, reused throughout
    assert s["reused"] > 0


@pytest.mark.parametrize(
    "params",
    [
        {"level": 1},
        {"level": 3, "checksum": True},
        {"level": -5},
        {"level": 9, "window_log": 14},
        {"level": 19},
    ],
)
def test_reused_context_output_equals_fresh(params):
    small = make_data("text", 3000, 18)
    large = make_data("mixed", 1 << 20, 19)
    fresh = zstdpool.compress(small, pool=zstdpool.ContextPool(), **params)
    fresh_large = zstdpool.compress(large, pool=zstdpool.ContextPool(), **params)
    shared = zstdpool.ContextPool(max_idle_per_key=1)
    with zstdpool.compressor(pool=shared, **params) as c:
        assert c.compress(small) == fresh
        assert c.compress(large) == fresh_large
        assert c.compress(small) == fresh
        assert c.compress(b"") == zstdpool.compress(b"", **params)
        assert c.compress(small) == fresh
    # through the pool: the context that compressed `large` is reused
    assert zstdpool.compress(large, pool=shared, **params) == fresh_large
    assert zstdpool.compress(small, pool=shared, **params) == fresh
    s = shared.stats()
    assert s["created"] == 1 and s["reused"] == 2


def test_reused_decompressor_after_failures():
    good = make_data("text", 100_000, 20)
    cases = [
        (zstdpool.compress(good), good),
        (no_size_frame(good), good),
        (zstdpool.compress(good) * 2, good * 2),
    ]
    with zstdpool.decompressor() as d:
        for frame, expected in cases:
            # leave the context mid-frame in every way we can, then use it again
            for bad in (frame[: len(frame) // 3], frame[:-1], b"\x28\xb5\x2f\xfd" + b"\0" * 20):
                with pytest.raises(DecompressionError):
                    d.decompress(bad)
                assert d.decompress(frame) == expected
                with pytest.raises(DecompressionError):
                    d.decompress_into(bad, bytearray(len(expected)))
                out = bytearray(len(expected))
                assert d.decompress_into(frame, out) == len(expected)
                assert out == expected
            with pytest.raises(OutputLimitError):
                d.decompress(frame, max_output_size=1000)
            assert d.decompress(frame) == expected


# --------------------------------------------------------------------------------------
# Threads


def run_threads(target, n: int) -> list[BaseException]:
    errors: list[BaseException] = []

    def wrapped(i):
        try:
            target(i)
        except BaseException as e:  # noqa: BLE001 - reported by the caller
            errors.append(e)

    threads = [threading.Thread(target=wrapped, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(THREAD_TIMEOUT)
    assert not any(t.is_alive() for t in threads), "threads deadlocked"
    return errors


def test_sixteen_threads_share_one_pool():
    pool = zstdpool.ContextPool(max_idle_bytes=1 << 40)
    levels = [-3, 1, 3, 5, 9]
    sizes = [0, 1, 100, 5000, 70_000, 400_000]
    barrier = threading.Barrier(16)

    def work(i):
        rng = random.Random(i)
        barrier.wait(THREAD_TIMEOUT)
        for j in range(12):
            data = make_data(
                rng.choice(["text", "mixed", "random"]), rng.choice(sizes), i * 100 + j
            )
            level = rng.choice(levels)
            checksum = rng.random() < 0.3
            mode = j % 3
            if mode == 0:
                frame = zstdpool.compress(data, level, checksum=checksum, pool=pool)
                assert zstdpool.decompress(frame, pool=pool) == data
            elif mode == 1:
                with zstdpool.compressor(level, checksum=checksum, pool=pool) as c:
                    frame = c.compress(data)
                with zstdpool.decompressor(pool=pool) as d:
                    out = bytearray(len(data))
                    assert d.decompress_into(frame, out) == len(data)
                    assert out == data
            else:
                frames = zstdpool.compress_many(
                    [data, data[::-1]], level, checksum=checksum, pool=pool, threads=2
                )
                assert zstdpool.decompress_many(frames, pool=pool) == [data, data[::-1]]
                frame = frames[0]
            assert frame == zstdpool.compress(data, level, checksum=checksum)

    errors = run_threads(work, 16)
    assert not errors, errors[:3]
    s = pool.stats()
    assert s["leased"] == 0
    # No byte cap was reached, so nothing idle was evicted: every lease ended in a
    # return or a drop, and every context created is idle or dropped.
    assert s["created"] + s["reused"] == s["returned"] + s["dropped"], s
    assert s["created"] == s["idle"] + s["dropped"], s
    assert s["reused"] > 0


def test_one_compressor_from_two_threads_never_corrupts():
    data = make_data("mixed", 1 << 20, 21)
    expected = zstdpool.compress(data, 3)
    pool = zstdpool.ContextPool()
    results: list[bytes] = []
    busy: list[BusyError] = []
    c = zstdpool.compressor(3, pool=pool)

    def work(_):
        for _ in range(15):
            try:
                results.append(c.compress(data))
            except BusyError as e:
                busy.append(e)

    errors = run_threads(work, 2)
    c.close()
    assert not errors, errors
    assert len(results) + len(busy) == 30
    assert results, "every call was refused"
    assert all(r == expected for r in results)
    for e in busy:
        assert "thread" in str(e)
    assert_balanced(pool)


def test_one_decompressor_from_two_threads_never_corrupts():
    data = make_data("mixed", 1 << 20, 22)
    frame = no_size_frame(data)
    pool = zstdpool.ContextPool()
    d = zstdpool.decompressor(pool=pool)
    outcomes: list[bool] = []

    def work(_):
        for _ in range(15):
            try:
                outcomes.append(d.decompress(frame) == data)
            except BusyError:
                pass

    errors = run_threads(work, 2)
    d.close()
    assert not errors, errors
    assert outcomes and all(outcomes)
    assert_balanced(pool)


def test_close_from_another_thread_while_in_use():
    data = make_data("mixed", 1 << 20, 23)
    pool = zstdpool.ContextPool()
    c = zstdpool.compressor(pool=pool)
    started = threading.Event()
    outcome: list[str] = []

    def work(_):
        n = 0
        while True:
            try:
                frame = c.compress(data)
            except ClosedError:
                outcome.append(f"closed after {n}")
                return
            assert zstdpool.decompress(frame) == data
            n += 1
            started.set()

    t = threading.Thread(target=work, args=(0,), daemon=True)
    t.start()
    assert started.wait(THREAD_TIMEOUT)
    c.close()
    t.join(THREAD_TIMEOUT)
    assert not t.is_alive()
    assert outcome and outcome[0].startswith("closed")
    assert c.closed
    gc.collect()
    assert_balanced(pool)


# --------------------------------------------------------------------------------------
# compress_many / decompress_many


MANY_SPECS = [
    ("text", 0),
    ("mixed", 300_000),
    ("random", 1),
    ("repeat", 50_000),
    ("text", 7),
    ("mixed", 700_000),
    ("zeros", 123_456),
    ("random", 4096),
    ("text", 90_000),
]


def many_inputs() -> list[bytes]:
    """Inputs of very different sizes and kinds, so that order mix-ups show."""
    return [make_data(kind, n, i) for i, (kind, n) in enumerate(MANY_SPECS)]


@pytest.mark.parametrize("threads", [1, 2, None, 64])
@pytest.mark.parametrize("level", [-1, 3, 12])
def test_compress_many_matches_one_shot(threads, level):
    inputs = many_inputs()
    frames = zstdpool.compress_many(inputs, level, threads=threads)
    assert isinstance(frames, list) and len(frames) == len(inputs)
    assert frames == [zstdpool.compress(x, level) for x in inputs]
    for f in frames:
        assert type(f) is bytes and frame_size(f) == len(f)
    assert zstdpool.decompress_many(frames, threads=threads) == inputs
    assert zstdpool.decompress_many(frames[::-1], threads=threads) == inputs[::-1]


def test_compress_many_parameters_and_inputs():
    inputs = many_inputs()
    frames = zstdpool.compress_many(inputs, 5, checksum=True, window_log=16, threads=2)
    assert frames == [zstdpool.compress(x, 5, checksum=True, window_log=16) for x in inputs]
    assert all(zstandard.get_frame_parameters(f).has_checksum for f in frames)
    # any iterable of any bytes-like objects
    mixed = [bytearray(b"ab" * 100), memoryview(b"cd" * 100), np.arange(100, dtype=np.int64)]
    frames = zstdpool.compress_many(iter(mixed), threads=2)
    assert [zstdpool.decompress(f) for f in frames] == [bytes(x) for x in mixed]
    assert zstdpool.compress_many([]) == []
    assert zstdpool.decompress_many([]) == []
    assert zstdpool.compress_many(x for x in [b"z"]) == [zstdpool.compress(b"z")]


def test_decompress_many_foreign_frames():
    inputs = many_inputs()
    frames = [no_size_frame(x) if i % 2 else bzstd.compress(x) for i, x in enumerate(inputs)]
    for threads in (1, 2):
        assert zstdpool.decompress_many(frames, threads=threads) == inputs


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_many_errors_name_the_failing_index(threads):
    inputs = many_inputs()
    frames = zstdpool.compress_many(inputs)
    bad = list(frames)
    bad[3] = frames[3][:-5]
    with pytest.raises(DecompressionError, match=r"buffers\[3\]"):
        zstdpool.decompress_many(bad, threads=threads)
    bad[6] = b"junk"  # the first failing index is reported
    with pytest.raises(DecompressionError, match=r"buffers\[3\]"):
        zstdpool.decompress_many(bad, threads=threads)
    with pytest.raises(OutputLimitError, match=r"buffers\[5\]"):
        zstdpool.decompress_many(frames, max_output_size=600_000, threads=threads)
    with pytest.raises(TypeError, match=r"buffers\[3\].*'str'"):
        zstdpool.compress_many([b"a", b"b", b"c", "text", b"e"], threads=threads)
    with pytest.raises(TypeError, match=r"buffers\[2\].*'NoneType'"):
        zstdpool.decompress_many([frames[0], frames[1], None], threads=threads)


def test_many_return_their_contexts():
    pool = zstdpool.ContextPool(max_idle_bytes=1 << 40)
    inputs = many_inputs()
    frames = zstdpool.compress_many(inputs, threads=2, pool=pool)
    assert zstdpool.decompress_many(frames, threads=2, pool=pool) == inputs
    with pytest.raises(DecompressionError):
        zstdpool.decompress_many([*frames, b"junk"], threads=3, pool=pool)
    with pytest.raises(TypeError):
        zstdpool.compress_many([b"a", 1], pool=pool)
    s = assert_balanced(pool)
    assert s["created"] + s["reused"] == s["returned"] + s["dropped"]
