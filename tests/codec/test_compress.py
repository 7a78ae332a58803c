"""One-shot compress and decompress: the module's surface, round trips at every level and
with every parameter, and parameters that are refused.
"""

from __future__ import annotations

import pytest
import zstdpool
from hypothesis import given
from hypothesis import strategies as st
from zstdpool import (
    BusyError,
    ClosedError,
    DecompressionError,
    OutputLimitError,
    ParameterError,
    ZstdError,
)

from tests.helpers.codec import few, frame_size, make_data, quick
from tests.helpers.peers import bzstd, zstandard

FAST_LEVELS = [-7, -1, 1, 3]
ALL_LEVELS = [-7, -1, 1, 3, 6, 9, 12, 19, 22]


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
