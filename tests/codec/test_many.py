"""compress_many and decompress_many: many buffers in one call, in parallel when large enough."""

from __future__ import annotations

import pytest
import zstdpool
from zstdpool import DecompressionError, OutputLimitError

from tests.helpers.codec import assert_balanced, frame_size, make_data, no_size_frame
from tests.helpers.peers import bzstd, np, zstandard

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
