"""Dictionaries and their frames shared with python-zstandard and backports.zstd (the
`compression.zstd` of Python 3.14), both ways."""

from __future__ import annotations

import pytest
import zstdpool

from tests.dicts.conftest import RECORDS, TRAIN
from tests.helpers.peers import bzstd, zstandard


@pytest.mark.parametrize("level", [1, 3, 7])
def test_python_zstandard_reads_ours_and_we_read_its(
    trained: zstdpool.ZstdDict, level: int
) -> None:
    peer = zstandard.ZstdCompressionDict(trained.dict_content)
    assert peer.dict_id() == trained.dict_id
    ours = [zstdpool.compress(r, level, zstd_dict=trained) for r in RECORDS[:50]]
    reader = zstandard.ZstdDecompressor(dict_data=peer)
    assert [reader.decompress(f) for f in ours] == list(RECORDS[:50])
    writer = zstandard.ZstdCompressor(level=level, dict_data=peer)
    theirs = [writer.compress(r) for r in RECORDS[:50]]
    assert zstdpool.decompress_many(theirs, zstd_dict=trained) == list(RECORDS[:50])


@pytest.mark.parametrize("level", [1, 3, 7])
def test_backports_zstd_reads_ours_and_we_read_its(trained: zstdpool.ZstdDict, level: int) -> None:
    peer = bzstd.ZstdDict(trained.dict_content)
    assert peer.dict_id == trained.dict_id
    for r in RECORDS[:50]:
        assert bzstd.decompress(zstdpool.compress(r, level, zstd_dict=trained), zstd_dict=peer) == r
        theirs = bzstd.compress(r, level, zstd_dict=peer.as_digested_dict)
        assert zstdpool.decompress(theirs, zstd_dict=trained) == r


def test_their_trained_dictionaries_load_here() -> None:
    theirs = [
        zstandard.train_dictionary(8192, list(TRAIN)),
        bzstd.train_dict(TRAIN, 8192),
    ]
    for peer in theirs:
        # Their objects, or their bytes.
        for given in (peer, getattr(peer, "dict_content", None) or peer.as_bytes()):
            ours = zstdpool.ZstdDict(given)
            assert ours.dict_id == (
                peer.dict_id if isinstance(peer, bzstd.ZstdDict) else peer.dict_id()
            )
            frame = zstdpool.compress(RECORDS[0], zstd_dict=ours)
            assert zstdpool.decompress(frame, zstd_dict=ours) == RECORDS[0]


def test_our_trained_dictionaries_load_there(trained: zstdpool.ZstdDict) -> None:
    finalized = zstdpool.finalize_dict(
        zstdpool.ZstdDict(b"".join(TRAIN[:20]), is_raw=True), TRAIN, 32 * 1024, 3
    )
    for d in (trained, finalized):
        z = zstandard.ZstdCompressionDict(d.dict_content)
        b = bzstd.ZstdDict(d.dict_content)
        assert z.dict_id() == b.dict_id == d.dict_id
        frame = zstandard.ZstdCompressor(dict_data=z).compress(RECORDS[9])
        assert bzstd.decompress(frame, zstd_dict=b) == RECORDS[9]
        assert zstdpool.decompress(frame, zstd_dict=d) == RECORDS[9]


def test_our_zstd_dict_is_the_peers_finalize_result() -> None:
    """finalize_dict takes the same arguments as compression.zstd's and gives a dictionary of
    the same shape (header, tables, the content at the end)."""
    content = b"".join(TRAIN[:30])
    ours = zstdpool.finalize_dict(zstdpool.ZstdDict(content, is_raw=True), TRAIN, 48 * 1024, 3)
    theirs = bzstd.finalize_dict(bzstd.ZstdDict(content, is_raw=True), TRAIN, 48 * 1024, 3)
    assert ours.dict_content.endswith(content) and theirs.dict_content.endswith(content)
    assert abs(len(ours) - len(theirs)) < 1024
