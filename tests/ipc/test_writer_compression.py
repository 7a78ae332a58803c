"""What the writers compress: every codec and level, body buffers that are standard frames,
and incompressible buffers stored raw.
"""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.arrow_data import compressible_table, random_bytes_table
from tests.helpers.ipc_writer import (
    CODEC_LEVELS,
    CODECS,
    FORMATS,
    assert_tables_equal,
    pa_read,
    quick,
    write_one,
)
from tests.helpers.peers import np


def record_batch_bodies(out: bytes, fmt: str) -> list[bytes]:
    """The body of every record batch message in `out`, read with pyarrow's message reader."""
    stream = pa.BufferReader(out[8:] if fmt == "file" else out)  # a file starts ARROW1\0\0
    bodies = []
    while True:
        try:
            message = pa.ipc.read_message(stream)
        except EOFError:
            return bodies
        if message.type == "record batch":
            bodies.append(message.body.to_pybytes())


def test_codecs_and_levels(subtests):
    table = compressible_table()
    for fmt in FORMATS:
        plain = write_one(fmt, table, compression=None)
        for codec, level in CODEC_LEVELS:
            with subtests.test(fmt=fmt, codec=codec, level=level):
                out = write_one(fmt, table, compression=codec, level=level)
                assert_tables_equal(pa_read(fmt, out), table)
                if codec is None:
                    assert out == plain
                else:
                    assert len(out) * 4 < len(plain), (len(out), len(plain))


@pytest.mark.parametrize("fmt", FORMATS)
def test_body_buffers_are_compressed_frames(fmt):
    values = np.arange(8192, dtype=np.int64) // 1000  # 64 KiB that compress very well
    table = pa.table({"v": values})
    magic = {"zstd": b"\x28\xb5\x2f\xfd", "lz4": b"\x04\x22\x4d\x18"}
    for codec in CODECS:
        (body,) = record_batch_bodies(write_one(fmt, table, compression=codec), fmt)
        if codec is None:
            assert body[: values.nbytes] == values.tobytes()
            continue
        # The validity buffer is empty (no nulls); the values buffer is an 8-byte
        # uncompressed length, then one frame.
        (size,) = struct.unpack_from("<q", body)
        assert size == values.nbytes, codec
        assert body[8:12] == magic[codec]
        assert len(body) < values.nbytes // 10, codec


@pytest.mark.parametrize("fmt", FORMATS)
def test_incompressible_buffers_are_stored_raw(fmt):
    table = random_bytes_table(64 * 1024)
    raw = table["noise"].chunk(0).buffers()[1].to_pybytes()
    for codec in CODECS:
        out = write_one(fmt, table, compression=codec)
        (body,) = record_batch_bodies(out, fmt)
        if codec is None:
            assert body[: len(raw)] == raw
        else:
            (prefix,) = struct.unpack_from("<q", body)
            assert prefix == -1, codec  # stored uncompressed inside a compressed body
            assert body[8 : 8 + len(raw)] == raw
        assert_tables_equal(pa_read(fmt, out), table)


@quick
@given(
    values=st.lists(
        st.one_of(
            st.none(),
            st.binary(max_size=300),
            st.builds(lambda b, k: b * k, st.binary(min_size=1, max_size=8), st.integers(1, 200)),
        ),
        max_size=60,
    ),
    level=st.sampled_from([-5, -1, 1, 3, 6]),
    fmt=st.sampled_from(FORMATS),
)
def test_any_binary_data_round_trips(values, level, fmt):
    table = pa.table({"b": pa.array(values, pa.binary()), "n": pa.array(range(len(values)))})
    out = write_one(fmt, table, level=level)
    assert_tables_equal(pa_read(fmt, out), table)
