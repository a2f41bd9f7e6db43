"""The Parquet baseline of bench/training (parquet_epochs.py) shares an epoch the way a DDP job
needs: files dealt to ranks and workers without overlap, every rank the same number of whole
batches, no worker more batches than its files fill, and a new deal each epoch."""

import json
import random
import sys

from servers import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench" / "training"))

import parquet_epochs  # noqa: E402


def make(tmp_path, rows_per_file, batch_size, rank, world_size, seed=5):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"files": [f"f{i}" for i in range(len(rows_per_file))], "rows_per_file": rows_per_file,
                                "train_splits": 8, "s3": {}}))
    ds = parquet_epochs.ParquetEpochs(str(plan), ["id"], batch_size, seed)
    ds.rank, ds.world_size = rank, world_size
    return ds


def test_shares_are_disjoint_equal_and_filled(tmp_path):
    rng = random.Random(11)
    for _ in range(60):
        files, world, workers, batch = rng.randint(1, 12), rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 40)
        rows = [rng.randint(0, 200) for _ in range(files)]
        epoch = rng.randint(0, 5)
        per_rank = []
        for rank in range(world):
            ds = make(tmp_path, rows, batch, rank, world)
            ds.set_epoch(epoch)
            per_rank.append(ds._shares(workers)[rank])
        dealt = [f for workers_of in per_rank for fs, _ in workers_of for f in fs]
        assert sorted(dealt) == list(range(files)), "every file goes to exactly one worker of one rank"
        totals = {sum(b for _, b in workers_of) for workers_of in per_rank}
        assert len(totals) == 1, f"ranks yield different numbers of batches: {totals}"
        for workers_of in per_rank:
            for fs, batches in workers_of:
                assert 0 <= batches <= sum(rows[f] for f in fs) // batch
        # The common count is the most that every rank can fill.
        fillable = min(sum(sum(rows[f] for f in fs) // batch for fs, _ in workers_of) for workers_of in per_rank)
        assert totals.pop() == fillable


def test_each_epoch_deals_the_files_anew(tmp_path):
    ds = make(tmp_path, [100] * 12, 10, 0, 2)
    deals = set()
    for epoch in range(6):
        ds.set_epoch(epoch)
        deals.add(tuple(tuple(fs) for fs, _ in ds._shares(2)[0]))
    assert len(deals) > 1
