"""The readers' size limits (max_buffer_size, max_batch_size), checked before anything is
allocated.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.ipc
import pytest
import zstdpool
from zstdpool import ipc

from tests.helpers.ipc_reader import (
    CODECS,
    LZ4_MAGIC,
    ZSTD_MAGIC,
    compressible_table,
    frames,
    one_big_buffer,
    patched,
    sample_batches,
    write_zstdpool,
)
from tests.helpers.peers import np


@pytest.mark.parametrize("fmt", ["stream", "file"])
@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_max_buffer_size(compression, fmt):
    batch, data = one_big_buffer(compression, fmt=fmt)
    size = 8 * batch.num_rows
    read = ipc.read_stream if fmt == "stream" else ipc.read_file
    with pytest.raises(zstdpool.OutputLimitError, match=rf"max_buffer_size \({size - 1} bytes\)"):
        read(data, max_buffer_size=size - 1)
    assert read(data, max_buffer_size=size).column(0).chunk(0).equals(batch.column(0))


@pytest.mark.parametrize("fmt", ["stream", "file"])
@pytest.mark.parametrize("compression", [None, "zstd", "lz4"], ids=str)
def test_max_batch_size(compression, fmt):
    batch, data = one_big_buffer(compression, fmt=fmt)
    size = 8 * batch.num_rows
    read = ipc.read_stream if fmt == "stream" else ipc.read_file
    with pytest.raises(zstdpool.OutputLimitError, match="max_batch_size") as info:
        read(data, max_batch_size=size - 1)
    assert "record batch 0" in str(info.value)
    # The limit counts the batch's uncompressed buffers (with padding), nothing else.
    assert read(data, max_batch_size=size).num_rows == batch.num_rows


def test_max_batch_size_bounds_message_headers():
    data = write_zstdpool(sample_batches())
    with pytest.raises(zstdpool.OutputLimitError, match="message header.*max_batch_size"):
        ipc.open_stream(data, max_batch_size=16)


def test_max_batch_size_counts_all_buffers_together():
    """Each buffer under max_buffer_size, together over max_batch_size."""
    n = 20_000
    batch = pa.record_batch({f"c{i}": pa.array(np.arange(n, dtype=np.int64)) for i in range(4)})
    data = write_zstdpool([batch], compression="zstd")
    with pytest.raises(zstdpool.OutputLimitError, match="max_batch_size"):
        ipc.read_stream(data, max_buffer_size=8 * n, max_batch_size=3 * 8 * n)
    assert ipc.read_stream(data, max_buffer_size=8 * n, max_batch_size=4 * 8 * n).num_rows == n


def test_default_limits_accept_normal_data():
    table = compressible_table(300_000)
    for codec in CODECS:
        data = ipc.write_stream(table, compression=codec)
        assert ipc.read_stream(data).equals(table)
        assert ipc.read_stream(data, max_buffer_size=None, max_batch_size=None).equals(table)


@pytest.mark.parametrize("declared", [1 << 40, (1 << 63) - 1, 1 << 31])
@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_huge_declared_size_is_refused_before_allocating(compression, declared):
    """A prefix that declares terabytes is refused by the limit, not by a failed (or, worse, a
    successful) allocation."""
    _, data = one_big_buffer(compression)
    magic = ZSTD_MAGIC if compression == "zstd" else LZ4_MAGIC
    (_, prefix, _), *_ = frames(data, magic)
    with pytest.raises(zstdpool.OutputLimitError, match=rf"declares {declared} bytes.*max_buffer"):
        ipc.read_stream(patched(data, prefix, "<q", declared))


def test_zstd_frame_size_is_checked_before_allocating_even_with_no_limits():
    """With the limits out of the way, a prefix that disagrees with the zstd frame's own
    content size is still caught before anything is allocated."""
    _, data = one_big_buffer("zstd")
    (_, prefix, _), *_ = frames(data)
    with pytest.raises(zstdpool.DecompressionError, match="frame holds 320000 bytes"):
        ipc.read_stream(
            patched(data, prefix, "<q", 1 << 45), max_buffer_size=1 << 62, max_batch_size=1 << 62
        )


def test_zero_threads_is_a_parameter_error():
    stream = write_zstdpool(sample_batches())
    file = write_zstdpool(sample_batches(), fmt="file")
    for opener, data in [
        (ipc.open_stream, stream),
        (ipc.read_stream, stream),
        (ipc.open_file, file),
        (ipc.read_file, file),
    ]:
        with pytest.raises(zstdpool.ParameterError, match="threads"):
            opener(data, threads=0)
