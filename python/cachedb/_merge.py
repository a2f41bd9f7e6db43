"""Merging the node streams of a training read into the reader's order.

A training read planned with ``node_streams`` has one endpoint per data node: each streams, in
order, the reader's rows that its node holds, and every record batch's app_metadata says which
of the reader's rows it carries, as runs (little-endian int64 pairs: the reader's row number of
the run's first row, and its row count). The epoch order interleaves runs of every partition,
so a batch of the reader holds rows of every node; the merge reads every node's stream at once
and places the rows with one take of the merged unit's rows (Arrow's kernel, every column at
once), never a Python step per run or column.
"""

from __future__ import annotations

from typing import Any, Iterator, List, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Rows merged at once, about: a multiple of the rows the reader yields at a time (its batch, or
# turn of batches), so that those are slices of one merged unit.
MERGE_UNIT_ROWS = 1 << 16


def unit_rows(batch_rows: int) -> int:
    """The rows of a merged unit for batches of batch_rows rows."""
    return batch_rows * max(1, MERGE_UNIT_ROWS // batch_rows)


_NO_RUN = np.empty(0, np.int64)

# 0, 1, 2, … as int32, made once and grown as needed (a fresh array of a unit's size costs more
# than the rest of placing its rows).
_POSITIONS = np.arange(MERGE_UNIT_ROWS, dtype=np.int32)


def _index_type(count: int) -> type:
    """The narrowest index type for rows below count (Arrow's take accepts either)."""
    return np.int32 if count <= np.iinfo(np.int32).max else np.int64


def _positions(count: int, dtype: Any) -> np.ndarray:
    """0, 1, …, count - 1 as dtype (read-only: shared)."""
    global _POSITIONS
    if dtype != np.int32:
        return np.arange(count, dtype=dtype)
    positions = _POSITIONS
    if len(positions) < count:
        positions = _POSITIONS = np.arange(count, dtype=np.int32)
    return positions[:count]


class _Node:
    """One node stream as the merge sees it: received record batches not yet placed and their
    runs (reader row number, rows), the first ones partly consumed."""

    def __init__(self, reader: Any):
        self.reader = reader
        self.batches: List[pa.RecordBatch] = []
        self.batch_at = 0  # rows of batches[0] consumed
        self.runs: List[np.ndarray] = []  # (k, 2) int64 arrays, in order, the consumed rows cut off
        self.known_end = 0  # the reader's row number past the last run received
        self.done = False

    def pull(self) -> None:
        """Takes the stream's next record batch (blocking), or notes its end."""
        item = self.reader.queue.get()
        if item is None:
            self.done = True
            return
        if isinstance(item, BaseException):
            error = getattr(item, "error", None)
            if error is not None:
                raise error from item
            raise item
        batch, meta = item
        runs = np.frombuffer(meta or b"", dtype="<i8").reshape(-1, 2)
        if int(runs[:, 1].sum()) != batch.num_rows:
            raise ValueError(f"a training read's node stream sent {batch.num_rows} rows described as {int(runs[:, 1].sum())}")
        if len(runs):
            self.runs.append(runs)
            self.known_end = max(self.known_end, int(runs[-1, 0] + runs[-1, 1]))
        if batch.num_rows:
            self.batches.append(batch)

    def take(self, end: int) -> "tuple[np.ndarray, np.ndarray, List[pa.RecordBatch]]":
        """Consumes the rows whose reader row numbers are below end (all received): returns
        their runs (first reader row number, rows; in order) and the record batch slices
        holding them."""
        if not self.runs:
            return _NO_RUN, _NO_RUN, []
        runs = np.concatenate(self.runs) if len(self.runs) > 1 else self.runs[0]
        starts, lens = runs[:, 0], runs[:, 1]
        below = np.clip(np.minimum(starts + lens, end) - starts, 0, None)
        count = int(below.sum())
        # Runs are in order: the first `full` are consumed whole, the next perhaps in part.
        full = int(np.count_nonzero(below == lens))
        rest = runs[full:].copy()
        if len(rest) and below[full]:
            rest[0, 0] += below[full]
            rest[0, 1] -= below[full]
        self.runs = [rest] if len(rest) else []
        if count == 0:
            return _NO_RUN, _NO_RUN, []
        taken = below[: full + 1] > 0
        return starts[: full + 1][taken], below[: full + 1][taken], self._slices(count)

    def _slices(self, count: int) -> List[pa.RecordBatch]:
        out = []
        while count:
            b = self.batches[0]
            n = min(count, b.num_rows - self.batch_at)
            out.append(b.slice(self.batch_at, n))
            count -= n
            self.batch_at += n
            if self.batch_at == b.num_rows:
                self.batches.pop(0)
                self.batch_at = 0
        return out


# Units of at most this many runs are put together by slicing and concatenating the runs
# (a plain copy) rather than by a take of every row.
FEW_RUNS = 64


def _one_batch(table: pa.Table, schema: pa.Schema) -> pa.RecordBatch:
    """The table's rows as one record batch (zero-copy when it has one chunk)."""
    batches = table.to_batches()
    if len(batches) == 1:
        return batches[0]
    return pa.RecordBatch.from_arrays([c.combine_chunks() for c in table.columns], schema=schema)


def merge_node_streams(readers: Sequence[Any], schema: pa.Schema, rows: int, first: int = 0) -> Iterator[pa.RecordBatch]:
    """Yields the reader's rows in order, in record batches of ``rows`` rows (the last may be
    shorter), merged from node streams; when ``first`` is given the first batch has ``first``
    rows and each next one twice the one before, up to ``rows``, so that the first rows come
    soon (every batch but the last is a multiple of ``first`` rows when ``rows`` is). Each reader is started and has a ``queue`` that
    yields (record batch, app_metadata) items, then None, or an exception."""
    nodes = [_Node(r) for r in readers]
    at = 0
    size = first or rows
    while True:
        end = at + size
        size = min(2 * size, rows)
        for n in nodes:
            while not n.done and n.known_end < end:
                n.pull()
        taken = [n.take(end) for n in nodes]
        counts = [int(t[1].sum()) for t in taken]
        count = sum(counts)
        if count == 0:
            if all(n.done and not n.batches for n in nodes):
                return
            raise ValueError("a training read's node streams left a gap in the reader's rows")
        # Every run is consecutive rows of the nodes' rows concatenated (source) and of the
        # unit (destination); in destination order, row i of the unit is source row
        # order[i] = i + (source start - destination start) of the run holding i.
        dst = np.concatenate([t[0] for t in taken]) - at
        lens = np.concatenate([t[1] for t in taken])
        local = np.concatenate([np.cumsum(t[1]) - t[1] for t in taken])  # in its node's rows
        node = np.repeat(np.arange(len(taken)), [len(t[1]) for t in taken])
        by_dst = np.argsort(dst, kind="stable")
        dst, lens, local, node = dst[by_dst], lens[by_dst], local[by_dst], node[by_dst]
        if dst[0] != 0 or np.any(dst[1:] != dst[:-1] + lens[:-1]) or dst[-1] + lens[-1] != count:
            raise ValueError("a training read's node streams do not cover the reader's rows once each")
        if len(dst) <= FEW_RUNS:
            # Long runs (windows of one partition): the runs' slices concatenated in order, one
            # copy (none for a unit of one run).
            tables = [pa.Table.from_batches(t[2], schema=schema) for t in taken]
            pieces = [tables[k].slice(j, n) for k, j, n in zip(node.tolist(), local.tolist(), lens.tolist())]
            yield _one_batch(pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0], schema)
        else:
            # Row i of the unit is row order[i] of the nodes' rows concatenated: one take of
            # every column at once (Arrow's kernels, any type, NULLs kept). A run's rows are
            # consecutive, so order is the run's offset (source - destination) repeated over its
            # rows, plus i; its rows are sources [src, src + lens), checked here run by run
            # (Arrow's take checks every index of every column unless told not to: half its
            # time).
            src = local + (np.cumsum(counts) - counts)[node]
            if src.min() < 0 or (src + lens).max() > count:
                raise ValueError("a training read's node streams placed a row outside the rows received")
            order = np.repeat((src - dst).astype(_index_type(count)), lens)
            order += _positions(count, order.dtype)
            # Taken from the received batches as they are (chunks): no concatenation first.
            pieces = pa.Table.from_batches([s for t in taken for s in t[2]], schema=schema)
            yield _one_batch(pc.take(pieces, pa.array(order), boundscheck=False), schema)
        at += count
