"""The "zstd" compression entry, the Arrow serializers and the registration, in this process:
interoperability with python-zstandard, config, limits, errors and threads."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

pytest.importorskip("distributed")

import dask.config  # noqa: E402
import pyarrow as pa  # noqa: E402
import zstdpool  # noqa: E402
import zstdpool.dask  # noqa: E402
from distributed.protocol import compression, dumps, loads, to_serialize  # noqa: E402
from distributed.protocol.compression import decompress, maybe_compress  # noqa: E402
from zstdpool.dask import codec  # noqa: E402

from tests.helpers.env import subprocess_env  # noqa: E402

DATA = b"".join(b"%08d,%s;" % (i, b"abcdefgh"[: i % 8]) for i in range(20_000))


def run_python(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env()
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_registered_entry_is_zstdpools_and_registering_again_changes_nothing() -> None:
    entry = compression.compressions["zstd"]
    assert entry.compress is codec.compress and entry.decompress is codec.decompress
    zstdpool.dask.register()
    zstdpool.dask.register()
    assert compression.compressions["zstd"] is entry
    assert zstdpool.dask.is_registered()


def test_frames_are_standard_both_ways() -> None:
    zstandard = pytest.importorskip("zstandard")
    frame = codec.compress(DATA)
    assert zstandard.ZstdDecompressor().decompress(frame) == DATA
    theirs = zstandard.ZstdCompressor(level=3).compress(DATA)
    out = codec.decompress(theirs)
    assert out == DATA and isinstance(out, bytearray)
    # A streaming frame declares no size: decompressed all the same, up to the limit.
    streamed = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    unsized = streamed.compress(DATA) + streamed.flush()
    assert codec.content_size(unsized) is None
    assert codec.decompress(unsized) == DATA


def test_maybe_compress_round_trips_into_a_writable_buffer() -> None:
    name, frame = maybe_compress(DATA, compression="zstd")
    assert name == "zstd" and len(frame) < len(DATA) // 2
    [out] = decompress({"compression": (name,)}, [frame])
    assert isinstance(out, bytearray) and out == DATA
    assert codec.content_size(frame) == len(DATA)


def test_the_level_follows_the_config() -> None:
    with dask.config.set({"distributed.comm.zstd.level": 9}):
        assert codec.compress(DATA) == zstdpool.compress(DATA, 9)
    with dask.config.set({"distributed.comm.zstd.level": 1}):
        assert codec.compress(DATA) == zstdpool.compress(DATA, 1)
        assert codec.compress(DATA) != zstdpool.compress(DATA, 9)
    with (
        dask.config.set({"distributed.comm.zstd.level": 99}),
        pytest.raises(zstdpool.ParameterError, match=r"distributed\.comm\.zstd\.level=99"),
    ):
        codec.compress(DATA)


def test_a_frame_over_the_limit_is_refused_before_allocating() -> None:
    frame = zstdpool.compress(bytes(50_000_000))
    with (
        dask.config.set({"zstdpool.dask.max-output-size": "1MiB"}),
        pytest.raises(zstdpool.OutputLimitError, match="declares 50000000 bytes"),
    ):
        decompress({"compression": ("zstd",)}, [frame])
    with dask.config.set({"zstdpool.dask.max-output-size": "-1"}):
        with pytest.raises(zstdpool.ParameterError, match="max-output-size"):
            codec.decompress(frame)


def test_a_corrupt_frame_raises_a_decompression_error_that_says_where() -> None:
    frame = bytearray(codec.compress(DATA))
    frame[-40:] = bytes(40)
    with pytest.raises(zstdpool.DecompressionError, match="zstd frame of .* in a dask message"):
        codec.decompress(bytes(frame))
    with pytest.raises(zstdpool.DecompressionError):
        codec.decompress(frame[: len(frame) // 2])


def test_thread_safety_as_distributed_tests_its_codecs() -> None:
    # distributed's test_compression_thread_safety: threads started together, each doing
    # thousands of round trips; here each on its own data, so that a crossed context shows.
    threads, rounds = 4, 2000
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        data = DATA[n * 1000 : n * 1000 + 15_000] + bytes([n]) * 5000
        barrier.wait()
        try:
            for _ in range(rounds):
                name, frame = maybe_compress(data, compression="zstd")
                assert name == "zstd"
                assert decompress({"compression": (name,)}, [frame]) == [data]
        except BaseException as e:
            errors.append(e)

    before = zstdpool.dask.codec_stats()
    pool = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert errors == []
    after = zstdpool.dask.codec_stats()
    assert after.frames_decompressed - before.frames_decompressed == threads * rounds


def test_arrow_frames_are_marked_and_read_by_distributeds_own_deserializer() -> None:
    from distributed.protocol import arrow as theirs

    table = pa.table({"x": list(range(50_000)), "s": [f"v{i % 50}" for i in range(50_000)]})
    frames = dumps({"t": to_serialize(table)}, context={"compression": "zstd"})
    assert loads(frames)["t"].equals(table)
    header, blob = zstdpool.dask.arrow.serialize_table(table, context={"compression": "zstd"})
    assert header == {zstdpool.dask.arrow.MARK: True}
    assert zstdpool.ipc.read_stream(blob[0]).equals(table)
    assert theirs.deserialize_table({}, blob).equals(table)
    # No compression asked (same host, or spilling): plain IPC, left to the comm or spill.
    header, plain = zstdpool.dask.arrow.serialize_table(table, context=None)
    assert header == {} and len(plain[0]) > len(blob[0])


def test_import_zstdpool_leaves_dask_alone_and_the_preload_outlives_lazy_registration() -> None:
    code = "import sys, zstdpool; print('dask' in sys.modules, 'distributed' in sys.modules)"
    assert run_python(code) == "False False"
    code = (
        "import zstdpool.dask, pyarrow as pa\n"
        "from distributed.protocol import serialize\n"
        "from distributed.protocol.serialize import dask_serialize\n"
        "serialize(pa.table({'x': [1]}))\n"
        "serialize(pa.table({'x': [1]}).to_batches()[0])\n"
        "print(dask_serialize.dispatch(pa.Table).__module__, zstdpool.dask.is_registered())"
    )
    assert run_python(code) == "zstdpool.dask.arrow True"


def test_compress_shuffle_switches_and_refuses_what_it_cannot_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from distributed.shuffle import _arrow, _shuffle

    try:
        zstdpool.dask.compress_shuffle(level=5)
        assert zstdpool.dask.shuffle_level() == 5
        table = pa.table({"x": list(range(10_000))})
        blob = _shuffle.serialize_table(table)
        assert _arrow.deserialize_table(blob).equals(table)
        assert len(blob) < len(_arrow.serialize_table(table))
    finally:
        zstdpool.dask.compress_shuffle(False)
    assert _shuffle.serialize_table is _arrow.serialize_table
    with pytest.raises(zstdpool.ParameterError, match="level=99"):
        zstdpool.dask.compress_shuffle(level=99)
    monkeypatch.delattr(_shuffle, "serialize_table")
    with pytest.raises(RuntimeError, match="test extra"):
        zstdpool.dask.compress_shuffle()


def test_the_config_key_turns_the_shuffle_opt_in_on() -> None:
    try:
        with dask.config.set(
            {"zstdpool.dask.compress-shuffle": True, "zstdpool.dask.shuffle-level": 2}
        ):
            zstdpool.dask.register()
        assert zstdpool.dask.shuffle_level() == 2
    finally:
        zstdpool.dask.compress_shuffle(False)


def test_to_dataset_refuses_bad_options_before_computing(tmp_path: object) -> None:
    dd = pytest.importorskip("dask.dataframe")
    ddf = dd.from_dict({"a": [1, 2]}, npartitions=1)
    with pytest.raises(zstdpool.ParameterError, match="existing_data_behavior"):
        zstdpool.dask.to_dataset(ddf, str(tmp_path), existing_data_behavior="merge")
    with pytest.raises(zstdpool.ParameterError, match="names the files itself"):
        zstdpool.dask.to_dataset(ddf, str(tmp_path), basename_template="x-{i}.parquet")


@pytest.mark.parametrize("size", [0, 1, 255, 256, 300, 65_791, 65_792, 70_000, 5_000_000])
def test_the_declared_size_is_read_from_every_header_layout(size: int) -> None:
    """Frame headers of every shape: single-segment or with a window descriptor, content
    sizes of 1, 2 (stored less 256), 4 and 8 bytes, with a dictionary id or a checksum."""
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    d = zstdpool.train_dict([f"record {i} of the samples".encode() * 3 for i in range(2000)], 1024)
    for frame in (
        zstdpool.compress(data, 3),
        zstdpool.compress(data, 19, checksum=True),
        zstdpool.compress(data, 3, window_log=10),
        zstdpool.compress(data, 3, zstd_dict=d),
    ):
        assert codec.content_size(frame) == size
        assert zstdpool.decompress(frame, zstd_dict=d) == data
    assert codec.content_size(b"\x28\xb5\x2f") is None
    assert codec.content_size(b"not a zstd frame at all") is None
