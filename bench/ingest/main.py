"""Bulk ingest into cachedb against reading the same rows back, through the clients people use.

One `cachedb serve` (no demo table, its embedded warehouse in a temporary directory). pandas and
polars send a whole frame as one batch, one gRPC message, so both ends allow messages of up to
1 GiB: the server with --max-message-bytes, the ADBC driver (whose default is 16 MiB) with the
database option adbc.flight.sql.client_option.with_max_msg_size. The
data: --rows rows of mixed types with NULLs (id BIGINT without NULLs, qty BIGINT, price DOUBLE,
city text, active BOOLEAN, day DATE, seen_at DATETIME), generated once in this process. Three
clients, each over its own ADBC Flight SQL connection:

a. adbc: `cursor.adbc_ingest(name, reader, mode="create")` of a pyarrow Table in batches of
   --batch-rows rows; read back with `SELECT * FROM name` into a pyarrow Table
   (`fetch_arrow_table`)
b. pandas: `DataFrame.to_sql(name, conn, index=False)` (pandas converts the frame with
   `pa.Table.from_pandas` and ingests it as one batch); read back with
   `pd.read_sql("SELECT * FROM name", conn, dtype_backend="pyarrow")`
c. polars: `DataFrame.write_database(name, conn, engine="adbc")` (one batch, strings as
   string views); read back with `pl.read_database("SELECT * FROM name", conn)`
d. dataset: as adbc, into a dataset held by --workers data nodes instead of a memory table
   (`adbc_ingest(name, reader, mode="create", db_schema_name="datasets")`: the head checks the
   rows, cuts them into partitions and hands each to its data node); read back with
   `SELECT * FROM name`, whose endpoints the ADBC driver reads from the data nodes in parallel.
   It runs against a second `cachedb serve --workers N` (the data nodes in its process, on
   loopback ports), so the other three keep their one-process server.

Each client writes the whole data into a fresh table (the previous one dropped, untimed) and
reads it back, in the same round; the rounds run the clients in turn, one untimed warm-up round
first, then --runs timed rounds; medians are reported. The rate of both is the data's Arrow size
(in cachedb's types) over the wall time; `ingest/read` is the ingest rate divided by the read
rate of the same client. Every read is checked against the data (same rows and values: Arrow
equality after sorting by id, booleans as cachedb returns them, 0/1), and the run exits 1 when
one differs. Prints a table, writes bench/results/ingest.json. A benchmark, never a test: nothing
asserts a speed.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import pathlib
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import adbc_driver_flightsql
import adbc_driver_flightsql.dbapi as flightsql
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 30
CLIENTS = ("adbc", "pandas", "polars", "dataset")
# The largest message both ends take: a frame sent as one batch must fit.
MAX_MESSAGE = 1 << 30
MAX_MSG_OPTION = "adbc.flight.sql.client_option.with_max_msg_size"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows ingested and read per run")
    ap.add_argument("--batch-rows", type=int, default=65_536, help="rows per batch of the adbc client's ingest")
    ap.add_argument("--runs", type=int, default=5, help="timed rounds; the median is reported")
    ap.add_argument("--seed", type=int, default=7, help="generator seed")
    ap.add_argument("--workers", type=int, default=2, help="data nodes of the dataset client's server")
    ap.add_argument("--cachedb", default=str(REPO_ROOT / "bin" / "cachedb"), help="cachedb binary (make build)")
    ap.add_argument("--results", default=str(REPO_ROOT / "bench" / "results" / "ingest.json"), help="where to write the figures")
    args = ap.parse_args()
    if args.rows < 1 or args.batch_rows < 1 or args.runs < 1 or args.workers < 1:
        ap.error("need rows, batch-rows, runs and workers >= 1")
    return args


def generate(rows: int, seed: int) -> pa.Table:
    """The data: every column but id has NULLs at rows of its own (every 7th, offset by column)."""
    rng = np.random.default_rng(seed)
    ids = np.arange(rows, dtype=np.int64)

    def nulls(offset: int) -> np.ndarray:
        return (ids % 7) == offset

    cities = np.array([f"city-{k}-é" for k in range(97)], dtype=object)
    day0 = np.datetime64("2020-01-01", "D")
    ts0 = np.datetime64("2024-01-01T00:00:00", "us")
    return pa.table(
        {
            "id": pa.array(ids),
            "qty": pa.array(rng.integers(-1_000_000, 1_000_000, rows), mask=nulls(0)),
            "price": pa.array(rng.normal(100, 30, rows), mask=nulls(1)),
            "city": pa.array(cities[ids % 97], type=pa.string(), mask=nulls(2)),
            "active": pa.array(rng.integers(0, 2, rows).astype(bool), mask=nulls(3)),
            "day": pa.array(day0 + (ids % 3000).astype("timedelta64[D]"), type=pa.date32(), mask=nulls(4)),
            "seen_at": pa.array(ts0 + rng.integers(0, 10**12, rows).astype("timedelta64[us]"), type=pa.timestamp("us"), mask=nulls(5)),
        }
    )


def as_returned(table: pa.Table) -> pa.Table:
    """table in cachedb's result types, sorted by id, in one chunk: what every read must equal."""
    cols = {}
    for field in table.schema:
        col = table.column(field.name)
        if pa.types.is_boolean(field.type):
            col = pc.cast(col, pa.int64())  # MySQL's BOOLEAN is TINYINT(1): queries return 0/1
        elif pa.types.is_integer(field.type):
            col = pc.cast(col, pa.int64())
        elif pa.types.is_string(field.type) or pa.types.is_large_string(field.type) or pa.types.is_string_view(field.type):
            col = pc.cast(col, pa.string())
        cols[field.name] = col
    return pa.table(cols).sort_by("id").combine_chunks()


class Server:
    """`cachedb serve` on a free loopback port (with workers in-process data nodes), stopped with
    SIGTERM."""

    def __init__(self, binary: str, warehouse: str, workers: int = 0):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.uri = f"grpc://127.0.0.1:{self.port}"
        self.log = tempfile.NamedTemporaryFile(prefix="bench-ingest-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", f"127.0.0.1:{self.port}", "--no-demo", "--warehouse", warehouse,
             "--max-message-bytes", str(MAX_MESSAGE), "--workers", str(workers)],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"cachedb exited with status {self.proc.returncode}:\n{self.log_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"cachedb did not listen within {START_TIMEOUT_S}s:\n{self.log_text()}")
                time.sleep(0.05)

    def log_text(self) -> str:
        return pathlib.Path(self.log.name).read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        pathlib.Path(self.log.name).unlink(missing_ok=True)


class Client:
    """One client's write and read of the data, timed; each read is kept for the check."""

    def __init__(self, name: str, conn, data: pa.Table, batch_rows: int):
        self.name, self.conn = name, conn
        self.table = f"bench_ingest_{name}"
        self.write_s: list[float] = []
        self.read_s: list[float] = []
        self.batches = 1
        self.read_table = self.table
        if name == "dataset":
            self.read_table = "datasets." + self.table
        if name in ("adbc", "dataset"):
            self.data = data
            self.batches = len(data.to_batches(max_chunksize=batch_rows))
            self.batch_rows = batch_rows
        elif name == "pandas":
            # What a pandas user has: NumPy-backed numbers where there are no NULLs, nullable
            # extension types where there are, Python dates, pandas' string dtype.
            self.data = pd.DataFrame({
                "id": data.column("id").to_numpy(),
                "qty": pd.array(data.column("qty").to_pylist(), dtype="Int64"),
                "price": data.column("price").to_pandas(),
                "city": pd.array(data.column("city").to_pylist(), dtype="str"),
                "active": pd.array(data.column("active").to_pylist(), dtype="boolean"),
                "day": data.column("day").to_pandas(),
                "seen_at": data.column("seen_at").to_pandas(),
            })
        else:
            self.data = pl.from_arrow(data)

    def drop(self) -> None:
        with self.conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {self.table}")

    def write(self) -> float:
        start = time.perf_counter()
        if self.name in ("adbc", "dataset"):
            reader = pa.RecordBatchReader.from_batches(self.data.schema, self.data.to_batches(max_chunksize=self.batch_rows))
            schema = "datasets" if self.name == "dataset" else None
            with self.conn.cursor() as cur:
                n = cur.adbc_ingest(self.table, reader, mode="create", db_schema_name=schema)
        elif self.name == "pandas":
            n = self.data.to_sql(self.table, self.conn, index=False)
        else:
            n = self.data.write_database(self.table, self.conn, engine="adbc")
        elapsed = time.perf_counter() - start
        if n != len(self.data):
            raise RuntimeError(f"{self.name}: the ingest reported {n} rows, not {len(self.data)}")
        return elapsed

    def read(self) -> tuple[float, pa.Table]:
        sql = f"SELECT * FROM {self.read_table}"
        start = time.perf_counter()
        if self.name in ("adbc", "dataset"):
            with self.conn.cursor() as cur:
                cur.execute(sql)
                back = cur.fetch_arrow_table()
        elif self.name == "pandas":
            back = pd.read_sql(sql, self.conn, dtype_backend="pyarrow")
        else:
            back = pl.read_database(sql, self.conn)
        elapsed = time.perf_counter() - start
        if self.name == "pandas":
            back = pa.Table.from_pandas(back, preserve_index=False)
        elif self.name == "polars":
            back = back.to_arrow()
        return elapsed, back


def wait_for_workers(server: Server, workers: int) -> None:
    """Waits until the server's in-process data nodes have registered."""
    deadline = time.monotonic() + START_TIMEOUT_S
    with flightsql.connect(server.uri, autocommit=True) as conn, conn.cursor() as cur:
        while True:
            cur.execute("SELECT count(*) FROM system.nodes WHERE state = 'alive'")
            if cur.fetchone()[0] == workers:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{workers} data nodes did not register within {START_TIMEOUT_S}s:\n{server.log_text()}")
            time.sleep(0.1)


def machine() -> dict:
    cpu_model = None
    with contextlib.suppress(OSError):
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break

    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=REPO_ROOT, capture_output=True, text=True).stdout.strip()

    commit = git("rev-parse", "HEAD")
    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "pyarrow": pa.__version__,
        "pandas": pd.__version__,
        "polars": pl.__version__,
        "adbc_driver_flightsql": adbc_driver_flightsql.__version__,
        "git_commit": commit or None,
        "git_dirty": bool(git("status", "--porcelain", "--untracked-files=no")) if commit else None,
        "load_average": os.getloadavg(),
    }


def main() -> int:
    args = parse_args()
    started = time.monotonic()
    log(f"generating {args.rows:,} rows")
    data = generate(args.rows, args.seed)
    want = as_returned(data)
    arrow_bytes = want.nbytes
    problems: list[str] = []
    with contextlib.ExitStack() as stack:
        warehouse = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-ingest-warehouse-"))
        server = Server(args.cachedb, warehouse)
        stack.callback(server.stop)
        cluster_warehouse = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-ingest-warehouse-"))
        cluster = Server(args.cachedb, cluster_warehouse, workers=args.workers)
        stack.callback(cluster.stop)
        wait_for_workers(cluster, args.workers)
        clients = []
        for name in CLIENTS:
            uri = cluster.uri if name == "dataset" else server.uri
            conn = stack.enter_context(flightsql.connect(uri, db_kwargs={MAX_MSG_OPTION: str(MAX_MESSAGE)}, autocommit=True))
            clients.append(Client(name, conn, data, args.batch_rows))
        for round_ in range(args.runs + 1):
            timed = round_ > 0
            for c in clients:
                c.drop()
                w = c.write()
                r, back = c.read()
                if as_returned(back) != want:
                    problems.append(f"{c.name}: round {round_}: the rows read back differ from the rows ingested")
                if timed:
                    c.write_s.append(w)
                    c.read_s.append(r)
                log(f"{'run ' + str(round_) if timed else 'warm-up'} {c.name}: ingest {w:.3f}s, read {r:.3f}s")
            for c in clients:
                c.drop()
        report = build_report(args, arrow_bytes, clients, time.monotonic() - started)
    report["problems"] = problems
    print_report(report)
    path = pathlib.Path(args.results)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    log(f"wrote {path}")
    for p in problems:
        log(f"PROBLEM: {p}")
    return 1 if problems else 0


def build_report(args, arrow_bytes: int, clients: list[Client], total_s: float) -> dict:
    out = {}
    for c in clients:
        w, r = statistics.median(c.write_s), statistics.median(c.read_s)
        out[c.name] = {
            "batches_sent": c.batches,
            "ingest_median_s": w,
            "ingest_best_s": min(c.write_s),
            "ingest_rows_per_s": args.rows / w,
            "ingest_mb_per_s": arrow_bytes / 1e6 / w,
            "read_median_s": r,
            "read_best_s": min(c.read_s),
            "read_rows_per_s": args.rows / r,
            "read_mb_per_s": arrow_bytes / 1e6 / r,
            "ingest_vs_read_rate": r / w,
            "runs_s": {"ingest": c.write_s, "read": c.read_s},
        }
    return {
        "benchmark": "ingest",
        "when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
        "parameters": {"rows": args.rows, "batch_rows": args.batch_rows, "runs": args.runs, "seed": args.seed, "workers": args.workers},
        "data": {"rows": args.rows, "columns": 7, "arrow_bytes": arrow_bytes},
        "clients": out,
        "total_s": round(total_s, 1),
    }


def print_report(r: dict) -> None:
    d = r["data"]
    print(f"{d['rows']:,} rows, {d['columns']} columns, {d['arrow_bytes'] / 1e6:.1f} MB of Arrow data "
          f"({r['machine']['cpus']} CPUs, median of {r['parameters']['runs']} runs)")
    print(f"{'client':<8} {'batches':>8} {'ingest s':>9} {'ingest Mrows/s':>15} {'ingest MB/s':>12} "
          f"{'read s':>8} {'read Mrows/s':>13} {'read MB/s':>10} {'ingest/read':>12}")
    for name, c in r["clients"].items():
        print(f"{name:<8} {c['batches_sent']:>8} {c['ingest_median_s']:>9.3f} {c['ingest_rows_per_s'] / 1e6:>15.2f} "
              f"{c['ingest_mb_per_s']:>12.0f} {c['read_median_s']:>8.3f} {c['read_rows_per_s'] / 1e6:>13.2f} "
              f"{c['read_mb_per_s']:>10.0f} {c['ingest_vs_read_rate']:>12.2f}")


if __name__ == "__main__":
    sys.exit(main())
