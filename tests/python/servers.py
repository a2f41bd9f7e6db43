"""Real processes the Python tests run against: cachedb, MinIO and Iceberg's REST catalog.

Each class starts its process on a free loopback port in its constructor, waits until it answers
and fails the calling test or fixture (pytest.fail) when it cannot; `stop` ends it.
"""

from __future__ import annotations

import json
import os
import pathlib
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 30


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(proc: subprocess.Popen, port: int, log_path: str) -> None:
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


class CachedbProcess:
    """A running `cachedb serve` (the binary is $CACHEDB_BIN, or bin/cachedb): its grpc:// URI
    and its log. `stop` sends SIGTERM and fails unless the server exits with status 0 within
    10 s."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None, name: str = "cachedb"):
        binary = os.environ.get("CACHEDB_BIN", str(REPO_ROOT / "bin" / "cachedb"))
        if not os.path.exists(binary):
            pytest.fail(f"cachedb binary {binary} not found: run `make build`")
        self.port = free_port()
        self.uri = f"grpc://127.0.0.1:{self.port}"
        with tempfile.NamedTemporaryFile(prefix=f"{name}-", suffix=".log", delete=False) as log:
            self.log_path = log.name
            self.proc = subprocess.Popen(
                [binary, "serve", "--listen", f"127.0.0.1:{self.port}", *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **(env or {})},
            )
        try:
            wait_listening(self.proc, self.port, self.log_path)
        except RuntimeError as e:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            pytest.fail(str(e))

    def log(self) -> str:
        return pathlib.Path(self.log_path).read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            status = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail("cachedb did not exit within 10s of SIGTERM:\n" + self.log())
        if status != 0:
            pytest.fail(f"cachedb exited with status {status} on SIGTERM:\n" + self.log())
        os.unlink(self.log_path)

    def __enter__(self) -> CachedbProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class MinioProcess:
    """A MinIO server started by `scripts/minio.sh start` on a free loopback port with random
    root credentials (so a test can look for the secret in error messages and logs). `s3` is an
    iceberg_fixtures.S3."""

    SCRIPT = REPO_ROOT / "scripts" / "minio.sh"

    def __init__(self, data_dir: pathlib.Path):
        from iceberg_fixtures import S3

        port = free_port()
        self.s3 = S3(
            endpoint=f"http://127.0.0.1:{port}",
            access_key_id="cachedb-" + secrets.token_hex(6),
            secret_access_key=secrets.token_hex(20),
        )
        self.data_dir = data_dir
        out = subprocess.run(
            [str(self.SCRIPT), "start", str(data_dir), str(port)],
            env={**os.environ, "MINIO_ROOT_USER": self.s3.access_key_id, "MINIO_ROOT_PASSWORD": self.s3.secret_access_key},
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        if out.returncode != 0:
            pytest.fail(f"scripts/minio.sh start failed (status {out.returncode}):\n{out.stderr}")
        if out.stdout.strip() != self.s3.endpoint:
            self.stop()
            pytest.fail(f"scripts/minio.sh start printed {out.stdout!r}, expected {self.s3.endpoint}")

    def stop(self) -> None:
        pid_file = self.data_dir / ".minio.pid"
        if not pid_file.exists():
            return
        pid = int(pid_file.read_text())
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)


class RestCatalogProcess:
    """Apache Iceberg's REST catalog server (scripts/iceberg-rest.sh) with its warehouse in
    MinIO. `uri` is its base URL."""

    SCRIPT = REPO_ROOT / "scripts" / "iceberg-rest.sh"

    def __init__(self, s3, warehouse: str, run_dir: pathlib.Path):
        if shutil.which("java") is None or shutil.which("mvn") is None:
            why = "the Iceberg REST catalog server needs java (17+) and mvn on PATH"
            if os.environ.get("CACHEDB_REQUIRE_ALL"):
                pytest.fail(why + " (CACHEDB_REQUIRE_ALL is set: `make test` installs it)")
            pytest.skip(why)
        self.port = free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "ICEBERG_REST_RUN_DIR": str(run_dir),
            "ICEBERG_REST_S3_ENDPOINT": s3.endpoint,
            "ICEBERG_REST_S3_ACCESS_KEY_ID": s3.access_key_id,
            "ICEBERG_REST_S3_SECRET_ACCESS_KEY": s3.secret_access_key,
            "ICEBERG_REST_S3_REGION": s3.region,
        }
        out = subprocess.run(
            [str(self.SCRIPT), "start", str(self.port), warehouse], env=self.env, capture_output=True, text=True
        )
        if out.returncode != 0:
            pytest.fail(f"scripts/iceberg-rest.sh start failed:\n{out.stderr}")

    def stop(self) -> None:
        subprocess.run([str(self.SCRIPT), "stop", str(self.port)], env=self.env, check=False)


def s3_yaml(s3, **overrides) -> dict:
    """The `s3:` section of a cachedb configuration."""
    section = {
        "endpoint": s3.endpoint,
        "region": s3.region,
        "access_key_id": s3.access_key_id,
        "secret_access_key": s3.secret_access_key,
        "path_style": True,
    }
    section.update(overrides)
    return section


def lake_catalog_yaml(lake, name: str | None = None, **extra) -> dict:
    """A `type: sql` catalog entry for the lake's SQLite catalog. A name other than the one
    pyiceberg wrote the tables under needs the catalog-name property to find them."""
    entry = {
        "name": name or lake.catalog_name,
        "type": "sql",
        "uri": lake.catalog_uri,
        "warehouse": lake.warehouse,
        "default_namespace": "default",
    }
    if name and name != lake.catalog_name:
        entry["properties"] = {"catalog-name": lake.catalog_name}
    entry.update(extra)
    return entry


def write_config(path: pathlib.Path, config: dict) -> pathlib.Path:
    """Writes a cachedb configuration. JSON is YAML, so no YAML library is needed."""
    path.write_text(json.dumps(config, indent=2))
    return path
