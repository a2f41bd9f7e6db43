"""The merge of a training read's node streams (cachedb._merge), without a server: node streams
are fed from queues as the client's stream readers feed them."""

from __future__ import annotations

import queue
import random

import numpy as np
import pyarrow as pa
import pytest

import cachedb._merge
from cachedb._merge import merge_node_streams


class FakeReader:
    """A started node-stream reader: its queue yields (record batch, app_metadata), then None."""

    def __init__(self, items):
        self.queue: queue.Queue = queue.Queue()
        for item in items:
            self.queue.put(item)
        self.queue.put(None)


def runs_meta(runs) -> bytes:
    return np.array(runs, dtype="<i8").reshape(-1, 2).tobytes()


def node_streams(table: pa.Table, owner: list[int], nodes: int, batch_rows: int, seed: int):
    """Splits table (the reader's rows in order) into node streams: row i is on node owner[i];
    each node sends its rows in order, in record batches of up to batch_rows rows, each with
    the runs it carries."""
    items = []
    for node in range(nodes):
        rows = [i for i in range(table.num_rows) if owner[i] == node]
        out = []
        for at in range(0, len(rows), batch_rows):
            part = rows[at:at + batch_rows]
            runs = []
            for r in part:
                if runs and runs[-1][0] + runs[-1][1] == r:
                    runs[-1][1] += 1
                else:
                    runs.append([r, 1])
            batch = table.take(pa.array(part, pa.int64())).combine_chunks().to_batches()[0]
            out.append((batch, runs_meta(runs)))
        items.append(out)
    return [FakeReader(i) for i in items]


def sample_table(rows: int, seed: int) -> pa.Table:
    rng = random.Random(seed)
    return pa.table({
        "id": pa.array(range(rows), pa.int64()),
        "f": pa.array([rng.random() if rng.random() > 0.1 else None for _ in range(rows)], pa.float32()),
        "name": pa.array([f"row{i}" * (i % 4) if i % 7 else None for i in range(rows)], pa.string()),
        "flag": pa.array([i % 3 == 0 for i in range(rows)], pa.bool_()),
        "vec": pa.array([[float(i), float(-i)] for i in range(rows)], pa.list_(pa.float32(), 2)),
    })


@pytest.mark.parametrize("few_runs", [0, 64, 10_000])  # units put together by a take, either way, by slices
@pytest.mark.parametrize("nodes, run_rows, batch_rows, out_rows", [(2, 7, 16, 10), (3, 1, 5, 64), (1, 100, 33, 50), (2, 128, 4096, 4096), (3, 2, 50, 600)])
def test_merge_gives_the_readers_rows_in_order(nodes, run_rows, batch_rows, out_rows, few_runs, monkeypatch):
    monkeypatch.setattr(cachedb._merge, "FEW_RUNS", few_runs)
    # The positions the merge shares start shorter than a unit: they grow when one needs more.
    monkeypatch.setattr(cachedb._merge, "_POSITIONS", np.arange(3, dtype=np.int32))
    table = sample_table(1000, nodes * run_rows)
    rng = random.Random(run_rows)
    owner = []
    while len(owner) < table.num_rows:
        owner += [rng.randrange(nodes)] * rng.randint(1, 2 * run_rows)
    owner = owner[: table.num_rows]
    merged = list(merge_node_streams(node_streams(table, owner, nodes, batch_rows, 0), table.schema, out_rows))
    assert all(b.num_rows == out_rows for b in merged[:-1]) and 0 < merged[-1].num_rows <= out_rows
    got = pa.Table.from_batches(merged)
    assert got.schema == table.schema
    assert got.equals(table)  # every column, NULLs included, in the reader's order


def test_merged_batches_grow_from_first_to_rows():
    table = sample_table(1000, 5)
    owner = [(i // 3) % 2 for i in range(1000)]
    merged = list(merge_node_streams(node_streams(table, owner, 2, 64, 0), table.schema, 300, first=75))
    assert [b.num_rows for b in merged] == [75, 150, 300, 300, 175]
    assert pa.Table.from_batches(merged).equals(table)


def test_a_gap_in_the_node_streams_is_an_error():
    table = sample_table(100, 1)
    owner = [i % 2 for i in range(100)]
    readers = node_streams(table, owner, 2, 10, 0)
    # Node 1's second batch is lost: the rows it carried are missing from the reader's order.
    items = []
    while True:
        item = readers[1].queue.get()
        if item is None:
            break
        items.append(item)
    del items[1]
    readers[1] = FakeReader(items)
    with pytest.raises(ValueError, match="gap|cover"):
        list(merge_node_streams(readers, table.schema, 30))


def test_runs_that_do_not_match_the_batch_are_an_error():
    table = sample_table(10, 2)
    batch = table.to_batches()[0]
    reader = FakeReader([(batch, runs_meta([[0, 9]]))])
    with pytest.raises(ValueError, match="described as 9"):
        list(merge_node_streams([reader], table.schema, 4))
