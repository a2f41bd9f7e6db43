"""Train a small model under torch.distributed from a dataset held by cachedb.

Two ranks (gloo, on CPU, over loopback) each read their share of every epoch through a
cachedb.DataLoader with two workers; the shares are equal, disjoint and reshuffled each epoch.
Rank 0 prints each epoch's time and the share of step time spent waiting for data.

    make run                                      # in another terminal: head + 2 data nodes
    python examples/train_ddp.py --head 127.0.0.1:32010

The dataset is loaded from a job spec first (reused if the cluster already holds it). With
--checkpoint, each rank saves the loader's state every --checkpoint-every steps and a run
started again with the same checkpoint continues the epoch where it stopped, with the rows it
had not seen, in the same order. --log-ids DIR writes the ids each rank trained on, one line per
step, to DIR/rank-R.ids (the tests check them against the epoch order).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import cachedb

FEATURES = ["f0", "f1", "f2", "f3", "f4", "f5"]
DEFAULT_SPEC = {
    "name": "rides_train",
    "table": "demo.rides",
    "columns": ["ride_id", *FEATURES, "label"],
    "filter": "label IS NOT NULL",
    "partitions": 8,
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--head", default="127.0.0.1:32010", help="cachedb head HOST:PORT")
    p.add_argument("--spec", help="job spec (JSON) to load; default: features of demo.rides")
    p.add_argument("--dataset", help="read this dataset instead of loading a spec")
    p.add_argument("--id-column", default="ride_id")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers per rank")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--checkpoint", help="directory for per-rank checkpoints (resumes from them)")
    p.add_argument("--checkpoint-every", type=int, default=10, help="steps between checkpoints")
    p.add_argument("--stop-after", type=int, default=0, help="exit abruptly after this many steps (to try resuming)")
    p.add_argument("--log-ids", help="directory to write the ids each rank trained on")
    p.add_argument("--step-ms", type=float, default=0.0, help="extra compute per step, to model a bigger model")
    p.add_argument("--report", help="file to append each epoch's figures to, as JSON lines (rank 0)")
    return p.parse_args(argv)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_dataset(args) -> str:
    if args.dataset:
        return args.dataset
    spec = DEFAULT_SPEC if not args.spec else json.loads(pathlib.Path(args.spec).read_text())
    with cachedb.connect(args.head) as db:
        info = db.load(spec)
    print(f"dataset {info['name']}: {info['rows']} rows in {info['partitions']} partitions"
          f" on {len(info['nodes'])} nodes ({'reused' if info['reused'] else 'loaded'} in {info['seconds']:.2f}s)", flush=True)
    return info["name"]


def to_inputs(batch):
    x = torch.stack([batch[f].float() for f in FEATURES], dim=1)
    return torch.nan_to_num(x), batch["label"].float().unsqueeze(1)


def cachedb_loader(args, dataset: str, columns: list[str]):
    """The rank's dataset and loader: its share of each epoch of the cached dataset."""
    ds = cachedb.CacheDataset(args.head, dataset, columns=columns, batch_size=args.batch_size, seed=args.seed, shares="drop_last")
    return ds, cachedb.DataLoader(ds, num_workers=args.workers)


def run_rank(rank: int, args, dataset: str, port: int, make_loader=cachedb_loader) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.manual_seed(args.seed)
    columns = [args.id_column, *FEATURES, "label"]
    ds, loader = make_loader(args, dataset, columns)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(len(FEATURES), 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = torch.nn.BCEWithLogitsLoss()

    ckpt = pathlib.Path(args.checkpoint) / f"rank-{rank}.pt" if args.checkpoint else None
    first_epoch, resumed = 0, False
    if ckpt is not None and ckpt.exists():
        state = torch.load(ckpt)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        loader.load_state_dict(state["loader"])
        first_epoch, resumed = state["loader"]["epoch"], True
        if rank == 0:
            print(f"resuming epoch {first_epoch} after {state['loader']['offset']} rows of each rank", flush=True)
    ids_out = None
    if args.log_ids:
        pathlib.Path(args.log_ids).mkdir(parents=True, exist_ok=True)
        ids_out = open(pathlib.Path(args.log_ids) / f"rank-{rank}.ids", "a")

    steps_total = 0
    for epoch in range(first_epoch, args.epochs):
        if not (resumed and epoch == first_epoch):
            ds.set_epoch(epoch)
        waiting = 0.0
        start = time.perf_counter()
        steps, rows = 0, 0
        it = iter(loader)
        while True:
            t0 = time.perf_counter()
            try:
                batch = next(it)
            except StopIteration:
                break
            waiting += time.perf_counter() - t0
            x, y = to_inputs(batch)
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            if args.step_ms:
                time.sleep(args.step_ms / 1000)
            steps, rows, steps_total = steps + 1, rows + len(y), steps_total + 1
            if ids_out is not None:
                ids_out.write(f"{epoch} " + " ".join(map(str, batch[args.id_column].tolist())) + "\n")
                ids_out.flush()
            if ckpt is not None and steps % args.checkpoint_every == 0:
                ckpt.parent.mkdir(parents=True, exist_ok=True)
                tmp = ckpt.with_suffix(".tmp")
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "loader": loader.state_dict()}, tmp)
                tmp.replace(ckpt)
            if args.stop_after and steps_total >= args.stop_after:
                print(f"rank {rank}: stopping abruptly after {steps_total} steps", flush=True)
                os._exit(3)
        elapsed = time.perf_counter() - start
        # Equal shares: every rank took the same number of steps, so no collective waits forever.
        counts = torch.tensor([steps])
        dist.all_reduce(counts, op=dist.ReduceOp.MAX)
        assert counts.item() == steps, f"rank {rank} took {steps} steps, another rank {counts.item()}"
        if rank == 0:
            print(f"epoch {epoch}: {steps} steps, {rows} rows per rank, {elapsed:.2f}s, "
                  f"waiting for data {100 * waiting / max(elapsed, 1e-9):.1f}% of step time, loss {loss.item():.4f}", flush=True)
            if args.report:
                with open(args.report, "a") as out:
                    out.write(json.dumps({"epoch": epoch, "steps": steps, "rows_per_rank": rows, "seconds": elapsed,
                                          "waiting_seconds": waiting, "loss": loss.item()}) + "\n")
        if ckpt is not None:
            # Saved after the whole share was read, the loader's state is the next epoch's start.
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "loader": loader.state_dict()}, ckpt)
    if ids_out is not None:
        ids_out.close()
    dist.destroy_process_group()


def main(argv=None, make_loader=cachedb_loader) -> int:
    """Runs the example; make_loader (a module-level function, as the ranks are spawned) gives
    each rank its dataset and loader, the cached dataset's by default."""
    args = parse_args(argv)
    dataset = load_dataset(args)
    mp.spawn(run_rank, args=(args, dataset, free_port(), make_loader), nprocs=args.ranks, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
