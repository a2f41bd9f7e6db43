"""Datasets and divided queries on 1, 2 and 4 data nodes, against reading Iceberg directly.

Uses bench/iceberg's wide table `bench.wide` in MinIO (written with pyiceberg on first use and
cached in bench/out/, shared with that benchmark) and, for each node count N, a fresh
`cachedb serve --workers N` (head and N data nodes in one process). All of them run side by
side and every measurement is interleaved over them, so that whatever else loads the machine
hits each node count alike. On each:

a. materialization: `cachedb load` of a spec keeping id, ts and ten features of the rows with
   f001 < 500 (about half), timed from the command's start to its exit, median of --loads runs
   with a DROP TABLE before each but the first; MinIO bytes and GETs during each
b. dataset read: `SELECT * FROM ds` over ADBC into a pyarrow Table (one endpoint per node, read
   in parallel by the driver); rows/s and MB/s; MinIO must answer no request meanwhile
c. aggregate: `SELECT f002, count(*), sum(f004), avg(f004) ... WHERE f000 < 2^19 GROUP BY f002`
   over the dataset (run on the head, which fetches the partitions from the nodes) and the same
   over the Iceberg table (reading MinIO)
d. Iceberg read: the dataset's own definition run against the table, divided among the nodes,
   reading MinIO: what each read costs without the dataset

(b)-(d) run round-robin, after one untimed warm-up each; medians of --runs. Every
answer is checked against the rows the generator must have produced (row count, sum of ids and a
digest of all values; per-group counts and sums for the aggregate); the run exits 1 when any
differs, or when a dataset query reads MinIO. Prints tables, writes bench/results/cluster.json.
A benchmark, never a test: nothing asserts a speed.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "iceberg"))
sys.path.insert(0, str(HERE))

import adbc_driver_flightsql.dbapi as flightsql  # noqa: E402
import pyarrow as pa  # noqa: E402

import answers  # noqa: E402
import data  # noqa: E402
from answers import Served, Workload, ratio  # noqa: E402
from procs import REPO_ROOT, Cachedb, Minio  # noqa: E402


def _load_iceberg_bench():
    """bench/iceberg/main.py under another name: this file is `main` too."""
    spec = importlib.util.spec_from_file_location("iceberg_bench", HERE.parent / "iceberg" / "main.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


iceberg_bench = _load_iceberg_bench()
log = iceberg_bench.log

NODES_TIMEOUT_S = 30
# The head marks a data node lost after this much silence (default 3s). On a shared 2-core
# machine a busy moment can starve in-process nodes' heartbeats that long; a loss drops the
# node's dataset partitions and makes them again from MinIO, which would spoil the figures.
# So the benchmark allows a long silence, and reports any loss there still is as a failure.
LOST_AFTER = "30s"
LOAD_TIMEOUT_S = 300
_LOADED = re.compile(r"^dataset (\S+) materialized: (\d+) rows, .* in (\d+) partitions on .*, ([0-9.]+)s$")


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # The table's shape defaults to bench/iceberg's, so both share one cached copy.
    ap.add_argument("--rows", type=int, default=400_000, help="rows in the table")
    ap.add_argument("--days", type=int, default=10, help="days the rows span: one partition and data file each")
    ap.add_argument("--features", type=int, default=120, help="feature columns besides id and ts (at least 10)")
    ap.add_argument("--row-group-rows", type=int, default=4_000, help="rows per Parquet row group")
    ap.add_argument("--seed", type=int, default=42, help="generator seed")
    ap.add_argument("--nodes", default="1,2,4", help="comma-separated data node counts; the first is the baseline")
    ap.add_argument("--threshold", type=float, default=500.0, help="the dataset keeps f001 < this (f001 is uniform in [0, 1000))")
    ap.add_argument("--cond", type=int, default=1 << 19, help="the aggregate keeps f000 < this (f000 is uniform in [0, 2^20))")
    ap.add_argument("--loads", type=int, default=3, help="timed materializations per node count; the median is reported")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per query; the median is reported")
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs per query first")
    ap.add_argument("--pause", type=float, default=0.2, help="seconds of rest before each timed run")
    ap.add_argument("--cachedb", default=str(REPO_ROOT / "bin" / "cachedb"), help="cachedb binary (make build)")
    ap.add_argument("--out", default=str(REPO_ROOT / "bench" / "out"), help="directory of the cached table")
    ap.add_argument("--no-cache", action="store_true", help="write the table into a temporary directory and drop it")
    ap.add_argument("--results", default=str(REPO_ROOT / "bench" / "results" / "cluster.json"), help="where to write the figures")
    args = ap.parse_args()
    try:
        args.node_counts = [int(n) for n in args.nodes.split(",")]
    except ValueError:
        ap.error(f"--nodes must be comma-separated integers, got {args.nodes!r}")
    if (args.days < 1 or args.rows < args.days or args.features < answers.FEATURES or args.runs < 1
            or args.loads < 1 or not args.node_counts or min(args.node_counts) < 1
            or len(set(args.node_counts)) != len(args.node_counts)):
        ap.error(f"need rows >= days >= 1, features >= {answers.FEATURES}, runs >= 1, loads >= 1 "
                 "and distinct node counts >= 1")
    return args


def run_query(conn, sql: str) -> pa.Table:
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetch_arrow_table()


def endpoints(conn, sql: str) -> int:
    """How many endpoints the head answers the query with: one per node for a divided query."""
    with conn.cursor() as cur:
        partitions, _ = cur.adbc_execute_partitions(sql)
        return len(partitions)


def minio_counters(minio: Minio) -> tuple[int, dict[str, int]]:
    with urllib.request.urlopen(f"{minio.endpoint}/minio/metrics/v3/api/requests", timeout=10) as r:
        return answers.parse_minio_requests(r.read().decode())


def wait_for_nodes(conn, n: int) -> None:
    deadline = time.monotonic() + NODES_TIMEOUT_S
    while True:
        alive = run_query(conn, "SELECT count(*) AS n FROM system.nodes WHERE state = 'alive'").column("n")[0].as_py()
        if alive == n:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{alive} of {n} data nodes alive after {NODES_TIMEOUT_S}s")
        time.sleep(0.1)


class Query:
    """One query's timed runs, what MinIO served during each, and its answers' checks."""

    def __init__(self, name: str, sql: str, kind: str):
        self.name, self.sql, self.kind = name, sql, kind  # kind: "read" or "aggregate"
        self.runs_s: list[float] = []
        self.served: list[Served] = []
        self.arrow_bytes: list[int] = []
        self.rows: list[int] = []
        self.checks: list[dict] = []
        self.endpoints: int | None = None

    def report(self) -> dict:
        median_s = statistics.median(self.runs_s)
        out = {
            "sql": self.sql,
            "runs_s": self.runs_s,
            "median_s": median_s,
            "best_s": min(self.runs_s),
            "rows": self.rows[0],
            "endpoints": self.endpoints,
            "minio_bytes_per_query": iceberg_bench.median_int([s.bytes for s in self.served]),
            "minio_gets_per_query": iceberg_bench.median_int([s.gets for s in self.served]),
            "minio_gets_all_runs": sum(s.gets for s in self.served),
            "minio_requests_all_runs": sum(s.requests for s in self.served),
            "answer": self.checks[0],
            "answers_as_expected": all(c["as_expected"] for c in self.checks),
        }
        if self.kind == "read":
            arrow = iceberg_bench.median_int(self.arrow_bytes)
            out.update({"arrow_bytes": arrow, "rows_per_s": self.rows[0] / median_s, "mb_per_s": arrow / 1e6 / median_s})
        return out


class Cluster:
    """A fresh `cachedb serve --workers n` (head and n data nodes in one process), an ADBC
    connection to its head, and the figures measured on it."""

    def __init__(self, args, n: int, config: pathlib.Path, env: dict, w: Workload):
        self.n, self.w, self.args = n, w, args
        # Without the column cache: the Iceberg queries measure what a read costs from object
        # storage, which the cache would spare every run after the first.
        self.server = Cachedb(pathlib.Path(args.cachedb), config,
                              ["--no-demo", "--no-warehouse", "--workers", str(n), "--lost-after", LOST_AFTER,
                               "--column-cache", "0"],
                              env, f"cluster-{n}")
        self.conn = None
        try:
            self.conn = flightsql.connect(self.server.uri, autocommit=True)
            wait_for_nodes(self.conn, n)
        except Exception:
            self.close()
            raise
        self.load_runs: list[dict] = []
        self.queries = [
            Query("dataset_read", w.dataset_read_sql, "read"),
            Query("iceberg_read", w.iceberg_read_sql, "read"),
            Query("dataset_aggregate", w.dataset_aggregate_sql, "aggregate"),
            Query("iceberg_aggregate", w.iceberg_aggregate_sql, "aggregate"),
        ]

    def load(self, minio: Minio, spec_path: pathlib.Path) -> None:
        """One timed `cachedb load`, after dropping the dataset a previous one made."""
        if self.load_runs:
            run_query(self.conn, f"DROP TABLE {self.w.dataset}")
        time.sleep(self.args.pause)
        before = minio_counters(minio)
        began = time.perf_counter()
        out = subprocess.run(
            [self.args.cachedb, "load", str(spec_path), "--head", f"127.0.0.1:{self.server.port}", "-q"],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=LOAD_TIMEOUT_S,
        )
        elapsed = time.perf_counter() - began
        served = Served.between(before, minio_counters(minio))
        line = out.stdout.strip()
        m = _LOADED.match(line)
        if out.returncode != 0 or not m:
            raise RuntimeError(f"cachedb load {spec_path} on {self.n} nodes exited {out.returncode}: {line}\n{out.stderr}")
        self.load_runs.append({"wall_s": elapsed, "server_s": float(m.group(4)), "rows": int(m.group(2)),
                               "partitions": int(m.group(3)), "minio_bytes": served.bytes,
                               "minio_gets": served.gets, "minio_requests": served.requests})
        log(f"load {len(self.load_runs)}/{self.args.loads} on {self.n} nodes: {elapsed:.2f}s, {m.group(2)} rows "
            f"in {m.group(3)} partitions, MinIO {served.bytes / 1e6:.1f} MB in {served.gets} GETs")

    def load_report(self) -> dict:
        sql = f"SELECT row_count, bytes, partitions, nodes FROM system.datasets WHERE name = '{self.w.dataset}'"
        info = run_query(self.conn, sql).to_pylist()[0]
        runs = self.load_runs
        return {
            "runs": runs,
            "median_s": statistics.median(r["wall_s"] for r in runs),
            "server_median_s": statistics.median(r["server_s"] for r in runs),
            "minio_bytes": iceberg_bench.median_int([r["minio_bytes"] for r in runs]),
            "minio_gets": iceberg_bench.median_int([r["minio_gets"] for r in runs]),
            "rows": info["row_count"],
            "bytes_held": info["bytes"],
            "partitions": info["partitions"],
            "nodes_holding": len(info["nodes"].split(",")),
        }

    def report(self) -> dict:
        return {
            "load": self.load_report(),
            **{q.name: q.report() for q in self.queries},
            "node_losses": self.server.log().count("data node lost"),
        }

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()
        self.server.stop()


def measure_queries(args, clusters: list[Cluster], minio: Minio, want_read: dict, want_groups: answers.Groups) -> None:
    """Warm-ups, then the timed runs interleaved over node counts and queries, so that noise
    from anything else on the machine hits every configuration alike. MinIO's counters are
    read around each run, outside the timed span."""
    for c in clusters:
        for q in c.queries:
            q.endpoints = endpoints(c.conn, q.sql) if q.kind == "read" else None
            for _ in range(args.warmup):
                began = time.perf_counter()
                run_query(c.conn, q.sql)
                log(f"warm-up {q.name} on {c.n} nodes: {time.perf_counter() - began:.3f}s")
    for i in range(args.runs):
        for c in clusters:
            for q in c.queries:
                time.sleep(args.pause)
                before = minio_counters(minio)
                began = time.perf_counter()
                answer = run_query(c.conn, q.sql)
                elapsed = time.perf_counter() - began
                q.served.append(Served.between(before, minio_counters(minio)))
                q.runs_s.append(elapsed)
                q.rows.append(answer.num_rows)
                q.arrow_bytes.append(answer.nbytes)
                if q.kind == "read":
                    q.checks.append(answers.check_read(answer, want_read, full=i == 0))
                else:
                    q.checks.append(answers.check_aggregate(answer, want_groups))
                log(f"run {i + 1}/{args.runs} {q.name} on {c.n} nodes: {elapsed:.3f}s, {answer.num_rows} rows")


def expected(p: data.Params, w: Workload) -> tuple[dict, answers.Groups]:
    ds = answers.expected_dataset(p, w)
    return answers.expected_read(ds), answers.expected_groups(ds, w)


def main() -> int:
    args = parse_args()
    if not pathlib.Path(args.cachedb).exists():
        log(f"cachedb binary {args.cachedb} not found: run `make build`")
        return 2
    p = data.Params(args.rows, args.days, args.features, args.row_group_rows, args.seed)
    w = Workload(dataset="bench_cluster_ds", threshold=args.threshold, cond=args.cond)
    began_all = time.monotonic()
    load_average = {"start": os.getloadavg()}
    want_read, want_groups = expected(p, w)
    log(f"expected: dataset {want_read['rows']} rows, aggregate {len(want_groups)} groups "
        f"({time.monotonic() - began_all:.1f}s to compute)")

    per_nodes = {}
    with contextlib.ExitStack() as stack:
        minio, db_path = iceberg_bench.minio_with_table(stack, args, p, data.write_table, answers.IDENT)
        tbl = data.open_catalog(str(db_path), minio.pyiceberg_properties()).load_table(answers.IDENT)
        tasks = list(tbl.scan().plan_files())
        table_info = {
            "table": answers.IDENT,
            "columns": 2 + args.features,
            "rows": sum(t.file.record_count for t in tasks),
            "data_files": len(tasks),
            "data_bytes": sum(t.file.file_size_in_bytes for t in tasks),
            "row_group_rows": args.row_group_rows,
            "partitioning": "day(ts)",
        }
        tmp = pathlib.Path(tempfile.mkdtemp(prefix="bench-cluster-"))
        stack.callback(shutil.rmtree, tmp, ignore_errors=True)
        config, spec_path = tmp / "cachedb.yaml", tmp / "spec.yaml"
        iceberg_bench.write_cachedb_config(config, minio, db_path)
        spec_path.write_text(json.dumps(w.spec(), indent=2))
        env = {"CACHEDB_S3_ACCESS_KEY_ID": minio.access_key_id, "CACHEDB_S3_SECRET_ACCESS_KEY": minio.secret_access_key}
        clusters = []
        try:
            for n in args.node_counts:
                clusters.append(Cluster(args, n, config, env, w))
                stack.callback(clusters[-1].close)
            for _ in range(args.loads):
                for c in clusters:
                    c.load(minio, spec_path)
            measure_queries(args, clusters, minio, want_read, want_groups)
            per_nodes = {c.n: c.report() for c in clusters}
        except Exception:
            for c in clusters:
                log(f"cachedb log, {c.n} nodes:\n{c.server.log()[-3000:]}")
            raise

    load_average["end"] = os.getloadavg()
    report = build_report(args, p, w, table_info, want_read, want_groups, per_nodes, time.monotonic() - began_all)
    # 1, 5 and 15 minute load averages: above the CPU count, something else was competing.
    report["machine"]["load_average"] = load_average
    sys.stderr.flush()
    print_report(report)
    path = pathlib.Path(args.results)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    log(f"wrote {path}")
    if report["problems"]:
        for problem in report["problems"]:
            log(f"FAIL: {problem}")
        return 1
    return 0


def find_problems(per_nodes: dict, want_read: dict) -> list[str]:
    problems = []
    for n, r in per_nodes.items():
        if r["node_losses"]:
            problems.append(f"{n} nodes: the head marked a data node lost {r['node_losses']} times")
        if r["load"]["rows"] != want_read["rows"]:
            problems.append(f"{n} nodes: the dataset holds {r['load']['rows']} rows, expected {want_read['rows']}")
        if r["load"]["nodes_holding"] != n:
            problems.append(f"{n} nodes: the dataset's partitions are on {r['load']['nodes_holding']} nodes")
        for name in ("dataset_read", "iceberg_read", "dataset_aggregate", "iceberg_aggregate"):
            q = r[name]
            if not q["answers_as_expected"]:
                problems.append(f"{n} nodes, {name}: {q['answer'].get('problems')}")
            if q["endpoints"] is not None and q["endpoints"] != n:
                problems.append(f"{n} nodes, {name}: {q['endpoints']} endpoints, expected one per node")
        for name in ("dataset_read", "dataset_aggregate"):
            if r[name]["minio_requests_all_runs"]:
                problems.append(f"{n} nodes, {name}: MinIO answered {r[name]['minio_requests_all_runs']} requests "
                                f"({r[name]['minio_gets_all_runs']} GETs); a dataset query must read none")
    # Aggregate answers agree with the generator's, so with each other; digests likewise for reads.
    return problems


def build_report(args, p, w, table_info, want_read, want_groups, per_nodes, total_s) -> dict:
    base = per_nodes[args.node_counts[0]]
    scaling, versus_iceberg = {}, {}
    for n, r in per_nodes.items():
        scaling[str(n)] = {
            "load_s": ratio(r["load"]["median_s"], base["load"]["median_s"]),
            **{f"{q}_s": ratio(r[q]["median_s"], base[q]["median_s"])
               for q in ("dataset_read", "iceberg_read", "dataset_aggregate", "iceberg_aggregate")},
        }
        saved_per_read = r["iceberg_read"]["median_s"] - r["dataset_read"]["median_s"]
        versus_iceberg[str(n)] = {
            "read_time": ratio(r["dataset_read"]["median_s"], r["iceberg_read"]["median_s"]),
            "aggregate_time": ratio(r["dataset_aggregate"]["median_s"], r["iceberg_aggregate"]["median_s"]),
            "read_minio_bytes": ratio(r["dataset_read"]["minio_bytes_per_query"], r["iceberg_read"]["minio_bytes_per_query"]),
            "load_vs_iceberg_read_time": ratio(r["load"]["median_s"], r["iceberg_read"]["median_s"]),
            # reads after which the load has paid for itself (load time over time saved per read)
            "break_even_reads": ratio(r["load"]["median_s"], saved_per_read) if saved_per_read > 0 else None,
        }
    problems = find_problems(per_nodes, want_read)
    return {
        "benchmark": "cluster",
        "when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": iceberg_bench.machine(),
        "parameters": {
            "rows": p.rows, "days": p.days, "features": p.features, "row_group_rows": p.row_group_rows,
            "seed": p.seed, "nodes": args.node_counts, "threshold": w.threshold, "cond": w.cond,
            "lost_after": LOST_AFTER,
            "loads": args.loads, "runs": args.runs, "warmup": args.warmup,
        },
        "table": table_info,
        "spec": w.spec(),
        "expected": {"dataset_rows": want_read["rows"], "dataset_id_sum": want_read["id_sum"],
                     "dataset_value_sum": want_read["value_sum"], "dataset_digest": want_read["digest"],
                     "aggregate": answers.totals(want_groups)},
        "nodes": {str(n): r for n, r in per_nodes.items()},
        "scaling_vs_first": scaling,
        "dataset_vs_iceberg": versus_iceberg,
        "problems": problems,
        "answers_agree": not problems,
        "total_s": total_s,
    }


def _x(v) -> str:
    return "n/a" if v is None else f"{v:.2f}"


def print_report(r: dict) -> None:
    t, e = r["table"], r["expected"]
    print(f"{t['table']}: {t['rows']} rows, {t['columns']} columns, {t['data_files']} files, {t['data_bytes'] / 1e6:.0f} MB "
          f"in MinIO; dataset {len(r['spec']['columns'])} columns where {r['spec']['filter']}: {e['dataset_rows']} rows; "
          f"aggregate {e['aggregate']['groups']} groups ({r['machine']['cpus']} CPUs, medians of "
          f"{r['parameters']['loads']} loads and {r['parameters']['runs']} runs)")
    print(f"{'nodes':>5} {'parts':>5} {'load s':>7} {'load MB':>8} {'ds read s':>10} {'ds Mrows/s':>11} {'ds MB/s':>8} "
          f"{'ice read s':>11} {'ice MB/q':>9} {'ds agg s':>9} {'ice agg s':>10} {'ds GETs':>8}")
    for n, x in r["nodes"].items():
        ld, dr, ir, da, ia = x["load"], x["dataset_read"], x["iceberg_read"], x["dataset_aggregate"], x["iceberg_aggregate"]
        print(f"{n:>5} {ld['partitions']:>5} {ld['median_s']:>7.2f} {ld['minio_bytes'] / 1e6:>8.1f} {dr['median_s']:>10.3f} "
              f"{dr['rows_per_s'] / 1e6:>11.2f} {dr['mb_per_s']:>8.0f} {ir['median_s']:>11.3f} "
              f"{ir['minio_bytes_per_query'] / 1e6:>9.1f} {da['median_s']:>9.3f} {ia['median_s']:>10.3f} "
              f"{dr['minio_gets_all_runs'] + da['minio_gets_all_runs']:>8}")
    first = r["parameters"]["nodes"][0]
    print(f"time with N nodes / time with {first} (below 1: faster)")
    print(f"{'nodes':>5} {'load':>6} {'ds read':>8} {'ice read':>9} {'ds agg':>7} {'ice agg':>8}")
    for n, s in r["scaling_vs_first"].items():
        print(f"{n:>5} {_x(s['load_s']):>6} {_x(s['dataset_read_s']):>8} {_x(s['iceberg_read_s']):>9} "
              f"{_x(s['dataset_aggregate_s']):>7} {_x(s['iceberg_aggregate_s']):>8}")
    print("dataset / Iceberg (below 1: the dataset is faster or reads less)")
    print(f"{'nodes':>5} {'read t':>7} {'agg t':>6} {'read MinIO B':>13} {'load/ice read':>14} {'break-even reads':>17}")
    for n, v in r["dataset_vs_iceberg"].items():
        print(f"{n:>5} {_x(v['read_time']):>7} {_x(v['aggregate_time']):>6} {_x(v['read_minio_bytes']):>13} "
              f"{_x(v['load_vs_iceberg_read_time']):>14} {_x(v['break_even_reads']):>17}")
    la = r["machine"].get("load_average") or {}
    print(f"answers agree: {r['answers_agree']} ({r['total_s']:.0f}s in all; load average "
          f"{' / '.join(f'{x:.1f}' for x in la.get('start', ()))} at start, "
          f"{' / '.join(f'{x:.1f}' for x in la.get('end', ()))} at end)")


if __name__ == "__main__":
    sys.exit(main())
