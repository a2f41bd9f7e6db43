"""The 22 TPC-H queries on cachedb over Iceberg tables, checked against DuckDB on the same data.

For a scale factor (--sf, default 1) the data is generated once with tpchgen-cli and cached
(see tpch_data.py). For each configuration (`cachedb serve` alone, and with --workers data nodes)
a server is started on a config naming the SQL catalog; each query in queries/qNN.sql (the
standard text with the spec's validation parameters, MySQL date syntax) runs --warmup untimed
and --runs timed times, each bounded by the server's --statement-timeout; the first answer is
compared with DuckDB's over the generator's Parquet files (tpch_compare.py). Prints a table and
writes bench/results/tpch.json. Exits 1 when any query fails or answers differently.
A benchmark: nothing asserts a speed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import statistics
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent / "iceberg"))  # procs

import adbc_driver_flightsql.dbapi as flightsql  # noqa: E402
import pyarrow as pa  # noqa: E402

import tpch_compare as compare  # noqa: E402
import tpch_data as data  # noqa: E402
from procs import REPO_ROOT, Cachedb  # noqa: E402

QUERIES = HERE / "queries"


def queries(only: str | None = None) -> dict[str, str]:
    wanted = {f"q{int(q):02d}" for q in only.split(",")} if only else None
    out = {}
    for p in sorted(QUERIES.glob("q*.sql")):
        if wanted is None or p.stem in wanted:
            out[p.stem] = p.read_text()
    return out


def run_cachedb(conn, sql: str) -> pa.Table:
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetch_arrow_table()


def first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:300]


def measure(fn, runs: int, warmup: int):
    """(first answer, median seconds of the timed runs); raises what fn raises."""
    answer = None
    times = []
    for i in range(warmup + runs):
        t0 = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - t0
        if answer is None:
            answer = result
        if i >= warmup:
            times.append(elapsed)
    return answer, statistics.median(times)


def run_config(name: str, server: Cachedb, qs: dict[str, str], want: dict, args) -> dict:
    results = {}
    conn = flightsql.connect(server.uri, autocommit=True)
    try:
        for q, sql in qs.items():
            entry = {"status": "ok"}
            try:
                got, secs = measure(lambda: run_cachedb(conn, sql), args.runs, args.warmup)
                entry["seconds"] = secs
                entry["rows"] = got.num_rows
                if isinstance(want[q], str):
                    entry["status"], entry["error"] = "unchecked", "DuckDB: " + want[q]
                else:
                    diff = compare.compare(sql, got, want[q]["answer"])
                    if diff:
                        entry["status"], entry["error"] = "wrong", diff
            except Exception as e:  # noqa: BLE001 - every failure is a row of the table
                msg = first_line(e)
                entry["status"] = "timeout" if "deadline" in msg.lower() or "timeout" in msg.lower() else "error"
                entry["error"] = msg
                if server.proc.poll() is not None:
                    entry["error"] += f" (server exited {server.proc.returncode})"
                    results[q] = entry
                    break
            results[q] = entry
            print(f"  {name} {q}: {entry['status']} {fmt_s(entry.get('seconds'))} {entry.get('error', '')}", flush=True)
    finally:
        conn.close()
    return results


def fmt_s(s) -> str:
    return "-" if s is None else f"{s:.3f}s"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per query; the median is reported")
    ap.add_argument("--warmup", type=int, default=0, help="untimed runs per query first")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds a cachedb statement may run")
    ap.add_argument("--workers", type=int, default=2, help="data nodes of the second configuration (0: only the first)")
    ap.add_argument("--queries", help="comma-separated query numbers (default all 22)")
    ap.add_argument("--cachedb", default=str(REPO_ROOT / "bin" / "cachedb"))
    ap.add_argument("--data", help="root of the cached data (default ~/.cache/cachedb/tpch)")
    ap.add_argument("--results", default=str(REPO_ROOT / "bench" / "results" / "tpch.json"))
    args = ap.parse_args()

    d = data.prepare(args.sf, pathlib.Path(args.data) if args.data else None)
    qs = queries(args.queries)

    want = {}
    duck = data.duckdb_connection(d)
    for q, sql in qs.items():
        try:
            answer, secs = measure(lambda: duck.execute(sql).to_arrow_table(), args.runs, args.warmup)
            want[q] = {"answer": answer, "seconds": secs}
        except Exception as e:  # noqa: BLE001
            want[q] = first_line(e)
    duck.close()

    configs = [("serve", [])]
    if args.workers > 0:
        configs.append((f"workers{args.workers}", ["--workers", str(args.workers)]))
    results = {}
    with tempfile.TemporaryDirectory(prefix="tpch-") as tmp:
        config = pathlib.Path(tmp) / "cachedb.yaml"
        data.write_cachedb_config(config, d)
        for name, flags in configs:
            server = Cachedb(pathlib.Path(args.cachedb), config,
                             [*flags, "--statement-timeout", f"{args.timeout:g}s"], {}, name)
            try:
                results[name] = run_config(name, server, qs, want, args)
            finally:
                server.stop()

    names = [n for n, _ in configs]
    header = f"{'query':<6}{'duckdb':>10}" + "".join(f"{n:>12}{'':<9}" for n in names)
    print(f"\nTPC-H SF {args.sf:g}, median of {args.runs} run(s)\n{header}")
    failures = 0
    for q in qs:
        line = f"{q:<6}{fmt_s(want[q]['seconds']) if isinstance(want[q], dict) else 'error':>10}"
        for n in names:
            e = results[n].get(q, {"status": "not run"})
            failures += e["status"] != "ok"
            line += f"{fmt_s(e.get('seconds')):>12} {e['status']:<8}"
        print(line)
    for n in names:
        for q, e in results[n].items():
            if e["status"] != "ok":
                print(f"{n} {q} {e['status']}: {e['error']}")

    out = {
        "benchmark": "tpch",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "scale_factor": args.sf,
        "runs": args.runs,
        "timeout_s": args.timeout,
        "duckdb_seconds": {q: w["seconds"] for q, w in want.items() if isinstance(w, dict)},
        "cachedb": results,
    }
    pathlib.Path(args.results).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.results).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.results}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
