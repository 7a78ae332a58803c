"""The object store workloads of ``python -m benchmarks``: the ``store`` group.

The dataset group's table (iceberg-go's shape, Hive partitions by ``partition_key``, zstd
level 3) written to and read back from an S3-compatible server: moto's server mode as its
own process on 127.0.0.1 (``tests.helpers.s3server``), directly and through a proxy process
that adds 10 ms to every request, as a nearby cloud region would. Contenders: zstdpool
(``s3://`` with ``storage_options``), pyarrow (``S3FileSystem(endpoint_override=...)``) and
polars (``storage_options``). ``server floor`` is the server's own cost: bare PUTs (or GETs)
of the same number of objects of the same mean size, 32 in flight, from raw HTTP
connections; no client that writes (or reads) those files can be faster than it.

moto is slow: a few milliseconds of Python per request. It caps every client, so the ratios
to the floor say more than those between clients.
"""

from __future__ import annotations

import functools
import http.client
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from benchmarks.harness.data import have_numpy, partitioned_table
from benchmarks.harness.dataset import LEVEL
from benchmarks.harness.runner import Contender, Profile, Timed, Workload, register_source

#: (rows, partitions) per profile.
SHAPES: dict[str, tuple[int, int]] = {
    "tiny": (2_000, 10),
    "quick": (100_000, 1000),
    "full": (100_000, 1000),
}

#: Seconds the delaying proxy adds to each request.
DELAY = 0.010

#: Requests in flight for the floor (zstdpool's default, and polars').
IN_FLIGHT = 32


@dataclass(frozen=True)
class StoreCase:
    rows: int
    partitions: int
    #: "write" or "read".
    op: str
    #: Seconds added to each request (0: the server directly).
    delay: float

    @property
    def name(self) -> str:
        where = "" if not self.delay else f", +{self.delay * 1000:.0f} ms per request"
        return f"store {self.op}, {self.rows} rows, {self.partitions} partitions{where}"


@functools.cache
def _endpoint(delay: float) -> str:
    from tests.helpers import s3server

    return s3server.delayed_endpoint(delay) if delay else s3server.shared_server().endpoint


@functools.cache
def _bucket() -> str:
    """A bucket for the run, made on the process's server."""
    from tests.helpers import s3server

    name = "bench-" + uuid.uuid4().hex[:16]
    s3server.boto_client(s3server.shared_server().endpoint).create_bucket(Bucket=name)
    return name


@functools.cache
def _written(rows: int, partitions: int) -> tuple[str, tuple[str, ...], int]:
    """A dataset zstdpool wrote for the reads: its prefix, keys and mean object size."""
    import zstdpool.dataset as zd

    from tests.helpers import s3server

    prefix = f"read-{rows}-{partitions}"
    files = zd.write_dataset(
        partitioned_table(rows, partitions),
        f"s3://{_bucket()}/{prefix}",
        partitioning=["partition_key"],
        partitioning_flavor="hive",
        level=LEVEL,
        existing_data_behavior="overwrite_or_ignore",
        storage_options=s3server.storage_options(_endpoint(0.0)),
    )
    keys = tuple(str(f["path"]).split("/", 1)[1] for f in files)
    return prefix, keys, sum(int(f["size"]) for f in files) // max(1, len(files))


#: What the floor's requests carry: an Authorization header of the right form, which moto
#: requires and does not check (so the floor spends nothing on signing).
_AUTH = {
    "Authorization": "AWS4-HMAC-SHA256 Credential=testing-key/20260101/us-east-1/s3/"
    "aws4_request, SignedHeaders=host, Signature=00",
    "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
    "x-amz-date": "20260101T000000Z",
}


def _raw_requests(endpoint: str, method: str, keys: tuple[str, ...], body: bytes) -> int:
    """``method`` on every key, ``IN_FLIGHT`` at once over kept-alive connections; the
    bytes answered."""
    host, port = endpoint.removeprefix("http://").split(":")
    local = threading.local()
    bucket = _bucket()

    def one(key: str) -> int:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPConnection(host, int(port), timeout=120)
        conn.request(
            method, f"/{bucket}/{key}", body=body if method == "PUT" else None, headers=_AUTH
        )
        resp = conn.getresponse()
        data = resp.read()
        if resp.status >= 300:
            raise RuntimeError(f"{method} {key}: {resp.status}")
        return len(data)

    with ThreadPoolExecutor(IN_FLIGHT) as pool:
        return sum(pool.map(one, keys))


def _zstdpool(case: StoreCase) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        import zstdpool.dataset as zd

        from tests.helpers import s3server

        opts = s3server.storage_options(_endpoint(case.delay))
        if case.op == "read":
            prefix, _, _ = _written(case.rows, case.partitions)
            url = f"s3://{_bucket()}/{prefix}"
            return lambda: zd.dataset(url, storage_options=opts).to_table()
        table = partitioned_table(case.rows, case.partitions)
        url = f"s3://{_bucket()}/zstdpool-{case.delay}"
        return lambda: zd.write_dataset(
            table,
            url,
            partitioning=["partition_key"],
            partitioning_flavor="hive",
            level=LEVEL,
            existing_data_behavior="overwrite_or_ignore",
            storage_options=opts,
        )

    return setup


def _s3_filesystem(case: StoreCase) -> Any:
    """pyarrow's S3 filesystem on the case's endpoint."""
    import pyarrow.fs as pafs

    from tests.helpers import s3server

    return pafs.S3FileSystem(
        endpoint_override=_endpoint(case.delay),
        scheme="http",
        access_key=s3server.KEY,
        secret_key=s3server.SECRET,
        region=s3server.REGION,
    )


def _zstdpool_filesystem(case: StoreCase) -> Callable[[ExitStack], Timed]:
    """zstdpool given pyarrow's S3 filesystem as ``filesystem=``: its requests are that
    filesystem's, each call made with the GIL, where a URL's are made from Rust."""

    def setup(stack: ExitStack) -> Timed:
        import zstdpool.dataset as zd

        fs = _s3_filesystem(case)
        if case.op == "read":
            prefix, _, _ = _written(case.rows, case.partitions)
            path = f"{_bucket()}/{prefix}"
            return lambda: zd.dataset(path, filesystem=fs).to_table()
        table = partitioned_table(case.rows, case.partitions)
        path = f"{_bucket()}/zstdpool-fs-{case.delay}"
        return lambda: zd.write_dataset(
            table,
            path,
            partitioning=["partition_key"],
            partitioning_flavor="hive",
            level=LEVEL,
            existing_data_behavior="overwrite_or_ignore",
            filesystem=fs,
        )

    return setup


def _pyarrow(case: StoreCase) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        import pyarrow.dataset as ds

        fs = _s3_filesystem(case)
        if case.op == "read":
            prefix, _, _ = _written(case.rows, case.partitions)
            path = f"{_bucket()}/{prefix}"
            return lambda: ds.dataset(path, filesystem=fs, partitioning="hive").to_table()
        table = partitioned_table(case.rows, case.partitions)
        fmt = ds.ParquetFileFormat()
        options = fmt.make_write_options(compression="zstd", compression_level=LEVEL)
        path = f"{_bucket()}/pyarrow-{case.delay}"
        return lambda: ds.write_dataset(
            table,
            path,
            filesystem=fs,
            format=fmt,
            file_options=options,
            partitioning=["partition_key"],
            partitioning_flavor="hive",
            existing_data_behavior="overwrite_or_ignore",
            max_partitions=100_000,
        )

    return setup


def _polars(case: StoreCase) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        import polars as pl

        from tests.helpers import s3server

        opts = s3server.storage_options(_endpoint(case.delay), allow_http="true")
        if case.op == "read":
            prefix, _, _ = _written(case.rows, case.partitions)
            pattern = f"s3://{_bucket()}/{prefix}/**/*.parquet"
            return lambda: pl.scan_parquet(
                pattern, hive_partitioning=True, storage_options=opts
            ).collect()
        frame = pl.from_arrow(partitioned_table(case.rows, case.partitions))
        assert isinstance(frame, pl.DataFrame)  # a table, not a column
        url = f"s3://{_bucket()}/polars-{case.delay}/"
        return lambda: frame.write_parquet(
            url,
            partition_by="partition_key",
            compression="zstd",
            compression_level=LEVEL,
            storage_options=opts,
        )

    return setup


def _floor(case: StoreCase) -> Callable[[ExitStack], Timed]:
    def setup(stack: ExitStack) -> Timed:
        _, keys, mean = _written(case.rows, case.partitions)
        endpoint = _endpoint(case.delay)
        if case.op == "read":
            return lambda: _raw_requests(endpoint, "GET", keys, b"")
        body = bytes(mean)
        floor_keys = tuple(f"floor-{case.delay}/{i}" for i in range(len(keys)))
        return lambda: _raw_requests(endpoint, "PUT", floor_keys, body)

    return setup


def _rows(out: Any) -> int | None:
    if out is None:
        return None
    if isinstance(out, list):
        return sum(int(f["num_rows"]) for f in out)
    height = getattr(out, "height", None)
    if height is not None:
        return int(height)
    rows = getattr(out, "num_rows", None)
    return None if rows is None else int(rows)


def check(case: StoreCase, out: object) -> None:
    """Raises AssertionError unless a read returned every row (or zstdpool wrote them)."""
    rows = _rows(out)
    if rows is not None and rows != case.rows:
        raise AssertionError(f"{rows} rows, {case.rows} expected")


def store_workload(case: StoreCase) -> Workload:
    req = ("moto", "boto3")
    return Workload(
        name=case.name,
        group="store",
        description=(
            f"{case.name}: a Hive dataset (iceberg-go's shape, zstd level {LEVEL}) "
            f"{'written to' if case.op == 'write' else 'read from'} moto's S3 server, its own "
            f"process on 127.0.0.1"
            + (
                f", through a proxy adding {case.delay * 1000:.0f} ms per request"
                if case.delay
                else ""
            )
            + f"; the floor is the same number of bare {'PUTs' if case.op == 'write' else 'GETs'}, "
            f"{IN_FLIGHT} in flight."
        ),
        contenders=(
            Contender("zstdpool", _zstdpool(case), functools.partial(check, case), requires=req),
            Contender(
                "zstdpool (filesystem=S3FileSystem)",
                _zstdpool_filesystem(case),
                functools.partial(check, case),
                requires=(*req, "pyarrow"),
            ),
            Contender(
                "pyarrow (S3FileSystem)",
                _pyarrow(case),
                functools.partial(check, case),
                requires=(*req, "pyarrow"),
            ),
            Contender(
                "polars", _polars(case), functools.partial(check, case), requires=(*req, "polars")
            ),
            Contender("server floor", _floor(case), requires=req),
        ),
        nbytes=partitioned_table(case.rows, case.partitions).nbytes,
        slow=True,
    )


#: Rows of the one large object read whole, per profile (32 bytes a row, about half of it
#: left by zstd: the quick profile's object is about 60 MB).
LARGE_ROWS: dict[str, int] = {"tiny": 100_000, "quick": 4_000_000, "full": 4_000_000}


@functools.cache
def _large_object(rows: int) -> tuple[str, int]:
    """One Parquet object of ``rows`` rows of the dataset group's table, written by
    zstdpool; its key and size."""
    import zstdpool.parquet as zp

    from tests.helpers import s3server

    key = f"large-{rows}.parquet"
    zp.write_table(
        partitioned_table(rows, 1000),
        f"s3://{_bucket()}/{key}",
        compression_level=LEVEL,
        storage_options=s3server.storage_options(_endpoint(0.0)),
    )
    head = s3server.boto_client(_endpoint(0.0)).head_object(Bucket=_bucket(), Key=key)
    return key, int(head["ContentLength"])


def large_object_workload(rows: int) -> Workload:
    """One large object read whole: zstdpool's reader against one bare GET of the object
    (what no reader of it can beat), pyarrow's and polars'."""

    def zstdpool_read(stack: ExitStack) -> Timed:
        import zstdpool.parquet as zp

        from tests.helpers import s3server

        key, _ = _large_object(rows)
        opts = s3server.storage_options(_endpoint(0.0))
        return lambda: zp.read_table(f"s3://{_bucket()}/{key}", storage_options=opts)

    def pyarrow_read(stack: ExitStack) -> Timed:
        import pyarrow.parquet as pq

        key, _ = _large_object(rows)
        fs = _s3_filesystem(StoreCase(rows, 1, "read", 0.0))
        return lambda: pq.read_table(f"{_bucket()}/{key}", filesystem=fs)

    def polars_read(stack: ExitStack) -> Timed:
        import polars as pl

        from tests.helpers import s3server

        key, _ = _large_object(rows)
        opts = s3server.storage_options(_endpoint(0.0), allow_http="true")
        return lambda: pl.read_parquet(f"s3://{_bucket()}/{key}", storage_options=opts)

    def one_get(stack: ExitStack) -> Timed:
        key, _ = _large_object(rows)
        endpoint = _endpoint(0.0)
        return lambda: _raw_requests(endpoint, "GET", (key,), b"")

    def check_rows(out: Any) -> None:
        got = _rows(out)
        if got != rows:
            raise AssertionError(f"{got} rows, {rows} expected")

    req = ("moto", "boto3")
    name = f"store read, one object of {rows} rows"
    return Workload(
        name=name,
        group="store",
        description=(
            f"{name}: one Parquet object (the dataset group's table, zstd level {LEVEL}) read "
            "whole from moto's S3 server, its own process on 127.0.0.1; the floor is one bare "
            "GET of the object."
        ),
        contenders=(
            Contender("zstdpool", zstdpool_read, check_rows, requires=req),
            Contender(
                "pyarrow (S3FileSystem)", pyarrow_read, check_rows, requires=(*req, "pyarrow")
            ),
            Contender("polars", polars_read, check_rows, requires=(*req, "polars")),
            Contender("one GET", one_get, requires=req),
        ),
        nbytes=partitioned_table(rows, 1000).nbytes,
        slow=True,
    )


@register_source
def store_workloads(profile: Profile) -> Iterator[Workload]:
    """The object store workloads (none without numpy)."""
    if not have_numpy():
        print(
            "note: the store workloads need numpy: pip install 'zstdpool[bench]'", file=sys.stderr
        )
        return
    rows, partitions = SHAPES.get(profile.name, SHAPES["quick"])
    for delay in (0.0, DELAY):
        for op in ("write", "read"):
            yield store_workload(StoreCase(rows, partitions, op, delay))
    yield large_object_workload(LARGE_ROWS.get(profile.name, LARGE_ROWS["quick"]))
