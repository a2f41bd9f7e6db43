"""The 22 TPC-H queries on cachedb over Iceberg tables, checked against DuckDB on the same data,
and timed beside DuckDB and DataFusion.

For a scale factor (--sf, default 1) the data is generated once with tpchgen-cli and cached
(see tpch_data.py). A server is started for each configuration (`cachedb serve` alone; the same
without its column cache, so that every run reads and decodes the Parquet files; with --workers
data nodes; and with --workers data nodes holding the 8 tables as datasets, made by
`CREATE TABLE t AS SELECT * FROM tpch.t`, which the queries' bare names then read), all at once,
on a config naming the SQL catalog; each query in
queries/qNN.sql (the standard text with the spec's validation parameters, MySQL date syntax)
runs --warmup untimed and --runs timed times on DuckDB and on each server in turn (one run of
each per round, so that a query's ratios compare runs made under the same load), each bounded by
the server's --statement-timeout; every answer is compared with DuckDB's over the
generator's Parquet files (tpch_compare.py). DataFusion runs the same text over the same Parquet
files in the same rounds (its answers are checked against DuckDB's too). Prints a table, the
geometric means of the ratios, and writes bench/results/tpch.json.
Exits 1 when any query fails or answers differently.
A benchmark: nothing asserts a speed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import pathlib
import resource
import statistics
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent / "iceberg"))  # procs

import adbc_driver_flightsql.dbapi as flightsql  # noqa: E402
import pyarrow as pa  # noqa: E402

import footprint  # noqa: E402
import tpch_compare as compare  # noqa: E402
import tpch_data as data  # noqa: E402
from procs import REPO_ROOT, Cachedb  # noqa: E402

QUERIES = HERE / "queries"


def queries(only: str | None = None) -> dict[str, str]:
    wanted = {f"q{int(q.strip().lstrip('qQ')):02d}" for q in only.split(",")} if only else None
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


def own_cpu_seconds() -> float:
    """CPU seconds this process (DuckDB's and DataFusion's threads run in it) has used."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system, all threads) process pid has used, from /proc."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settle(pids: list[int], window: float = 1.0, timeout: float = 60.0) -> float:
    """Waits until the processes together used at most one clock tick of CPU over a window of
    seconds (garbage collected, memory returned), at most timeout seconds; returns the seconds
    waited."""
    tick = 1 / os.sysconf("SC_CLK_TCK")
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        before = sum(process_cpu_seconds(p) for p in pids)
        time.sleep(window)
        if sum(process_cpu_seconds(p) for p in pids) - before <= tick:
            break
    return time.monotonic() - start


class Timed:
    """One system's runs of one query: its first answer, its times and CPU times (cpu reads the
    CPU seconds its process has used so far), or the error that stopped it (it is not run again
    after one). A server's run also waits for its process to go idle after the answer (wait_idle),
    so that what it does in the background afterwards (collecting the query's garbage) counts in
    its CPU time and does not slow the next system's run."""

    def __init__(self, fn, cpu, wait_idle=None):
        self.fn = fn
        self.cpu = cpu
        self.wait_idle = wait_idle
        self.answer = None
        self.later_answers: list = []  # every run's answer after the first
        self.times: list[float] = []
        self.cpu_times: list[float] = []
        self.error: BaseException | None = None

    def run(self, timed: bool) -> None:
        if self.error is not None:
            return
        try:
            c0, t0 = self.cpu(), time.perf_counter()
            result = self.fn()
            elapsed = time.perf_counter() - t0
            if self.wait_idle is not None:
                self.wait_idle()
            cpu = self.cpu() - c0
        except Exception as e:  # noqa: BLE001 - every failure is a row of the table
            self.error = e
            return
        if self.answer is None:
            self.answer = result
        else:
            self.later_answers.append(result)
        if timed:
            self.times.append(elapsed)
            self.cpu_times.append(cpu)

    def seconds(self) -> float:
        return statistics.median(self.times)

    def cpu_seconds(self) -> float:
        return statistics.median(self.cpu_times)


def measure_interleaved(systems: dict[str, Timed], runs: int, warmup: int) -> None:
    """Runs each system's query warmup + runs times, round by round (one run of every system per
    round), so that the changing load of a shared machine falls on all of them alike."""
    for i in range(warmup + runs):
        for t in systems.values():
            t.run(i >= warmup)


def entry_of(server: Cachedb, t: Timed, sql: str, want) -> dict:
    """The result entry of one cachedb configuration for one query; want is DuckDB's answer, or
    the error DuckDB gave."""
    entry = {"status": "ok"}
    if t.error is not None:
        msg = first_line(t.error)
        entry["status"] = "timeout" if "deadline" in msg.lower() or "timeout" in msg.lower() else "error"
        entry["error"] = msg
        if server.proc.poll() is not None:
            entry["error"] += f" (server exited {server.proc.returncode})"
        return entry
    entry["seconds"] = t.seconds()
    entry["cpu_seconds"] = t.cpu_seconds()
    entry["rows"] = t.answer.num_rows
    if isinstance(want, str):
        entry["status"], entry["error"] = "unchecked", "DuckDB: " + want
    else:
        # Every run is checked, not only the first: later runs read what caches kept.
        for run, answer in enumerate([t.answer, *t.later_answers], start=1):
            diff = compare.compare(sql, answer, want)
            if diff:
                entry["status"], entry["error"] = "wrong", f"run {run}: {diff}"
                break
    return entry


def load_tables(conn, name: str, kind: str = "dataset") -> None:
    """Makes each TPC-H table a dataset of the same name on the data nodes (a memory table on the
    head when there are none): the queries' bare names then read them (a dataset comes before a
    table of the default catalog)."""
    for table in data.TABLES:
        start = time.perf_counter()
        with conn.cursor() as cur:
            cur.execute(f"CREATE TABLE {table} AS SELECT * FROM {data.NAMESPACE}.{table}")
        print(f"  {name}: {kind} {table} in {time.perf_counter() - start:.2f} s", flush=True)


def measure_memory_tables(binary: pathlib.Path, config: pathlib.Path) -> int:
    """The resident memory the 8 tables add as memory tables of a head without data nodes."""
    server = Cachedb(binary, config, [], {}, "memtables")
    try:
        with flightsql.connect(server.uri, autocommit=True) as conn:
            before = footprint.rss_bytes(server.proc.pid)
            load_tables(conn, "memtables", "memory table")
            return footprint.rss_bytes(server.proc.pid) - before
    finally:
        server.stop()


def entry_of_datafusion(t: Timed, sql: str, want) -> dict:
    """DataFusion's result entry for one query, its answer checked against DuckDB's (want)."""
    if t.error is not None:
        return {"status": "error", "error": first_line(t.error)}
    entry = {"status": "ok", "seconds": t.seconds(), "cpu_seconds": t.cpu_seconds(), "rows": t.answer.num_rows}
    if not isinstance(want, str):
        diff = compare.compare(sql, t.answer, want)
        if diff:  # e.g. its AVG of a decimal is a decimal of scale 6 where DuckDB's is a double
            entry["status"], entry["error"] = "differs", diff
    return entry


def geomean(values) -> float | None:
    """The geometric mean of positive values; None for none."""
    logs = [math.log(v) for v in values if v > 0]
    return math.exp(sum(logs) / len(logs)) if logs else None


def fmt_s(s) -> str:
    return "-" if s is None else f"{s:.3f}s"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per query; the median is reported")
    ap.add_argument("--warmup", type=int, default=0, help="untimed runs per query first")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds a cachedb statement may run")
    ap.add_argument("--workers", type=int, default=2, help="data nodes of the second and third configurations (0: only the first)")
    ap.add_argument("--no-datasets", action="store_true", help="leave out the configuration over datasets")
    ap.add_argument("--queries", help="comma-separated query numbers (default all 22)")
    ap.add_argument("--modes", help="comma-separated cachedb configurations to run (serve, uncached, workersN, datasetsN; default all)")
    ap.add_argument("--no-footprint", dest="footprint", action="store_false",
                    help="leave out measuring the tables as memory tables of a head (after the queries)")
    ap.add_argument("--cachedb", default=str(REPO_ROOT / "bin" / "cachedb"))
    ap.add_argument("--data", help="root of the cached data (default ~/.cache/cachedb/tpch)")
    ap.add_argument("--results", default=str(REPO_ROOT / "bench" / "results" / "tpch.json"))
    args = ap.parse_args()

    d = data.prepare(args.sf, pathlib.Path(args.data) if args.data else None)
    qs = queries(args.queries)

    configs = [("serve", []), ("uncached", ["--column-cache", "0"])]
    if args.workers > 0:
        configs.append((f"workers{args.workers}", ["--workers", str(args.workers)]))
        if not args.no_datasets:
            configs.append((f"datasets{args.workers}", ["--workers", str(args.workers)]))
    if args.modes:
        wanted = set(args.modes.split(","))
        unknown = wanted - {name for name, _ in configs}
        if unknown:
            ap.error(f"unknown modes {sorted(unknown)}; this run has {[name for name, _ in configs]}")
        configs = [c for c in configs if c[0] in wanted]
    want: dict = {}
    results: dict = {name: {} for name, _ in configs}
    fusion_results: dict = {}
    sizes = {t: {"parquet_bytes": footprint.parquet_bytes(d / "warehouse", t)} for t in data.TABLES}
    rss_added: dict[str, int] = {}
    servers: dict[str, Cachedb] = {}
    conns: dict = {}
    duck = data.duckdb_connection(d)
    fusion = data.datafusion_context(d)
    with tempfile.TemporaryDirectory(prefix="tpch-") as tmp:
        config = pathlib.Path(tmp) / "cachedb.yaml"
        data.write_cachedb_config(config, d)
        try:
            # Every configuration is up at once and each query runs on DuckDB and on each of them
            # in turn, run after run: a query's ratios compare runs made under the same load.
            for name, flags in configs:
                servers[name] = Cachedb(pathlib.Path(args.cachedb), config,
                                        [*flags, "--statement-timeout", f"{args.timeout:g}s"], {}, name)
                conns[name] = flightsql.connect(servers[name].uri, autocommit=True)
                if name.startswith("datasets"):
                    before = footprint.rss_bytes(servers[name].proc.pid)
                    load_tables(conns[name], name)
                    rss_added["datasets"] = footprint.rss_bytes(servers[name].proc.pid) - before
                    for table, b in footprint.dataset_bytes(conns[name]).items():
                        if table in sizes:
                            sizes[table]["arrow_bytes"] = b
            waited = settle([s.proc.pid for s in servers.values()])
            print(f"servers idle after {waited:.0f} s", flush=True)
            for q, sql in qs.items():
                systems = {"duckdb": Timed(lambda sql=sql: duck.execute(sql).to_arrow_table(), own_cpu_seconds),
                           "datafusion": Timed(lambda sql=sql: fusion.sql(data.datafusion_text(sql)).to_arrow_table(),
                                               own_cpu_seconds)}
                for name, conn in conns.items():
                    if servers[name].proc.poll() is None:
                        pid = servers[name].proc.pid
                        systems[name] = Timed(lambda conn=conn, sql=sql: run_cachedb(conn, sql),
                                              lambda pid=pid: process_cpu_seconds(pid),
                                              lambda pid=pid: settle([pid], window=0.1, timeout=3.0))
                measure_interleaved(systems, args.runs, args.warmup)
                ddb = systems["duckdb"]
                want[q] = (first_line(ddb.error) if ddb.error is not None else
                           {"answer": ddb.answer, "seconds": ddb.seconds(), "cpu_seconds": ddb.cpu_seconds()})
                reference = want[q]["answer"] if isinstance(want[q], dict) else want[q]
                fusion_results[q] = entry_of_datafusion(systems["datafusion"], sql, reference)
                for name in conns:
                    if name in systems:
                        entry = entry_of(servers[name], systems[name], sql, reference)
                    else:
                        entry = {"status": "error", "error": f"server exited {servers[name].proc.returncode} earlier"}
                    results[name][q] = entry
                    print(f"  {name} {q}: {entry['status']} {fmt_s(entry.get('seconds'))} {entry.get('error', '')}", flush=True)
        finally:
            for conn in conns.values():
                conn.close()
            for server in servers.values():
                server.stop()
            duck.close()
        if args.footprint:
            rss_added["memory tables"] = measure_memory_tables(pathlib.Path(args.cachedb), config)

    names = [n for n, _ in configs]
    ratios = {n: {q: e["seconds"] / want[q]["seconds"] for q, e in results[n].items()
                  if "seconds" in e and isinstance(want.get(q), dict) and want[q]["seconds"] > 0} for n in names}
    fusion_ratios = {q: e["seconds"] / want[q]["seconds"] for q, e in fusion_results.items()
                     if "seconds" in e and isinstance(want.get(q), dict) and want[q]["seconds"] > 0}
    header = f"{'query':<6}{'duckdb':>10}{'datafusion':>12}{'x duckdb':>10}" + "".join(f"{n:>12}{'x duckdb':>10} {'':<8}" for n in names)
    print(f"\nTPC-H SF {args.sf:g}, median of {args.runs} run(s)\n{header}")
    failures = 0
    for q in qs:
        line = f"{q:<6}{fmt_s(want[q]['seconds']) if isinstance(want[q], dict) else 'error':>10}"
        fr = fusion_ratios.get(q)
        line += f"{fmt_s(fusion_results[q].get('seconds')):>12}{'-' if fr is None else f'{fr:.2f}':>10}"
        for n in names:
            e = results[n].get(q, {"status": "not run"})
            failures += e["status"] != "ok"
            r = ratios[n].get(q)
            line += f"{fmt_s(e.get('seconds')):>12}{'-' if r is None else f'{r:.2f}':>10} {e['status']:<8}"
        print(line)
    for n in names:
        for q, e in results[n].items():
            if e["status"] != "ok":
                print(f"{n} {q} {e['status']}: {e['error']}")
    for q, e in fusion_results.items():
        if e["status"] != "ok":
            print(f"datafusion {q} {e['status']}: {e['error']}")
    geomeans = {"datafusion": geomean(fusion_ratios.values())}
    geomeans.update({n: geomean(ratios[n].values()) for n in names})
    print("geometric mean of time / DuckDB's over the queries each answered: " +
          ", ".join(f"{n} {'-' if g is None else f'{g:.2f}'}" for n, g in geomeans.items()))
    vs_fusion = {n: geomean(e["seconds"] / fusion_results[q]["seconds"] for q, e in results[n].items()
                            if "seconds" in e and "seconds" in fusion_results.get(q, {})) for n in names}
    print("geometric mean of time / DataFusion's: " +
          ", ".join(f"{n} {'-' if g is None else f'{g:.2f}'}" for n, g in vs_fusion.items()))
    # CPU time (cachedb's server process; DuckDB and DataFusion in this process) depends far less
    # on what else the machine runs than wall time does.
    def cpu_ratios_of(entries: dict) -> dict:
        return {q: e["cpu_seconds"] / want[q]["cpu_seconds"] for q, e in entries.items()
                if "cpu_seconds" in e and isinstance(want.get(q), dict) and want[q]["cpu_seconds"] > 0}

    cpu_ratios = {"datafusion": cpu_ratios_of(fusion_results), **{n: cpu_ratios_of(results[n]) for n in names}}
    print(f"\nCPU time / DuckDB's CPU time\n{'query':<6}{'duckdb':>10}" + "".join(f"{n:>12}" for n in cpu_ratios))
    for q in qs:
        w = want[q]
        print(f"{q:<6}{fmt_s(w['cpu_seconds']) if isinstance(w, dict) else 'error':>10}" +
              "".join(f"{'-' if cpu_ratios[n].get(q) is None else format(cpu_ratios[n][q], '.2f'):>12}" for n in cpu_ratios))
    cpu_geomeans = {n: geomean(r.values()) for n, r in cpu_ratios.items()}
    print("geometric mean of CPU time / DuckDB's CPU time: " +
          ", ".join(f"{n} {'-' if g is None else f'{g:.2f}'}" for n, g in cpu_geomeans.items()))

    out = {
        "benchmark": "tpch",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "scale_factor": args.sf,
        "runs": args.runs,
        "timeout_s": args.timeout,
        "interleaved": True,
        "duckdb_seconds": {q: w["seconds"] for q, w in want.items() if isinstance(w, dict)},
        "datafusion": fusion_results,
        "cachedb": results,
        "ratios_vs_duckdb": {"datafusion": fusion_ratios, **ratios},
        "geomean_vs_duckdb": geomeans,
        "geomean_vs_datafusion": vs_fusion,
        "duckdb_cpu_seconds": {q: w["cpu_seconds"] for q, w in want.items() if isinstance(w, dict)},
        "cpu_ratios_vs_duckdb": cpu_ratios,
        "cpu_geomean_vs_duckdb": cpu_geomeans,
    }
    footprint.report(sizes, rss_added)
    out["footprint"] = {"tables": sizes, "resident_bytes_added": rss_added}
    pathlib.Path(args.results).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.results).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.results}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
