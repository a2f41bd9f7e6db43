"""Training reads from Python: the cachedb package (CacheDataset, DataLoader, connect) against a
head and three data nodes (separate processes) holding a dataset made from an Iceberg table that
pyiceberg wrote into MinIO.

The guarantees of docs/training.md are checked with real DataLoader worker processes, with two
real torch.distributed ranks (the example, examples/train_ddp.py), after killing a reader, and
with a data node killed in the middle of an epoch. Unmodified clients (pyarrow.flight with call
headers, the ADBC driver with statement options, and a SQL hint) read the same shares.

The tests share one cluster and run in file order; the node-loss test runs last.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import secrets
import signal
import subprocess
import sys
import textwrap
import time

import adbc_driver_flightsql.dbapi
import pyarrow as pa
import pyarrow.flight as flight
import pytest
import torch
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.types import DoubleType, FloatType, IntegerType, LongType, NestedField

import cachedb
import iceberg_fixtures
from servers import REPO_ROOT, CachedbProcess, s3_yaml, write_config

BUCKET = "training"
CATALOG = "trainlake"
TABLE = "ml.samples"
ROWS = 24_001  # divides evenly by nothing the tests use
APPENDS = 7  # one data file each: the dataset gets 7 partitions
DATASET = "samples"
FEATURES = ["f0", "f1", "f2", "f3", "f4", "f5"]
WORKERS = ["t1", "t2", "t3"]
# Small shuffle sizes, so that an epoch of this small dataset has many windows on every node.
WINDOW = {"window_rows": 1024, "chunk_rows": 32}


def sample_rows(tbl: Table, ids: range) -> pa.Table:
    return pa.table(
        {
            "ride_id": pa.array(ids, pa.int64()),
            **{f: pa.array([((i * (k + 3) * 2654435761) % 1000) / 1000.0 for i in ids], pa.float32()) for k, f in enumerate(FEATURES)},
            "x": [float(i) * 0.5 for i in ids],
            "label": pa.array([i % 2 for i in ids], pa.int32()),
        },
        schema=tbl.schema().as_arrow(),
    )


@dataclasses.dataclass
class Cluster:
    s3: iceberg_fixtures.S3
    table: Table
    head: CachedbProcess
    workers: dict[str, CachedbProcess]
    killed: set[str]
    workdir: pathlib.Path
    # The table's snapshot when the cluster started (later tests append to it).
    snapshot: int
    # How each data node was started: its arguments and environment.
    worker_args: dict[str, list[str]]
    env: dict[str, str]

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.head.port}"

    def query(self, sql: str) -> pa.Table:
        with cachedb.connect(self.addr) as db:
            return db.sql(sql)

    def restart(self, wid: str) -> None:
        """Kills data node wid and starts it again at the same address: a new process, holding
        nothing, that the head sees replace the old one."""
        old = self.workers[wid]
        old.proc.send_signal(signal.SIGKILL)
        old.proc.wait()
        self.workers[wid] = CachedbProcess(self.worker_args[wid], env=self.env, name=f"cachedb-{wid}", command="worker", port=old.port)


@pytest.fixture(scope="module")
def cluster(minio, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("training")
    iceberg_fixtures.ensure_bucket(minio, BUCKET)
    catalog = iceberg_fixtures.open_catalog(CATALOG, workdir / "catalog.db", f"s3://{BUCKET}/{CATALOG}", minio)
    catalog.create_namespace_if_not_exists("ml")
    schema = Schema(
        NestedField(1, "ride_id", LongType(), required=True),
        *[NestedField(2 + k, f, FloatType()) for k, f in enumerate(FEATURES)],
        NestedField(20, "x", DoubleType()),
        NestedField(21, "label", IntegerType()),
    )
    tbl = catalog.create_table(TABLE, schema=schema, properties={"format-version": "2"})
    per = (ROWS + APPENDS - 1) // APPENDS
    for k in range(APPENDS):
        tbl.append(sample_rows(tbl, range(k * per, min((k + 1) * per, ROWS))))
    tbl = tbl.refresh()
    config = {
        "default_catalog": CATALOG,
        "s3": s3_yaml(minio),
        "catalogs": [{"name": CATALOG, "type": "sql", "uri": f"sqlite:///{workdir / 'catalog.db'}",
                      "warehouse": f"s3://{BUCKET}/{CATALOG}", "default_namespace": "ml"}],
    }
    config_path = write_config(workdir / "cachedb.yaml", config)
    env = {"CACHEDB_CLUSTER_SECRET": secrets.token_hex(16), "AWS_EC2_METADATA_DISABLED": "true"}
    common = ["--config", str(config_path), "--no-warehouse"]
    head = CachedbProcess([*common, "--no-demo", "--suspect-after", "2s", "--heartbeat-interval", "500ms"], env=env, name="cachedb-head", command="head")
    workers: dict[str, CachedbProcess] = {}
    killed: set[str] = set()
    worker_args = {wid: [*common, "--head", f"127.0.0.1:{head.port}", "--id", wid] for wid in WORKERS}
    try:
        for wid in WORKERS:
            workers[wid] = CachedbProcess(worker_args[wid], env=env, name=f"cachedb-{wid}", command="worker")
        c = Cluster(minio, tbl, head, workers, killed, workdir, tbl.current_snapshot().snapshot_id, worker_args, env)
        deadline = time.monotonic() + 15
        while c.query("SELECT count(*) AS n FROM system.nodes WHERE state = 'alive'").column("n")[0].as_py() != len(WORKERS):
            if time.monotonic() > deadline:
                pytest.fail("data nodes did not register:\n" + head.log())
            time.sleep(0.1)
        with cachedb.connect(c.addr) as db:
            info = db.load({"name": DATASET, "table": TABLE, "columns": ["ride_id", *FEATURES, "x", "label"], "partitions": 7})
        assert info["rows"] == ROWS and info["partitions"] == 7 and len(info["nodes"]) == 3, info
        yield c
    finally:
        for wid, w in workers.items():
            if wid in killed:
                w.proc.wait()
            else:
                w.stop()
        head.stop()


def read_rank(c: Cluster, world: int, rank: int, workers: int, batch: int, **kw) -> list[list[int]]:
    """One rank's epoch through cachedb.DataLoader with real worker processes: its batches of ids,
    in the order the training loop gets them."""
    ds = cachedb.CacheDataset(c.addr, DATASET, columns=["ride_id", "x"], batch_size=batch, rank=rank, world_size=world, **WINDOW, **kw)
    loader = cachedb.DataLoader(ds, num_workers=workers)
    return [b["ride_id"].tolist() for b in loader]


def flat(batches: list[list[int]]) -> list[int]:
    return [i for b in batches for i in b]


def test_every_row_once_in_equal_shares_with_dataloader_workers(cluster):
    orders = {}
    for world, workers, batch in [(1, 0, 1000), (2, 2, 100), (3, 2, 77)]:
        ranks = [read_rank(cluster, world, r, workers, batch, seed=5) for r in range(world)]
        sizes = [len(flat(b)) for b in ranks]
        assert max(sizes) - min(sizes) <= 1, sizes
        for b in ranks:
            assert all(len(x) == batch for x in b[:-1]), "only a rank's last batch may be short"
        everything = [i for b in ranks for i in flat(b)]
        assert sorted(everything) == list(range(ROWS)), f"world {world}: not every row exactly once"
        orders[world] = everything
    # The epoch's order does not depend on the world size or the workers.
    assert orders[1] == orders[2] == orders[3]


def test_drop_last_and_pad(cluster):
    drop = [flat(read_rank(cluster, 3, r, 2, 64, seed=5, shares="drop_last")) for r in range(3)]
    assert len({len(d) for d in drop}) == 1 and len(drop[0]) % 64 == 0
    assert len(set(i for d in drop for i in d)) == 3 * len(drop[0]) > ROWS - 3 * 65
    pad = [flat(read_rank(cluster, 2, r, 0, 64, seed=5, shares="pad")) for r in range(2)]
    assert len(pad[0]) == len(pad[1]) == (ROWS + 1) // 2
    assert set(pad[0]) | set(pad[1]) == set(range(ROWS))


def test_shuffle_is_deterministic_and_differs_by_epoch(cluster):
    e0 = flat(read_rank(cluster, 1, 0, 2, 128, seed=9, epoch=0))
    again = flat(read_rank(cluster, 1, 0, 0, 128, seed=9, epoch=0))
    e1 = flat(read_rank(cluster, 1, 0, 2, 128, seed=9, epoch=1))
    other_seed = flat(read_rank(cluster, 1, 0, 0, 128, seed=10, epoch=0))
    assert e0 == again
    assert e1 != e0 and other_seed != e0
    successors = {a: b for a, b in zip(e0, e0[1:])}
    kept = sum(1 for a, b in zip(e1, e1[1:]) if successors.get(a) == b)
    assert kept < len(e1) // 50, f"{kept} successors kept: a rotation, not a new order"
    # A batch mixes rows of many chunks of its window's partition, and the first few windows
    # come from several partitions (one data file each, of consecutive ids).
    assert len({i // 32 for i in e0[:128]}) >= 20
    per_file = (ROWS + APPENDS - 1) // APPENDS
    assert len({i // per_file for i in e0[:4 * 1024]}) >= 3
    plain = flat(read_rank(cluster, 1, 0, 0, 500, shuffle=False))
    assert sorted(plain) == list(range(ROWS)) and plain != e0


def test_batches_mix_every_partition_across_the_data_nodes(cluster):
    """A batch of a block (1,024 rows) or more holds rows of every partition, whichever node
    holds them: the reader reads one stream per data node and merges them into the epoch's
    order, the same order plain clients read in ordered segments."""
    per_file = (ROWS + APPENDS - 1) // APPENDS  # the partitions are the data files: consecutive ids
    ds = cachedb.CacheDataset(cluster.addr, DATASET, columns=["ride_id"], batch_size=2048, seed=12)
    batches = [b["ride_id"].tolist() for b in cachedb.DataLoader(ds, num_workers=0)]
    assert sorted(flat(batches)) == list(range(ROWS))
    for b in batches[:-1]:
        assert len({i // per_file for i in b}) == APPENDS, "a batch misses partitions"
    opts = {"seed": 12, "batch_size": 2048, "node_streams": True}
    clients = cachedb._flight.FlightClients(cluster.addr)
    try:
        info = clients.flight_info("SELECT ride_id FROM samples", cachedb._flight.option_headers(opts))
        ordered = clients.read_table("SELECT ride_id FROM samples", cachedb._flight.option_headers({**opts, "node_streams": False}))
    finally:
        clients.close()
    assert json.loads(info.app_metadata)["node_streams"] and len(info.endpoints) == len(WORKERS)
    assert ordered.column("ride_id").to_pylist() == flat(batches)


def test_small_batches_with_workers_come_in_turns_in_the_same_order(cluster):
    """Workers hand small batches over in turns of many (one transfer each); the loop still
    gets batches of batch_size in exactly the in-process order, and resumes mid-turn."""

    def loader(workers: int) -> cachedb.DataLoader:
        ds = cachedb.CacheDataset(cluster.addr, DATASET, columns=["ride_id"], batch_size=7, seed=4, **WINDOW)
        return cachedb.DataLoader(ds, num_workers=workers)

    in_process = [b["ride_id"].tolist() for b in loader(0)]
    with_workers = loader(3)
    assert with_workers.dataset._worker_batches > 100
    assert [b["ride_id"].tolist() for b in with_workers] == in_process
    stopped = loader(2)
    seen = []
    for b in stopped:
        seen.append(b["ride_id"].tolist())
        if len(seen) == 1001:  # inside a worker's turn
            state = stopped.state_dict()
            break
    resumed = loader(3)
    resumed.load_state_dict(state)
    assert seen + [b["ride_id"].tolist() for b in resumed] == in_process


def test_set_epoch_and_state_dict_resume(cluster):
    ds = cachedb.CacheDataset(cluster.addr, DATASET, columns=["ride_id"], batch_size=100, seed=3, rank=1, world_size=2, **WINDOW)
    loader = cachedb.DataLoader(ds, num_workers=2)
    ds.set_epoch(2)
    full = [b["ride_id"].tolist() for b in loader]
    ds.set_epoch(2)
    seen = []
    for b in loader:
        seen.append(b["ride_id"].tolist())
        if len(seen) == 17:
            state = loader.state_dict()
            break
    assert state["offset"] == 1700 and state["epoch"] == 2
    assert ds.rank_rows() == len(flat(full)) == ROWS - ROWS // 2  # rank 1 of 2 has the odd row
    assert len(loader) == len(ds) == len(full)  # batches per epoch
    fresh = cachedb.CacheDataset(cluster.addr, DATASET, columns=["ride_id"], batch_size=100, seed=3, rank=1, world_size=2, **WINDOW)
    fresh_loader = cachedb.DataLoader(fresh, num_workers=2)
    fresh_loader.load_state_dict(state)
    rest = [b["ride_id"].tolist() for b in fresh_loader]
    assert seen + rest == full
    # Iterating again without set_epoch reads the same epoch from its beginning.
    assert [b["ride_id"].tolist() for b in fresh_loader] == full
    # The persistent workers follow set_epoch: epoch 3 is another order of a share as large.
    fresh.set_epoch(3)
    epoch3 = flat([b["ride_id"].tolist() for b in fresh_loader])
    assert len(epoch3) == len(flat(full)) and epoch3 != flat(full)
    other = cachedb.CacheDataset(cluster.addr, DATASET, batch_size=100, seed=3, rank=0, world_size=3, **WINDOW)
    with pytest.raises(ValueError, match="world_size 2.*give the states of all 2 ranks"):
        other.load_state_dict(state)


READER = textwrap.dedent(
    """
    import os, sys, torch, cachedb

    def main():
        addr, state_path, out_path = sys.argv[1:4]
        ds = cachedb.CacheDataset(addr, "samples", columns=["ride_id"], batch_size=50, seed=21, rank=0, world_size=2,
                                  window_rows=1024, chunk_rows=32)
        loader = cachedb.DataLoader(ds, num_workers=2)
        try:
            loader.load_state_dict(torch.load(state_path))
        except FileNotFoundError:
            ds.set_epoch(1)
        with open(out_path, "a") as out:
            for batch in loader:
                out.write(" ".join(map(str, batch["ride_id"].tolist())) + "\\n")
                out.flush()
                torch.save(loader.state_dict(), state_path + ".tmp")
                os.replace(state_path + ".tmp", state_path)

    if __name__ == "__main__":
        main()
    """
)


def test_resume_after_killing_a_reader(cluster, tmp_path):
    script = tmp_path / "reader.py"
    script.write_text(READER)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    # The whole epoch, uninterrupted.
    subprocess.run([sys.executable, str(script), cluster.addr, str(tmp_path / "none.pt"), str(tmp_path / "full.ids")], check=True, env=env, timeout=120)
    (tmp_path / "none.pt").unlink()
    full = (tmp_path / "full.ids").read_text().split()
    # Again, killed with SIGKILL part way, then started again from its saved state.
    out = tmp_path / "part.ids"
    proc = subprocess.Popen([sys.executable, str(script), cluster.addr, str(tmp_path / "state.pt"), str(out)], env=env)
    deadline = time.monotonic() + 60
    while (not out.exists() or len(out.read_text().splitlines()) < 40) and proc.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = out.read_text().splitlines()
    saved = torch.load(tmp_path / "state.pt")
    # The state may lag the last line written by at most the batch being written when killed.
    kept = saved["offset"] // 50
    assert kept in (len(before), len(before) - 1) and 0 < kept < len(full) // 50
    out.write_text("\n".join(before[:kept]) + "\n")
    subprocess.run([sys.executable, str(script), cluster.addr, str(tmp_path / "state.pt"), str(out)], check=True, env=env, timeout=120)
    assert out.read_text().split() == full


def test_two_ranks_of_the_example_stop_and_resume(cluster, tmp_path):
    """The example under torch.distributed (gloo), 2 ranks × 2 workers: stopped abruptly in its
    second epoch and started again from its checkpoints, each rank trains on exactly the rows it
    had not seen, in the order of an uninterrupted run."""
    example = REPO_ROOT / "examples" / "train_ddp.py"
    common = [sys.executable, str(example), "--head", cluster.addr, "--dataset", DATASET, "--epochs", "2", "--batch-size", "250", "--seed", "4"]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    whole = subprocess.run([*common, "--log-ids", str(tmp_path / "whole")], capture_output=True, text=True, env=env, timeout=300)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    assert "epoch 1:" in whole.stdout and "waiting for data" in whole.stdout, whole.stdout
    stopped = subprocess.run([*common, "--log-ids", str(tmp_path / "resumed"), "--checkpoint", str(tmp_path / "ckpt"),
                              "--checkpoint-every", "5", "--stop-after", "60"], capture_output=True, text=True, env=env, timeout=300)
    assert stopped.returncode != 0 and "stopping abruptly" in stopped.stdout, stopped.stdout + stopped.stderr
    per_rank_steps = ROWS // 2 // 250
    saved = [torch.load(tmp_path / "ckpt" / f"rank-{rank}.pt")["loader"] for rank in range(2)]
    # Stopped at step 60, in epoch 1: its last checkpoint is after step 10 of that epoch.
    assert [(s["epoch"], s["offset"]) for s in saved] == [(1, 10 * 250)] * 2, saved
    kept = per_rank_steps + 10
    resumed = subprocess.run([*common, "--log-ids", str(tmp_path / "resumed2"), "--checkpoint", str(tmp_path / "ckpt")],
                             capture_output=True, text=True, env=env, timeout=300)
    assert resumed.returncode == 0 and "resuming epoch 1" in resumed.stdout, resumed.stdout + resumed.stderr
    for rank in range(2):
        want = [line.split() for line in (tmp_path / "whole" / f"rank-{rank}.ids").read_text().splitlines()]
        assert len(want) == 2 * per_rank_steps  # drop_last: equal whole batches
        first = [line.split() for line in (tmp_path / "resumed" / f"rank-{rank}.ids").read_text().splitlines()]
        then = [line.split() for line in (tmp_path / "resumed2" / f"rank-{rank}.ids").read_text().splitlines()]
        state = torch.load(tmp_path / "ckpt" / f"rank-{rank}.pt")
        assert state["loader"]["epoch"] == 2  # finished
        # The stopped run's steps up to its checkpoint, then the resumed run: the uninterrupted run.
        assert len(first) == 60 and first == want[:60]
        assert first[:kept] + then == want, f"rank {rank}: the resumed run did not continue where the checkpoint was"


def test_unmodified_clients_read_the_same_shares(cluster):
    """pyarrow.flight with call headers, and the ADBC driver with statement options and with a
    SQL hint, read what CacheDataset reads."""
    want = flat(read_rank(cluster, 2, 1, 0, 100, seed=8))
    opts = {"seed": 8, "rank": 1, "world_size": 2, "batch_size": 100, **WINDOW}
    client = flight.FlightClient(cluster.head.uri)
    headers = [(f"cachedb-{k.replace('_', '-')}".encode(), str(v).encode()) for k, v in opts.items()]
    info = client.get_flight_info(flight.FlightDescriptor.for_command(cachedb._flight.statement_command("SELECT ride_id FROM samples")),
                                  flight.FlightCallOptions(headers=headers))
    assert info.total_records == len(want)
    node_uris = {f"grpc://127.0.0.1:{w.port}" for w in cluster.workers.values()}
    got = []
    for ep in info.endpoints:
        assert [loc.uri.decode() for loc in ep.locations][0] in node_uris
        got += flight.FlightClient(ep.locations[0]).do_get(ep.ticket).read_all().column("ride_id").to_pylist()
    assert got == want
    with adbc_driver_flightsql.dbapi.connect(cluster.head.uri, autocommit=True) as conn, conn.cursor() as cur:
        cur.adbc_statement.set_options(**{f"adbc.flight.sql.rpc.call_header.cachedb-{k.replace('_', '-')}": str(v) for k, v in opts.items()})
        cur.execute("SELECT ride_id FROM samples")
        assert cur.fetch_arrow_table().column("ride_id").to_pylist() == want
    hint = ", ".join(f"{k}={v}" for k, v in opts.items())
    assert cluster.query(f"SELECT /*+ TRAINING({hint}) */ ride_id FROM samples").column("ride_id").to_pylist() == want


def test_tensors_share_arrow_memory(cluster):
    ds = cachedb.CacheDataset(cluster.addr, DATASET, columns=["ride_id", "f0", "x", "label"], batch_size=256, seed=1)
    batch = next(iter(cachedb.DataLoader(ds, num_workers=0, pin_memory=False)))
    # A dataset holds Iceberg's float and int as the table stores them: float32 and int32 tensors.
    assert batch["ride_id"].dtype == torch.int64 and batch["f0"].dtype == torch.float32 and batch["label"].dtype == torch.int32
    assert batch["x"].shape == (256,)
    assert torch.equal(batch["x"], batch["ride_id"].double() * 0.5)
    # Zero copy: the tensor is a view of the record batch's buffer.
    rb = pa.record_batch({"v": pa.array(range(10), pa.int64())}).slice(3, 5)
    t = cachedb.arrow_to_tensors(rb)["v"]
    assert t.data_ptr() == rb.column(0).buffers()[1].address + 3 * 8 and t.tolist() == [3, 4, 5, 6, 7]
    # pin_memory works on the dicts CacheDataset yields (only where a CUDA device is present).
    if torch.cuda.is_available():
        pinned = next(iter(cachedb.DataLoader(ds, num_workers=1, pin_memory=True)))
        assert pinned["x"].is_pinned()
        on_device = next(iter(cachedb.DataLoader(ds, num_workers=1, device="cuda")))
        assert on_device["x"].is_cuda


def test_sql_source_is_materialized_once_and_snapshot_pinned(cluster):
    query = "SELECT ride_id, x FROM ml.samples WHERE label = 1"
    ds = cachedb.CacheDataset(cluster.addr, sql=query, columns=["ride_id"], batch_size=500, seed=2)
    first = flat([b["ride_id"].tolist() for b in ds])
    assert sorted(first) == list(range(1, ROWS, 2))
    # New commits do not change what the dataset holds (it was pinned when made), and asking
    # for the same query again reuses it.
    tbl = cluster.table.refresh()
    tbl.append(sample_rows(tbl, range(ROWS, ROWS + 1001)))
    again = cachedb.CacheDataset(cluster.addr, sql=query, columns=["ride_id"], batch_size=500, seed=2)
    assert again.dataset == ds.dataset and again.generation == ds.generation
    assert flat([b["ride_id"].tolist() for b in again]) == first
    assert flat([b["ride_id"].tolist() for b in cachedb.DataLoader(ds, num_workers=2)]) == first


def test_bad_reads_fail_clearly(cluster):
    with pytest.raises(LookupError, match="no dataset 'nope'"):
        cachedb.CacheDataset(cluster.addr, "nope")
    with pytest.raises(ValueError):
        cachedb.CacheDataset(cluster.addr, DATASET, rank=2, world_size=2)
    client = flight.FlightClient(cluster.head.uri)
    for sql, headers in [
        ("SELECT ride_id FROM samples WHERE x > 1", [(b"cachedb-seed", b"1")]),
        ("SELECT ride_id FROM samples", [(b"cachedb-num-workers", b"2")]),
        ("SELECT ride_id FROM samples", [(b"cachedb-generation", b"999")]),
    ]:
        with pytest.raises(pa.ArrowException) as e:
            client.get_flight_info(flight.FlightDescriptor.for_command(cachedb._flight.statement_command(sql)), flight.FlightCallOptions(headers=headers))
        assert any(w in str(e.value) for w in ("dataset's definition", "batch_size", "no longer held")), str(e.value)
    assert cluster.query("SELECT count(*) AS n FROM samples").column("n")[0].as_py() == ROWS


def ids_of(batches) -> list[int]:
    return [i for b in batches for i in b["ride_id"].tolist()]


def take(ds: cachedb.CacheDataset, n: int) -> list[int]:
    """The ids of the first n batches of an iteration of ds in this process (counted as
    consumed), leaving the iteration there."""
    it = iter(ds)
    return ids_of(next(it) for _ in range(n))


# A dataset whose integer and float columns hold a few nulls: most batches have none, some do.
NULLY_SQL = (
    "SELECT ride_id, CASE WHEN ride_id % 211 = 0 THEN NULL ELSE label END AS label, "
    "CASE WHEN ride_id % 223 = 0 THEN NULL ELSE f0 END AS f0, "
    "CASE WHEN ride_id % 227 = 0 THEN NULL ELSE ride_id * 1000 END AS big, "
    "CAST(x AS DECIMAL(12, 2)) AS money FROM ml.samples"
)


def test_dtypes_come_from_the_schema_in_every_batch(cluster):
    """A column has the same dtype in every batch of every reader, whether the batch holds a
    null or not: by default a null in an integer column is an error naming it; nulls="float"
    and nulls="mask" give every batch float64 with NaN, or the integer dtype and a validity."""
    strict = cachedb.CacheDataset(cluster.addr, sql=NULLY_SQL, batch_size=100, seed=1, **WINDOW)
    with pytest.raises(ValueError, match=r"column '(label|big)' \(int\d+\) holds a null"):
        for _ in strict:
            pass
    nulls_of = {c: cluster.query(f"SELECT count(*) AS n FROM {strict.dataset} WHERE {c} IS NULL").column("n")[0].as_py() for c in ("label", "big")}
    assert all(n > 50 for n in nulls_of.values()), nulls_of
    for nulls in ("float", "mask"):
        dtypes = set()
        for seed, batch in [(1, 64), (2, 100), (3, 1000)]:
            ds = cachedb.CacheDataset(cluster.addr, sql=NULLY_SQL, batch_size=batch, seed=seed, nulls=nulls, **WINDOW)
            clean = dirty = 0
            invalid = {"label": 0, "big": 0}
            for b in ds:
                dtypes.add(tuple(sorted((k, v.dtype) for k, v in b.items())))
                for c in invalid:
                    missing = int(torch.isnan(b[c]).sum()) if nulls == "float" else int((~b[c + "_valid"]).sum())
                    invalid[c] += missing
                    if nulls == "mask":
                        assert b[c][~b[c + "_valid"]].eq(0).all()
                if torch.isnan(b["f0"]).any() or any(torch.isnan(b[c]).any() if nulls == "float" else not b[c + "_valid"].all() for c in invalid):
                    dirty += 1
                else:
                    clean += 1
            assert invalid == nulls_of, (nulls, seed, batch)
            if batch < 1000:
                assert clean and dirty, f"batches of {batch}: {clean} without nulls, {dirty} with"
        assert len(dtypes) == 1, f"nulls={nulls}: the batches have dtypes {dtypes}"
        # The dtypes the schema gives: its integer types, or float64 for them under "float".
        got = dict(dtypes.pop())
        schema = cachedb.CacheDataset(cluster.addr, sql=NULLY_SQL, batch_size=100).query
        fields = cluster.query(schema + " LIMIT 0").schema
        for f in fields:
            if pa.types.is_integer(f.type):
                assert got[f.name] == (torch.float64 if nulls == "float" else getattr(torch, str(f.type))), (nulls, f)
            elif pa.types.is_floating(f.type) or pa.types.is_decimal(f.type):
                assert got[f.name].is_floating_point, (nulls, f)


def test_a_state_is_refused_by_a_reader_with_other_settings(cluster):
    kw = dict(columns=["ride_id"], batch_size=1000, seed=3, **WINDOW)
    full = ids_of(cachedb.CacheDataset(cluster.addr, DATASET, **kw))
    ds = cachedb.CacheDataset(cluster.addr, DATASET, **kw)
    seen = take(ds, 5)
    state = ds.state_dict()
    assert state["offset"] == 5000 and state["order_key"] == ds.order_key and len(ds.order_key) == 16
    assert {k: state[k] for k in ("batch_size", "shares", "world_size", "seed")} == {"batch_size": 1000, "shares": "exact", "world_size": 1, "seed": 3}
    # Batch size 999 would read 33 rows twice and never 66 (before the checks it did).
    for change in [{"batch_size": 999}, {"seed": 4}, {"shares": "pad"}, {"shuffle": False}, {"window_rows": 2048}]:
        other = cachedb.CacheDataset(cluster.addr, DATASET, **{**kw, **change})
        (key,) = change
        with pytest.raises(ValueError, match=f"saved with {key}="):
            other.load_state_dict(state)
    with pytest.raises(ValueError, match="rank 1"):
        cachedb.CacheDataset(cluster.addr, DATASET, **kw, rank=1, world_size=2).load_state_dict({**state, "world_size": 2, "rank": 0})
    same = cachedb.CacheDataset(cluster.addr, DATASET, **kw)
    same.load_state_dict(state)
    assert seen + ids_of(same) == full


def test_a_state_saved_at_the_end_of_an_epoch_continues_with_the_next(cluster):
    kw = dict(columns=["ride_id"], batch_size=500, seed=6, rank=0, world_size=2, **WINDOW)
    ds = cachedb.CacheDataset(cluster.addr, DATASET, **kw)
    loader = cachedb.DataLoader(ds, num_workers=2)
    ds.set_epoch(4)
    epoch4 = ids_of(loader)
    state = loader.state_dict()
    assert (state["epoch"], state["offset"]) == (5, 0)
    fresh = cachedb.CacheDataset(cluster.addr, DATASET, **kw)
    fresh.load_state_dict(state)
    # The usual loop, `for epoch in range(state["epoch"], ...): set_epoch(epoch)`, reads epoch 5.
    fresh.set_epoch(state["epoch"])
    got = ids_of(fresh)
    ref = cachedb.CacheDataset(cluster.addr, DATASET, **kw)
    ref.set_epoch(5)
    assert got == ids_of(ref) and got != epoch4


def test_a_checkpoint_survives_a_rebuild_of_the_same_dataset(cluster):
    """A dataset made again from the same definition (same snapshot, same partitions) has a new
    generation and the same order: a checkpoint continues on it, and so does a reader reading
    across the rebuild. Made into other partitions, its order differs: the checkpoint is refused."""
    spec = {"name": "samples_rb", "table": TABLE, "columns": ["ride_id", "x"], "snapshot": str(cluster.snapshot), "partitions": 4}
    with cachedb.connect(cluster.addr) as db:
        first = db.load(spec)
        kw = dict(columns=["ride_id"], batch_size=300, seed=12, prefetch=1, **WINDOW)
        full = ids_of(cachedb.CacheDataset(cluster.addr, "samples_rb", **kw))
        live = cachedb.CacheDataset(cluster.addr, "samples_rb", **kw)
        it = iter(live)
        seen = ids_of(next(it) for _ in range(10))
        state = live.state_dict()
        db.sql("DROP TABLE samples_rb")
        again = db.load(spec)
        assert again["generation"] != first["generation"] and not again["reused"]
        # The reader that was reading continues on the new generation (its reads are pinned to
        # the order, not the generation).
        assert seen + ids_of(it) == full
        fresh = cachedb.CacheDataset(cluster.addr, "samples_rb", **kw)
        assert fresh.order_key == live.order_key and fresh.generation == again["generation"]
        fresh.load_state_dict(state)
        assert seen + ids_of(fresh) == full
        db.sql("DROP TABLE samples_rb")
        db.load({**spec, "partitions": 3})
        other = cachedb.CacheDataset(cluster.addr, "samples_rb", **kw)
        with pytest.raises(ValueError, match="order key"):
            other.load_state_dict(state)
        db.sql("DROP TABLE samples_rb")


def test_a_job_resumes_on_another_world_size(cluster):
    """Two ranks stopped part way (at different offsets) resume as three ranks, and as one: the
    new ranks read exactly the rows the old ones had not, once, in shares within a row of each
    other, in the order the old ranks would have read them. The three then stop and resume as two."""
    kw = dict(columns=["ride_id"], batch_size=100, seed=17, **WINDOW)

    def job(world: int) -> list[cachedb.CacheDataset]:
        return [cachedb.CacheDataset(cluster.addr, DATASET, rank=r, world_size=world, **kw) for r in range(world)]

    shares = [ids_of(ds) for ds in job(2)]
    old = job(2)
    seen = [take(old[0], 30), take(old[1], 31)]
    states = [ds.state_dict() for ds in old]
    assert seen == [shares[0][:3000], shares[1][:3100]]
    left = shares[0][3000:] + shares[1][3100:]
    for world, workers in ((3, 2), (1, 0)):
        new = job(world)
        got = []
        for ds in new:
            ds.load_state_dict(list(reversed(states)))  # any order
            got.append(ids_of(cachedb.DataLoader(ds, num_workers=workers)))
        assert max(map(len, got)) - min(map(len, got)) <= 1
        assert [i for g in got for i in g] == left
    # The three-rank job stops after 5 batches each and resumes on two ranks.
    three = job(3)
    for ds in three:
        ds.load_state_dict(states)
    firsts = [take(ds, 5) for ds in three]
    three_states = [ds.state_dict() for ds in three]
    assert all(s["resumed"] == [[3000, 3100]] and s["offset"] == 500 for s in three_states)
    # Their shares are consecutive stretches of what the two ranks left.
    shares3, at = [], 0
    for n in [len(left) // 3 + (1 if r < len(left) % 3 else 0) for r in range(3)]:
        shares3.append(left[at : at + n])
        at += n
    assert firsts == [s[:500] for s in shares3]
    rest = [i for s in shares3 for i in s[500:]]
    two = job(2)
    got = []
    for ds in two:
        ds.load_state_dict(three_states)
        got.append(ids_of(ds))
    assert [i for g in got for i in g] == rest
    with pytest.raises(ValueError, match="all 2 ranks"):
        job(3)[0].load_state_dict(states[0])


def test_retries_back_off_then_fail_naming_the_dataset_and_partitions(cluster, monkeypatch):
    ds = cachedb.CacheDataset(cluster.addr, DATASET, columns=["ride_id"], batch_size=100, retries=6, retry_wait=0.5, **WINDOW)
    assert list(ds.retry_waits()) == [0.5, 1, 2, 4, 5, 5]
    waits: list[float] = []
    ds._sleep = waits.append
    real_do_get = cachedb._flight.FlightClients.do_get

    def refused(self, endpoint):
        raise flight.FlightUnavailableError("failed to connect to all addresses; last error: UNKNOWN: Connection refused")

    monkeypatch.setattr(cachedb._flight.FlightClients, "do_get", refused)
    named = r"reading partitions \d+(, \d+)* of dataset 'samples' from data node grpc://127\.0\.0\.1:\d+ failed"
    with pytest.raises(cachedb.UnavailableError, match=named + ".*gave up after 7 attempts"):
        next(iter(ds))
    assert waits == [0.5, 1, 2, 4, 5, 5]
    monkeypatch.setattr(cachedb._flight.FlightClients, "do_get", real_do_get)

    def rebuilding(self, query, headers=()):
        raise flight.FlightUnavailableError('partition 3 of dataset "samples" is being made again after a data node was lost; try again shortly')

    monkeypatch.setattr(cachedb._flight.FlightClients, "flight_info", rebuilding)
    waits.clear()
    with pytest.raises(cachedb.UnavailableError, match=r"dataset 'samples'.*partition 3 of dataset \"samples\" is being made again"):
        next(iter(ds))
    assert len(waits) == 6


def test_drop_last_that_would_empty_an_epoch_is_refused_and_reads_count_as_hits(cluster):
    with pytest.raises(ValueError, match="drop_last"):
        cachedb.CacheDataset(cluster.addr, DATASET, batch_size=ROWS // 3 + 1, rank=0, world_size=3, shares="drop_last")

    def hits() -> int:
        return cluster.query(f"SELECT hits FROM system.datasets WHERE name = '{DATASET}'").column("hits")[0].as_py()

    before = hits()
    ds = cachedb.CacheDataset(cluster.addr, DATASET, columns=["ride_id"], batch_size=5000, seed=2)
    assert len(ids_of(ds)) == ROWS
    assert hits() >= before + 2  # the reader's plan of its share, then its read


def test_readers_wait_while_a_restarted_nodes_partitions_are_made_again(cluster):
    """A data node restarted (a new process at the same address, holding nothing) while two
    workers read: reads of its partitions fail as Unavailable until the head has made them
    again; the readers wait and the epoch has every row once, in order."""
    want = flat(read_rank(cluster, 1, 0, 2, 100, seed=19))
    ds = cachedb.CacheDataset(cluster.addr, DATASET, columns=["ride_id", "x"], batch_size=100, seed=19, prefetch=1, **WINDOW)
    got = []
    for i, b in enumerate(cachedb.DataLoader(ds, num_workers=2)):
        got.append(b["ride_id"].tolist())
        if i == 20:
            cluster.restart("t3")
    assert flat(got) == want
    deadline = time.monotonic() + 60
    while cluster.query(f"SELECT state FROM system.datasets WHERE name = '{DATASET}'").column("state")[0].as_py() != "ready":
        assert time.monotonic() < deadline, "the dataset was not made complete again"
        time.sleep(0.1)


def test_a_data_node_killed_mid_epoch(cluster):
    """A node dies while two workers stream their shares: the readers plan again from the first
    batch they had not yielded, wait for the rebuild, and the epoch still has every row once, in
    the order of an epoch read without failures."""
    want = flat(read_rank(cluster, 1, 0, 2, 100, seed=13))
    ds = cachedb.CacheDataset(cluster.addr, DATASET, columns=["ride_id", "x"], batch_size=100, seed=13, prefetch=1, **WINDOW)
    got = []
    for i, b in enumerate(cachedb.DataLoader(ds, num_workers=2)):
        got.append(b["ride_id"].tolist())
        if i == 30:
            victim = cluster.workers["t2"]
            victim.proc.send_signal(signal.SIGKILL)
            cluster.killed.add("t2")
    assert flat(got) == want
    # The readers may have had every batch of t2 before it died; the head then learns of the
    # death from its missed heartbeats (lost after 60 s without one), after the epoch, and makes
    # t2's partitions again elsewhere.
    deadline = time.monotonic() + 120
    while True:
        row = cluster.query(f"SELECT state, nodes FROM system.datasets WHERE name = '{DATASET}'").to_pylist()[0]
        if row["state"] == "ready" and "t2" not in row["nodes"].split(","):
            break
        assert time.monotonic() < deadline, f"the head did not make t2's partitions again elsewhere: {row}"
        time.sleep(0.1)
