"""Single files written to and read from an S3-compatible server by URL: the Parquet, IPC
and Feather writers and readers, configured by the AWS_* environment as pyarrow and polars
read it."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.feather as paf
import pyarrow.parquet as pq
import pytest
import zstdpool.feather as zf
import zstdpool.ipc as zipc
import zstdpool.parquet as zpq

from .conftest import KEY, SECRET, MotoServer, Proxy, client, keys

TABLE = pa.table({"a": list(range(1000)), "b": [f"s{i}" for i in range(1000)]})


@pytest.fixture
def env(moto: MotoServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    yield


def fetch(moto: MotoServer, bucket: str, key: str) -> bytes:
    body: bytes = client(moto.endpoint).get_object(Bucket=bucket, Key=key)["Body"].read()
    return body


def test_parquet_files_by_url(env: None, moto: MotoServer, bucket: str) -> None:
    zpq.write_table(TABLE, f"s3://{bucket}/one.parquet")
    assert pq.read_table(pa.BufferReader(fetch(moto, bucket, "one.parquet"))).equals(TABLE)
    with zpq.ParquetWriter(f"s3://{bucket}/two.parquet", TABLE.schema) as w:
        w.write_table(TABLE)
        assert keys(moto.endpoint, bucket) == ["one.parquet"], "nothing before the close"
    assert zpq.read_table(f"s3://{bucket}/two.parquet").equals(TABLE)
    assert zpq.ParquetFile(f"s3://{bucket}/two.parquet").schema_arrow == TABLE.schema


def test_a_failed_writer_leaves_no_object(env: None, moto: MotoServer, bucket: str) -> None:
    with pytest.raises(ValueError, match="boom"):  # noqa: PT012
        with zpq.ParquetWriter(f"s3://{bucket}/bad.parquet", TABLE.schema) as w:
            w.write_table(TABLE)
            raise ValueError("boom")
    assert keys(moto.endpoint, bucket) == []


def test_ipc_and_feather_files_by_url(env: None, moto: MotoServer, bucket: str) -> None:
    zf.write_feather(TABLE, f"s3://{bucket}/t.feather")
    assert paf.read_table(pa.BufferReader(fetch(moto, bucket, "t.feather"))).equals(TABLE)
    assert zf.read_table(f"s3://{bucket}/t.feather").equals(TABLE)
    with zipc.new_stream(f"s3://{bucket}/t.arrows", TABLE.schema) as w:
        w.write_table(TABLE)
    assert zipc.open_stream(f"s3://{bucket}/t.arrows").read_all().equals(TABLE)


def test_a_missing_object_is_file_not_found(env: None, bucket: str) -> None:
    with pytest.raises(FileNotFoundError, match=f"s3://{bucket}/nothing.parquet"):
        zpq.read_table(f"s3://{bucket}/nothing.parquet")
    with pytest.raises(FileNotFoundError, match=f"s3://{bucket}/nothing.arrow"):
        zipc.open_file(f"s3://{bucket}/nothing.arrow")


def test_large_files_read_by_ranges(
    env: None, moto: MotoServer, bucket: str, proxy: Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = pa.table(
        {"x": pa.array(range(600_000), pa.int64()), "y": pa.array(range(600_000), pa.float64())}
    )
    zpq.write_table(big, f"s3://{bucket}/big.parquet", compression="none")
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
    proxy.clear()
    assert (
        zpq.read_table(f"s3://{bucket}/big.parquet", columns=["y"])
        .column("y")
        .equals(big.column("y"))
    )
    ranged = [p for m, p in proxy.seen if m == "GET"]
    assert ranged, "read through the proxy"
    assert len(ranged) < 20


def test_a_large_object_read_whole_takes_few_requests(
    env: None, moto: MotoServer, bucket: str, proxy: Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """32 MB in four row groups: the chunks a whole read decodes are fetched together
    (object_store's get_ranges, coalesced and concurrent), not a 1 MiB window at a time."""
    n = 4_000_000
    big = pa.table({"x": pa.array(range(n), pa.int64())})
    zpq.write_table(big, f"s3://{bucket}/big.parquet", compression="none", row_group_size=n // 4)
    size = client(moto.endpoint).head_object(Bucket=bucket, Key="big.parquet")["ContentLength"]
    assert size > 30 << 20
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
    proxy.clear()
    assert zpq.read_table(f"s3://{bucket}/big.parquet").equals(big)
    gets = [p for m, p in proxy.seen if m == "GET" and p.endswith("/big.parquet")]
    # The footer's tail, and at most a request per chunk, where a 1 MiB window at a time
    # took more than 30.
    assert 0 < len(gets) <= 1 + 4, gets
    # What the read fetched is let go when it ends, though the file stays open.
    import gc

    import zstdpool

    if zstdpool.memory_stats()["counting"]:
        f = zpq.ParquetFile(f"s3://{bucket}/big.parquet")
        gc.collect()
        before = zstdpool.memory_stats()["current_bytes"]
        read = f.read()
        del read
        gc.collect()
        held = zstdpool.memory_stats()["current_bytes"] - before
        assert held < size // 4, (held, size)


@pytest.mark.parametrize("cut", [False, True], ids=["refused", "cut"])
def test_a_whole_read_whose_get_fails_raises(
    env: None,
    moto: MotoServer,
    bucket: str,
    proxy: Proxy,
    monkeypatch: pytest.MonkeyPatch,
    cut: bool,
) -> None:
    """A large object read whole is decoded as its one GET arrives: a GET refused, or cut
    half-way (the connection lost), is the read's error, never a hang or a short table; and
    the file reads whole afterwards."""
    import random

    import zstdpool

    n = 2_000_000
    rng = random.Random(0)
    big = pa.table({"x": pa.array([rng.getrandbits(62) for _ in range(n)], pa.int64())})
    # zstd pages: the read leases pooled contexts, which the failure must give back.
    zpq.write_table(big, f"s3://{bucket}/big.parquet", row_group_size=n // 4)
    assert client(moto.endpoint).head_object(Bucket=bucket, Key="big.parquet")["ContentLength"] > (
        4 << 20
    )
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
    pool = zstdpool.ContextPool()
    f = zpq.ParquetFile(f"s3://{bucket}/big.parquet", storage_options={"max_retries": 0}, pool=pool)
    proxy.clear()
    proxy.fail(1, method="GET", cut=cut)
    with pytest.raises(OSError, match="big.parquet"):
        f.read()
    assert proxy.seen, "read through the proxy"
    assert pool.stats()["leased"] == 0
    assert f.read().equals(big)
    assert pool.stats()["leased"] == 0 and pool.stats()["created"] > 0


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """An endpoint that accepts connections and never answers (a hung server)."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


@pytest.mark.parametrize(
    ("options", "at_least", "at_most"),
    [
        # object_store's name and pyarrow's, seconds or with a unit; no retries.
        ({"timeout": "1s", "max_retries": 0}, 0.9, 2.0),
        ({"request_timeout": 1, "max_retries": 0}, 0.9, 2.0),
        # Requests timing out are tried again until retry_timeout has passed.
        ({"timeout": "500ms", "retry_timeout": "2s", "max_retries": 100}, 1.9, 4.0),
    ],
    ids=["timeout", "request_timeout", "retry_timeout"],
)
def test_timeouts_in_storage_options_are_honoured(
    silent_endpoint: str, options: dict[str, object], at_least: float, at_most: float
) -> None:
    import time

    opts = {
        "endpoint": silent_endpoint,
        "access_key_id": KEY,
        "secret_access_key": SECRET,
        "region": "us-east-1",
        **options,
    }
    start = time.monotonic()
    with pytest.raises(OSError, match="s3://b/k.parquet"):
        zpq.read_table("s3://b/k.parquet", storage_options=opts)
    took = time.monotonic() - start
    assert at_least <= took <= at_most, took
