"""The baseline the training loop is measured against: reading the table's Parquet files from
MinIO with pyarrow every epoch, as a job without cachedb does.

Files are the unit of sharding, as in most file-based loaders: each epoch they are permuted
(seeded by the epoch), dealt round-robin to the ranks and, within a rank, to the DataLoader
workers; a worker reads its files (only the needed columns, the dataset's filter applied by
pyarrow), permutes the rows of each file and yields batches. Every rank yields the same number
of whole batches (the fewest any rank can fill), or the collectives of DDP would wait forever;
the rows beyond are skipped that epoch.
"""

from __future__ import annotations

import json
import random
from typing import Iterator

import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import torch
import torch.distributed as dist
from torch.utils.data import IterableDataset, get_worker_info

from cachedb.dataset import arrow_to_tensors, rebatch


class ParquetEpochs(IterableDataset):
    """One epoch after another of the table's files, filtered with `split < train_splits`.

    plan: JSON with `files` (s3 paths without the scheme), `rows_per_file` (rows each file
    keeps after the filter), `s3` (endpoint, region, access_key, secret_key), `train_splits`.
    """

    def __init__(self, plan_path: str, columns: list[str], batch_size: int, seed: int):
        with open(plan_path) as f:
            self.plan = json.load(f)
        self.columns, self.batch_size, self.seed = columns, batch_size, seed
        self.rank = dist.get_rank() if dist.is_initialized() else 0
        self.world_size = dist.get_world_size() if dist.is_initialized() else 1
        self.epoch = torch.zeros(1, dtype=torch.int64).share_memory_()

    def set_epoch(self, epoch: int) -> None:
        self.epoch[0] = epoch

    def _shares(self, num_workers: int) -> list[list[tuple[list[int], int]]]:
        """For each rank, for each worker: (its files, how many batches it yields)."""
        files = list(range(len(self.plan["files"])))
        random.Random(self.seed * 1_000_003 + int(self.epoch[0])).shuffle(files)
        rows = self.plan["rows_per_file"]
        shares = []
        for r in range(self.world_size):
            mine = files[r::self.world_size]
            shares.append([(mine[w::num_workers], sum(rows[f] for f in mine[w::num_workers]) // self.batch_size)
                           for w in range(num_workers)])
        # Equal steps: trim every rank to the fewest batches any rank can fill.
        steps = min(sum(b for _, b in workers) for workers in shares)
        for workers in shares:
            left = steps
            for w, (fs, b) in enumerate(workers):
                workers[w] = (fs, min(b, left))
                left -= workers[w][1]
        return shares

    def __iter__(self) -> Iterator[dict]:
        info = get_worker_info()
        worker, num_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        files, batches = self._shares(num_workers)[self.rank][worker]
        s3 = self.plan["s3"]
        scheme, _, host = s3["endpoint"].partition("://")
        fs = pafs.S3FileSystem(access_key=s3["access_key"], secret_key=s3["secret_key"],
                               endpoint_override=host, scheme=scheme, region=s3["region"])
        gen = torch.Generator().manual_seed(self.seed * 7919 + int(self.epoch[0]) * 31 + self.rank * 7 + worker)

        def shuffled_files():
            for f in files:
                t = pq.read_table(self.plan["files"][f], columns=self.columns + ["split"], filesystem=fs,
                                  filters=pc.field("split") < self.plan["train_splits"])
                t = t.select(self.columns)
                yield from t.take(torch.randperm(t.num_rows, generator=gen).numpy()).to_batches()

        for i, rb in enumerate(rebatch(shuffled_files(), self.batch_size)):
            if i == batches:
                return
            yield arrow_to_tensors(rb)


def parquet_loader(args, plan_path: str, columns: list[str]):
    """examples/train_ddp.py's loader factory for the baseline: `dataset` is the plan's path."""
    ds = ParquetEpochs(plan_path, columns, args.batch_size, args.seed)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=args.workers,
                                         multiprocessing_context="spawn" if args.workers else None,
                                         persistent_workers=args.workers > 0)
    return ds, loader
