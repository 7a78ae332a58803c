"""zstdpool.dask on a LocalCluster of two worker processes that preload it: the registry in
every process, comm compression, spilling, Arrow tables, corrupt frames, the P2P shuffle and
to_dataset."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("distributed")
pytest.importorskip("dask.dataframe")

import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.dataset as ds  # noqa: E402
import zstdpool  # noqa: E402
import zstdpool.dask  # noqa: E402
import zstdpool.dataset  # noqa: E402
from distributed import Client, wait  # noqa: E402
from distributed.protocol.serialize import serialize_bytes  # noqa: E402

from tests.dask import probes  # noqa: E402
from tests.dask.conftest import PRELOAD, cluster, worker_on  # noqa: E402

A, B = "127.0.0.1", "127.0.0.2"


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with cluster(
        {"a": {"host": A}, "b": {"host": B}},
        **{
            "distributed.worker.preload": PRELOAD,
            "distributed.scheduler.preload": PRELOAD,
            "distributed.client.preload": PRELOAD,
        },
    ) as c:
        yield c


def frame_header_size(frame: bytearray) -> int:
    """Bytes of a zstd frame header (magic number included), where the first block starts."""
    descriptor = frame[4]
    single = (descriptor >> 5) & 1
    return 5 + (1 - single) + (0, 1, 2, 4)[descriptor & 3] + (single, 2, 4, 8)[descriptor >> 6]


def stats(client: Client, address: str) -> zstdpool.dask.CodecStats:
    return zstdpool.dask.CodecStats(*client.run(probes.codec_stats, workers=[address])[address])


def test_every_process_has_the_pooled_codec(client: Client) -> None:
    assert set(client.run(probes.codec_module).values()) == {"zstdpool.dask.codec"}
    assert set(client.run(probes.registered).values()) == {True}
    assert client.run_on_scheduler(probes.registered) is True
    assert zstdpool.dask.is_registered()


def test_frames_between_hosts_are_compressed_by_zstdpool(client: Client) -> None:
    a, b = worker_on(client, A), worker_on(client, B)
    before_a, before_b = stats(client, a), stats(client, b)
    made = client.submit(probes.frame, 200_000, 1, workers=[b], pure=False)
    got = client.submit(probes.total, made, workers=[a]).result()
    assert got == probes.total(probes.frame(200_000, 1))
    after_a, after_b = stats(client, a), stats(client, b)
    # b compressed the frame's columns (each after a sample), a decompressed them.
    assert after_b.frames_compressed - before_b.frames_compressed >= 2
    assert after_a.frames_decompressed - before_a.frames_decompressed >= 1
    assert after_a.bytes_decompressed - before_a.bytes_decompressed > 4_000_000
    # The result also reached the client from b, through the same codec.
    assert probes.total(made.result()) == got


def test_arrow_tables_travel_as_compressed_ipc(client: Client) -> None:
    a, b = worker_on(client, A), worker_on(client, B)
    before_a, before_b = stats(client, a), stats(client, b)
    made = client.submit(probes.table, 100_000, 2, workers=[b], pure=False)
    got = client.submit(probes.total, made, workers=[a]).result()
    assert got == probes.total(probes.table(100_000, 2))
    after_a, after_b = stats(client, a), stats(client, b)
    assert after_b.tables_compressed - before_b.tables_compressed == 1
    # Marked as compressed already: the comm compressed no frame of it, a decompressed none.
    assert after_b.frames_compressed == before_b.frames_compressed
    assert after_a.frames_decompressed == before_a.frames_decompressed
    batch = client.submit(lambda t: t.to_batches()[0], made, workers=[b]).result()
    assert isinstance(batch, pa.RecordBatch) and batch.num_rows > 0


def test_spilled_results_come_back_equal(client: Client) -> None:
    a = worker_on(client, A)
    frames = [client.submit(probes.frame, 300_000, i, workers=[a], pure=False) for i in range(4)]
    tables = [client.submit(probes.table, 300_000, i, workers=[a], pure=False) for i in range(4)]
    wait(frames + tables)
    state = client.run(probes.spill_state, workers=[a])[a]
    assert state["spilled"] >= 4
    metrics = state["metrics"]
    assert metrics.get("compress-seconds", 0) > 0 and metrics.get("disk-write-bytes", 0) > 0
    spilled = stats(client, a)
    # Unspilled on the worker, and equal to what a fresh computation gives.
    sums = client.gather([client.submit(probes.total, f, workers=[a]) for f in frames + tables])
    expect = [probes.total(probes.frame(300_000, i)) for i in range(4)]
    assert sums == expect + expect
    assert stats(client, a).frames_decompressed > spilled.frames_decompressed
    assert client.run(probes.spill_state, workers=[a])[a]["metrics"]["disk-read-count"] > 0
    del frames, tables


def test_a_corrupt_frame_fails_the_task_not_the_worker(client: Client) -> None:
    a = worker_on(client, A)
    blob = bytearray(serialize_bytes(probes.frame(50_000, 3), compression="zstd"))
    magic = blob.find(b"\x28\xb5\x2f\xfd")
    assert magic > 0
    # The first block's type becomes 3, which the format reserves: no decoder accepts it.
    blob[magic + frame_header_size(blob[magic:])] |= 0b110
    pid = client.run(probes.pid, workers=[a])[a]
    task = client.submit(probes.deserialize_blob, bytes(blob), workers=[a], pure=False)
    with pytest.raises(zstdpool.DecompressionError, match="zstd frame of .* bytes in a dask"):
        task.result()
    assert client.run(probes.pid, workers=[a])[a] == pid
    assert client.submit(probes.total, probes.frame(10, 0), workers=[a]).result() > 0


def test_p2p_shuffle_gives_the_same_result_with_compressed_shards(client: Client) -> None:
    ddf = dd.from_map(probes.frame, [20_000] * 8, range(8))
    df = pd.concat([probes.frame(20_000, i) for i in range(8)])

    def shuffled() -> pd.DataFrame:
        out = ddf.shuffle("k", shuffle_method="p2p").compute()
        return out.sort_values("id").reset_index(drop=True)

    plain = shuffled()
    client.run(zstdpool.dask.compress_shuffle, True, level=3)
    try:
        assert set(client.run(zstdpool.dask.shuffle_level).values()) == {3}
        before = sum(client.run(zstdpool.dask.shards_compressed).values())
        compressed = shuffled()
        assert sum(client.run(zstdpool.dask.shards_compressed).values()) - before >= 16
    finally:
        client.run(zstdpool.dask.compress_shuffle, False)
    assert set(client.run(zstdpool.dask.shuffle_level).values()) == {None}
    pd.testing.assert_frame_equal(compressed, plain)
    expect = df.sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(plain, expect, check_dtype=False)


def test_to_dataset_writes_a_hive_dataset_on_the_workers(client: Client, tmp_path: Path) -> None:
    ddf = dd.from_map(probes.frame, [5_000] * 6, range(6))
    df = pd.concat([probes.frame(5_000, i) for i in range(6)])
    files = zstdpool.dask.to_dataset(ddf, tmp_path / "out", partitioning=["k"])
    assert sum(f["num_rows"] for f in files) == len(df)
    assert len({f["path"] for f in files}) == len(files)
    # Each partition wrote files of its own.
    assert {Path(f["path"]).name.split("-")[1] for f in files} == {str(n) for n in range(6)}
    got = ds.dataset(tmp_path / "out", partitioning="hive").to_table().to_pandas()
    cols = ["id", "price", "name", "k"]
    expect = df[cols].sort_values("id").reset_index(drop=True)
    got = got[cols].sort_values("id").reset_index(drop=True).astype({"k": "int64"})
    pd.testing.assert_frame_equal(got, expect, check_dtype=False)
    back = dd.read_parquet(tmp_path / "out").compute()
    assert sorted(back["id"]) == sorted(df["id"])
    with pytest.raises(FileExistsError, match="not empty"):
        zstdpool.dask.to_dataset(ddf, tmp_path / "out", partitioning=["k"])
    again = zstdpool.dask.to_dataset(
        ddf.partitions[:2],
        tmp_path / "out",
        partitioning=["k"],
        existing_data_behavior="delete_matching",
    )
    left = ds.dataset(tmp_path / "out", partitioning="hive").count_rows()
    assert left == sum(f["num_rows"] for f in again) == 10_000


def test_to_dataset_writes_to_an_object_store_from_every_worker(client: Client) -> None:
    pytest.importorskip("moto")
    import uuid

    from tests.helpers import s3server

    server = s3server.MotoServer()
    try:
        bucket = "dask-" + uuid.uuid4().hex[:12]
        s3server.boto_client(server.endpoint).create_bucket(Bucket=bucket)
        opts = s3server.storage_options(server.endpoint)
        url = f"s3://{bucket}/out"
        ddf = dd.from_map(probes.frame, [2_000] * 4, range(4))
        files = zstdpool.dask.to_dataset(ddf, url, partitioning=["k"], storage_options=opts)
        assert sum(f["num_rows"] for f in files) == 8_000
        listed = zstdpool._zstdpool._store_list(url, opts)
        assert sorted(u for u, _ in listed) == sorted(f"s3://{f['path']}" for f in files)
        back = zstdpool.dataset.dataset(url, storage_options=opts)
        assert back.count_rows() == 8_000
        with pytest.raises(FileExistsError, match="objects exist below it"):
            zstdpool.dask.to_dataset(ddf, url, partitioning=["k"], storage_options=opts)
        again = zstdpool.dask.to_dataset(
            ddf.partitions[:1],
            url,
            partitioning=["k"],
            existing_data_behavior="delete_matching",
            storage_options=opts,
        )
        assert zstdpool.dataset.dataset(url, storage_options=opts).count_rows() == sum(
            f["num_rows"] for f in again
        )
    finally:
        server.stop()
