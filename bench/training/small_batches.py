"""Small batches with DataLoader workers: the per-batch cost of handing batches from worker
processes to the training loop, against reading the same epoch in the loop's own process.

A fresh `cachedb serve --workers 2` holds a dataset of demo.rides (ride_id, fare; 200,000
rows). For each batch size, three ways to read one shuffled epoch through cachedb.DataLoader
are timed, after a warm-up epoch each (the worker processes persist, so their start is not
counted):

a. in-process: num_workers=0
b. workers, turns: num_workers=2, each worker hands over a turn of consecutive batches
   (cachedb.dataset.TURN_ROWS rows) in one transfer, cut into batches in the loop's process
c. workers, one batch per transfer: the same with turns of one batch (TURN_ROWS = 0), which is
   what a plain torch DataLoader over an IterableDataset does

Every epoch is checked: every row once. Prints a table and writes
bench/results/small_batches.json. A benchmark, never a test: nothing asserts a speed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import socket
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402

import cachedb  # noqa: E402
import cachedb.dataset  # noqa: E402

ROWS = 200_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def epoch_seconds(addr: str, batch: int, workers: int, turn_rows: int, runs: int) -> float:
    cachedb.dataset.TURN_ROWS = turn_rows
    ds = cachedb.CacheDataset(addr, "small_batches", columns=["ride_id", "fare"], batch_size=batch, seed=1)
    loader = cachedb.DataLoader(ds, num_workers=workers)
    times = []
    for epoch in range(runs + 1):
        ds.set_epoch(epoch)
        ids = []
        t = time.perf_counter()
        for b in loader:
            ids.append(b["ride_id"].clone())  # a copy: a batch from a worker holds a shared-memory file open
        dt = time.perf_counter() - t
        every = torch.cat(ids)
        if len(every) != ROWS or len(torch.unique(every)) != ROWS:
            raise SystemExit(f"batch {batch}, {workers} workers: the epoch is not every row once")
        if epoch > 0:
            times.append(dt)
    del loader
    return sorted(times)[len(times) // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch-sizes", default="7,64,512,4096")
    ap.add_argument("--runs", type=int, default=3, help="timed epochs per way; the median is reported")
    ap.add_argument("--cachedb", default=str(REPO / "bin" / "cachedb"))
    args = ap.parse_args()
    addr = f"127.0.0.1:{free_port()}"
    with tempfile.TemporaryDirectory() as tmp:
        log = open(pathlib.Path(tmp) / "serve.log", "wb")
        proc = subprocess.Popen([args.cachedb, "serve", "--listen", addr, "--workers", "2", "--warehouse", str(pathlib.Path(tmp) / "wh")],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    with cachedb.connect(addr) as db:
                        if db.sql("SELECT count(*) AS n FROM system.nodes WHERE state = 'alive'").column("n")[0].as_py() == 2:
                            db.load({"name": "small_batches", "sql": "SELECT ride_id, fare FROM demo.rides", "partitions": 4})
                            break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                time.sleep(0.2)
            default_turn = cachedb.dataset.TURN_ROWS
            results = []
            print(f"{'batch':>6} {'in-process':>12} {'workers, turns':>16} {'workers, 1 batch':>18} {'turns vs 1 batch':>17} {'turns vs in-process':>20}")
            for batch in [int(b) for b in args.batch_sizes.split(",")]:
                a = epoch_seconds(addr, batch, 0, default_turn, args.runs)
                b = epoch_seconds(addr, batch, 2, default_turn, args.runs)
                c = epoch_seconds(addr, batch, 2, 0, args.runs)
                results.append({"batch_size": batch, "in_process_s": a, "workers_turns_s": b, "workers_one_batch_s": c})
                print(f"{batch:>6} {ROWS / a:>10,.0f}/s {ROWS / b:>14,.0f}/s {ROWS / c:>16,.0f}/s {c / b:>16.1f}x {a / b:>19.2f}x", flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    out = REPO / "bench" / "results" / "small_batches.json"
    out.write_text(json.dumps({"when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                               "rows": ROWS, "turn_rows": default_turn, "results": results}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
