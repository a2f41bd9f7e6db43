"""Real processes the Python tests run against: cachedb, MinIO and Iceberg's REST catalog.

Each class starts its process on a free loopback port in its constructor, waits until it answers
and fails the calling test or fixture (pytest.fail) when it cannot; `stop` ends it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import pathlib
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

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


def cachedb_binary() -> str:
    """$CACHEDB_BIN, or bin/cachedb at the repository root; fails the caller when it is missing."""
    binary = os.environ.get("CACHEDB_BIN", str(REPO_ROOT / "bin" / "cachedb"))
    if not os.path.exists(binary):
        pytest.fail(f"cachedb binary {binary} not found: run `make build`")
    return binary


class CachedbProcess:
    """A running `cachedb serve` (the binary is $CACHEDB_BIN, or bin/cachedb): its grpc:// URI
    and its log. `stop` sends SIGTERM and fails unless the server exits with status 0 within
    10 s. `command` runs another listening subcommand instead of serve (head, worker); it gets
    the same --listen flag. `port` listens there instead of on a free port (a process started
    again where another was)."""

    def __init__(
        self, args: list[str], env: dict[str, str] | None = None, name: str = "cachedb", command: str = "serve", port: int | None = None
    ):
        binary = cachedb_binary()
        self.port = port or free_port()
        self.uri = f"grpc://127.0.0.1:{self.port}"
        with tempfile.NamedTemporaryFile(prefix=f"{name}-", suffix=".log", delete=False) as log:
            self.log_path = log.name
            self.proc = subprocess.Popen(
                [binary, command, "--listen", f"127.0.0.1:{self.port}", *args],
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


def minio_bucket_requests(s3, bucket: str) -> dict[str, int]:
    """MinIO's count of S3 requests on one bucket since it started, by API name (GetObject,
    HeadObject, ListObjectsV2, ...), from its v3 bucket metrics. The metrics endpoint wants a
    bearer token: an HS512 JWT for the root user signed with its secret key, which is what
    `mc admin prometheus generate` makes."""
    def b64(data: bytes) -> bytes:
        return base64.urlsafe_b64encode(data).rstrip(b"=")

    header = b64(json.dumps({"alg": "HS512", "typ": "JWT"}).encode())
    claims = b64(json.dumps({"exp": int(time.time()) + 300, "sub": s3.access_key_id, "iss": "prometheus"}).encode())
    signature = b64(hmac.new(s3.secret_access_key.encode(), header + b"." + claims, hashlib.sha512).digest())
    token = (header + b"." + claims + b"." + signature).decode()
    req = urllib.request.Request(
        f"{s3.endpoint}/minio/metrics/v3/bucket/api/{bucket}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read().decode()
    counts: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"^minio_bucket_api_total\{([^}]*)\}\s+(\S+)$", line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        if labels.get("bucket") == bucket:
            counts[labels["name"]] = counts.get(labels["name"], 0) + int(float(m.group(2)))
    return counts
