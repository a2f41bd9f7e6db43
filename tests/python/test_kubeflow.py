"""cachedb as a drop-in for Kubeflow Trainer's data cache, read by Kubeflow's own client code.

A head and three workers are started exactly as the `torch-distributed-with-cache` runtime's
cache initializer starts its LeaderWorkerSet pods: the commands `head 0.0.0.0 50051` and
`worker 0.0.0.0 50051` (here each process on its own loopback address, all on one free port, as
pods are) with only the environment the initializer and LeaderWorkerSet give them: METADATA_LOC
(an s3a:// metadata.json that pyiceberg wrote into MinIO), SCHEMA_NAME, TABLE_NAME,
LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, LWS_WORKER_INDEX, HEALTH_PORT and AWS credentials. MinIO
needs one variable Kubeflow does not set, CACHEDB_S3_ENDPOINT; on AWS the SDK finds S3 itself.

The reader mirrors `DataCacheDataset.__iter__` of Kubeflow Trainer's example
(examples/pytorch/data-cache/fine-tune-with-cache.ipynb in github.com/kubeflow/trainer; the
client is defined there, in the training function, not in an installable package): the same
shard arithmetic over ranks, DataLoader workers and the epoch's seed, and the same pyarrow.flight
calls (FlightDescriptor.for_path(str(index), str(total_workers)), connect(...).get_flight_info,
then FlightClient(location.uri).do_get(endpoint.ticket) for every location of every endpoint).
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import secrets
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pyarrow as pa
import pyarrow.flight
import pytest
from pyarrow._flight import FlightClient
from pyiceberg.schema import Schema
from pyiceberg.types import FloatType, IntegerType, LongType, NestedField

import iceberg_fixtures
from servers import cachedb_binary, free_port

WORKERS = 3
FILES = 4
ROWS_PER_FILE = 2_500
READY_TIMEOUT_S = 120


def write_table(s3, workdir: pathlib.Path, name: str, files: int, rows_per_file: int) -> tuple[str, int]:
    """Writes kubeflow.NAME (files appends, so that many data files) with pyiceberg and returns
    its metadata location in Kubeflow's s3a:// spelling and its row count."""
    iceberg_fixtures.ensure_bucket(s3)
    catalog = iceberg_fixtures.open_catalog("kubeflow", workdir / "catalog.db", f"s3://{iceberg_fixtures.BUCKET}/kubeflow", s3)
    catalog.create_namespace_if_not_exists("kubeflow")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "feature", FloatType(), required=False),
        NestedField(3, "label", IntegerType(), required=False),
    )
    table = catalog.create_table(f"kubeflow.{name}", schema)
    arrow_schema = schema.as_arrow()
    for f in range(files):
        ids = list(range(f * rows_per_file, (f + 1) * rows_per_file))
        table.append(
            pa.table({"id": ids, "feature": [i / 7 for i in ids], "label": [i % 5 for i in ids]}, schema=arrow_schema)
        )
    location = table.metadata_location
    assert location.startswith("s3://")
    return "s3a://" + location[len("s3://") :], files * rows_per_file


class Pod:
    """One process of the cache, started as the LeaderWorkerSet starts its pod's container."""

    def __init__(self, role: str, host: str, port: int, env: dict[str, str]):
        self.health_port = int(env["HEALTH_PORT"])
        with tempfile.NamedTemporaryFile(prefix=f"kubeflow-{role}-", suffix=".log", delete=False) as log:
            self.log_path = log.name
            # argv[0] is the command's name, as `command: ["head"]` runs it in the image.
            self.proc = subprocess.Popen(
                [role, host, str(port)],
                executable=cachedb_binary(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
            )

    def log(self) -> str:
        return pathlib.Path(self.log_path).read_text(errors="replace")

    def ready(self) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/ready", timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError as e:
            return 0, str(e)

    def await_ready(self, status: int) -> str:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                pytest.fail(f"{self.proc.args[0]} exited with {self.proc.returncode}:\n{self.log()}")
            got, body = self.ready()
            if got == status:
                return body
            if time.monotonic() > deadline:
                pytest.fail(f"/ready still {got} {body!r}, want {status}:\n{self.log()}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.unlink(self.log_path)


@contextlib.contextmanager
def running_cache(s3, workdir: pathlib.Path, name: str, files: int, rows_per_file: int, extra_env: dict[str, str] | None = None):
    """Writes kubeflow.NAME, starts a head and WORKERS workers over it with Kubeflow's
    environment (and extra_env) and yields (the head's grpc:// endpoint, the row count) once all
    are ready."""
    metadata_loc, rows = write_table(s3, workdir, name, files, rows_per_file)
    port = free_port()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(workdir),
        "METADATA_LOC": metadata_loc,
        "SCHEMA_NAME": "kubeflow",
        "TABLE_NAME": name,
        "LWS_LEADER_ADDRESS": "127.0.0.1",
        "LWS_GROUP_SIZE": str(WORKERS + 1),
        "AWS_ACCESS_KEY_ID": s3.access_key_id,
        "AWS_SECRET_ACCESS_KEY": s3.secret_access_key,
        "AWS_REGION": s3.region,
        "AWS_EC2_METADATA_DISABLED": "true",
        "CACHEDB_S3_ENDPOINT": s3.endpoint,
        **(extra_env or {}),
    }
    pods = []
    try:
        head = Pod("head", "127.0.0.1", port, {**env, "LWS_WORKER_INDEX": "0", "HEALTH_PORT": str(free_port())})
        pods.append(head)
        # Not ready while its workers are missing, and it says what it waits for.
        assert f"dataset {name} loaded" in head.await_ready(503)
        for i in range(1, WORKERS + 1):
            pods.append(Pod("worker", f"127.0.0.{i + 1}", port, {**env, "LWS_WORKER_INDEX": str(i), "HEALTH_PORT": str(free_port())}))
        for pod in pods:
            pod.await_ready(200)
        yield f"grpc://127.0.0.1:{port}", rows
    finally:
        for pod in pods:
            pod.stop()


@pytest.fixture(scope="module")
def cache(minio, tmp_path_factory):
    """kubeflow.samples (FILES data files) on a head and WORKERS workers, all ready."""
    with running_cache(minio, tmp_path_factory.mktemp("kubeflow"), "samples", FILES, ROWS_PER_FILE) as c:
        yield c


class DataCacheDataset:
    """The calls of Kubeflow Trainer's DataCacheDataset (see the module docstring), with
    torch.distributed's rank and world size and the DataLoader worker given instead of read
    from torch, and the endpoint given instead of built from TRAIN_JOB_NAME."""

    def __init__(self, endpoint: str, seed: int = 0, batch_size: int = 128, options=None):
        self.endpoint = endpoint
        self.seed = seed
        self.batch_size = batch_size
        # Not in Kubeflow's code: the call options of a cache that requires a login
        # (cachedb.flight_call_options()), passed to get_flight_info and do_get.
        self.options = options

    def set_epoch(self, epoch):
        self.seed = self.seed + epoch

    def from_arrow_rb_to_tensor(self, chunk):
        yield chunk

    def stream_recordbatch_chunks(self, recordbatch_stream, chunk_size):
        leftover = None
        for rb in recordbatch_stream:
            batch = rb.data
            if leftover is not None:
                arrays = [pa.concat_arrays([leftover.column(i), batch.column(i)]) for i in range(len(batch.columns))]
                batch = pa.RecordBatch.from_arrays(arrays, batch.schema.names)
            for i in range(0, batch.num_rows, chunk_size):
                chunk = batch.slice(i, chunk_size)
                if chunk.num_rows < chunk_size:
                    leftover = chunk
                    break
                else:
                    yield from self.from_arrow_rb_to_tensor(chunk)
            else:
                leftover = None
        if leftover is not None and leftover.num_rows > 0:
            yield from self.from_arrow_rb_to_tensor(leftover)

    def iterate(self, rank, world_size, worker_id, num_workers):
        total_workers = num_workers * world_size
        global_worker_id = worker_id * world_size + rank
        index = (global_worker_id + self.seed) % total_workers

        descriptor = pa.flight.FlightDescriptor.for_path(*[s for s in [str(index), str(total_workers)]])
        client = pa.flight.connect(self.endpoint)
        flight_info = client.get_flight_info(descriptor, self.options)
        self.last_info = flight_info

        for endpoint in flight_info.endpoints:
            for location in endpoint.locations:
                _client = FlightClient(location.uri)
                ticket = endpoint.ticket
                reader = _client.do_get(ticket, self.options)
                yield from self.stream_recordbatch_chunks(reader, self.batch_size)


@pytest.mark.parametrize("world_size,num_workers", [(1, 1), (2, 2), (7, 1)])
def test_every_row_once_per_epoch(cache, world_size, num_workers):
    """1, 4 and 7 shards (more than the table's 4 data files): over two epochs (the seed moves
    each reader to another shard), the readers together get every row exactly once, and each
    shard's total_records is what it streams."""
    endpoint, rows = cache
    ds = DataCacheDataset(endpoint)
    for epoch in range(2):
        ds.set_epoch(epoch)
        ids = []
        for rank in range(world_size):
            for worker in range(num_workers):
                got = []
                for chunk in ds.iterate(rank, world_size, worker, num_workers):
                    assert chunk.schema.names == ["id", "feature", "label"]
                    got.extend(chunk.column("id").to_pylist())
                assert ds.last_info.total_records == len(got)
                assert len(got) in (rows // (world_size * num_workers), rows // (world_size * num_workers) + 1)
                ids.extend(got)
        assert len(ids) == rows
        assert sorted(ids) == list(range(rows))


def test_fewer_rows_than_shards_and_nodes(minio, tmp_path):
    """A table of 3 rows in one data file on three workers: nodes holding no rows, and 7 shards
    of which most are empty. Every shard answers (an empty one with no endpoints), and the rows
    arrive once."""
    with running_cache(minio, tmp_path, "tiny", 1, 3) as (endpoint, rows):
        ds = DataCacheDataset(endpoint)
        for total in (1, 4, 7):
            ids = []
            for index in range(total):
                got = [i for chunk in ds.iterate(index, total, 0, 1) for i in chunk.column("id").to_pylist()]
                assert ds.last_info.total_records == len(got)
                if not got:
                    assert ds.last_info.endpoints == []
                ids.extend(got)
            assert sorted(ids) == list(range(rows))


def test_a_token_from_a_secret(minio, tmp_path, monkeypatch):
    """The cache's pods given a service token in a file (CACHEDB_SERVICE_TOKEN_FILE, a mounted
    Secret) and a cluster secret besides Kubeflow's environment: every pod becomes ready; a
    DataCacheDataset without the token is refused; given cachedb.flight_call_options() (the
    token from CACHEDB_TOKEN_FILE, the same Secret mounted in the trainer) it reads every row
    once, and so does cachedb.CacheDataset, which reads the same variable."""
    import cachedb

    token_file = tmp_path / "token"
    token_file.write_text(secrets.token_hex(32) + "\n")
    env = {"CACHEDB_SERVICE_TOKEN_FILE": str(token_file), "CACHEDB_CLUSTER_SECRET": secrets.token_hex(16)}
    with running_cache(minio, tmp_path, "guarded", 2, 500, env) as (endpoint, rows):
        with pytest.raises(pa.flight.FlightUnauthenticatedError):
            list(DataCacheDataset(endpoint).iterate(0, 1, 0, 1))
        monkeypatch.setenv("CACHEDB_TOKEN_FILE", str(token_file))
        ds = DataCacheDataset(endpoint, options=cachedb.flight_call_options())
        for shards in (1, 3):
            ids = [i for k in range(shards) for chunk in ds.iterate(k, shards, 0, 1) for i in chunk.column("id").to_pylist()]
            assert sorted(ids) == list(range(rows))
        ids = [i for batch in cachedb.CacheDataset(endpoint, "guarded", columns=["id"], batch_size=256) for i in batch["id"].tolist()]
        assert sorted(ids) == list(range(rows))
        monkeypatch.setenv("CACHEDB_TOKEN_FILE", str(tmp_path / "missing"))
        with pytest.raises(FileNotFoundError):
            cachedb.flight_call_options()


def test_endpoints_are_on_the_workers(cache):
    """Every endpoint names exactly one location (the client reads each location), a worker's."""
    endpoint, _ = cache
    info = pa.flight.connect(endpoint).get_flight_info(pa.flight.FlightDescriptor.for_path("0", "1"))
    schema_names = info.schema.names
    assert schema_names == ["id", "feature", "label"]
    locations = set()
    for ep in info.endpoints:
        assert len(ep.locations) == 1
        locations.add(ep.locations[0].uri.decode())
    port = endpoint.rsplit(":", 1)[1]
    assert locations <= {f"grpc://127.0.0.{i + 1}:{port}" for i in range(1, WORKERS + 1)}
    assert len(locations) > 1


def free_port_run(count: int) -> int:
    """A port p with p..p+count-1 all free on loopback now."""
    import socket

    for _ in range(100):
        base = free_port()
        try:
            socks = []
            for p in range(base, base + count):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    pytest.fail(f"no {count} consecutive free ports")


def test_standin_script(tmp_path):
    """scripts/kubeflow-standin.sh starts a head and two workers in Kubeflow's local mode over
    the embedded demo table and its --check reads every row once for 1, 4 and 7 shards."""
    repo = pathlib.Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [str(repo / "scripts" / "kubeflow-standin.sh"), "-n", "2", "-p", str(free_port_run(3)), "-H", str(free_port_run(3)), "--check"],
        env={**{k: v for k, v in os.environ.items() if k not in ("METADATA_LOC", "SCHEMA_NAME", "TABLE_NAME")}, "CACHEDB_BIN": cachedb_binary(), "KUBEFLOW_STANDIN_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "every row once for 1, 4 and 7 shards" in out.stderr
