"""Bulk ingest into a dataset held by the data nodes, as a producer writes features straight into
the cache: the Python ADBC driver (adbc_ingest with db_schema_name="datasets") and pandas
(to_sql(schema="datasets")) against a head and two data nodes, separate processes. The rows are
read back by SQL and by a training read (cachedb.CacheDataset); a data node restarted loses the
partitions it held, and the dataset says so.

The tests share one cluster and run in file order; the node-loss test runs last.
"""

from __future__ import annotations

import dataclasses
import secrets
import signal
import time

import adbc_driver_flightsql.dbapi
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import cachedb
from servers import CachedbProcess

WORKERS = ["w1", "w2"]
ROWS = 20_000


@dataclasses.dataclass
class IngestCluster:
    head: CachedbProcess
    workers: dict[str, CachedbProcess]
    worker_args: dict[str, list[str]]
    env: dict[str, str]

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.head.port}"

    def connect(self):
        return adbc_driver_flightsql.dbapi.connect(self.head.uri, autocommit=True)

    def query(self, sql: str) -> list[tuple]:
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall()

    def dataset(self, name: str) -> dict:
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute(f"SELECT state, row_count, partitions, nodes, source FROM system.datasets WHERE name = '{name}'")
            rows = cur.fetch_arrow_table().to_pylist()
        return rows[0] if rows else {}


@pytest.fixture(scope="module")
def ingest_cluster():
    env = {"CACHEDB_CLUSTER_SECRET": secrets.token_hex(16)}
    head_args = ["--no-warehouse", "--no-demo", "--suspect-after", "2s", "--heartbeat-interval", "500ms"]
    head = CachedbProcess(head_args, env=env, name="cachedb-head", command="head")
    worker_args = {wid: ["--no-warehouse", "--head", f"127.0.0.1:{head.port}", "--id", wid] for wid in WORKERS}
    workers: dict[str, CachedbProcess] = {}
    try:
        for wid in WORKERS:
            workers[wid] = CachedbProcess(worker_args[wid], env=env, name=f"cachedb-{wid}", command="worker")
        c = IngestCluster(head, workers, worker_args, env)
        deadline = time.monotonic() + 15
        while c.query("SELECT count(*) FROM system.nodes WHERE state = 'alive'") != [(len(WORKERS),)]:
            if time.monotonic() > deadline:
                pytest.fail("data nodes did not register:\n" + head.log())
            time.sleep(0.1)
        yield c
    finally:
        for w in workers.values():
            w.stop()
        head.stop()


def features(first: int, rows: int) -> pa.Table:
    ids = np.arange(first, first + rows, dtype=np.int64)
    return pa.table({"id": ids, "f": pa.array((ids % 1000) / 8, pa.float32()), "label": pa.array(ids % 3, pa.int32())})


def batched(table: pa.Table, rows: int) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=rows))


def epoch_ids(c: IngestCluster, name: str, seed: int) -> tuple[list[int], object]:
    ds = cachedb.CacheDataset(c.addr, name, columns=["id", "f"], batch_size=1000, seed=seed)
    ids: list[int] = []
    dtype = None
    for batch in ds:
        ids.extend(batch["id"].tolist())
        dtype = batch["f"].dtype
    return ids, dtype


def test_adbc_ingest_makes_a_dataset_that_sql_and_training_reads_read(ingest_cluster):
    c = ingest_cluster
    data = features(0, ROWS)
    with c.connect() as conn, conn.cursor() as cur:
        # Batches of 1,000 rows: the dataset gets 4 partitions per data node, of whole batches.
        assert cur.adbc_ingest("feats", batched(data, 1000), mode="create", db_schema_name="datasets") == ROWS
        with pytest.raises(adbc_driver_flightsql.dbapi.Error, match="Dataset 'feats' already exists"):
            cur.adbc_ingest("feats", data, mode="create", db_schema_name="datasets")
        cur.execute("SELECT count(*), sum(id), sum(label) FROM feats")
        assert cur.fetchone() == (ROWS, ROWS * (ROWS - 1) // 2, sum(data.column("label").to_pylist()))
        cur.execute("SELECT id, f, label FROM datasets.feats ORDER BY id")
        back = cur.fetch_arrow_table()
    info = c.dataset("feats")
    assert info["state"] == "ready" and info["row_count"] == ROWS and info["partitions"] == 8, info
    assert info["nodes"] == "w1,w2" and info["source"] == "bulk ingest (create)", info
    assert back.column("id").to_pylist() == data.column("id").to_pylist()
    # SQL computes with the widened types; the dataset holds float32 as sent.
    assert back.schema.field("f").type == pa.float64()
    assert back.column("f").to_pylist() == [float(v) for v in data.column("f").to_pylist()]

    # A training read: every row once per epoch, float32 columns as float32, another order next epoch.
    ids, dtype = epoch_ids(c, "feats", seed=5)
    assert sorted(ids) == list(range(ROWS)) and str(dtype) == "torch.float32"
    again, _ = epoch_ids(c, "feats", seed=6)
    assert sorted(again) == list(range(ROWS)) and again != ids

    # Append: the rows read back, then the new ones, in a new generation; replace swaps it whole.
    with c.connect() as conn, conn.cursor() as cur:
        assert cur.adbc_ingest("feats", features(ROWS, 500), mode="append", db_schema_name="datasets") == 500
        cur.execute("SELECT count(*), count(DISTINCT id), max(id) FROM feats")
        assert cur.fetchone() == (ROWS + 500, ROWS + 500, ROWS + 499)
        assert cur.adbc_ingest("feats", features(0, 300), mode="replace", db_schema_name="datasets") == 300
        cur.execute("SELECT count(*) FROM feats")
        assert cur.fetchone() == (300,)
    ids, _ = epoch_ids(c, "feats", seed=5)
    assert sorted(ids) == list(range(300))


def test_pandas_to_sql_into_the_datasets_schema(ingest_cluster):
    """pandas finds the dataset where it wrote it (adbc_get_objects in schema datasets), and its
    DROP TABLE "datasets"."t" and SELECT * FROM "datasets"."t" name it."""
    c = ingest_cluster
    df = pd.DataFrame({"id": np.arange(1000, dtype=np.int64), "x": np.linspace(0, 1, 1000), "city": [f"c{k % 7}" for k in range(1000)]})
    with c.connect() as conn:
        assert df.to_sql("frame", conn, schema="datasets", index=False) == 1000
        with pytest.raises(ValueError, match="already exists"):
            df.to_sql("frame", conn, schema="datasets", index=False)
        assert df.head(10).to_sql("frame", conn, schema="datasets", index=False, if_exists="append") == 10
        assert pd.read_sql("SELECT count(*) AS n FROM frame", conn)["n"].tolist() == [1010]
        for _ in range(2):
            assert df.head(100).to_sql("frame", conn, schema="datasets", index=False, if_exists="replace") == 100
        back = pd.read_sql_table("frame", conn, schema="datasets").sort_values("id", ignore_index=True)
    pd.testing.assert_frame_equal(back, df.head(100), check_dtype=False)
    assert c.dataset("frame")["row_count"] == 100


def test_a_restarted_node_loses_the_partitions_it_held(ingest_cluster):
    """Each partition has one copy: a data node restarted (a new process, holding nothing) loses
    what it held, the dataset is lost, and reads fail naming the partition and the node; the
    dataset can be dropped and ingested again."""
    c = ingest_cluster
    with c.connect() as conn, conn.cursor() as cur:
        assert cur.adbc_ingest("fragile", batched(features(0, 8000), 1000), mode="create", db_schema_name="datasets") == 8000
    assert c.dataset("fragile")["nodes"] == "w1,w2"
    old = c.workers["w2"]
    old.proc.send_signal(signal.SIGKILL)
    old.proc.wait()
    c.workers["w2"] = CachedbProcess(c.worker_args["w2"], env=c.env, name="cachedb-w2", command="worker", port=old.port)
    deadline = time.monotonic() + 60
    while c.dataset("fragile").get("state") != "lost":
        assert time.monotonic() < deadline, f"the dataset was not found lost: {c.dataset('fragile')}\n{c.head.log()}"
        time.sleep(0.1)
    with pytest.raises(adbc_driver_flightsql.dbapi.Error, match=r"was held only by data node w2, which was lost") as caught:
        c.query("SELECT count(*) FROM fragile")
    assert "(DataLoss; ExecuteQuery)" in str(caught.value) and "DROP TABLE fragile and ingest it again" in str(caught.value)
    with pytest.raises(Exception, match="held only by data node w2"):
        epoch_ids(c, "fragile", seed=1)
    c.query("DROP TABLE fragile")
    with c.connect() as conn, conn.cursor() as cur:
        assert cur.adbc_ingest("fragile", features(0, 8000), mode="create", db_schema_name="datasets") == 8000
    assert c.query("SELECT count(*) FROM fragile") == [(8000,)]
