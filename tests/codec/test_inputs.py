"""What the codec reads: every bytes-like input, numpy arrays, and what it refuses."""

from __future__ import annotations

import array

import pytest
import zstdpool

from tests.helpers.codec import make_data
from tests.helpers.peers import np


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
