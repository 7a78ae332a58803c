"""A worker with zstdpool.dask and one without it (distributed's own "zstd", from
python-zstandard) exchange frames and Arrow tables, both ways."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("distributed")
pytest.importorskip("dask.dataframe")
pytest.importorskip("zstandard")  # distributed's own "zstd", on the worker without zstdpool

import zstdpool.dask  # noqa: E402
from distributed import Client  # noqa: E402

from tests.dask import probes  # noqa: E402
from tests.dask.conftest import PRELOAD, cluster, worker_on  # noqa: E402

WITH, WITHOUT = "127.0.0.1", "127.0.0.2"


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with cluster({"with": {"host": WITH, "preload": PRELOAD}, "without": {"host": WITHOUT}}) as c:
        yield c


def test_only_one_worker_has_zstdpool(client: Client) -> None:
    modules = client.run(probes.codec_module)
    assert modules[worker_on(client, WITH)] == "zstdpool.dask.codec"
    assert modules[worker_on(client, WITHOUT)] == "distributed.protocol.compression"
    assert client.run(probes.registered, workers=[worker_on(client, WITHOUT)]) == {
        worker_on(client, WITHOUT): None
    }


def test_frames_and_tables_cross_between_them(client: Client) -> None:
    w, wo = worker_on(client, WITH), worker_on(client, WITHOUT)
    before = zstdpool.dask.CodecStats(*client.run(probes.codec_stats, workers=[w])[w])
    # Fetched from the worker on 127.0.0.2: compressed by python-zstandard, decompressed by
    # zstdpool (see conftest for which direction the comm compresses).
    made = client.submit(probes.frame, 200_000, 5, workers=[wo], pure=False)
    table = client.submit(probes.table, 100_000, 6, workers=[wo], pure=False)
    got = client.gather(
        [client.submit(probes.total, x, workers=[w], pure=False) for x in (made, table)]
    )
    assert got == [probes.total(probes.frame(200_000, 5)), probes.total(probes.table(100_000, 6))]
    after = zstdpool.dask.CodecStats(*client.run(probes.codec_stats, workers=[w])[w])
    assert after.frames_decompressed - before.frames_decompressed >= 2
    # From the client (zstdpool) to the worker without it: zstdpool's frames and a table
    # compressed inside its IPC stream, read by distributed's own deserializers.
    sent = zstdpool.dask.codec_stats()
    frame, tbl = probes.frame(200_000, 7), probes.table(100_000, 8)
    [f_remote, t_remote] = client.scatter([frame, tbl], workers=[wo], direct=True)
    assert client.gather(
        [client.submit(probes.total, x, workers=[wo], pure=False) for x in (f_remote, t_remote)]
    ) == [probes.total(frame), probes.total(tbl)]
    now = zstdpool.dask.codec_stats()
    assert now.frames_compressed > sent.frames_compressed
    assert now.tables_compressed == sent.tables_compressed + 1
