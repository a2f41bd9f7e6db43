"""Membership on a busy machine: does slowness move data?

Starts, as separate processes of bin/cachedb (cluster mode, docs/cluster.md), an idle head with
three data nodes (`cachedb head` + 3 x `cachedb worker` over one embedded warehouse) with the
default failure detector (--suspect-after 5s, --lost-after 60s), and beside it a baseline
cluster with the detector cachedb had before (--lost-after 3s, which the current code can only
approximate with --suspect-after 2s --lost-after 3s). Each loads a 6-partition dataset. Then:

1. idle under load: --burners processes spin (default: one per core) for --minutes (default
   10). Counted on each cluster from its head's log: nodes marked suspect, marked lost,
   registering again, and dataset partitions made again.
2. a throttled node: w1 of each cluster is stopped (SIGSTOP) for --pause-seconds (default 6)
   and let run (SIGCONT) for 2 s, --cycles times (default 5): the coarse version of what a CPU
   quota does to a pod. Counted as in 1.
3. SIGSTOP one node of the default cluster for --stop-seconds (default 20, less than
   --lost-after), then SIGCONT: it must become suspect, come back alive, and no partition may
   move (system.datasets and the head's log).
4. kill -9 another node: time until system.nodes shows it lost and until system.datasets shows
   the dataset ready on the survivors, and the dataset's row count after.

The burners run throughout. Prints the figures and writes bench/results/membership.json. A
benchmark, never a test: nothing asserts a speed; the run exits 1 only when the default
cluster moved data for slowness (a loss or rebuild in phases 1 to 3) or lost rows.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

import adbc_driver_flightsql.dbapi as flightsql

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
BINARY = REPO_ROOT / "bin" / "cachedb"
RESULT = REPO_ROOT / "bench" / "results" / "membership.json"
SECRET = "membership bench secret"
SPEC = """name: rides
table: demo.rides
columns: [ride_id, fare, passengers, city]
partitions: 6
"""
START_TIMEOUT_S = 120
REBUILD_TIMEOUT_S = 180

_LOG = re.compile(r"\b(INFO|WARN|ERROR)\b (data node (?:joined|suspect|recovered|lost))\b.*?\bnode=(\S+)")
_REBUILD = re.compile(r"making again the dataset partitions of a lost data node.*?partitions=\"?\[([0-9 ]*)\]")


def log(msg: str) -> None:
    print(f"[{datetime.datetime.now():%H:%M:%S}] {msg}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A head and three worker processes over one embedded warehouse, each logging to a file."""

    def __init__(self, name: str, workdir: pathlib.Path, head_flags: list[str]):
        self.name = name
        self.dir = workdir / name
        self.dir.mkdir(parents=True)
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.head_flags = head_flags
        common = [f"--warehouse={self.dir / 'warehouse'}"]
        self.head = self._start("head", ["head", "--listen", self.addr, *common, *head_flags])
        self.workers: dict[str, subprocess.Popen] = {}
        for i in (1, 2, 3):
            wid = f"w{i}"
            self.workers[wid] = self._start(wid, ["worker", "--listen", f"127.0.0.1:{free_port()}", "--head", self.addr, "--id", wid, *common])
        self.conn = None

    def _start(self, name: str, args: list[str]) -> subprocess.Popen:
        out = open(self.dir / f"{name}.log", "wb")
        env = {**os.environ, "CACHEDB_CLUSTER_SECRET": SECRET}
        return subprocess.Popen([str(BINARY), *args], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)

    @property
    def head_log(self) -> pathlib.Path:
        return self.dir / "head.log"

    def connect(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                self.conn = flightsql.connect(f"grpc://{self.addr}", autocommit=True)
                self.query("SELECT 1")
                return
            except Exception:  # noqa: BLE001 - the head is still starting
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def query(self, sql: str) -> list[tuple]:
        with self.conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall()

    def states(self) -> dict[str, str]:
        return dict(self.query("SELECT id, state FROM system.nodes"))

    def dataset(self) -> tuple[str, str]:
        rows = self.query("SELECT state, nodes FROM system.datasets WHERE name = 'rides'")
        return (rows[0][0], rows[0][1]) if rows else ("", "")

    def wait(self, what: str, cond, timeout_s: float = START_TIMEOUT_S, every_s: float = 0.2) -> float:
        """Polls cond until it holds; returns the seconds it took."""
        start = time.monotonic()
        while True:
            try:
                if cond():
                    return time.monotonic() - start
            except Exception as e:  # noqa: BLE001 - a query may fail while a node is gone
                last = e
            if time.monotonic() - start > timeout_s:
                raise TimeoutError(f"{self.name}: {what} not reached in {timeout_s}s")
            time.sleep(every_s)

    def load(self) -> None:
        spec = self.dir / "rides.yaml"
        spec.write_text(SPEC)
        subprocess.run([str(BINARY), "load", str(spec), "--head", self.addr, "-q"], check=True, capture_output=True, timeout=REBUILD_TIMEOUT_S)

    def events(self) -> dict:
        """Counts the head log's membership events per kind, and the partitions made again."""
        counts = {"joined": 0, "suspect": 0, "recovered": 0, "lost": 0, "partitions_rebuilt": 0}
        per_node: dict[str, dict[str, int]] = {}
        for line in self.head_log.read_text(errors="replace").splitlines():
            if m := _LOG.search(line):
                kind = m.group(2).rsplit(" ", 1)[1]
                counts[kind] += 1
                per_node.setdefault(m.group(3), {}).setdefault(kind, 0)
                per_node[m.group(3)][kind] += 1
            elif m := _REBUILD.search(line):
                counts["partitions_rebuilt"] += len(m.group(1).split())
        counts["per_node"] = per_node
        return counts

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            if self.conn is not None:
                self.conn.close()
        for p in [*self.workers.values(), self.head]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGCONT)
                p.terminate()
        for p in [*self.workers.values(), self.head]:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()


def delta(after: dict, before: dict) -> dict:
    return {k: after[k] - before[k] for k in after if k != "per_node"}


def start_burners(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10, help="length of the idle phase under load (default 10)")
    ap.add_argument("--burners", type=int, default=os.cpu_count() or 2, help="spinning processes (default: one per core)")
    ap.add_argument("--pause-seconds", type=float, default=6, help="how long the throttled node is stopped per cycle (default 6)")
    ap.add_argument("--cycles", type=int, default=5, help="stop/run cycles of the throttled node (default 5)")
    ap.add_argument("--stop-seconds", type=float, default=20, help="how long one node is SIGSTOPped (default 20, below --lost-after)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the cluster with the old 3 s lost timeout")
    ap.add_argument("--no-build", action="store_true", help="use bin/cachedb as it is")
    args = ap.parse_args()

    if not args.no_build:
        log("building bin/cachedb")
        subprocess.run(["go", "build", "-o", str(BINARY), "./cmd/cachedb"], cwd=REPO_ROOT, check=True)
    work = pathlib.Path(tempfile.mkdtemp(prefix="bench-membership-"))
    clusters = [Cluster("default", work, [])]
    if not args.no_baseline:
        clusters.append(Cluster("baseline", work, ["--suspect-after=2s", "--lost-after=3s"]))
    burners: list[subprocess.Popen] = []
    result: dict = {
        "when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cores": os.cpu_count(),
        "burners": args.burners,
        "minutes": args.minutes,
        "clusters": {c.name: {"head_flags": c.head_flags or ["(defaults: --heartbeat-interval 1s --suspect-after 5s --lost-after 60s)"]} for c in clusters},
    }
    failed = []
    try:
        for c in clusters:
            c.connect()
            c.wait("3 alive nodes", lambda c=c: sorted(c.states().values()) == ["alive"] * 3)
            c.load()
            c.wait("dataset ready on 3 nodes", lambda c=c: c.dataset() == ("ready", "w1,w2,w3"))
        rows = clusters[0].query("SELECT count(*) FROM rides")[0][0]
        log(f"clusters up, dataset of {rows} rows on w1,w2,w3; log files under {work}")

        # 1. Idle under saturating load.
        before = {c.name: c.events() for c in clusters}
        burners = start_burners(args.burners)
        log(f"{args.burners} burners spinning for {args.minutes} min")
        end = time.monotonic() + args.minutes * 60
        samples = {c.name: {"suspect": 0, "lost": 0, "n": 0} for c in clusters}
        while time.monotonic() < end:
            for c in clusters:
                with contextlib.suppress(Exception):
                    st = list(c.states().values())
                    samples[c.name]["suspect"] += st.count("suspect")
                    samples[c.name]["lost"] += st.count("lost")
                    samples[c.name]["n"] += 1
            time.sleep(1)
        for c in clusters:
            ev = delta(c.events(), before[c.name])
            state, nodes = c.dataset()
            result["clusters"][c.name]["idle_under_load"] = {
                "marked_suspect": ev["suspect"], "recovered": ev["recovered"], "marked_lost": ev["lost"],
                "joined_again": ev["joined"], "partitions_rebuilt": ev["partitions_rebuilt"],
                "system_nodes_samples": samples[c.name]["n"],
                "samples_with_a_suspect_node": samples[c.name]["suspect"], "samples_with_a_lost_node": samples[c.name]["lost"],
                "dataset_after": f"{state} on {nodes}",
            }
        d = result["clusters"]["default"]["idle_under_load"]
        if d["marked_lost"] or d["partitions_rebuilt"]:
            failed.append("the default cluster lost nodes or rebuilt partitions while idle under load")

        # 2. A throttled node on every cluster.
        before = {c.name: c.events() for c in clusters}
        log(f"w1 throttled: stopped {args.pause_seconds}s, running 2s, {args.cycles} times")
        throttled = [c.workers["w1"] for c in clusters]
        for _ in range(args.cycles):
            for p in throttled:
                os.kill(p.pid, signal.SIGSTOP)
            time.sleep(args.pause_seconds)
            for p in throttled:
                os.kill(p.pid, signal.SIGCONT)
            time.sleep(2)
        for c in clusters:
            c.wait("w1 alive again", lambda c=c: c.states().get("w1") == "alive")
            with contextlib.suppress(TimeoutError):
                c.wait("dataset ready", lambda c=c: c.dataset()[0] == "ready", timeout_s=REBUILD_TIMEOUT_S)
            ev = delta(c.events(), before[c.name])
            state, nodes = c.dataset()
            result["clusters"][c.name]["throttled_node"] = {
                "pause_s": args.pause_seconds, "cycles": args.cycles,
                "marked_suspect": ev["suspect"], "recovered": ev["recovered"], "marked_lost": ev["lost"],
                "joined_again": ev["joined"], "partitions_rebuilt": ev["partitions_rebuilt"],
                "dataset_after": f"{state} on {nodes}",
            }
        d = result["clusters"]["default"]["throttled_node"]
        if d["marked_lost"] or d["partitions_rebuilt"]:
            failed.append("the default cluster lost a throttled node or rebuilt its partitions")

        # 3. SIGSTOP one node for less than --lost-after.
        c = clusters[0]
        before = c.events()
        victim = c.workers["w3"]
        os.kill(victim.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        log(f"w3 stopped for {args.stop_seconds}s")
        to_suspect = c.wait("w3 suspect", lambda: c.states().get("w3") == "suspect", timeout_s=args.stop_seconds + 30)
        time.sleep(max(0.0, args.stop_seconds - (time.monotonic() - stopped)))
        seen_while_stopped = c.states().get("w3")
        os.kill(victim.pid, signal.SIGCONT)
        to_alive = c.wait("w3 alive again", lambda: c.states().get("w3") == "alive")
        ev = delta(c.events(), before)
        state, nodes = c.dataset()
        result["clusters"]["default"]["sigstop"] = {
            "stopped_s": round(time.monotonic() - stopped - to_alive, 1),
            "suspect_after_s": round(to_suspect, 1),
            "state_before_sigcont": seen_while_stopped,
            "alive_after_sigcont_s": round(to_alive, 1),
            "marked_lost": ev["lost"], "partitions_rebuilt": ev["partitions_rebuilt"],
            "dataset_after": f"{state} on {nodes}",
        }
        if ev["lost"] or ev["partitions_rebuilt"] or (state, nodes) != ("ready", "w1,w2,w3"):
            failed.append("a SIGSTOPped node lost its partitions")

        # 4. kill -9 a node.
        before = c.events()
        killed = c.workers["w2"]
        killed.kill()
        killed.wait()
        t0 = time.monotonic()
        log("w2 killed")
        lost_s = c.wait("w2 lost", lambda: c.states().get("w2") == "lost", timeout_s=REBUILD_TIMEOUT_S, every_s=0.1)
        rebuilt_s = c.wait("dataset rebuilt on w1,w3", lambda: c.dataset() == ("ready", "w1,w3"), timeout_s=REBUILD_TIMEOUT_S, every_s=0.1) + lost_s
        after_rows = c.query("SELECT count(*) FROM rides")[0][0]
        ev = delta(c.events(), before)
        lost_lines = [ln for ln in c.head_log.read_text(errors="replace").splitlines() if "data node lost" in ln and "node=w2" in ln]
        result["clusters"]["default"]["kill9"] = {
            "lost_after_s": round(lost_s, 1),
            "rebuilt_after_s": round(rebuilt_s, 1),
            "partitions_rebuilt": ev["partitions_rebuilt"],
            "reason": re.search(r'reason="([^"]*)"', lost_lines[-1]).group(1) if lost_lines else "",
            "rows_before": rows, "rows_after": after_rows,
        }
        if after_rows != rows:
            failed.append(f"the dataset has {after_rows} rows after the rebuild, {rows} before")
        log(f"w2 lost after {lost_s:.1f}s, dataset rebuilt after {rebuilt_s:.1f}s (both since the kill; {time.monotonic() - t0:.1f}s now)")
    finally:
        for b in burners:
            b.kill()
        for c in clusters:
            c.stop()

    result["failed"] = failed
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print_table(result)
    print(f"\nwrote {RESULT.relative_to(REPO_ROOT)}; logs under {work}")
    for f in failed:
        print(f"FAILED: {f}")
    return 1 if failed else 0


def print_table(r: dict) -> None:
    print(f"\nmembership under load: {r['burners']} burners on {r['cores']} cores, idle phase {r['minutes']} min")
    print(f"{'cluster':10} {'suspect':>8} {'recovered':>10} {'lost':>6} {'rejoined':>9} {'parts rebuilt':>14}  dataset after")
    for name, c in r["clusters"].items():
        i = c.get("idle_under_load")
        if i:
            print(f"{name:10} {i['marked_suspect']:>8} {i['recovered']:>10} {i['marked_lost']:>6} {i['joined_again']:>9} {i['partitions_rebuilt']:>14}  {i['dataset_after']}")
    print(f"\nthrottled w1 (stopped {r['clusters']['default'].get('throttled_node', {}).get('pause_s')}s, running 2s, repeatedly)")
    print(f"{'cluster':10} {'suspect':>8} {'recovered':>10} {'lost':>6} {'rejoined':>9} {'parts rebuilt':>14}  dataset after")
    for name, c in r["clusters"].items():
        i = c.get("throttled_node")
        if i:
            print(f"{name:10} {i['marked_suspect']:>8} {i['recovered']:>10} {i['marked_lost']:>6} {i['joined_again']:>9} {i['partitions_rebuilt']:>14}  {i['dataset_after']}")
    d = r["clusters"]["default"]
    if s := d.get("sigstop"):
        print(f"\nSIGSTOP w3 {s['stopped_s']}s: suspect after {s['suspect_after_s']}s, state before SIGCONT {s['state_before_sigcont']}, "
              f"alive {s['alive_after_sigcont_s']}s after SIGCONT; lost {s['marked_lost']}, partitions rebuilt {s['partitions_rebuilt']}; dataset {s['dataset_after']}")
    if k := d.get("kill9"):
        print(f"kill -9 w2: lost after {k['lost_after_s']}s ({k['reason']}), {k['partitions_rebuilt']} partitions rebuilt, "
              f"dataset ready on the survivors after {k['rebuilt_after_s']}s; rows {k['rows_before']} -> {k['rows_after']}")


if __name__ == "__main__":
    sys.exit(main())
