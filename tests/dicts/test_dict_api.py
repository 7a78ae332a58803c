"""ZstdDict, train_dict and finalize_dict, and zstd_dict= on every codec function: round
trips, what frames record, pickling, and every bad input with its exception and message."""

from __future__ import annotations

import gc
import pickle

import pytest
import zstdpool
from hypothesis import given
from hypothesis import strategies as st
from zstdpool import DecompressionError, OutputLimitError, ParameterError

from tests.dicts.conftest import RECORDS, TRAIN
from tests.helpers.codec import quick
from tests.helpers.peers import bzstd


def test_a_trained_dictionary_has_an_id_and_its_content(trained: zstdpool.ZstdDict) -> None:
    assert trained.dict_id != 0 and not trained.is_raw
    assert 1000 < len(trained) <= 16 * 1024 == 16384
    assert trained.dict_content[:4] == (0xEC30A437).to_bytes(4, "little")
    assert trained.dict_content is trained.dict_content, "made once"
    assert f"dict_id={trained.dict_id}" in repr(trained)
    assert zstdpool.ZstdDict(trained.dict_content).dict_id == trained.dict_id


def test_small_records_compress_smaller_with_the_dictionary(trained: zstdpool.ZstdDict) -> None:
    with_dict = sum(len(zstdpool.compress(r, 3, zstd_dict=trained)) for r in RECORDS)
    without = sum(len(zstdpool.compress(r, 3)) for r in RECORDS)
    # Measured on records the dictionary was not trained on.
    assert with_dict * 2 < without, (with_dict, without)


@quick
@given(
    size=st.integers(0, 8192),
    seed=st.integers(0, 10**6),
    level=st.sampled_from([-5, 1, 3, 9, 19]),
    use_dict=st.booleans(),
)
def test_round_trips_at_any_size_and_level(
    trained: zstdpool.ZstdDict, size: int, seed: int, level: int, use_dict: bool
) -> None:
    record = (RECORDS[seed % len(RECORDS)] * (size // 900 + 1))[:size]
    d = trained if use_dict else None
    frame = zstdpool.compress(record, level, zstd_dict=d)
    assert zstdpool.decompress(frame, zstd_dict=d) == record
    out = bytearray(size + 10)
    assert zstdpool.decompress_into(frame, out, zstd_dict=d) == size
    assert bytes(out[:size]) == record
    # Another implementation reads it with the same dictionary.
    other_impl = bzstd.ZstdDict(trained.dict_content) if use_dict else None
    assert bzstd.decompress(frame, zstd_dict=other_impl) == record


def test_reused_contexts_write_byte_identical_frames(
    trained: zstdpool.ZstdDict, other: zstdpool.ZstdDict, raw: zstdpool.ZstdDict
) -> None:
    pool = zstdpool.ContextPool(max_idle_per_key=1)
    record = RECORDS[0]
    first = zstdpool.compress(record, 3, zstd_dict=trained, pool=pool)
    plain = zstdpool.compress(record, 3, pool=pool)
    for d in (other, None, raw, trained, other):
        zstdpool.compress(bytes(1 << 20), 3, zstd_dict=d, pool=pool)
        zstdpool.compress(record, 3, zstd_dict=d, pool=pool)
    assert pool.stats()["created"] == 1, "one context went through every dictionary"
    assert zstdpool.compress(record, 3, zstd_dict=trained, pool=pool) == first
    assert zstdpool.compress(record, 3, pool=pool) == plain
    with zstdpool.compressor(3, zstd_dict=trained, pool=pool) as c:
        assert c.compress(record) == first and c.zstd_dict is trained
    fresh = zstdpool.ContextPool()
    assert zstdpool.compress(record, 3, zstd_dict=trained, pool=fresh) == first


def test_frames_record_the_dictionary_id_unless_told_not_to(trained: zstdpool.ZstdDict) -> None:
    frame = zstdpool.compress(RECORDS[1], zstd_dict=trained)
    assert bzstd.get_frame_info(frame).dictionary_id == trained.dict_id
    bare = zstdpool.compress(RECORDS[1], zstd_dict=trained, write_dict_id=False)
    assert bzstd.get_frame_info(bare).dictionary_id == 0
    assert len(bare) < len(frame)
    assert zstdpool.decompress(bare, zstd_dict=trained) == RECORDS[1]
    with zstdpool.compressor(zstd_dict=trained, write_dict_id=False) as c:
        assert c.compress(RECORDS[1]) == bare and not c.write_dict_id


def test_leases_and_many_take_the_dictionary(trained: zstdpool.ZstdDict) -> None:
    with zstdpool.compressor(5, zstd_dict=trained) as c:
        frames = [c.compress(r) for r in RECORDS[:20]]
    with zstdpool.decompressor(zstd_dict=trained) as d:
        assert d.zstd_dict is trained
        assert [d.decompress(f) for f in frames] == list(RECORDS[:20])
    many = zstdpool.compress_many(RECORDS, 5, zstd_dict=trained, threads=2)
    assert many[:20] == frames
    assert zstdpool.decompress_many(many, zstd_dict=trained, threads=2) == list(RECORDS)


def test_a_missing_or_wrong_dictionary_is_named(
    trained: zstdpool.ZstdDict, other: zstdpool.ZstdDict, raw: zstdpool.ZstdDict
) -> None:
    frame = zstdpool.compress(RECORDS[2], zstd_dict=trained)
    wanted = trained.dict_id
    with pytest.raises(DecompressionError, match=f"dictionary of id {wanted}: pass that"):
        zstdpool.decompress(frame)
    with pytest.raises(DecompressionError, match=f"id {wanted}, but zstd_dict has id"):
        zstdpool.decompress(frame, zstd_dict=other)
    with pytest.raises(DecompressionError, match="raw content, which has no id"):
        zstdpool.decompress_into(frame, bytearray(5000), zstd_dict=raw)
    with pytest.raises(DecompressionError, match=r"buffers\[1\]: .*dictionary of id"):
        zstdpool.decompress_many([zstdpool.compress(b"x"), frame])
    with zstdpool.decompressor(zstd_dict=other) as d, pytest.raises(DecompressionError):
        d.decompress(frame)
    # Nothing leaks on the failing paths (the autouse fixture checks the default pool).
    gc.collect()
    assert zstdpool.pool_stats()["leased"] == 0


def test_limits_hold_with_a_dictionary(trained: zstdpool.ZstdDict) -> None:
    frame = zstdpool.compress(RECORDS[3], zstd_dict=trained)
    with pytest.raises(OutputLimitError, match="max_output_size"):
        zstdpool.decompress(frame, zstd_dict=trained, max_output_size=10)
    with pytest.raises(OutputLimitError):
        zstdpool.decompress_into(frame, bytearray(10), zstd_dict=trained)


def test_raw_dictionaries_work_both_ways(raw: zstdpool.ZstdDict) -> None:
    assert raw.dict_id == 0 and raw.is_raw
    assert repr(raw) == f"<ZstdDict dict_id=0 dict_size={len(raw.dict_content)}>"
    frame = zstdpool.compress(RECORDS[4], zstd_dict=raw)
    assert bzstd.get_frame_info(frame).dictionary_id == 0
    assert len(frame) < len(zstdpool.compress(RECORDS[4]))
    assert zstdpool.decompress(frame, zstd_dict=raw) == RECORDS[4]
    peer = bzstd.ZstdDict(raw.dict_content, is_raw=True)
    assert bzstd.decompress(frame, zstd_dict=peer) == RECORDS[4]
    assert (
        zstdpool.decompress(bzstd.compress(RECORDS[4], zstd_dict=peer), zstd_dict=raw)
        == (RECORDS[4])
    )


def test_it_pickles_as_its_content(trained: zstdpool.ZstdDict, raw: zstdpool.ZstdDict) -> None:
    for d in (trained, raw):
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            back = pickle.loads(pickle.dumps(d, protocol))
            assert (back.dict_id, back.dict_content, back.is_raw) == (
                d.dict_id,
                d.dict_content,
                d.is_raw,
            )
            frame = zstdpool.compress(RECORDS[5], zstd_dict=d)
            assert zstdpool.decompress(frame, zstd_dict=back) == RECORDS[5]
    assert len(pickle.dumps(trained)) < len(trained) + 200


def test_finalize_dict_fits_raw_content_to_samples(raw: zstdpool.ZstdDict) -> None:
    made = zstdpool.finalize_dict(raw, TRAIN, 64 * 1024, 3)
    assert made.dict_id != 0 and not made.is_raw
    assert made.dict_content.endswith(raw.dict_content)
    frame = zstdpool.compress(RECORDS[6], zstd_dict=made)
    assert zstdpool.decompress(frame, zstd_dict=made) == RECORDS[6]


def test_prepared_dictionaries_are_counted_and_freed() -> None:
    before = zstdpool.pool_stats()
    d = zstdpool.train_dict(TRAIN[:1000], 8192)
    for level in (1, 3, 5):
        zstdpool.decompress(zstdpool.compress(RECORDS[7], level, zstd_dict=d), zstd_dict=d)
    during = zstdpool.pool_stats()
    assert during["prepared_dicts"] - before["prepared_dicts"] == 4, "three levels and one DDict"
    added = during["prepared_dict_bytes"] - before["prepared_dict_bytes"]
    assert added > 4 * len(d), "each holds a copy of the content and its tables"
    assert zstdpool.memory_stats()["prepared_dict_bytes"] == during["prepared_dict_bytes"]
    del d
    gc.collect()
    after = zstdpool.pool_stats()
    assert after["prepared_dicts"] == before["prepared_dicts"]
    assert after["prepared_dict_bytes"] == before["prepared_dict_bytes"]


# --------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize(
    ("content", "kwargs", "error", "message"),
    [
        (b"short", {}, ParameterError, "too short: 5 bytes"),
        (b"short", {"is_raw": True}, ParameterError, "too short"),
        (b"x" * 100, {}, ParameterError, "pass is_raw=True"),
        ((0xEC30A437).to_bytes(4, "little") + bytes(60), {}, ParameterError, "its id is 0"),
        (
            (0xEC30A437).to_bytes(4, "little") + b"\x01\x00\x00\x00" + bytes(8),
            {},
            ParameterError,
            "malformed zstd dictionary",
        ),
        (12345, {}, TypeError, "bytes-like object or a zstd dictionary object"),
    ],
    ids=["short", "short-raw", "no-magic", "id-zero", "bad-tables", "not-bytes"],
)
def test_bad_content_is_refused(
    content: object, kwargs: dict[str, bool], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        zstdpool.ZstdDict(content, **kwargs)


def test_raw_content_with_the_magic_number_is_a_dictionary(trained: zstdpool.ZstdDict) -> None:
    # zstd reads such content as a full dictionary whatever it is told, and compression.zstd
    # gives it its id: the flag cannot make frames that a reader given the same bytes misreads.
    as_raw = zstdpool.ZstdDict(trained.dict_content, is_raw=True)
    assert as_raw.dict_id == trained.dict_id != 0
    assert not as_raw.is_raw
    data = b"".join(TRAIN[:5])
    frame = zstdpool.compress(data, zstd_dict=as_raw)
    assert zstdpool.decompress(frame, zstd_dict=trained) == data
    assert bzstd.decompress(frame, zstd_dict=bzstd.ZstdDict(trained.dict_content)) == data


def test_zstd_dict_must_be_a_zstdpool_dictionary(trained: zstdpool.ZstdDict) -> None:
    for call in (
        lambda d: zstdpool.compress(b"x", zstd_dict=d),
        lambda d: zstdpool.decompress(zstdpool.compress(b"x"), zstd_dict=d),
        lambda d: zstdpool.compressor(zstd_dict=d),
        lambda d: zstdpool.decompressor(zstd_dict=d),
        lambda d: zstdpool.compress_many([b"x"], zstd_dict=d),
    ):
        with pytest.raises(TypeError, match=r"zstd_dict must be a zstdpool\.ZstdDict.*'bytes'"):
            call(trained.dict_content)
        with pytest.raises(TypeError, match="not 'ZstdDict'"):
            call(bzstd.ZstdDict(trained.dict_content))


def test_training_refuses_what_it_cannot_use() -> None:
    with pytest.raises(ParameterError, match="at least one sample"):
        zstdpool.train_dict([], 4096)
    with pytest.raises(ParameterError, match=r"could not train .* on 3 samples"):
        zstdpool.train_dict(TRAIN[:3], 4096)
    with pytest.raises(ParameterError, match="dict_size must be from 256"):
        zstdpool.train_dict(TRAIN, 100)
    with pytest.raises(ParameterError, match="dict_size must be a non-negative"):
        zstdpool.train_dict(TRAIN, -1)
    with pytest.raises(TypeError, match=r"samples\[1\] must be a bytes-like object"):
        zstdpool.train_dict([b"a", "text"], 4096)


def test_finalizing_refuses_what_it_cannot_use(raw: zstdpool.ZstdDict) -> None:
    with pytest.raises(ParameterError, match="larger than dict_size"):
        zstdpool.finalize_dict(raw, TRAIN, 1024, 3)
    with pytest.raises(ParameterError, match="invalid zstd level"):
        zstdpool.finalize_dict(raw, TRAIN, 64 * 1024, 1000)
    with pytest.raises(TypeError):
        zstdpool.finalize_dict(raw.dict_content, TRAIN, 64 * 1024, 3)  # type: ignore[arg-type]
