"""A data node under a memory limit far below its dataset: `cachedb worker --memory-limit 256MiB
--disk-dir …` loads a dataset of about 1 GiB (as Arrow) from an Iceberg table in MinIO and
serves whole epochs of it to the Python CacheDataset, every row exactly once, while a sampler
reads the node's resident memory every 100 ms.

What is sampled is the process's anonymous resident memory (RssAnon in /proc/PID/status): the
heap, stacks and buffers the process owns. Partitions on the disk tier are read through mmap, so
their pages show up as file-backed resident memory (RssFile): that is the kernel's page cache,
which it reclaims under pressure, and it is reported beside the figure, not counted against the
limit. docs/memory.md documents the slack allowed above the limit.

The table's values repeat (dictionary-encoded Parquet stays small, so writing it is quick), but
as Arrow every row is 8 bytes per column: the dataset's size is what the node must hold.
"""

from __future__ import annotations

import os
import pathlib
import secrets
import threading
import time

import numpy as np
import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import DoubleType, LongType, NestedField

import cachedb
import iceberg_fixtures
from servers import CachedbProcess, s3_yaml, write_config

BUCKET = "memlimit"
CATALOG = "memlake"
TABLE = "ml.wide"
DATASET = "wide"
FEATURES = [f"f{k}" for k in range(15)]
ROW_BYTES = 8 * (1 + len(FEATURES))
# The dataset's size as Arrow; CACHEDB_MEMORY_TEST_BYTES makes it smaller for a quick run.
DATASET_BYTES = int(os.environ.get("CACHEDB_MEMORY_TEST_BYTES", str(1 << 30)))
ROWS = DATASET_BYTES // ROW_BYTES
FILES = 8
LIMIT = 256 << 20
# What docs/memory.md allows above --memory-limit: the slack (a quarter of the limit, at least
# 256 MiB) for the Go runtime, gRPC and Parquet decode buffers that the pool does not see. The
# Go runtime's soft limit sits an eighth of the slack below the limit plus the slack.
SLACK = max(LIMIT // 4, 256 << 20)


def wide_rows(ids: np.ndarray, schema: pa.Schema) -> pa.Table:
    cols = {"id": pa.array(ids, pa.int64())}
    for k, f in enumerate(FEATURES):
        cols[f] = pa.array((ids % (97 + k)).astype(np.float64) * 0.5, pa.float64())
    return pa.table(cols, schema=schema)


class RssSampler(threading.Thread):
    """Reads RssAnon and RssFile of pid every 100 ms until stopped; keeps the largest of each."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid = pid
        self.max_anon = 0
        self.max_file = 0
        self.samples = 0
        self._done = threading.Event()

    def read(self) -> tuple[int, int]:
        fields = {}
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                name, _, value = line.partition(":")
                if name in ("RssAnon", "RssFile"):
                    fields[name] = int(value.split()[0]) * 1024
        return fields.get("RssAnon", 0), fields.get("RssFile", 0)

    def run(self) -> None:
        while not self._done.is_set():
            anon, file_backed = self.read()
            self.max_anon = max(self.max_anon, anon)
            self.max_file = max(self.max_file, file_backed)
            self.samples += 1
            self._done.wait(0.1)

    def stop(self) -> None:
        self._done.set()
        self.join()


@pytest.fixture(scope="module")
def table(minio, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("memlimit")
    iceberg_fixtures.ensure_bucket(minio, BUCKET)
    catalog = iceberg_fixtures.open_catalog(CATALOG, workdir / "catalog.db", f"s3://{BUCKET}/{CATALOG}", minio)
    catalog.create_namespace_if_not_exists("ml")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        *[NestedField(2 + k, f, DoubleType(), required=True) for k, f in enumerate(FEATURES)],
    )
    tbl = catalog.create_table(TABLE, schema=schema, properties={"format-version": "2"})
    per = (ROWS + FILES - 1) // FILES
    arrow_schema = tbl.schema().as_arrow()
    for k in range(FILES):
        tbl.append(wide_rows(np.arange(k * per, min((k + 1) * per, ROWS), dtype=np.int64), arrow_schema))
    config = {
        "default_catalog": CATALOG,
        "s3": s3_yaml(minio),
        "catalogs": [{"name": CATALOG, "type": "sql", "uri": f"sqlite:///{workdir / 'catalog.db'}",
                      "warehouse": f"s3://{BUCKET}/{CATALOG}", "default_namespace": "ml"}],
    }
    return workdir, write_config(workdir / "cachedb.yaml", config)


def test_node_under_limit_loads_and_serves_a_larger_dataset(table):
    workdir, config_path = table
    disk = workdir / "disk"
    env = {"CACHEDB_CLUSTER_SECRET": secrets.token_hex(16), "AWS_EC2_METADATA_DISABLED": "true"}
    common = ["--config", str(config_path), "--no-warehouse"]
    with CachedbProcess([*common, "--no-demo"], env=env, name="cachedb-head", command="head") as head:
        addr = f"127.0.0.1:{head.port}"
        worker_args = [*common, "--head", addr, "--id", "m1", "--memory-limit", "256MiB", "--disk-dir", str(disk)]
        with CachedbProcess(worker_args, env=env, name="cachedb-m1", command="worker") as worker:
            sampler = RssSampler(worker.proc.pid)
            sampler.start()
            try:
                with cachedb.connect(addr) as db:
                    deadline = time.monotonic() + 30
                    while db.sql("SELECT count(*) AS n FROM system.nodes WHERE state = 'alive'").column("n")[0].as_py() != 1:
                        assert time.monotonic() < deadline, "the data node did not register:\n" + head.log()
                        time.sleep(0.1)
                    info = db.load({"name": DATASET, "table": TABLE, "columns": ["id", *FEATURES], "partitions": 16})
                    assert info["rows"] == ROWS, info
                    held = db.sql(f"SELECT bytes_in_memory, bytes_on_disk FROM system.datasets WHERE name = '{DATASET}'")
                    in_memory, on_disk = held.column(0)[0].as_py(), held.column(1)[0].as_py()
                    assert in_memory <= LIMIT and on_disk > 0, (in_memory, on_disk)
                    assert in_memory + on_disk >= ROWS * ROW_BYTES
                for epoch, columns in enumerate([["id", *FEATURES], ["id", "f3"]]):
                    ds = cachedb.CacheDataset(addr, DATASET, columns=columns, batch_size=8192, seed=3, epoch=epoch)
                    seen = np.zeros(ROWS, dtype=np.int8)
                    for batch in ds:
                        ids = batch["id"].numpy()
                        np.add.at(seen, ids, 1)
                        assert np.array_equal(batch["f3"].numpy(), (ids % 100).astype(np.float64) * 0.5)
                    assert seen.min() == 1 and seen.max() == 1, f"epoch {epoch}: not every row exactly once"
                with cachedb.connect(addr) as db:
                    whole = db.sql(f"SELECT count(*) AS n, sum(id) AS s FROM {DATASET}")
                    assert whole.column("n")[0].as_py() == ROWS
                    assert whole.column("s")[0].as_py() == ROWS * (ROWS - 1) // 2
            finally:
                sampler.stop()
            print(f"\nnode RSS over {sampler.samples} samples: anonymous max {sampler.max_anon / 2**20:.0f} MiB, "
                  f"file-backed max {sampler.max_file / 2**20:.0f} MiB (limit {LIMIT >> 20} MiB + slack {SLACK >> 20} MiB)")
            assert sampler.samples > 10
            assert sampler.max_anon < LIMIT + SLACK, worker.log()[-4000:]
