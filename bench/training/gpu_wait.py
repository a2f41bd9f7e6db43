"""How long a training step on a GPU waits for its data, from cachedb and from memory.

A fresh `cachedb serve --workers 2` holds a dataset of demo.rides (8 float64 features and the
label; 200,000 rows in 8 partitions). A small MLP (bf16 autocast, Adam) takes one optimizer step
per batch on the GPU. Each step is timed in two parts: the wait (the training loop blocked in
`next()` on its loader until the batch is on the device) and the compute (forward, backward and
step, to `torch.cuda.synchronize()`). Per batch size, these loaders are compared in one run,
after one untimed warm-up epoch each:

a. gpu-resident: the whole table already in GPU memory, batches cut by a random permutation
   on the GPU: no loading at all, the compute-only floor
b. host-pinned: the table in this process's pinned memory, each batch gathered by a random
   permutation into a pinned buffer and copied without blocking: the best a job whose data fits
   in its own RAM can do
c. torch-dataloader: the same tensors through a plain torch DataLoader (TensorDataset, shuffle,
   pin_memory=True): what such a job usually does (it collates row by row)
d. cachedb in-process: CacheDataset(device="cuda") iterated in the loop's process (pinned,
   non-blocking copies)
e. cachedb workers: cachedb.DataLoader(num_workers=W, device="cuda") (pin_memory on)

Every epoch is checked: its rows are the dataset's. Prints a table and writes the figures as
JSON (--out). Runs on a CPU too (--device cpu) to check the script; the figures that matter
are from a GPU. A benchmark, never a test: nothing asserts a speed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402

import cachedb  # noqa: E402

DATASET = "gpu_wait"
FEATURES = ["f0", "f1", "f2", "f3", "f4", "f5", "distance_km", "tip"]
COLUMNS = [*FEATURES, "label"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary: str, workdir: pathlib.Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    log = open(workdir / "cachedb.log", "w")
    proc = subprocess.Popen(
        [binary, "serve", "--listen", f"127.0.0.1:{port}", "--workers", "2", "--warehouse", str(workdir / "warehouse")],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"cachedb exited: {(workdir / 'cachedb.log').read_text()}")
        try:
            with cachedb.connect(f"127.0.0.1:{port}") as db:
                if db.sql("SELECT count(*) AS n FROM system.nodes WHERE state = 'alive'").column("n")[0].as_py() == 2:
                    return proc, f"127.0.0.1:{port}"
        except Exception:
            if time.monotonic() > deadline:
                proc.kill()
                raise
        time.sleep(0.2)


class MLP(torch.nn.Module):
    def __init__(self, width: int, depth: int):
        super().__init__()
        layers: list[torch.nn.Module] = [torch.nn.Linear(len(FEATURES), width), torch.nn.ReLU()]
        for _ in range(depth - 1):
            layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
        layers.append(torch.nn.Linear(width, 1))
        self.net = torch.nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


class Trainer:
    """One optimizer step per batch; times the wait for each batch and the step itself."""

    def __init__(self, device: torch.device, width: int, depth: int):
        self.device = device
        self.model = MLP(width, depth).to(device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-4)

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def step(self, x: torch.Tensor, y: torch.Tensor) -> None:
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.device.type == "cuda"):
            loss = torch.nn.functional.binary_cross_entropy_with_logits(self.model(x), y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()

    def epoch(self, batches, to_xy) -> dict:
        """Runs one epoch; returns rows, seconds, and the waits and computes of its steps."""
        waits, computes, rows = [], [], 0
        self.sync()
        start = time.perf_counter()
        it = iter(batches)
        while True:
            t0 = time.perf_counter()
            try:
                batch = next(it)
            except StopIteration:
                break
            x, y = to_xy(batch)
            self.sync()  # the batch is on the device: its copy is part of the wait
            t1 = time.perf_counter()
            self.step(x, y)
            self.sync()
            t2 = time.perf_counter()
            waits.append(t1 - t0)
            computes.append(t2 - t1)
            rows += len(y)
        return {"rows": rows, "seconds": time.perf_counter() - start, "waits": waits, "computes": computes}


def cachedb_xy(device: torch.device):
    def to_xy(b: dict) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.stack([b[f] for f in FEATURES], dim=1).float()
        y = b["label"].float()
        if x.device != device:  # a loader without a device (never, here) would leave them on the CPU
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        return x, y
    return to_xy


def summarize(name: str, batch: int, epochs: list[dict]) -> dict:
    waits = [w for e in epochs for w in e["waits"]]
    computes = [c for e in epochs for c in e["computes"]]
    rows = sum(e["rows"] for e in epochs)
    seconds = sum(e["seconds"] for e in epochs)
    q = statistics.quantiles(waits, n=20) if len(waits) > 1 else [waits[0]] * 19
    return {
        "loader": name,
        "batch_size": batch,
        "steps": len(waits),
        "rows_per_s": rows / seconds,
        "wait_ms_mean": 1e3 * statistics.fmean(waits),
        "wait_ms_p50": 1e3 * statistics.median(waits),
        "wait_ms_p95": 1e3 * q[18],
        "compute_ms_mean": 1e3 * statistics.fmean(computes),
        "wait_share": sum(waits) / (sum(waits) + sum(computes)),
    }


def run_batch_size(addr: str, device: torch.device, batch: int, args, table: dict) -> list[dict]:
    rows = len(table["label"])
    results = []

    def measure(name: str, make_epoch, to_xy) -> None:
        trainer = Trainer(device, args.width, args.depth)
        torch.manual_seed(0)
        timed = []
        for epoch in range(args.epochs + 1):
            e = trainer.epoch(make_epoch(epoch), to_xy)
            if e["rows"] != rows:
                raise AssertionError(f"{name}: epoch {epoch} had {e['rows']} rows, not {rows}")
            if epoch > 0:
                timed.append(e)
        results.append(summarize(name, batch, timed))
        r = results[-1]
        print(f"  {name:<22} batch {batch:>6}: {r['rows_per_s'] / 1e6:7.2f} M rows/s, wait {r['wait_ms_mean']:7.3f} ms "
              f"(p95 {r['wait_ms_p95']:7.3f}), compute {r['compute_ms_mean']:7.3f} ms, waiting {100 * r['wait_share']:5.1f} %",
              flush=True)

    # a. gpu-resident
    x_all = torch.stack([table[f] for f in FEATURES], dim=1).float().to(device)
    y_all = table["label"].float().to(device)

    def resident(epoch: int):
        g = torch.Generator(device=device).manual_seed(epoch)
        perm = torch.randperm(rows, device=device, generator=g)
        return (perm[i:i + batch] for i in range(0, rows, batch))

    measure("gpu-resident", resident, lambda idx: (x_all[idx], y_all[idx]))

    # b. host-pinned: the table in pinned host memory, each batch gathered by a random
    # permutation into a pinned buffer and copied without blocking (the buffer is reused only
    # after the step's synchronize, so the copy has finished)
    x_host = torch.stack([table[f] for f in FEATURES], dim=1).float().pin_memory() if device.type == "cuda" else \
        torch.stack([table[f] for f in FEATURES], dim=1).float()
    y_host = table["label"].float()
    x_buf, y_buf = torch.empty((batch, len(FEATURES))), torch.empty(batch)
    if device.type == "cuda":
        x_buf, y_buf = x_buf.pin_memory(), y_buf.pin_memory()

    def host_pinned(epoch: int):
        perm = torch.randperm(rows, generator=torch.Generator().manual_seed(epoch))
        return (perm[i:i + batch] for i in range(0, rows, batch))

    def gather(idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = len(idx)
        torch.index_select(x_host, 0, idx, out=x_buf[:n])
        torch.index_select(y_host, 0, idx, out=y_buf[:n])
        return x_buf[:n].to(device, non_blocking=True), y_buf[:n].to(device, non_blocking=True)

    measure("host-pinned", host_pinned, gather)

    # c. torch-dataloader
    tds = torch.utils.data.TensorDataset(torch.stack([table[f] for f in FEATURES], dim=1).float(), table["label"].float())
    pin = device.type == "cuda"
    loader = torch.utils.data.DataLoader(tds, batch_size=batch, shuffle=True, pin_memory=pin)
    measure("torch-dataloader", lambda epoch: loader,
            lambda b: (b[0].to(device, non_blocking=True), b[1].to(device, non_blocking=True)))

    # d. cachedb in-process
    ds = cachedb.CacheDataset(addr, DATASET, columns=COLUMNS, batch_size=batch, seed=1, nulls="float", device=device)

    def cachedb_epoch_of(source: cachedb.CacheDataset, epoch: int) -> cachedb.CacheDataset:
        source.set_epoch(epoch)
        return source

    measure("cachedb in-process", lambda epoch: cachedb_epoch_of(ds, epoch), cachedb_xy(device))

    # e. cachedb workers
    for w in args.workers:
        dsw = cachedb.CacheDataset(addr, DATASET, columns=COLUMNS, batch_size=batch, seed=1, nulls="float")
        dl = cachedb.DataLoader(dsw, num_workers=w, device=device, persistent_workers=True)

        def worker_epoch(epoch: int, dsw=dsw, dl=dl):
            dsw.set_epoch(epoch)
            return dl

        measure(f"cachedb {w} workers", worker_epoch, cachedb_xy(device))
        del dl
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=str(REPO / "bin" / "cachedb"))
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--batch-sizes", default="256,1024,8192")
    p.add_argument("--workers", default="2,4", help="DataLoader worker counts for loader d")
    p.add_argument("--epochs", type=int, default=3, help="timed epochs per loader, after one warm-up")
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--out", default=str(REPO / "bench" / "results" / "gpu_wait.json"))
    args = p.parse_args()
    args.workers = [int(w) for w in args.workers.split(",") if w]
    device = torch.device(args.device)
    with tempfile.TemporaryDirectory(prefix="cachedb-gpu-wait-") as tmp:
        proc, addr = start_server(args.binary, pathlib.Path(tmp))
        try:
            with cachedb.connect(addr) as db:
                info = db.load({"name": DATASET, "table": "demo.rides", "columns": COLUMNS, "partitions": 8})
                table = db.sql(f"SELECT {', '.join(COLUMNS)} FROM {DATASET}")
            cols = {c: torch.from_numpy(table.column(c).to_numpy(zero_copy_only=False)).clone() for c in COLUMNS}
            cols = {c: torch.nan_to_num(t.double()) if c in FEATURES else t for c, t in cols.items()}
            print(f"dataset {DATASET}: {info['rows']} rows in {info['partitions']} partitions; device {device}"
                  + (f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else ""), flush=True)
            results = []
            for batch in [int(b) for b in args.batch_sizes.split(",")]:
                results += run_batch_size(addr, device, batch, args, cols)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    out = {
        "benchmark": "gpu_wait",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "rows": info["rows"],
        "model": {"width": args.width, "depth": args.depth, "autocast": "bf16" if device.type == "cuda" else None},
        "epochs": args.epochs,
        "results": results,
    }
    pathlib.Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
