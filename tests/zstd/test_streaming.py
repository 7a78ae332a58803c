"""zstdpool.zstd's compressor and decompressor objects: round trips in every mode, frames
read by compression.zstd (or backports.zstd) and python-zstandard and theirs read here, the
pool's accounting after short-lived, abandoned and failed objects, hostile frames,
``max_length``, options, and threads sharing an object."""

from __future__ import annotations

import gc
import os
import random
import sys
import threading

import pytest
import zstdpool
from hypothesis import given, settings
from hypothesis import strategies as st
from zstdpool import zstd

if sys.version_info >= (3, 14):
    from compression import zstd as peer
else:
    peer = pytest.importorskip("backports.zstd")

DATA = b"".join(b"line %d of the data, some of it repeated\n" % (i % 500) for i in range(20000))


def test_one_shot_frames_are_read_by_the_peers_and_theirs_here() -> None:
    ours = zstd.compress(DATA, level=5)
    assert peer.decompress(ours) == DATA
    assert zstd.decompress(peer.compress(DATA, level=5)) == DATA
    zstandard = pytest.importorskip("zstandard")
    assert zstandard.ZstdDecompressor().decompress(ours) == DATA
    framed = zstandard.ZstdCompressor(level=3).compress(DATA)
    assert zstd.decompress(framed) == DATA
    # With its size in the header, as compression.zstd writes it.
    assert zstd.get_frame_info(ours).decompressed_size == len(DATA)
    assert zstd.get_frame_size(ours + b"tail") == len(ours)


@pytest.mark.parametrize(
    "modes",
    [
        [zstd.ZstdCompressor.CONTINUE],
        [zstd.ZstdCompressor.FLUSH_BLOCK],
        [zstd.ZstdCompressor.CONTINUE, zstd.ZstdCompressor.FLUSH_BLOCK],
        [zstd.ZstdCompressor.FLUSH_FRAME],
    ],
)
def test_every_mode_round_trips(modes: list[int]) -> None:
    c = zstd.ZstdCompressor(level=3)
    out = []
    for i in range(0, len(DATA), 70000):
        mode = modes[(i // 70000) % len(modes)]
        out.append(c.compress(DATA[i : i + 70000], mode))
        assert c.last_mode == mode
        if mode == zstd.ZstdCompressor.FLUSH_BLOCK:
            # Everything taken so far can be read now.
            got = zstd.ZstdDecompressor().decompress(b"".join(out))
            assert got == DATA[: i + 70000][: len(got)] and len(got) == min(i + 70000, len(DATA))
    out.append(c.flush())
    assert c.last_mode == zstd.ZstdCompressor.FLUSH_FRAME
    framed = b"".join(out)
    assert zstd.decompress(framed) == DATA
    assert peer.decompress(framed) == DATA


def test_frames_in_a_row_and_skippable_frames() -> None:
    c = zstd.ZstdCompressor()
    one = c.compress(b"first", zstd.ZstdCompressor.FLUSH_FRAME)
    two = c.compress(b"second", zstd.ZstdCompressor.FLUSH_FRAME)
    skippable = (0x184D2A50).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
    assert zstd.decompress(one + skippable + two) == b"firstsecond"
    d = zstd.ZstdDecompressor()
    assert d.decompress(one + two) == b"first"
    assert d.eof and not d.needs_input and d.unused_data == two
    with pytest.raises(EOFError, match="Already at the end"):
        d.decompress(b"")


def test_max_length_bounds_each_call() -> None:
    frame = zstd.compress(DATA)
    d = zstd.ZstdDecompressor()
    got = [d.decompress(frame, 1000)]
    assert len(got[0]) == 1000 and not d.needs_input and not d.eof
    while not d.eof:
        part = d.decompress(b"", 4096)
        assert len(part) <= 4096
        got.append(part)
    assert b"".join(got) == DATA and d.unused_data == b""
    # A frame fed a byte at a time.
    d = zstd.ZstdDecompressor()
    out = b"".join(d.decompress(frame[i : i + 1]) for i in range(len(frame)))
    assert out == DATA and d.eof
    assert zstd.ZstdDecompressor().decompress(frame, 0) == b""


@pytest.mark.parametrize("limit", [-1, 131_584, 131_585, 300_000, 5 << 20])
def test_output_past_the_first_room_grows_in_place_and_is_exact(limit: int) -> None:
    # The bytes returned are decompressed into where they end up, grown as zstd fills them:
    # outputs across several growths, and bounds just around the first room (128 KiB + 512).
    data = b"".join(i.to_bytes(4, "little") * (1 + i % 7) for i in range(400_000))
    frame = zstd.compress(data, 3)
    d = zstd.ZstdDecompressor()
    got = [d.decompress(frame, limit)]
    while not d.eof:
        got.append(d.decompress(b"", limit))
    sizes = [len(g) for g in got]
    if limit > 0:
        assert all(n <= limit for n in sizes) and all(n == limit for n in sizes[:-1])
    else:
        assert len(got) == 1
    assert b"".join(got) == data and type(got[0]) is bytes


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({}, id="one thread"),
        pytest.param(
            {zstd.CompressionParameter.nb_workers: 2},
            id="workers",
            marks=pytest.mark.skipif(
                zstd.CompressionParameter.nb_workers.bounds() == (0, 0), reason="no zstdmt"
            ),
        ),
    ],
)
def test_compressed_output_is_exact_whatever_each_call_emits(options: dict[int, int]) -> None:
    # Each call's output is built in the bytes returned, with room for the input's bound and a
    # block's more: output past that (with workers, jobs compressed during earlier calls and
    # emitted by a flush) grows it. Every output is exactly what was written, and a block
    # flush has emitted everything given so far.
    rng = random.Random(7)
    noise = rng.randbytes((3 << 20) + 1000)
    pieces = [DATA[:1], noise[:200_000], noise, b"", DATA * 3, DATA[:70_000]]
    c = zstd.ZstdCompressor(options=options)
    d = peer.ZstdDecompressor()
    given = read = b""
    out = []
    for i, piece in enumerate(pieces):
        mode = (zstd.ZstdCompressor.CONTINUE, zstd.ZstdCompressor.FLUSH_BLOCK)[i % 2]
        out.append(c.compress(piece, mode))
        given += piece
        read += d.decompress(out[-1])
        if mode == zstd.ZstdCompressor.FLUSH_BLOCK:
            assert read == given, f"call {i}: {len(read)} of {len(given)} bytes readable"
    out.append(c.flush())
    read += d.decompress(out[-1])
    assert d.eof and read == given
    assert all(type(o) is bytes for o in out)
    assert sum(map(len, out)) > len(noise)


def test_hostile_frames_raise_zstd_errors() -> None:
    frame = zstd.compress(DATA)
    with pytest.raises(zstd.ZstdError):
        zstd.decompress(frame[:-5])
    with pytest.raises(zstd.ZstdError):
        zstd.decompress(b"\x28\xb5\x2f\xfd" + b"\xff" * 40)
    corrupt = bytearray(frame)
    corrupt[len(corrupt) // 2] ^= 0xFF
    with pytest.raises(zstd.ZstdError):
        zstd.decompress(bytes(corrupt))
    # A frame that claims a huge window is refused by window_log_max.
    # (Streamed, so that the size is unknown and zstd keeps the window asked for.)
    c = zstd.ZstdCompressor(options={zstd.CompressionParameter.window_log: 27})
    big_window = c.compress(DATA) + c.flush()
    assert zstd.decompress(big_window) == DATA
    with pytest.raises(zstd.ZstdError):
        zstd.decompress(big_window, options={zstd.DecompressionParameter.window_log_max: 20})
    with pytest.raises(zstd.ZstdError, match="header"):
        zstd.get_frame_info(b"\x00\x01")


def test_short_lived_objects_reuse_pooled_contexts() -> None:
    pool = zstdpool.ContextPool()
    for i in range(1000):
        c = zstd.ZstdCompressor(level=4, pool=pool)
        frame = c.compress(b"message %d" % i) + c.flush()
        d = zstd.ZstdDecompressor(pool=pool)
        assert d.decompress(frame) == b"message %d" % i
    stats = pool.stats()
    assert stats["created"] <= 2 and stats["leased"] == 0
    # Abandoned mid-frame, and failed: their contexts come back.
    c = zstd.ZstdCompressor(level=4, pool=pool)
    c.compress(DATA[:1000])
    d = zstd.ZstdDecompressor(pool=pool)
    d.decompress(zstd.compress(DATA)[:100])
    assert pool.stats()["leased"] == 2
    del c, d
    gc.collect()
    assert pool.stats()["leased"] == 0
    d = zstd.ZstdDecompressor(pool=pool)
    with pytest.raises(zstd.ZstdError):
        d.decompress(b"\x28\xb5\x2f\xfd" + b"\xff" * 40)
    assert pool.stats()["leased"] == 0
    # A compressor that ended its frame holds nothing between frames.
    c = zstd.ZstdCompressor(pool=pool)
    c.compress(b"x", zstd.ZstdCompressor.FLUSH_FRAME)
    assert pool.stats()["leased"] == 0


def test_options_key_the_pool_and_change_the_frames() -> None:
    pool = zstdpool.ContextPool()
    p = zstd.CompressionParameter
    checked = zstd.ZstdCompressor(options={p.checksum_flag: 1, p.compression_level: 6}, pool=pool)
    frame = checked.compress(DATA, zstd.ZstdCompressor.FLUSH_FRAME)
    assert frame != zstd.compress(DATA, level=6)
    assert peer.decompress(frame) == DATA
    # Each option does what it does in compression.zstd: with the same zstd (1.5.7 in both),
    # the frames are the same bytes, and differ from the level's own.
    same_zstd = peer.zstd_version_info == zstd.zstd_version_info
    rng = random.Random(5)
    varied = b"".join(
        b"%d,%s,%d\n"
        % (i, rng.choice([b"alpha", b"beta", b"gamma"]) * rng.randint(1, 3), rng.getrandbits(20))
        for i in range(30000)
    )
    plain = zstd.compress(varied)
    for options in [
        {p.strategy: zstd.Strategy.btlazy2},
        {p.hash_log: 12},
        {p.strategy: zstd.Strategy.lazy2, p.chain_log: 12, p.search_log: 1},
        {p.min_match: 7, p.target_length: 64},
        {p.enable_long_distance_matching: 1, p.ldm_hash_log: 20, p.ldm_min_match: 32},
        {p.compression_level: 19, p.enable_long_distance_matching: 2},
        {p.checksum_flag: 1},
        {p.content_size_flag: 0},
    ]:
        f = zstd.compress(varied, options=options)
        assert zstd.decompress(f) == varied
        assert f != plain, options
        if same_zstd:
            assert f == peer.compress(varied, options=options), options
    info = zstd.get_frame_info(zstd.compress(DATA, options={p.content_size_flag: 0}))
    assert (info.decompressed_size, info.dictionary_id) == (None, 0)
    with pytest.raises(AttributeError):
        info.dictionary_id = 5  # type: ignore[misc]
    # A 2 GiB window (zstd's largest) is read when the reader is told to accept it.
    c = zstd.ZstdCompressor(options={p.window_log: 31})
    huge_window = c.compress(DATA) + c.flush()
    big_reader = {zstd.DecompressionParameter.window_log_max: 31}
    assert zstd.decompress(huge_window, options=big_reader) == DATA
    assert peer.decompress(huge_window, options=big_reader) == DATA
    lo, hi = p.compression_level.bounds()
    assert lo < 0 < hi
    with pytest.raises(
        ValueError,
        match=r"'window_log' received an illegal value 99; the valid range is \[10, 31\]",
    ):
        zstd.ZstdCompressor(options={p.window_log: 99})
    with pytest.raises(TypeError, match="Only one of level or options"):
        zstd.ZstdCompressor(level=3, options={})
    with pytest.raises(TypeError, match="DecompressionParameter"):
        zstd.ZstdCompressor(options={zstd.DecompressionParameter.window_log_max: 20})
    with pytest.raises(ValueError, match="mode argument wrong value"):
        zstd.ZstdCompressor().compress(b"", 7)


@pytest.mark.skipif(zstd.CompressionParameter.nb_workers.bounds() == (0, 0), reason="no zstdmt")
def test_worker_threads_compress_and_are_pooled() -> None:
    pool = zstdpool.ContextPool()
    big = os.urandom(1 << 20) + DATA * 4
    opts = {zstd.CompressionParameter.nb_workers: 2}
    for _ in range(3):
        c = zstd.ZstdCompressor(options=opts, pool=pool)
        frame = c.compress(big) + c.flush()
        assert peer.decompress(frame) == big
    assert pool.stats()["created"] == 1 and pool.stats()["leased"] == 0
    # The key names the parameter, so a context with workers is told apart from one without.
    zstd.ZstdCompressor(pool=pool).compress(b"x", zstd.ZstdCompressor.FLUSH_FRAME)
    keys = sorted(
        ((k["options"], k["idle"]) for k in pool.stats()["per_key"] if k["kind"] == "compress"),
        key=lambda key: len(key[0]),
    )
    assert keys == [({}, 1), ({"nb_workers": 2}, 1)]


@pytest.mark.skipif(zstd.CompressionParameter.nb_workers.bounds() == (0, 0), reason="no zstdmt")
def test_a_failed_frame_on_worker_threads_does_not_spoil_the_pool() -> None:
    """zstd can keep a stale job after a failure with workers; the context is freed, not
    handed to the next user, whose frames are then whole."""
    pool = zstdpool.ContextPool()
    opts = {zstd.CompressionParameter.nb_workers: 2}
    c = zstd.ZstdCompressor(options=opts, pool=pool)
    c.set_pledged_input_size(1 << 20)
    with pytest.raises(zstd.ZstdError, match="Src size is incorrect"):
        c.compress(b"x" * ((1 << 20) + 1))
        c.flush()
    assert pool.stats()["leased"] == 0 and pool.stats()["idle"] == 0
    for _ in range(3):
        frame = zstd.ZstdCompressor(options=opts, pool=pool).compress(
            DATA, zstd.ZstdCompressor.FLUSH_FRAME
        )
        assert peer.decompress(frame) == DATA
    assert pool.stats()["created"] == 2


def test_dictionaries() -> None:
    samples = [b"record %d: name=%d kind=a" % (i, i * 7) for i in range(2000)]
    d = zstd.train_dict(samples, 4096)
    assert isinstance(d, zstdpool.ZstdDict)
    for form in (d, d.as_digested_dict, d.as_undigested_dict):
        frame = zstd.compress(samples[5], zstd_dict=form)
        assert zstd.get_frame_info(frame).dictionary_id == d.dict_id
        assert zstd.decompress(frame, zstd_dict=d) == samples[5]
        assert peer.decompress(frame, zstd_dict=peer.ZstdDict(d.dict_content)) == samples[5]
    # A prefix: no id in the frame, and the reader needs the same prefix (theirs too).
    frame = zstd.compress(samples[7], zstd_dict=d.as_prefix)
    assert zstd.get_frame_info(frame).dictionary_id == 0
    assert zstd.decompress(frame, zstd_dict=d.as_prefix) == samples[7]
    theirs = peer.ZstdDict(d.dict_content)
    assert peer.decompress(frame, zstd_dict=theirs.as_prefix) == samples[7]
    assert (
        zstd.decompress(
            peer.compress(samples[8], zstd_dict=theirs.as_prefix), zstd_dict=d.as_prefix
        )
        == samples[8]
    )
    with pytest.raises(zstd.ZstdError):
        zstd.decompress(frame)
    # The prefix serves a compressor's first frame only, as compression.zstd's does; the
    # pooled context's next user writes without it.
    pool = zstdpool.ContextPool()
    c = zstd.ZstdCompressor(zstd_dict=d.as_prefix, pool=pool)
    theirs_c = peer.ZstdCompressor(zstd_dict=theirs.as_prefix)
    same_zstd = peer.zstd_version_info == zstd.zstd_version_info
    for i in (9, 10):
        ours_frame = c.compress(samples[i], zstd.ZstdCompressor.FLUSH_FRAME)
        theirs_frame = theirs_c.compress(samples[i], peer.ZstdCompressor.FLUSH_FRAME)
        assert ours_frame == theirs_frame or not same_zstd
    # The second frame needs no prefix.
    assert peer.decompress(ours_frame) == samples[10]
    plain = zstd.ZstdCompressor(pool=pool).compress(samples[9], zstd.ZstdCompressor.FLUSH_FRAME)
    assert pool.stats()["created"] == 1
    assert peer.decompress(plain) == samples[9]
    with pytest.raises(TypeError, match="ZstdDict"):
        zstd.ZstdCompressor(zstd_dict=b"not a dict")


def test_pledged_sizes_are_written_and_checked() -> None:
    c = zstd.ZstdCompressor()
    c.set_pledged_input_size(len(DATA))
    frame = c.compress(DATA) + c.flush()
    assert zstd.get_frame_info(frame).decompressed_size == len(DATA)
    # Given whole with FLUSH_FRAME, zstd writes the size it is given (as compression.zstd).
    c.set_pledged_input_size(10)
    frame = c.compress(b"x" * 11, zstd.ZstdCompressor.FLUSH_FRAME)
    assert zstd.get_frame_info(frame).decompressed_size == 11
    # Given in pieces, the pledge is checked; the frame is abandoned and the next one is whole.
    c.set_pledged_input_size(10)
    with pytest.raises(zstd.ZstdError, match="Src size is incorrect"):
        c.compress(b"x" * 11)
    assert c.last_mode == zstd.ZstdCompressor.FLUSH_FRAME
    assert zstd.decompress(c.compress(b"ok", zstd.ZstdCompressor.FLUSH_FRAME)) == b"ok"
    c.compress(b"abc")
    with pytest.raises(ValueError, match="last_mode == FLUSH_FRAME"):
        c.set_pledged_input_size(5)


def test_threads_share_one_compressor_in_turn() -> None:
    """Calls from several threads are serialized: each thread's FLUSH_FRAME call is a whole
    frame."""
    c = zstd.ZstdCompressor()
    frames: list[bytes] = []
    lock = threading.Lock()

    def work(n: int) -> None:
        for i in range(50):
            f = c.compress(b"thread %d message %d" % (n, i), zstd.ZstdCompressor.FLUSH_FRAME)
            with lock:
                frames.append(f)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = sorted(zstd.decompress(f) for f in frames)
    assert got == sorted(b"thread %d message %d" % (n, i) for n in range(4) for i in range(50))


def test_threads_use_the_module_functions_at_once() -> None:
    """The module functions hold no lock while zstd runs: threads call them together (at
    once on a free-threaded build), each gets its own data back, and no lease is left."""
    pool_before = zstdpool.pool_stats()["leased"]
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def work(n: int) -> None:
        try:
            start.wait()
            for i in range(200):
                data = DATA[i * 97 : i * 97 + 4000 + n] + b"%d/%d" % (n, i)
                frame = zstd.compress(data, level=1 + (i % 5))
                assert zstd.decompress(frame) == data
                assert peer.decompress(frame) == data
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert zstdpool.pool_stats()["leased"] == pool_before


@settings(max_examples=40, deadline=None)
@given(
    pieces=st.lists(st.binary(max_size=5000), max_size=8),
    modes=st.lists(st.sampled_from([0, 1]), min_size=1, max_size=4),
    limit=st.integers(min_value=1, max_value=7000),
    level=st.integers(min_value=-5, max_value=9),
)
def test_any_chunking_reads_back_as_written(
    pieces: list[bytes], modes: list[int], limit: int, level: int
) -> None:
    c = zstd.ZstdCompressor(level=level)
    frame = b"".join(c.compress(p, modes[i % len(modes)]) for i, p in enumerate(pieces))
    frame += c.flush()
    data = b"".join(pieces)
    assert peer.decompress(frame) == data
    d = zstd.ZstdDecompressor()
    out = [d.decompress(frame, limit)]
    while not d.eof:
        out.append(d.decompress(b"", limit))
        assert len(out[-1]) <= limit
    assert b"".join(out) == data
