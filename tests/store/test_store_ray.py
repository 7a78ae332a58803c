"""zstdpool.ray against an S3-compatible server: a partitioned write from Ray's tasks read
back through the datasource, the save modes over a prefix, and a failed write that leaves no
object of its own behind (the listing and deletes go through the store's API)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

import zstdpool.ray as zr  # noqa: E402

from tests.helpers.local_ray import local_ray  # noqa: E402, F401

from .conftest import MotoServer, client, keys, storage_options  # noqa: E402

N = 2000


def table() -> pa.Table:
    return pa.table({"id": pa.array(range(N), pa.int64()), "k": [i % 3 for i in range(N)]})


def test_a_partitioned_write_and_read_through_the_store(moto: MotoServer, bucket: str) -> None:
    opts = storage_options(moto.endpoint)
    url = f"s3://{bucket}/events"
    ds = ray.data.from_arrow(table()).repartition(2)
    written = zr.write_dataset(ds, url, partition_cols=["k"], storage_options=opts)
    objects = keys(moto.endpoint, bucket, "events/")
    # As pyarrow's file_visitor names an object: "bucket/key".
    assert sorted(written) == sorted(f"{bucket}/{k}" for k in objects)
    assert {k.split("/")[1] for k in objects} == {"k=0", "k=1", "k=2"}
    back = zr.read_dataset(url, storage_options=opts).filter(
        expr=ray.data.expressions.col("k") == 1
    )
    got = pa.concat_tables(ray.get(back.to_arrow_refs())).sort_by("id")
    assert got.column("id").to_pylist() == [i for i in range(N) if i % 3 == 1]
    # The save modes see the objects under the prefix.
    with pytest.raises(ValueError, match="mode='error'"):
        zr.write_dataset(ds, url, storage_options=opts, mode="error")
    zr.write_dataset(
        ray.data.from_arrow(table().slice(0, 7)), url, storage_options=opts, mode="overwrite"
    )
    assert len(keys(moto.endpoint, bucket, "events/")) == 1


def test_a_failed_write_leaves_no_object_of_its_own(moto: MotoServer, bucket: str) -> None:
    opts = storage_options(moto.endpoint)
    client(moto.endpoint).put_object(Bucket=bucket, Key="events/k=0/earlier.parquet", Body=b"x")

    def fail_late(batch: dict[str, Any]) -> dict[str, Any]:
        if 1900 in batch["id"]:
            raise RuntimeError("a task fails part-way")
        return batch

    ds = ray.data.from_arrow(table()).repartition(6).map_batches(fail_late)
    with pytest.raises(Exception, match="a task fails part-way"):
        zr.write_dataset(ds, f"s3://{bucket}/events", partition_cols=["k"], storage_options=opts)
    assert keys(moto.endpoint, bucket, "events/") == ["events/k=0/earlier.parquet"]
