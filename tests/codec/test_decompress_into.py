"""decompress_into: decompressing into a buffer the caller owns."""

from __future__ import annotations

import array

import pytest
import zstdpool
from zstdpool import OutputLimitError

from tests.helpers.codec import make_data, no_size_frame
from tests.helpers.peers import np


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
