"""Answers, timings and EXPLAIN figures: the pieces of the benchmark that do not start anything."""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import re
import statistics

import pyarrow as pa
import pyarrow.compute as pc

from data import START, Params


@dataclasses.dataclass(frozen=True)
class Window:
    """The query's time range, inclusive at both ends, and the rows it selects: ids first … last
    (ts is id * step after START, so the answer is known without reading anything)."""

    lo: datetime.datetime
    hi: datetime.datetime
    first: int
    last: int

    @property
    def rows(self) -> int:
        return max(0, self.last - self.first + 1)

    @property
    def id_sum(self) -> int:
        return (self.first + self.last) * self.rows // 2 if self.rows else 0


def window(p: Params, start_fraction: float, selectivity: float) -> Window:
    """A window of whole seconds that starts start_fraction into the table's time span and
    covers `selectivity` of it."""
    span_s = p.days * 86_400
    lo_s = int(span_s * start_fraction)
    hi_s = lo_s + max(1, round(span_s * selectivity)) - 1
    lo_us, hi_us = lo_s * 1_000_000, hi_s * 1_000_000
    first = -(-lo_us // p.step_us)
    last = min(p.rows - 1, hi_us // p.step_us)
    return Window(
        lo=START + datetime.timedelta(seconds=lo_s),
        hi=START + datetime.timedelta(seconds=hi_s),
        first=first,
        last=last,
    )


@dataclasses.dataclass(frozen=True)
class Checksum:
    """Summary of an answer: row count, sum of ids, and a SHA-256 of every value in id order.
    Values are compared exactly: no system computes anything, they only select rows."""

    rows: int
    id_sum: int
    digest: str


def checksum(table: pa.Table, columns: list[str]) -> Checksum:
    """Checksums table's `columns` (the first is the row key); types are normalized (int64,
    float64, string) so that string and large_string, say, compare equal."""
    table = table.select(columns).sort_by(columns[0])
    h = hashlib.sha256()
    for name in columns:
        col = table.column(name)
        if pa.types.is_integer(col.type):
            col = pc.cast(col, pa.int64())
        elif pa.types.is_floating(col.type):
            col = pc.cast(col, pa.float64())
        elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            col = pc.cast(col, pa.string())
        h.update(name.encode() + b"\0")
        h.update(repr(col.to_pylist()).encode())
    id_sum = pc.sum(table.column(columns[0])).as_py() or 0
    return Checksum(rows=table.num_rows, id_sum=int(id_sum), digest=h.hexdigest())


@dataclasses.dataclass
class Timing:
    runs_s: list[float]

    @property
    def median_s(self) -> float:
        return statistics.median(self.runs_s)

    @property
    def best_s(self) -> float:
        return min(self.runs_s)


_METRIC = re.compile(r"\b(bytes_fetched|requests|bytes_planned)=(\d+)")
_RATIO = re.compile(r"\b(files|row_groups)=(\d+)/(\d+)")


def scan_figures(plan_lines: list[str]) -> dict:
    """Sums the Iceberg scan figures over the lines of an EXPLAIN [ANALYZE] plan: bytes_fetched,
    requests, bytes_planned, files and row_groups (kept and total). A figure that no line
    carries is None, not 0: a missing counter must not read as "read nothing"."""
    out: dict = {}
    for line in plan_lines:
        if "Scan:" not in line:
            continue
        for key, value in _METRIC.findall(line):
            out[key] = out.get(key, 0) + int(value)
        for key, kept, total in _RATIO.findall(line):
            k, t = out.get(key, (0, 0))
            out[key] = (k + int(kept), t + int(total))
    figures = {key: out.get(key) for key in ("bytes_fetched", "requests", "bytes_planned")}
    for key in ("files", "row_groups"):
        figures[key] = list(out[key]) if key in out else None
    return figures
