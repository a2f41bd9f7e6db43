"""What filter and projection pushdown saves on a wide Iceberg table in MinIO.

Writes (or reuses) a wide, day-partitioned Iceberg table in MinIO with pyiceberg (data.py), then
times one selective query that projects five of its 122 columns:

    SELECT id, f000, f001, f002, f003 FROM bench.wide WHERE ts BETWEEN lo AND hi

in four systems over the same files, interleaved run by run so that machine noise hits all of
them alike:

- cachedb             `cachedb serve` as shipped: partition, manifest, file and row-group pruning,
                      only the projected columns' chunks fetched
- cachedb-no-pushdown the same binary with --no-pushdown: whole files read, filtered in exec
- duckdb-pyarrow      DuckDB over a pyarrow.dataset of the table's Parquet data files through
                      pyarrow's S3 filesystem (DuckDB pushes projection and filter into it)
- pyiceberg           pyiceberg's own scan(row_filter, selected_fields).to_arrow()

Every answer is checked against the rows the filter must select (count, sum of ids) and against
the others (a digest of all values). It prints a table, writes bench/results/iceberg.json and
exits non-zero when answers differ. A benchmark, never a test: nothing asserts a speed.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import fcntl
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import adbc_driver_flightsql
import adbc_driver_flightsql.dbapi as flightsql
import duckdb
import pyarrow as pa
import pyarrow.dataset as pads
import pyiceberg
from pyiceberg.expressions import And, GreaterThanOrEqual, LessThanOrEqual

import data
import measure
from procs import REPO_ROOT, Cachedb, Minio

COLUMNS = ["id", "f000", "f001", "f002", "f003"]  # long key, then long, double, string, long
IDENT = f"{data.NAMESPACE}.{data.TABLE}"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=400_000, help="rows in the table")
    ap.add_argument("--days", type=int, default=10, help="days the rows span: one partition and data file each")
    ap.add_argument("--features", type=int, default=120, help="feature columns besides id and ts")
    ap.add_argument("--row-group-rows", type=int, default=4_000, help="rows per Parquet row group")
    ap.add_argument("--seed", type=int, default=42, help="generator seed")
    ap.add_argument("--selectivity", type=float, default=0.02, help="fraction of the time span (and rows) selected")
    ap.add_argument("--window-start", type=float, default=0.43, help="where the window starts, as a fraction of the span")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per system; the median is reported")
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs per system first")
    ap.add_argument("--pause", type=float, default=0.2, help="seconds of rest before each timed run, so one system's leftovers (GC, page reclaim) do not land in the next one's time")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2, help="DuckDB threads")
    ap.add_argument("--cachedb", default=str(REPO_ROOT / "bin" / "cachedb"), help="cachedb binary (make build)")
    ap.add_argument("--out", default=str(REPO_ROOT / "bench" / "out"), help="directory of the cached table")
    ap.add_argument("--no-cache", action="store_true", help="write the table into a temporary directory and drop it")
    ap.add_argument("--results", default=str(REPO_ROOT / "bench" / "results" / "iceberg.json"), help="where to write the figures")
    args = ap.parse_args()
    if args.days < 1 or args.rows < args.days or args.features < 4 or args.runs < 1 or not 0 < args.selectivity <= 1:
        ap.error("need rows >= days >= 1, features >= 4, runs >= 1 and 0 < selectivity <= 1")
    return args


@contextlib.contextmanager
def table_dir(args: argparse.Namespace, p: data.Params):
    """Yields (directory for MinIO's data and the SQLite catalog, whether the table is there).

    The cached directory is keyed on the generator's parameters and counts as complete only
    once its marker exists; a lock keeps two runs from writing it at once."""
    if args.no_cache:
        tmp = pathlib.Path(tempfile.mkdtemp(prefix="bench-iceberg-"))
        try:
            yield tmp, False
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    root = pathlib.Path(args.out)
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"iceberg-{p.key()}"
    with open(root / f"iceberg-{p.key()}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        complete = (path / ".complete").exists()
        if not complete:
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir()
        yield path, complete


def minio_with_table(stack: contextlib.ExitStack, args: argparse.Namespace, p, write, name: str) -> tuple[Minio, pathlib.Path]:
    """MinIO over the cached table directory for the parameters p (table_dir), stopped when
    stack closes; when the cache lacks the table, write(catalog, p, log) writes it first.
    Returns MinIO and the path of the SQLite catalog."""
    workdir, complete = stack.enter_context(table_dir(args, p))
    minio = Minio(workdir / "minio")
    stack.callback(minio.stop)
    log(f"MinIO at {minio.endpoint}, data in {workdir}")
    db_path = workdir / "catalog.db"
    if not complete:
        began = time.monotonic()
        minio.filesystem(allow_bucket_creation=True).create_dir(data.BUCKET)
        write(data.open_catalog(str(db_path), minio.pyiceberg_properties()), p, log)
        (workdir / ".complete").touch()
        log(f"wrote {name} in {time.monotonic() - began:.1f}s")
    return minio, db_path


def write_cachedb_config(path: pathlib.Path, minio: Minio, db_path: pathlib.Path) -> None:
    """A `cachedb serve --config` file: the SQL catalog `lake` in db_path over MinIO."""
    path.write_text(json.dumps({  # JSON is YAML
        "default_catalog": "lake",
        "s3": {"endpoint": minio.endpoint, "region": minio.region, "path_style": True},
        "catalogs": [{
            "name": "lake",
            "type": "sql",
            "uri": f"sqlite:///{db_path}",
            "warehouse": f"s3://{data.BUCKET}/",
            "default_namespace": data.NAMESPACE,
        }],
    }, indent=2))


class CachedbSystem:
    def __init__(self, server: Cachedb, sql: str):
        self.server = server
        self.sql = sql
        self.conn = flightsql.connect(server.uri, autocommit=True)

    def run(self) -> pa.Table:
        with self.conn.cursor() as cur:
            cur.execute(self.sql)
            return cur.fetch_arrow_table()

    def plan(self, analyze: bool) -> list[str]:
        with self.conn.cursor() as cur:
            cur.execute(("EXPLAIN ANALYZE " if analyze else "EXPLAIN ") + self.sql)
            return [str(v) for v in cur.fetch_arrow_table().column("plan").to_pylist()]

    def close(self) -> None:
        self.conn.close()


class DuckdbSystem:
    """DuckDB over a pyarrow dataset of the data files; the dataset is made inside each run
    (it reads the first file's footer for the schema), like any one-off query would."""

    def __init__(self, fs, paths: list[str], sql: str, threads: int):
        self.fs, self.paths, self.sql = fs, paths, sql
        self.con = duckdb.connect(config={"threads": threads})

    def run(self) -> pa.Table:
        ds = pads.dataset(self.paths, format="parquet", filesystem=self.fs)
        self.con.register("wide", ds)
        try:
            return self.con.execute(self.sql).to_arrow_table()
        finally:
            self.con.unregister("wide")

    def close(self) -> None:
        self.con.close()


class PyicebergSystem:
    """pyiceberg's scan; the table is loaded inside each run, as cachedb loads it per query."""

    def __init__(self, catalog, w: measure.Window):
        self.catalog = catalog
        self.row_filter = And(
            GreaterThanOrEqual("ts", w.lo.isoformat()), LessThanOrEqual("ts", w.hi.isoformat())
        )

    def run(self) -> pa.Table:
        tbl = self.catalog.load_table(IDENT)
        return tbl.scan(row_filter=self.row_filter, selected_fields=tuple(COLUMNS)).to_arrow()

    def close(self) -> None:
        pass


@dataclasses.dataclass
class Result:
    timing: measure.Timing
    served_bytes: list[int]
    served_requests: list[int]
    checksum: measure.Checksum | None = None
    checksums_stable: bool = True


def measure_all(systems: dict, minio: Minio, args: argparse.Namespace) -> dict[str, Result]:
    """Runs every system `warmup` times untimed, then `runs` times timed, interleaved. MinIO's
    counters are read around each timed run, outside the timed span."""
    for name, system in systems.items():
        for _ in range(args.warmup):
            began = time.perf_counter()
            system.run()
            log(f"warm-up {name}: {time.perf_counter() - began:.3f}s")
    results = {name: Result(measure.Timing([]), [], []) for name in systems}
    for i in range(args.runs):
        for name, system in systems.items():
            time.sleep(args.pause)
            before = minio.served()
            began = time.perf_counter()
            answer = system.run()
            elapsed = time.perf_counter() - began
            after = minio.served()
            r = results[name]
            r.timing.runs_s.append(elapsed)
            r.served_bytes.append(after[0] - before[0])
            r.served_requests.append(after[1] - before[1])
            c = measure.checksum(answer, COLUMNS)
            if r.checksum is None:
                r.checksum = c
            elif c != r.checksum:
                r.checksums_stable = False
            log(f"run {i + 1}/{args.runs} {name}: {elapsed:.3f}s, {answer.num_rows} rows")
    return results


def machine() -> dict:
    mem_gib = None
    with contextlib.suppress(OSError, ValueError):
        mem_gib = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
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
        "memory_gib": mem_gib,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "pyarrow": pa.__version__,
        "duckdb": duckdb.__version__,
        "pyiceberg": pyiceberg.__version__,
        "adbc_driver_flightsql": adbc_driver_flightsql.__version__,
        "git_commit": commit or None,
        # the binary was built from a work tree with uncommitted changes to tracked files
        "git_dirty": bool(git("status", "--porcelain", "--untracked-files=no")) if commit else None,
    }


def median_int(xs: list[int]) -> int:
    return sorted(xs)[len(xs) // 2]


def main() -> int:
    args = parse_args()
    binary = pathlib.Path(args.cachedb)
    if not binary.exists():
        log(f"cachedb binary {binary} not found: run `make build`")
        return 2
    p = data.Params(args.rows, args.days, args.features, args.row_group_rows, args.seed)
    w = measure.window(p, args.window_start, args.selectivity)
    lo, hi = w.lo.strftime("%Y-%m-%d %H:%M:%S"), w.hi.strftime("%Y-%m-%d %H:%M:%S")
    select = ", ".join(COLUMNS)
    cachedb_sql = f"SELECT {select} FROM {IDENT} WHERE ts BETWEEN '{lo}' AND '{hi}'"
    duckdb_sql = f"SELECT {select} FROM wide WHERE ts BETWEEN TIMESTAMP '{lo}' AND TIMESTAMP '{hi}'"

    with contextlib.ExitStack() as stack:
        minio, db_path = minio_with_table(stack, args, p, data.write_table, IDENT)
        catalog = data.open_catalog(str(db_path), minio.pyiceberg_properties())
        tbl = catalog.load_table(IDENT)
        tasks = list(tbl.scan().plan_files())
        paths = [t.file.file_path.removeprefix("s3://") for t in tasks]
        table_bytes = sum(t.file.file_size_in_bytes for t in tasks)
        table_info = {
            "table": IDENT,
            "columns": 2 + args.features,
            "rows": sum(t.file.record_count for t in tasks),
            "data_files": len(tasks),
            "data_bytes": table_bytes,
            "partitioning": "day(ts)",
        }
        log(f"{IDENT}: {table_info['rows']} rows, {len(tasks)} files, {table_bytes / 1e6:.1f} MB")

        config_dir = pathlib.Path(tempfile.mkdtemp(prefix="bench-iceberg-config-"))
        stack.callback(shutil.rmtree, config_dir, ignore_errors=True)
        config = config_dir / "cachedb.yaml"
        write_cachedb_config(config, minio, db_path)
        env = {"CACHEDB_S3_ACCESS_KEY_ID": minio.access_key_id, "CACHEDB_S3_SECRET_ACCESS_KEY": minio.secret_access_key}
        servers = {}
        for name, flags in (("cachedb", []), ("cachedb-no-pushdown", ["--no-pushdown"])):
            # Without the column cache: the benchmark measures what each read costs from
            # object storage, which the cache would spare every run after the first.
            servers[name] = Cachedb(binary, config, ["--no-demo", "--no-warehouse", "--column-cache", "0", *flags], env, name)
            stack.callback(servers[name].stop)

        systems = {name: CachedbSystem(s, cachedb_sql) for name, s in servers.items()}
        systems["duckdb-pyarrow"] = DuckdbSystem(minio.filesystem(), paths, duckdb_sql, args.threads)
        systems["pyiceberg"] = PyicebergSystem(catalog, w)
        for s in systems.values():
            stack.callback(s.close)

        explain = {}
        for name in servers:
            s = systems[name]
            explain[name] = {"explain": s.plan(False), "explain_analyze": s.plan(True)}

        results = measure_all(systems, minio, args)

    sys.stderr.flush()
    report = build_report(args, p, w, cachedb_sql, duckdb_sql, table_info, explain, results)
    print_table(report)
    path = pathlib.Path(args.results)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    log(f"wrote {path}")
    if not report["answers_agree"]:
        log("answers differ: " + json.dumps({n: v["checksum"] for n, v in report["systems"].items()}))
        return 1
    return 0


def build_report(args, p, w, cachedb_sql, duckdb_sql, table_info, explain, results) -> dict:
    expected = {"rows": w.rows, "id_sum": w.id_sum}
    systems = {}
    for name, r in results.items():
        c = r.checksum
        systems[name] = {
            "runs_s": r.timing.runs_s,
            "median_s": r.timing.median_s,
            "best_s": r.timing.best_s,
            "minio_bytes_per_query": median_int(r.served_bytes),
            "minio_requests_per_query": median_int(r.served_requests),
            "checksum": dataclasses.asdict(c),
            "answer_as_expected": c.rows == w.rows and c.id_sum == w.id_sum and r.checksums_stable,
        }
    for name, e in explain.items():
        systems[name]["explain"] = measure.scan_figures(e["explain"])
        systems[name]["explain_analyze"] = measure.scan_figures(e["explain_analyze"])
        systems[name]["explain_analyze_plan"] = e["explain_analyze"]
    push, nopush = systems["cachedb"], systems["cachedb-no-pushdown"]
    digests = {s["checksum"]["digest"] for s in systems.values()}
    fetched_push = push["explain_analyze"]["bytes_fetched"]
    fetched_nopush = nopush["explain_analyze"]["bytes_fetched"]

    def ratio(a, b):
        return a / b if a is not None and b else None

    ratios = {
        # time ratios: cachedb (pushdown) median / the other's median; below 1 = cachedb faster
        "time_cachedb_vs_no_pushdown": ratio(push["median_s"], nopush["median_s"]),
        "time_cachedb_vs_duckdb_pyarrow": ratio(push["median_s"], systems["duckdb-pyarrow"]["median_s"]),
        "time_cachedb_vs_pyiceberg": ratio(push["median_s"], systems["pyiceberg"]["median_s"]),
        # bytes ratios: pushdown / no-pushdown; below 1 = pushdown read less
        "bytes_fetched_pushdown_vs_no_pushdown": ratio(fetched_push, fetched_nopush),
        "minio_bytes_pushdown_vs_no_pushdown": ratio(push["minio_bytes_per_query"], nopush["minio_bytes_per_query"]),
    }
    return {
        "benchmark": "iceberg",
        "when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
        "parameters": {
            "rows": p.rows, "days": p.days, "features": p.features, "row_group_rows": p.row_group_rows,
            "seed": p.seed, "selectivity": args.selectivity, "window_start": args.window_start,
            "runs": args.runs, "warmup": args.warmup, "duckdb_threads": args.threads,
        },
        "table": table_info,
        "query": cachedb_sql,
        "duckdb_query": duckdb_sql,
        "expected": expected,
        "systems": systems,
        "ratios": ratios,
        "answers_agree": len(digests) == 1 and all(s["answer_as_expected"] for s in systems.values()),
    }


def _mb(n) -> str:
    return "n/a" if n is None else f"{n / 1e6:.2f}"


def _x(v) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def print_table(r: dict) -> None:
    t = r["table"]
    print(f"{r['query']}")
    print(f"over {t['table']}: {t['rows']} rows, {t['columns']} columns, {t['data_files']} files, "
          f"{t['data_bytes'] / 1e6:.1f} MB in MinIO; {r['expected']['rows']} rows selected "
          f"({r['machine']['cpus']} CPUs, median of {r['parameters']['runs']} runs)")
    print(f"{'system':<22} {'median s':>9} {'best s':>9} {'MinIO MB/q':>11} {'MinIO req/q':>12} "
          f"{'fetched MB':>11} {'t cachedb/t':>12}")
    push = r["systems"]["cachedb"]["median_s"]
    for name, s in r["systems"].items():
        fetched = s.get("explain_analyze", {}).get("bytes_fetched")
        print(f"{name:<22} {s['median_s']:>9.3f} {s['best_s']:>9.3f} {_mb(s['minio_bytes_per_query']):>11} "
              f"{s['minio_requests_per_query']:>12} {_mb(fetched) if 'explain_analyze' in s else '':>11} "
              f"{push / s['median_s']:>12.3f}")
    for name in ("cachedb", "cachedb-no-pushdown"):
        e = r["systems"][name]["explain"]
        files, rgs = e["files"], e["row_groups"]
        print(f"EXPLAIN {name}: files={files and '/'.join(map(str, files))} "
              f"row_groups={rgs and '/'.join(map(str, rgs))} bytes_planned={e['bytes_planned']}")
    ra = r["ratios"]
    if ra["time_cachedb_vs_no_pushdown"]:
        print(f"time cachedb/no-pushdown: {_x(ra['time_cachedb_vs_no_pushdown'])} "
              f"({1 / ra['time_cachedb_vs_no_pushdown']:.0f}x faster with pushdown)")
    print(f"bytes pushdown/no-pushdown: EXPLAIN ANALYZE bytes_fetched {_x(ra['bytes_fetched_pushdown_vs_no_pushdown'])}, "
          f"MinIO {_x(ra['minio_bytes_pushdown_vs_no_pushdown'])}")
    print(f"answers agree: {r['answers_agree']}")


if __name__ == "__main__":
    sys.exit(main())
