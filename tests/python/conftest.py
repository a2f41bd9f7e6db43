"""Fixtures that start a real `cachedb serve` process for the Python client tests.

The binary is $CACHEDB_BIN, or bin/cachedb at the repository root (`make build` makes it).
Each test session gets one server on a free loopback port; it is stopped with SIGTERM at the
end and must exit with status 0.
"""

import os
import pathlib
import signal
import socket
import subprocess
import tempfile
import time

import adbc_driver_flightsql.dbapi
import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 30


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(proc: subprocess.Popen, port: int, log_path: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"cachedb exited with status {proc.returncode} before listening:\n"
                + pathlib.Path(log_path).read_text()
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"cachedb did not listen on port {port} within {START_TIMEOUT_S}s")


@pytest.fixture(scope="session")
def server():
    """Yields the grpc:// URI of a running server."""
    binary = os.environ.get("CACHEDB_BIN", str(REPO_ROOT / "bin" / "cachedb"))
    if not os.path.exists(binary):
        pytest.fail(f"cachedb binary {binary} not found: run `make build`")
    port = _free_port()
    with tempfile.NamedTemporaryFile(prefix="cachedb-", suffix=".log", delete=False) as log:
        log_path = log.name
        proc = subprocess.Popen(
            [binary, "serve", "--listen", f"127.0.0.1:{port}"],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        _wait_listening(proc, port, log_path)
        yield f"grpc://127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            status = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail("cachedb did not exit within 10s of SIGTERM")
    if status != 0:
        pytest.fail(
            f"cachedb exited with status {status} on SIGTERM:\n" + pathlib.Path(log_path).read_text()
        )
    os.unlink(log_path)


@pytest.fixture
def conn(server):
    """A fresh ADBC DB-API connection to the session's server."""
    with adbc_driver_flightsql.dbapi.connect(server, autocommit=True) as c:
        yield c
