"""The memory tiers and spilling, measured: epochs from the disk tier against the memory tier and
against re-reading Parquet, and a spilling aggregate and join against the same in memory.

A table `bench.wide` (id, g = id % --groups, and 8 float64 features; --rows rows in 8 data files)
is written with pyiceberg into a local SQL catalog under bench/out/memory (once per size). Three
`cachedb serve --workers 2` processes read it:

- memory: no memory limit; its dataset's partitions are in memory
- disk: every dataset partition on the disk tier (CACHEDB_TEST_PARTITIONS_ON_DISK=1, --disk-dir):
  epochs are reads of mapped Arrow files (page cache)
- spill: --memory-limit --spill-server-limit and --disk-dir: aggregates and joins larger than it
  spill

Epochs (in this process, cachedb.CacheDataset, every feature column, batches of 8,192 rows, a
new shuffled epoch each run) from the memory and disk servers' datasets, and a Parquet re-read
(pyarrow reading the table's data files each epoch, cut into the same tensors), are timed
interleaved after a warm-up each; then a GROUP BY of --groups groups and a self-join on id run on
the memory server and on the spill server, interleaved. Every epoch and answer is checked (rows;
the answers equal across servers). Medians of --runs runs; ratios are against the memory tier
and the in-memory query of the same run. Prints a table and writes
bench/results/memory.json. A benchmark, never a test: nothing asserts a speed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

import cachedb  # noqa: E402
from cachedb.tensors import arrow_to_tensors  # noqa: E402

FEATURES = [f"f{k}" for k in range(8)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_table(out: pathlib.Path, rows: int, groups: int) -> tuple[pathlib.Path, list[str]]:
    """Writes bench.wide once per size; returns the catalog database and the data files."""
    from pyiceberg.catalog.sql import SqlCatalog

    root = out / f"memory-{rows}-{groups}"
    db = root / "catalog.db"
    files_list = root / "files.json"
    if files_list.exists():
        return db, json.loads(files_list.read_text())
    root.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog("benchmem", uri=f"sqlite:///{db}", warehouse=f"file://{root / 'warehouse'}")
    catalog.create_namespace_if_not_exists("bench")
    per = rows // 8
    rng = np.random.default_rng(7)
    tbl = None
    for k in range(8):
        ids = np.arange(k * per, (k + 1) * per if k < 7 else rows, dtype=np.int64)
        cols = {"id": ids, "g": ids % groups}
        for f in FEATURES:
            cols[f] = rng.random(len(ids))
        t = pa.table(cols)
        if tbl is None:
            tbl = catalog.create_table("bench.wide", schema=t.schema)
        tbl.append(t)
    files = [task.file.file_path for task in tbl.scan().plan_files()]
    files_list.write_text(json.dumps(files))
    return db, files


class Server:
    def __init__(self, binary: str, config: pathlib.Path, name: str, extra: list[str], env: dict[str, str], logdir: pathlib.Path):
        self.addr = f"127.0.0.1:{free_port()}"
        self.log = open(logdir / f"{name}.log", "wb")
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", self.addr, "--workers", "2", "--config", str(config), "--no-warehouse", "--no-demo", *extra],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env={**os.environ, **env})
        deadline = time.monotonic() + 60
        while True:
            try:
                with cachedb.connect(self.addr) as db:
                    if db.sql("SELECT count(*) AS n FROM system.nodes WHERE state = 'alive'").column("n")[0].as_py() == 2:
                        return
            except Exception:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"{name} server did not start; see {logdir / (name + '.log')}")
            time.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def cachedb_epoch(addr: str, epoch: int, rows: int) -> float:
    ds = cachedb.CacheDataset(addr, "wide_ds", columns=FEATURES, batch_size=8192, seed=1, epoch=epoch)
    n = 0
    t = time.perf_counter()
    for b in ds:
        n += len(b["f0"])
    dt = time.perf_counter() - t
    if n != rows:
        raise SystemExit(f"epoch from {addr}: {n} rows, want {rows}")
    return dt


def parquet_epoch(files: list[str], rows: int) -> float:
    n = 0
    t = time.perf_counter()
    for path in files:
        pf = pq.ParquetFile(path.removeprefix("file://"))
        for rb in pf.iter_batches(batch_size=8192, columns=FEATURES):
            n += len(arrow_to_tensors(rb, "error")["f0"])
    dt = time.perf_counter() - t
    if n != rows:
        raise SystemExit(f"Parquet epoch: {n} rows, want {rows}")
    return dt


def timed_query(addr: str, sql: str) -> tuple[float, list]:
    with cachedb.connect(addr) as db:
        t = time.perf_counter()
        out = db.sql(sql)
        dt = time.perf_counter() - t
    return dt, sorted(out.to_pylist(), key=lambda r: tuple(str(v) for v in r.values()))


def same_answer(a: list, b: list) -> bool:
    """Equal rows, float sums equal up to rounding (spilling changes the order of additions)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        for k in x:
            u, v = x[k], y[k]
            if isinstance(u, float) and isinstance(v, float):
                if abs(u - v) > 1e-9 * max(1.0, abs(u)):
                    return False
            elif u != v:
                return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--groups", type=int, default=500_000, help="groups of the aggregate")
    ap.add_argument("--spill-server-limit", default="32MiB", help="--memory-limit of the spill server")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cachedb", default=str(REPO / "bin" / "cachedb"))
    ap.add_argument("--out", default=str(REPO / "bench" / "out"))
    args = ap.parse_args()
    db, files = write_table(pathlib.Path(args.out), args.rows, args.groups)
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = pathlib.Path(tmp)
        config = tmpdir / "cachedb.yaml"
        config.write_text(json.dumps({"default_catalog": "benchmem", "catalogs": [
            {"name": "benchmem", "type": "sql", "uri": f"sqlite:///{db}", "warehouse": f"file://{db.parent / 'warehouse'}", "default_namespace": "bench"}]}))
        servers = {
            "memory": Server(args.cachedb, config, "memory", ["--memory-limit", "0"], {}, tmpdir),
            "disk": Server(args.cachedb, config, "disk", ["--memory-limit", "0", "--disk-dir", str(tmpdir / "disk")], {"CACHEDB_TEST_PARTITIONS_ON_DISK": "1"}, tmpdir),
            "spill": Server(args.cachedb, config, "spill", ["--memory-limit", args.spill_server_limit, "--disk-dir", str(tmpdir / "spill")], {}, tmpdir),
        }
        try:
            for name in ("memory", "disk"):
                with cachedb.connect(servers[name].addr) as c:
                    c.load({"name": "wide_ds", "table": "bench.wide", "columns": FEATURES, "partitions": 8})
            with cachedb.connect(servers["disk"].addr) as c:
                tiers = c.sql("SELECT tier, count(*) AS n FROM system.partitions WHERE dataset = 'wide_ds' GROUP BY tier").to_pylist()
            if tiers != [{"tier": "disk", "n": 8}]:
                raise SystemExit(f"the disk server's partitions are not all on disk: {tiers}")
            epochs: dict[str, list[float]] = {"memory tier": [], "disk tier": [], "Parquet re-read": []}
            for run in range(args.runs + 1):
                m = cachedb_epoch(servers["memory"].addr, run, args.rows)
                d = cachedb_epoch(servers["disk"].addr, run, args.rows)
                p = parquet_epoch(files, args.rows)
                if run:
                    epochs["memory tier"].append(m)
                    epochs["disk tier"].append(d)
                    epochs["Parquet re-read"].append(p)
            queries = {
                "aggregate": f"SELECT g, count(*) AS n, sum(f0) AS s FROM bench.wide GROUP BY g",
                "join": "SELECT count(*) AS n, sum(b.f1) AS s FROM bench.wide a JOIN bench.wide b ON a.id = b.id",
            }
            query_times: dict[str, dict[str, list[float]]] = {q: {"in memory": [], "spilling": []} for q in queries}
            spilled: dict[str, int] = {}
            for run in range(args.runs + 1):
                for q, sql in queries.items():
                    tm, rm = timed_query(servers["memory"].addr, sql)
                    ts, rs = timed_query(servers["spill"].addr, sql)
                    if not same_answer(rm, rs):
                        raise SystemExit(f"{q}: the spilling server answered differently: {rm[:3]} vs {rs[:3]}")
                    if run:
                        query_times[q]["in memory"].append(tm)
                        query_times[q]["spilling"].append(ts)
            with cachedb.connect(servers["spill"].addr) as c:
                mem = c.sql("SELECT max(refusals) AS refusals FROM system.memory").to_pylist()[0]
                spilled["refusals"] = int(mem["refusals"] or 0)
        finally:
            for s in servers.values():
                s.stop()
    gib = args.rows * 8 * len(FEATURES) / 2**30
    med = {k: statistics.median(v) for k, v in epochs.items()}
    print(f"{args.rows:,} rows x {len(FEATURES)} float64 features ({gib:.2f} GiB as Arrow), median of {args.runs}")
    print(f"{'epoch from':<18} {'seconds':>8} {'GiB/s':>7} {'vs memory tier':>15}")
    for k, v in med.items():
        print(f"{k:<18} {v:>8.2f} {gib / v:>7.2f} {med['memory tier'] / v:>14.2f}x")
    qmed = {q: {k: statistics.median(v) for k, v in d.items()} for q, d in query_times.items()}
    print(f"\n{'query':<10} {'in memory s':>12} {'spilling s':>11} {'spilling/in memory':>19}  (spill server --memory-limit {args.spill_server_limit}, {spilled['refusals']} refusals)")
    for q, d in qmed.items():
        print(f"{q:<10} {d['in memory']:>12.2f} {d['spilling']:>11.2f} {d['spilling'] / d['in memory']:>18.2f}x")
    out = REPO / "bench" / "results" / "memory.json"
    out.write_text(json.dumps({
        "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "rows": args.rows, "groups": args.groups, "spill_server_limit": args.spill_server_limit, "runs": args.runs,
        "epoch_seconds": med, "query_seconds": qmed, "spill_server_refusals": spilled["refusals"],
    }, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
