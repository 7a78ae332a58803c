"""An S3-compatible server for the object store benchmarks and tests: moto's server mode as
its own process on 127.0.0.1, and a proxy in front of it that adds a delay to every request
(as a nearby cloud region would) or answers chosen requests with errors.

``python -m tests.helpers.s3server --upstream-port N --delay 0.01`` runs the proxy as a
process of its own, printing its port, so that its work is not done by the process measured.
"""

from __future__ import annotations

import argparse
import atexit
import functools
import http.client
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

#: The credentials every client here uses (moto accepts any).
KEY = "testing-key"
SECRET = "testing-secret"
REGION = "us-east-1"


#: Times the proxy sends a request to the server before it gives up.
UPSTREAM_TRIES = 5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"{what} did not start") from None
            time.sleep(0.05)


class MotoServer:
    """A moto server process on a port of its own."""

    def __init__(self) -> None:
        self.port = free_port()
        exe = shutil.which("moto_server", path=os.path.dirname(sys.executable))
        command = [exe] if exe else [sys.executable, "-m", "moto.server"]
        self.process = subprocess.Popen(
            [*command, "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for(self.port, self.process, "the moto server")

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


class Proxy:
    """Forwards requests to ``upstream_port`` after ``delay`` seconds, except those a rule
    fails: the next ``count`` requests of ``method`` (whose target holds ``query``) answer
    ``status``, or with ``status=None`` lose their connection without an answer, or with
    ``cut=True`` get the server's answer with only half its body before the connection is
    lost."""

    def __init__(self, upstream_port: int, delay: float = 0.0, port: int = 0) -> None:
        self.lock = threading.Lock()
        self.rules: list[dict[str, Any]] = []
        self.seen: list[tuple[str, str]] = []
        upstreams = threading.local()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # An answer's headers and body go in separate writes: with Nagle's algorithm, the
            # body would wait for the client's delayed ACK (40 ms) on every request.
            disable_nagle_algorithm = True

            def log_message(self, *args: object) -> None:
                pass

            def _upstream(self, body: bytes) -> http.client.HTTPResponse:
                # The proxy answered "100 Continue" itself: the server gets the body at once.
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in ("connection", "expect", "transfer-encoding")
                }
                if body or self.command in ("PUT", "POST"):
                    headers["Content-Length"] = str(len(body))
                # moto's server closes connections after some answers and, loaded, refuses
                # some: the proxy tries again, so that what a client sees is the delay alone.
                for attempt in range(UPSTREAM_TRIES):
                    conn = getattr(upstreams, "conn", None)
                    if conn is None:
                        conn = upstreams.conn = http.client.HTTPConnection(
                            "127.0.0.1", upstream_port, timeout=120
                        )
                    try:
                        conn.request(self.command, self.path, body=body, headers=headers)
                        resp = conn.getresponse()
                        if resp.will_close:
                            upstreams.conn = None
                        return resp
                    except (OSError, http.client.HTTPException):
                        conn.close()
                        upstreams.conn = None
                        if attempt + 1 == UPSTREAM_TRIES:
                            raise
                        time.sleep(0.01 * (attempt + 1))
                raise AssertionError("unreachable")

            def _body(self) -> bytes:
                if "chunked" not in (self.headers.get("Transfer-Encoding") or "").lower():
                    length = int(self.headers.get("Content-Length") or 0)
                    return self.rfile.read(length) if length else b""
                # curl (pyarrow's S3 client) sends some bodies in chunks.
                chunks: list[bytes] = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline().strip():
                            pass
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()

            def _handle(self) -> None:
                body = self._body()
                rule = proxy._take_rule(self.command, self.path)
                if delay:
                    time.sleep(delay)
                if rule is not None and not rule["cut"]:
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
                resp = self._upstream(body)
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(k, v)
                # A HEAD's length is the object's, not its (empty) body's: clients size
                # objects by it.
                length = resp.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", length or str(len(data)))
                self.end_headers()
                if rule is not None:  # cut: half the body, then the connection is lost
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256

        self.server = Server(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _take_rule(self, method: str, path: str) -> dict[str, Any] | None:
        with self.lock:
            self.seen.append((method, path))
            for rule in self.rules:
                if (
                    rule["count"]
                    and rule["method"] in (None, method)
                    and (rule["query"] is None or rule["query"] in path)
                ):
                    rule["count"] -= 1
                    return rule
        return None

    def fail(
        self,
        count: int,
        method: str | None = None,
        status: int | None = 500,
        query: str | None = None,
        cut: bool = False,
    ) -> None:
        with self.lock:
            self.rules.append(
                {"count": count, "method": method, "status": status, "query": query, "cut": cut}
            )

    def clear(self) -> None:
        with self.lock:
            self.rules.clear()
            self.seen.clear()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@functools.cache
def shared_server() -> MotoServer:
    """One moto server for the process, stopped at exit."""
    server = MotoServer()
    atexit.register(server.stop)
    return server


@functools.cache
def delayed_endpoint(delay: float) -> str:
    """The endpoint of a proxy process adding ``delay`` seconds to each request to the
    process's server, stopped at exit."""
    upstream = shared_server()
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.helpers.s3server",
            "--upstream-port",
            str(upstream.port),
            "--delay",
            str(delay),
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        # The repository's root, where this module is, on the child's path.
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                p
                for p in (str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH"))
                if p
            ),
        },
    )
    atexit.register(process.kill)
    _wait_for(port, process, "the delaying proxy")
    return f"http://127.0.0.1:{port}"


def storage_options(endpoint: str, **more: Any) -> dict[str, Any]:
    """zstdpool's (and polars') ``storage_options`` for ``endpoint``."""
    return {
        "endpoint": endpoint,
        "access_key_id": KEY,
        "secret_access_key": SECRET,
        "region": REGION,
        **more,
    }


def boto_client(endpoint: str) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=KEY,
        aws_secret_access_key=SECRET,
        region_name=REGION,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--upstream-port", type=int, required=True)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    proxy = Proxy(args.upstream_port, args.delay, args.port)
    print(proxy.port, flush=True)
    proxy.thread.join()


if __name__ == "__main__":
    main()
