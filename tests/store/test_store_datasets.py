"""Datasets written to and read from an S3-compatible server (moto, as its own process):
read back by pyarrow and polars, read from what pyarrow wrote, and failures that leave no
object under a final key and no pooled context leased."""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Literal

import pyarrow as pa
import pyarrow.dataset as pds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
import zstdpool
import zstdpool.dataset as zd
import zstdpool.parquet as zpq

from .conftest import KEY, SECRET, MotoServer, Proxy, client, keys, storage_options

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("part", pa.int32()),
        ("name", pa.string()),
        ("when", pa.timestamp("us")),
        ("x", pa.float64()),
    ]
)


def table(rows: int = 3000, parts: int = 10) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "part": pa.array([i % parts for i in range(rows)], pa.int32()),
            "name": pa.array([None if i % 7 == 0 else f"n{i}" for i in range(rows)]),
            "when": pa.array(
                [
                    datetime.datetime(2026, 1, 1) + datetime.timedelta(seconds=i)
                    for i in range(rows)
                ],
                pa.timestamp("us"),
            ),
            "x": pa.array([i / 3 for i in range(rows)], pa.float64()),
        },
        schema=SCHEMA,
    )


def by_id(t: pa.Table) -> pa.Table:
    t = t.select(["id", "part", "name", "when", "x"])
    return t.cast(SCHEMA).sort_by("id")


def pyarrow_fs(endpoint: str) -> pafs.S3FileSystem:
    return pafs.S3FileSystem(
        endpoint_override=endpoint,
        access_key=KEY,
        secret_key=SECRET,
        region="us-east-1",
        scheme="http",
    )


@pytest.mark.parametrize("fmt", ["parquet", "ipc"])
def test_written_datasets_read_back_in_pyarrow_polars_and_zstdpool(
    moto: MotoServer, bucket: str, fmt: Literal["parquet", "ipc"]
) -> None:
    t = table()
    opts = storage_options(moto.endpoint)
    visited: list[zd.WrittenFile] = []
    written = zd.write_dataset(
        t,
        f"s3://{bucket}/data",
        partitioning=["part"],
        partitioning_flavor="hive",
        format=fmt,
        storage_options=opts,
        file_visitor=visited.append,
    )
    listed = keys(moto.endpoint, bucket)
    assert sorted(f["path"] for f in written) == [f"{bucket}/{k}" for k in listed]
    # The visitor sees the same objects, without a footer (none is read back from a store).
    assert sorted(v.path for v in visited) == [f"{bucket}/{k}" for k in listed]
    assert all(v.metadata is None for v in visited)
    assert len(listed) == 10 and all(k.startswith("data/part=") for k in listed)
    sizes = {
        f"{bucket}/{k}": client(moto.endpoint).head_object(Bucket=bucket, Key=k)["ContentLength"]
        for k in listed
    }
    assert {f["path"]: f["size"] for f in written} == sizes
    assert sum(f["num_rows"] for f in written) == t.num_rows

    theirs = pds.dataset(
        f"{bucket}/data", filesystem=pyarrow_fs(moto.endpoint), format=fmt, partitioning="hive"
    ).to_table()
    assert by_id(theirs).equals(by_id(t))
    ours = zd.dataset(f"s3://{bucket}/data", format=fmt, storage_options=opts)
    assert ours.files == sorted(sizes)
    assert by_id(ours.to_table()).equals(by_id(t))
    assert ours.count_rows(filter=[("part", "=", 3)]) == 300
    if fmt == "parquet":
        pl = pytest.importorskip("polars")
        frame = pl.read_parquet(
            f"s3://{bucket}/data/**/*.parquet",
            hive_partitioning=True,
            storage_options={**opts, "allow_http": "true"},
        )
        assert by_id(frame.to_arrow()).equals(by_id(t))
        filtered = zpq.read_table(
            f"s3://{bucket}/data", storage_options=opts, filters=[("id", "<", 100)]
        )
        assert filtered.num_rows == 100


def test_what_pyarrow_writes_reads_as_pyarrow_reads_it(moto: MotoServer, bucket: str) -> None:
    t = table(5000, 4)
    fs = pyarrow_fs(moto.endpoint)
    pds.write_dataset(
        t,
        f"{bucket}/pa",
        filesystem=fs,
        format="parquet",
        partitioning=["part"],
        partitioning_flavor="hive",
    )
    opts = storage_options(moto.endpoint)
    expected = pds.dataset(f"{bucket}/pa", filesystem=fs, partitioning="hive")
    ours = zd.dataset(f"s3://{bucket}/pa", storage_options=opts)
    assert ours.files == sorted(expected.files)
    got = ours.to_table(filter=[("part", "in", [1, 2]), ("x", ">", 100.0)])
    want = expected.to_table(filter=(pds.field("part").isin([1, 2])) & (pds.field("x") > 100.0))
    assert by_id(got).equals(by_id(want))
    # One object, and a list of objects.
    one = ours.files[0]
    assert (
        zpq.read_table(f"s3://{one}", storage_options=opts).num_rows
        == pq.read_table(one, filesystem=fs).num_rows
    )
    many = zd.dataset(
        [f"s3://{f}" for f in ours.files[:2]], storage_options=opts, partitioning=None
    )
    assert many.count_rows() == sum(
        pq.read_metadata(f, filesystem=fs).num_rows for f in ours.files[:2]
    )


def test_existing_data_behaviors_list_and_delete_keys(moto: MotoServer, bucket: str) -> None:
    opts = storage_options(moto.endpoint)
    url = f"s3://{bucket}/d"
    zd.write_dataset(
        table(100, 4), url, partitioning=["part"], partitioning_flavor="hive", storage_options=opts
    )
    with pytest.raises(FileExistsError, match=f"s3://{bucket}/d.*existing_data_behavior"):
        zd.write_dataset(
            table(100, 4),
            url,
            partitioning=["part"],
            partitioning_flavor="hive",
            storage_options=opts,
        )
    zd.write_dataset(
        table(100, 4).slice(0, 1),
        url,
        partitioning=["part"],
        partitioning_flavor="hive",
        basename_template="new-{i}.parquet",
        existing_data_behavior="delete_matching",
        storage_options=opts,
    )
    assert keys(moto.endpoint, bucket) == [
        "d/part=0/new-0.parquet",
        "d/part=1/part-0.parquet",
        "d/part=2/part-0.parquet",
        "d/part=3/part-0.parquet",
    ]
    zd.write_dataset(
        table(100, 4).slice(1, 1),
        url,
        partitioning=["part"],
        partitioning_flavor="hive",
        basename_template="more-{i}.parquet",
        existing_data_behavior="overwrite_or_ignore",
        storage_options=opts,
    )
    assert "d/part=1/more-0.parquet" in keys(moto.endpoint, bucket)
    assert len(keys(moto.endpoint, bucket)) == 5


def test_a_large_file_is_a_multipart_upload(moto: MotoServer, bucket: str, proxy: Proxy) -> None:
    big = pa.table({"b": pa.array([os.urandom(1 << 16) for _ in range(200)], pa.binary())})
    opts = storage_options(proxy.endpoint, part_size=5 << 20)
    written = zd.write_dataset(big, f"s3://{bucket}/big", storage_options=opts, compression="none")
    assert written[0]["size"] > 12 << 20
    assert any("uploadId=" in path for method, path in proxy.seen if method == "PUT")
    back = zd.dataset(f"s3://{bucket}/big", storage_options=opts).to_table()
    assert back.equals(big)
    # A multipart upload that cannot complete is aborted: no object, no parts kept.
    proxy.clear()
    proxy.fail(1, method="POST", query="uploadId=")
    with pytest.raises(OSError, match=f"s3://{bucket}/again") as raised:
        zd.write_dataset(
            big,
            f"s3://{bucket}/again",
            storage_options={**opts, "max_retries": 0},
            compression="none",
        )
    assert raised.value.completed_files == []  # type: ignore[attr-defined]
    assert keys(moto.endpoint, bucket, "again") == []
    uploads = client(moto.endpoint).list_multipart_uploads(Bucket=bucket)
    assert uploads.get("Uploads", []) == []


def test_an_abort_the_store_does_not_answer_is_named_in_the_error(
    moto: MotoServer, bucket: str, proxy: Proxy
) -> None:
    """A part's upload fails, and so does the abort that follows it (the connection is
    dropped, as when the endpoint goes away): the parts stay in the bucket, and the error
    says which upload and how to remove it."""
    big = pa.table({"b": pa.array([os.urandom(1 << 16) for _ in range(200)], pa.binary())})
    opts = storage_options(proxy.endpoint, part_size=5 << 20, max_retries=0)
    proxy.fail(1, method="PUT", query="partNumber=2")
    proxy.fail(3, method="DELETE", query="uploadId=", status=None)
    with pytest.raises(OSError, match=f"s3://{bucket}/left") as raised:
        zd.write_dataset(big, f"s3://{bucket}/left", storage_options=opts, compression="none")
    notes = getattr(raised.value, "__notes__", [])
    assert len(notes) == 1, (notes, str(raised.value))
    assert "did not answer the abort of 1 multipart upload" in notes[0]
    assert f"s3://{bucket}/left/part-0.parquet" in notes[0]
    assert "abort-multipart-upload" in notes[0]
    s3 = client(moto.endpoint)
    uploads = s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    assert [u["Key"] for u in uploads] == ["left/part-0.parquet"]
    for u in uploads:  # what the note says to do
        s3.abort_multipart_upload(Bucket=bucket, Key=u["Key"], UploadId=u["UploadId"])
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    assert keys(moto.endpoint, bucket, "left") == []


def test_a_completion_and_its_abort_that_fail_are_both_reported(
    moto: MotoServer, bucket: str, proxy: Proxy
) -> None:
    """The upload's completion fails, and the abort object_store makes after it is not
    answered: the error is the completion's, and the note names the upload left behind."""
    big = pa.table({"b": pa.array([os.urandom(1 << 16) for _ in range(200)], pa.binary())})
    opts = storage_options(proxy.endpoint, part_size=5 << 20, max_retries=0)
    proxy.fail(1, method="POST", query="uploadId=")
    proxy.fail(3, method="DELETE", query="uploadId=", status=None)
    with pytest.raises(OSError, match=f"cannot write s3://{bucket}/done/part-0.parquet") as raised:
        zd.write_dataset(big, f"s3://{bucket}/done", storage_options=opts, compression="none")
    assert "POST" in str(raised.value)
    assert "injected" in str(raised.value)
    notes = getattr(raised.value, "__notes__", [])
    assert len(notes) == 1, (notes, str(raised.value))
    assert f"s3://{bucket}/done/part-0.parquet" in notes[0]
    s3 = client(moto.endpoint)
    uploads = s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    assert [u["Key"] for u in uploads] == ["done/part-0.parquet"]
    for u in uploads:
        s3.abort_multipart_upload(Bucket=bucket, Key=u["Key"], UploadId=u["UploadId"])
    assert keys(moto.endpoint, bucket, "done") == []


INTERRUPTED_WRITER = r"""
import faulthandler, json, os, signal, sys, time
import pyarrow as pa
import zstdpool.dataset as zd

# SIGUSR1 prints every thread's stack: what the test shows if the write does not end.
faulthandler.register(signal.SIGUSR1, all_threads=True)

url, opts = sys.argv[1], json.loads(sys.argv[2])
schema = pa.schema([("b", pa.binary())])

def batches():
    for i in range(10_000):
        yield pa.record_batch([pa.array([os.urandom(1 << 16) for _ in range(32)])], schema=schema)
        if i == 40:
            print("writing", flush=True)
        time.sleep(0.01)

zd.write_dataset(batches(), url, schema=schema, storage_options=opts, compression="none",
                 max_pending_bytes=4 << 20, max_rows_per_group=64)
"""


def test_a_write_interrupted_part_way_leaves_no_upload(
    moto: MotoServer, bucket: str, tmp_path: Path
) -> None:
    """A dataset write in another process, interrupted (SIGINT) while its multipart upload is
    under way: the interrupt reaches the write through the batches it pulls, and the upload
    is aborted, leaving no parts and no object."""
    import json
    import signal
    import subprocess
    import sys
    import time

    from tests.helpers.env import subprocess_env

    opts = storage_options(moto.endpoint, part_size=5 << 20)
    child = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED_WRITER, f"s3://{bucket}/cut", json.dumps(opts)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(),
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "writing"
        s3 = client(moto.endpoint)
        deadline = time.monotonic() + 60
        while not s3.list_multipart_uploads(Bucket=bucket).get("Uploads"):
            assert time.monotonic() < deadline, "no multipart upload began"
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        try:
            # Winding down aborts the upload on the server: seconds, more on a loaded machine.
            _, err = child.communicate(timeout=300)
        except subprocess.TimeoutExpired as timeout:
            child.send_signal(signal.SIGUSR1)
            time.sleep(2)
            child.kill()
            _, err = child.communicate()
            why = f"the interrupted write did not end; its stacks:\n{err[-6000:]}"
            raise AssertionError(why) from timeout
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode != 0
    assert "KeyboardInterrupt" in err, err[-2000:]
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    assert keys(moto.endpoint, bucket, "cut") == []


def test_server_errors_are_retried(moto: MotoServer, bucket: str, proxy: Proxy) -> None:
    proxy.fail(5, method="PUT", status=503)
    opts = storage_options(proxy.endpoint, retry_timeout="20s")
    written = zd.write_dataset(
        table(),
        f"s3://{bucket}/r",
        partitioning=["part"],
        partitioning_flavor="hive",
        storage_options=opts,
    )
    assert len(written) == 10
    assert len(keys(moto.endpoint, bucket)) == 10
    proxy.fail(3, method="GET", status=500)
    assert zd.dataset(f"s3://{bucket}/r", storage_options=opts).count_rows() == 3000
    # Connections dropped without an answer, as by a server restarting.
    proxy.fail(3, method="PUT", status=None)
    written = zd.write_dataset(
        table(),
        f"s3://{bucket}/dropped",
        partitioning=["part"],
        partitioning_flavor="hive",
        storage_options=opts,
    )
    assert len(written) == 10
    assert len(keys(moto.endpoint, bucket, "dropped")) == 10


@pytest.mark.parametrize("status", [500, None], ids=["500", "connection-dropped"])
def test_failed_uploads_leave_only_completed_files(
    moto: MotoServer, bucket: str, proxy: Proxy, status: int | None
) -> None:
    pool = zstdpool.ContextPool()
    proxy.fail(3, method="PUT", status=status)
    opts = storage_options(proxy.endpoint, max_retries=0, max_in_flight=2)
    with pytest.raises(OSError, match=f"cannot write s3://{bucket}/f/part=") as raised:
        zd.write_dataset(
            table(),
            f"s3://{bucket}/f",
            partitioning=["part"],
            partitioning_flavor="hive",
            storage_options=opts,
            pool=pool,
        )
    completed = sorted(f["path"] for f in raised.value.completed_files)  # type: ignore[attr-defined]
    assert completed == [f"{bucket}/{k}" for k in keys(moto.endpoint, bucket)]
    assert len(completed) == 7
    assert pool.stats()["leased"] == 0


def test_a_stopped_server_gives_a_clear_error(bucket: str) -> None:
    server = MotoServer()
    try:
        client(server.endpoint).create_bucket(Bucket=bucket)
        opts = storage_options(server.endpoint, max_retries=1, retry_timeout="1s")

        def batches() -> object:
            t = table()
            yield from t.to_batches(max_chunksize=1000)[:1]
            server.stop()
            yield from t.to_batches(max_chunksize=1000)[1:]

        schema = SCHEMA
        reader = pa.RecordBatchReader.from_batches(schema, batches())
        with pytest.raises(OSError, match=f"s3://{bucket}/gone") as raised:
            zd.write_dataset(
                reader,
                f"s3://{bucket}/gone",
                partitioning=["part"],
                partitioning_flavor="hive",
                storage_options=opts,
                max_pending_bytes=1,
            )
        assert raised.value.completed_files == []  # type: ignore[attr-defined]
    finally:
        server.stop()


def test_missing_bucket_and_refused_options_are_named(moto: MotoServer) -> None:
    opts = storage_options(moto.endpoint)
    with pytest.raises(
        FileNotFoundError,
        match='s3://no-such-bucket-here/x: the bucket "no-such-bucket-here" does not exist',
    ):
        zd.write_dataset(table(10), "s3://no-such-bucket-here/x", storage_options=opts)
    with pytest.raises(FileNotFoundError, match="no-such-bucket-here"):
        zd.dataset("s3://no-such-bucket-here/x", storage_options=opts)
    with pytest.raises(zstdpool.errors.ParameterError, match="'no_such_key'"):
        zd.write_dataset(table(10), "s3://b/x", storage_options={"no_such_key": "1"})
    with pytest.raises(zstdpool.errors.ParameterError, match="max_in_flight"):
        zd.dataset("s3://b/x", storage_options={"max_in_flight": "lots"})
    with pytest.raises(
        zstdpool.errors.ParameterError, match="storage_options are for object store URLs"
    ):
        zd.write_dataset(table(10), "local/dir", storage_options=opts)
    with pytest.raises(ValueError, match="neither pyarrow nor fsspec resolves 'nosuch://"):
        zd.dataset("nosuch://host/x")


def test_wrong_credentials_are_refused(moto: MotoServer, bucket: str, proxy: Proxy) -> None:
    # moto accepts any key; the proxy answers as S3 answers an unknown one.
    proxy.fail(1, method="GET", status=403)
    with pytest.raises(PermissionError, match=f"s3://{bucket}/"):
        zd.dataset(
            f"s3://{bucket}/x", storage_options=storage_options(proxy.endpoint, max_retries=0)
        )


def test_local_filesystems_are_local_paths(tmp_path: object) -> None:
    base = os.fspath(tmp_path)  # type: ignore[call-overload]
    t = table(100, 2)
    zd.write_dataset(
        t,
        "ds",
        partitioning=["part"],
        partitioning_flavor="hive",
        filesystem=pafs.SubTreeFileSystem(base, pafs.LocalFileSystem()),
    )
    assert by_id(zd.dataset(os.path.join(base, "ds")).to_table()).equals(by_id(t))
    assert by_id(zd.dataset("file://" + os.path.join(base, "ds")).to_table()).equals(by_id(t))
    assert by_id(
        zpq.read_table(os.path.join(base, "ds"), filesystem=pafs.LocalFileSystem())
    ).equals(by_id(t))
    fsspec = pytest.importorskip("fsspec")
    local = fsspec.filesystem("file")
    assert zd.dataset(os.path.join(base, "ds"), filesystem=local).count_rows() == 100
