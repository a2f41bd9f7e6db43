"""The processes the benchmark runs against: MinIO (scripts/minio.sh) and `cachedb serve`.

Both listen on free loopback ports and are stopped by the benchmark when it ends, also when it
fails. Neither ever gets a secret on its command line: credentials travel in the environment.
"""

from __future__ import annotations

import os
import pathlib
import re
import secrets
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
MINIO_SCRIPT = REPO_ROOT / "scripts" / "minio.sh"
START_TIMEOUT_S = 30


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop_pid(pid: int, timeout_s: float = 10) -> None:
    """SIGTERM, then SIGKILL if the process is still there after timeout_s."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


class Minio:
    """MinIO serving data_dir on a free port with fresh random root credentials.

    Its Prometheus metrics are public (loopback only) so that `served()` can count the bytes
    and requests it answered: an engine-independent measure of what each system read.
    """

    region = "us-east-1"

    def __init__(self, data_dir: pathlib.Path):
        subprocess.run([str(MINIO_SCRIPT), "install"], check=True, stdout=subprocess.DEVNULL)
        self.data_dir = data_dir
        self.port = free_port()
        self.access_key_id = "bench-" + secrets.token_hex(6)
        self.secret_access_key = secrets.token_hex(20)
        out = subprocess.run(
            [str(MINIO_SCRIPT), "start", str(data_dir), str(self.port)],
            env={
                **os.environ,
                "MINIO_ROOT_USER": self.access_key_id,
                "MINIO_ROOT_PASSWORD": self.secret_access_key,
                "MINIO_PROMETHEUS_AUTH_TYPE": "public",
            },
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        if out.returncode != 0:
            raise RuntimeError(f"scripts/minio.sh start {data_dir} {self.port} failed:\n{out.stderr}")
        self.endpoint = out.stdout.strip()

    def pyiceberg_properties(self) -> dict[str, str]:
        return {
            "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO",
            "s3.endpoint": self.endpoint,
            "s3.access-key-id": self.access_key_id,
            "s3.secret-access-key": self.secret_access_key,
            "s3.region": self.region,
            "s3.force-virtual-addressing": "false",
        }

    def filesystem(self, allow_bucket_creation: bool = False):
        import pyarrow.fs as pafs

        scheme, _, host = self.endpoint.partition("://")
        return pafs.S3FileSystem(
            access_key=self.access_key_id,
            secret_key=self.secret_access_key,
            endpoint_override=host,
            scheme=scheme,
            region=self.region,
            allow_bucket_creation=allow_bucket_creation,
        )

    def served(self) -> tuple[int, int]:
        """(bytes sent, requests answered) over S3 since MinIO started, bodies and headers."""
        with urllib.request.urlopen(f"{self.endpoint}/minio/metrics/v3/api/requests", timeout=10) as r:
            text = r.read().decode()
        return parse_minio_metrics(text)

    def stop(self) -> None:
        pid_file = self.data_dir / ".minio.pid"
        if pid_file.exists():
            _stop_pid(int(pid_file.read_text()))
            pid_file.unlink()


def parse_minio_metrics(text: str) -> tuple[int, int]:
    """Sums MinIO's S3 traffic-sent bytes and per-API request counts from its v3 metrics."""
    sent = requests = 0
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r'^(\w+)\{([^}]*)\}\s+(\S+)$', line)
        if not m or 'type="s3"' not in m.group(2):
            continue
        if m.group(1) == "minio_api_requests_traffic_sent_bytes":
            sent += int(float(m.group(3)))
        elif m.group(1) == "minio_api_requests_total":
            requests += int(float(m.group(3)))
    return sent, requests


class Cachedb:
    """`cachedb serve` with a YAML configuration and extra flags; S3 keys come from the
    environment (CACHEDB_S3_*), never from the file or the command line."""

    def __init__(self, binary: pathlib.Path, config: pathlib.Path, flags: list[str], env: dict[str, str], name: str):
        self.port = free_port()
        self.uri = f"grpc://127.0.0.1:{self.port}"
        self.name = name
        with tempfile.NamedTemporaryFile(prefix=f"bench-{name}-", suffix=".log", delete=False) as log:
            self.log_path = pathlib.Path(log.name)
            self.proc = subprocess.Popen(
                [str(binary), "serve", "--listen", f"127.0.0.1:{self.port}", "--config", str(config), *flags],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **env},
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"cachedb ({name}) exited with status {self.proc.returncode}:\n{self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"cachedb ({name}) did not listen within {START_TIMEOUT_S}s:\n{self.log()}")
                time.sleep(0.05)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log_path.unlink(missing_ok=True)
