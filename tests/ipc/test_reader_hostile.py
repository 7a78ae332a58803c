"""Damaged input: every truncation, random byte flips, corrupt zstd and lz4 frames, and
bodies that declare more than the input holds all end in a zstdpool error.
"""

from __future__ import annotations

import io
import random
import struct

import pyarrow as pa
import pyarrow.ipc
import pytest
import zstdpool
from zstdpool import ipc

from tests.helpers.ipc_reader import (
    CODECS,
    LZ4_MAGIC,
    WRITERS,
    buffer_list,
    dictionary_batches,
    fb_deref,
    fb_field,
    frames,
    leased,
    messages,
    one_big_buffer,
    patched,
    read_stream_batches,
    sample_batches,
    write,
    write_pyarrow,
    write_zstdpool,
    zstd_block_header,
)
from tests.helpers.peers import np


def buffer_number(stream: bytes, prefix: int) -> int:
    """The index, in its message's buffer list, of the buffer whose prefix is at `prefix`."""
    for _, start, body, length in messages(stream):
        if body <= prefix < body + length:
            msg = pa.ipc.read_message(pa.py_buffer(stream[start:]))
            spans = buffer_list(msg.metadata.to_pybytes())
            # Empty buffers may share the offset of the next one: match a non-empty buffer.
            return next(i for i, (o, n) in enumerate(spans) if o == prefix - body and n > 0)
    raise AssertionError("prefix outside every body")


def small_hostile_sample():
    """Several small batches with a dictionary column and strings, that compress (so that the
    body holds real zstd frames): a stream of a few KB."""
    return sample_batches(sizes=(40, 0, 30, 25), seed=7)


def _mapped(data: bytes, path) -> pa.MemoryMappedFile:
    """`data` written to `path` and memory-mapped (a source as pyarrow users pass it)."""
    path.write_bytes(data)
    return pa.memory_map(str(path))


def _read_or_error(data: bytes, fmt: str, how: str, mapped_at=None):
    """Reads `data` fully (through a memory map at `mapped_at`, if given); returns the
    batches, or the zstdpool error. Any other exception propagates (and fails the test)."""
    source = data if mapped_at is None else _mapped(data, mapped_at)
    try:
        if fmt == "stream":
            with ipc.open_stream(source) as r:
                _ = r.schema
                batches = list(r)
        else:
            with ipc.open_file(source) as r:
                _ = r.schema, r.metadata
                batches = [r.get_batch(i) for i in reversed(range(len(r)))][::-1]
    except zstdpool.ZstdError as e:
        return e
    except Exception as e:
        known = ("C Data interface error", "Invalid or unsupported format string")
        hint = " (the known bug of SCHEMA_EXPORT_BUG)" if any(k in str(e) for k in known) else ""
        raise AssertionError(f"{how}: {type(e).__name__}: {e}{hint}") from e
    for i, b in enumerate(batches):
        try:
            b.validate(full=True)
        except Exception as e:
            raise AssertionError(f"{how}: batch {i} is invalid: {e}") from e
    return batches


def _assert_prefix(batches, expected, how):
    assert len(batches) <= len(expected), how
    for i, (g, e) in enumerate(zip(batches, expected, strict=False)):
        assert g.equals(e), f"{how}: batch {i} differs"


@pytest.mark.parametrize(
    "writer, sample",
    [("pyarrow", "sample"), ("zstdpool", "sample"), ("pyarrow", "deltas"), ("zstdpool", "deltas")],
)
def test_every_truncation_of_a_stream(writer, sample):
    if sample == "sample":
        expected = small_hostile_sample()
        data = write(writer, expected, compression="zstd")
        assert 1000 < len(data) < 8000, len(data)
        assert frames(data), "the sample must hold zstd frames"
    else:  # a dictionary that grows (a delta), then is replaced
        expected = dictionary_batches()
        data = write(writer, expected, compression="zstd", deltas=True)
    whole = 0
    for cut in range(len(data)):
        got = _read_or_error(data[:cut], "stream", f"cut at {cut}")
        if not isinstance(got, Exception):
            _assert_prefix(got, expected, f"cut at {cut}")
            whole += len(got) == len(expected)
    assert whole >= 1  # the cut that only drops the end-of-stream marker
    assert leased() == 0


def test_truncations_through_a_file_object():
    expected = small_hostile_sample()
    data = write_zstdpool(expected, compression="zstd")
    for cut in range(0, len(data), 5):
        try:
            got = read_stream_batches(io.BytesIO(data[:cut]))
        except zstdpool.ZstdError:
            continue
        _assert_prefix(got, expected, f"cut at {cut}")


@pytest.mark.parametrize("source", ["bytes", "memory_map"])
@pytest.mark.parametrize("writer", WRITERS)
def test_every_truncation_of_a_file(writer, source, tmp_path):
    expected = small_hostile_sample()
    data = write(writer, expected, fmt="file", compression="zstd")
    mapped_at = tmp_path / "cut.arrow" if source == "memory_map" else None
    for cut in range(len(data)):
        if mapped_at is not None and cut == 0:
            continue  # an empty file cannot be mapped (pyarrow refuses it)
        got = _read_or_error(data[:cut], "file", f"cut at {cut}", mapped_at)
        assert isinstance(got, zstdpool.IpcError), f"cut at {cut}: {got!r}"
    assert leased() == 0


def _flips(data: bytes, seed: int, count: int):
    """`count` corruptions of `data`: mostly one byte xor-ed, some several bytes."""
    rng = random.Random(seed)
    for k in range(count):
        bad = bytearray(data)
        spots = [rng.randrange(len(data)) for _ in range(1 if k % 4 else rng.randint(2, 6))]
        for at in spots:
            bad[at] ^= rng.choice([0x01, 0x80, 0xFF, rng.randint(1, 255)])
        yield spots, bytes(bad)


@pytest.mark.parametrize("source", ["bytes", "memory_map"])
@pytest.mark.parametrize("fmt", ["stream", "file"])
@pytest.mark.parametrize("compression", ["zstd", "lz4", None], ids=str)
def test_random_byte_flips(fmt, compression, source, tmp_path):
    expected = small_hostile_sample()
    data = write_zstdpool(expected, fmt=fmt, compression=compression)
    outcomes = {"table": 0, "error": 0}
    seed = 10 * ["stream", "file"].index(fmt) + CODECS.index(compression)
    mapped_at = tmp_path / "flipped.arrow" if source == "memory_map" else None
    for spots, bad in _flips(data, seed=seed, count=300):
        got = _read_or_error(bad, fmt, f"flips at {spots}", mapped_at)
        outcomes["error" if isinstance(got, Exception) else "table"] += 1
    assert outcomes["error"] > 0
    assert leased() == 0


def test_random_byte_flips_pyarrow_written_zstd():
    expected = small_hostile_sample()
    for fmt in ("stream", "file"):
        data = write_pyarrow(expected, fmt=fmt, compression="zstd")
        for spots, bad in _flips(data, seed=11, count=200):
            _read_or_error(bad, fmt, f"{fmt}: flips at {spots}")


def test_zstd_content_size_disagreeing_with_prefix():
    expected = small_hostile_sample()
    data = write_zstdpool(expected, compression="zstd")
    for _, prefix, _ in frames(data):
        (n,) = struct.unpack_from("<q", data, prefix)
        for wrong in (n - 1, n + 1, n + 8, 0):
            with pytest.raises(zstdpool.DecompressionError, match="prefix declares"):
                ipc.read_stream(patched(data, prefix, "<q", wrong))
    assert leased() == 0


@pytest.mark.parametrize("fmt", ["stream", "file"])
def test_corrupt_zstd_frame_names_batch_and_buffer(fmt):
    batches = sample_batches(sizes=(500, 500, 500))
    data = write_zstdpool(batches, fmt=fmt, compression="zstd")
    offset = 8 if fmt == "file" else 0  # a file's messages follow "ARROW1\0\0"
    messages_part = data[offset:]
    prefix, frame = next((p, f) for b, p, f in frames(messages_part) if b == 1)
    bad = bytearray(data)
    bad[offset + zstd_block_header(messages_part, frame)] |= 0b110  # block type 3: reserved
    pattern = rf"record batch 1: buffer {buffer_number(messages_part, prefix)}: .*corrupt"
    if fmt == "stream":
        with ipc.open_stream(bytes(bad)) as r:
            assert next(r).equals(batches[0])  # batch 0 is intact and read first
            with pytest.raises(zstdpool.DecompressionError, match=pattern):
                next(r)
            assert leased() == 0  # an error ends the reader and returns its context
            assert next(r, None) is None
    else:
        with ipc.open_file(bytes(bad)) as r:
            assert r.get_batch(2).equals(batches[2])
            assert r.get_batch(0).equals(batches[0])
            with pytest.raises(zstdpool.DecompressionError, match=pattern):
                r.get_batch(1)
            assert r.get_batch(-1).equals(batches[2])  # the file reader reads on


def test_corrupt_lz4_frame():
    batch, data = one_big_buffer("lz4")
    (_, _, frame), *_ = frames(data, LZ4_MAGIC)
    bad = bytearray(data)
    for i in range(frame + 12, frame + 40):
        bad[i] ^= 0x5A
    with pytest.raises(zstdpool.DecompressionError, match="record batch 0: buffer"):
        ipc.read_stream(bytes(bad))
    (n,) = struct.unpack_from("<q", data, frame - 8)
    with pytest.raises(zstdpool.DecompressionError):
        ipc.read_stream(patched(data, frame - 8, "<q", n + 8))


def test_corrupt_dictionary_frame():
    batches = sample_batches(sizes=(50,), seed=2)
    # A dictionary big enough to compress.
    words = pa.array([f"word-{i:05d}" for i in range(2000)])
    d = pa.DictionaryArray.from_arrays(pa.array(np.arange(50, dtype=np.int32)), words)
    batch = pa.record_batch({"d": d, "i": batches[0].column(0)})
    for fmt in ("stream", "file"):
        data = write_zstdpool([batch], fmt=fmt, compression="zstd")
        offset = 8 if fmt == "file" else 0
        messages_part = data[offset:]
        prefix, frame = next((p, f) for b, p, f in frames(messages_part) if b == -1)
        bad = bytearray(data)
        bad[offset + zstd_block_header(messages_part, frame)] |= 0b110
        read = ipc.read_stream if fmt == "stream" else ipc.read_file
        number = buffer_number(messages_part, prefix)
        with pytest.raises(zstdpool.DecompressionError, match=f"buffer {number}: ") as info:
            read(bytes(bad))
        if fmt == "file":
            assert "dictionary 0" in str(info.value)


def _message_body_length_field(data: bytes, start: int) -> int:
    """The position of Message.bodyLength (field 3) of the message framed at `start`."""
    (n,) = struct.unpack_from("<i", data, start)
    meta_start = start + (8 if n == -1 else 4)
    meta = data[meta_start:]
    return meta_start + fb_field(meta, fb_deref(meta, 0), 3)


@pytest.mark.parametrize("declared", [1 << 31, (4 << 30) - 8, (4 << 30) + 8, -8])
@pytest.mark.parametrize("source", ["bytes", "BytesIO", "memory_map"])
def test_huge_body_length_on_a_short_input(source, declared, tmp_path):
    """A message that declares gigabytes of body on a small input: refused (by the limit, or
    as truncated input) without reserving the declared size."""
    batches = sample_batches()
    data = write_zstdpool(batches, compression="zstd")
    _, start, _, _ = next(m for m in messages(data) if m[0] == "record batch")
    bad = patched(data, _message_body_length_field(data, start), "<q", declared)

    def src():
        if source == "memory_map":
            return _mapped(bad, tmp_path / "huge.arrow")
        return bad if source == "bytes" else io.BytesIO(bad)

    error = zstdpool.OutputLimitError if declared > 4 << 30 else zstdpool.IpcError
    with ipc.open_stream(src()) as r, pytest.raises(error):
        list(r)
    # A lower limit turns each positive one into an OutputLimitError.
    if declared > 0:
        with pytest.raises(zstdpool.OutputLimitError, match="max_batch_size"):
            ipc.read_stream(src(), max_batch_size=1 << 20)
