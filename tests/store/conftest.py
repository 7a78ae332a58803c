"""The object store tests' S3-compatible server: moto's server mode as its own process on
127.0.0.1 (tests.helpers.s3server), a bucket made per test, and a fault proxy in front of
it that the tests tell to answer with errors or to drop connections."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("boto3")
pytest.importorskip("moto")

from tests.helpers.s3server import (  # noqa: E402
    KEY,
    SECRET,
    MotoServer,
    Proxy,
    boto_client,
    storage_options,
)

__all__ = ["KEY", "SECRET", "MotoServer", "Proxy", "client", "keys", "storage_options"]

client = boto_client


@pytest.fixture(scope="session")
def moto() -> Iterator[MotoServer]:
    server = MotoServer()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def proxy(moto: MotoServer) -> Iterator[Proxy]:
    p = Proxy(moto.port)
    yield p
    p.stop()


@pytest.fixture
def bucket(moto: MotoServer, proxy: Proxy) -> Iterator[str]:
    name = "t-" + uuid.uuid4().hex[:20]
    client(moto.endpoint).create_bucket(Bucket=name)
    proxy.clear()
    yield name
    proxy.clear()


def keys(endpoint: str, bucket: str, prefix: str = "") -> list[str]:
    listed: dict[str, Any] = client(endpoint).list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for o in listed.get("Contents", []))
