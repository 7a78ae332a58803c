"""An S3-compatible server for the object store tests: moto's server mode, run as its own
process on 127.0.0.1, a bucket made per test, and a fault proxy in front of it that the
tests tell to answer with errors or to stop answering."""

from __future__ import annotations

import http.client
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto")

KEY = "testing-key"
SECRET = "testing-secret"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MotoServer:
    """A moto server process on a port of its own."""

    def __init__(self) -> None:
        self.port = _free_port()
        exe = shutil.which("moto_server", path=os.path.dirname(sys.executable))
        command = [exe] if exe else [sys.executable, "-m", "moto.server"]
        self.process = subprocess.Popen(
            [*command, "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the moto server did not start") from None
                time.sleep(0.1)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


class FaultProxy:
    """Forwards requests to the server, except those the test says to fail: the next
    ``count`` requests matching ``method`` (and a query containing ``query``) answer
    ``status``, or with ``status=None`` the connection is closed without an answer."""

    def __init__(self, upstream_port: int) -> None:
        self.lock = threading.Lock()
        self.rules: list[dict[str, Any]] = []
        self.seen: list[tuple[str, str]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with proxy.lock:
                    proxy.seen.append((self.command, self.path))
                    rule = next(
                        (r for r in proxy.rules if r["count"] and proxy._matches(r, self)), None
                    )
                    if rule is not None:
                        rule["count"] -= 1
                if rule is not None:
                    if rule["status"] is None:
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    payload = (
                        b"<Error><Code>InternalError</Code><Message>injected</Message></Error>"
                    )
                    self.send_response(rule["status"])
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @staticmethod
    def _matches(rule: dict[str, Any], handler: BaseHTTPRequestHandler) -> bool:
        if rule["method"] and handler.command != rule["method"]:
            return False
        return rule["query"] is None or rule["query"] in handler.path

    def fail(
        self,
        count: int,
        method: str | None = None,
        status: int | None = 500,
        query: str | None = None,
    ) -> None:
        with self.lock:
            self.rules.append({"count": count, "method": method, "status": status, "query": query})

    def clear(self) -> None:
        with self.lock:
            self.rules.clear()
            self.seen.clear()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="session")
def moto() -> Iterator[MotoServer]:
    server = MotoServer()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def proxy(moto: MotoServer) -> Iterator[FaultProxy]:
    p = FaultProxy(moto.port)
    yield p
    p.stop()


def client(endpoint: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=KEY,
        aws_secret_access_key=SECRET,
        region_name="us-east-1",
    )


def storage_options(endpoint: str, **more: Any) -> dict[str, Any]:
    return {
        "endpoint": endpoint,
        "access_key_id": KEY,
        "secret_access_key": SECRET,
        "region": "us-east-1",
        **more,
    }


@pytest.fixture
def bucket(moto: MotoServer, proxy: FaultProxy) -> Iterator[str]:
    name = "t-" + uuid.uuid4().hex[:20]
    client(moto.endpoint).create_bucket(Bucket=name)
    proxy.clear()
    yield name
    proxy.clear()


def keys(endpoint: str, bucket: str, prefix: str = "") -> list[str]:
    listed = client(endpoint).list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for o in listed.get("Contents", []))
