"""The training benchmark's Iceberg table: deterministic rows written with pyiceberg into MinIO.

Table `bench.train` (SQL catalog in a SQLite file, warehouse s3://bench/), unpartitioned, one
data file per append (`files` of them, consecutive id ranges), row groups of `row_group_rows`:

- `id`     long, the row number, 0 … rows-1
- `split`  int, a hash of id modulo 10: the dataset keeps split < TRAIN_SPLITS (a train split)
- `label`  int, 0 or 1, a hash bit of id
- `f0` …   float features in [0, 1), a hash of (id, column)

Values come from a splitmix64-style hash computed with pyarrow compute, so the same parameters
give the same table on every machine.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pathlib
import sys

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.schema import Schema
from pyiceberg.types import FloatType, IntegerType, LongType, NestedField

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "iceberg"))
from data import NAMESPACE, _mix, open_catalog  # noqa: E402,F401  (the generator and catalog of bench/iceberg; main.py opens the catalog through this module)

GENERATOR_VERSION = 1
TABLE = "train"
IDENT = f"{NAMESPACE}.{TABLE}"
TRAIN_SPLITS = 8  # split < 8: 80 % of the rows


@dataclasses.dataclass(frozen=True)
class Params:
    rows: int
    files: int
    features: int
    row_group_rows: int
    seed: int

    def key(self) -> str:
        blob = json.dumps({**dataclasses.asdict(self), "generator": GENERATOR_VERSION, "table": TABLE}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def file_range(self, f: int) -> tuple[int, int]:
        """The ids [first, last) of data file f."""
        return self.rows * f // self.files, self.rows * (f + 1) // self.files


def feature_names(features: int) -> list[str]:
    return [f"f{i}" for i in range(features)]


def iceberg_schema(features: int) -> Schema:
    fields = [
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "split", IntegerType(), required=True),
        NestedField(3, "label", IntegerType(), required=True),
    ]
    for i, name in enumerate(feature_names(features)):
        fields.append(NestedField(4 + i, name, FloatType(), required=True))
    return Schema(*fields)


def columns_of(p: Params, first: int, last: int) -> dict[str, pa.Array]:
    ids = pa.array(range(first, last), pa.int64())
    u64 = lambda v: pa.scalar(v, pa.uint64())  # noqa: E731
    h = _mix(ids, p.seed * 1_000_003)
    cols = {
        "id": ids,
        "split": pc.cast(pc.remainder(h, u64(10)), pa.int32()),
        "label": pc.cast(pc.bit_wise_and(pc.shift_right(h, u64(40)), u64(1)), pa.int32()),
    }
    for i, name in enumerate(feature_names(p.features)):
        top24 = pc.cast(pc.shift_right(_mix(ids, p.seed * 1_000_003 + i + 1), u64(40)), pa.float32())
        cols[name] = pc.multiply(top24, pa.scalar(1.0 / (1 << 24), pa.float32()))
    return cols


def rows_of_file(p: Params, f: int, arrow_schema: pa.Schema) -> pa.Table:
    return pa.table(columns_of(p, *p.file_range(f)), schema=arrow_schema)


def expected_train(p: Params) -> dict:
    """What the dataset (split < TRAIN_SPLITS) holds: its rows and the sum of their ids, and the
    rows each data file contributes."""
    rows = id_sum = 0
    per_file = []
    for f in range(p.files):
        first, last = p.file_range(f)
        ids = pa.array(range(first, last), pa.int64())
        keep = pc.less(pc.remainder(_mix(ids, p.seed * 1_000_003), pa.scalar(10, pa.uint64())), pa.scalar(TRAIN_SPLITS, pa.uint64()))
        kept = pc.filter(ids, keep)
        per_file.append(len(kept))
        rows += len(kept)
        id_sum += pc.sum(kept).as_py() or 0
    return {"rows": rows, "id_sum": id_sum, "rows_per_file": per_file}


def write_table(catalog, p: Params, progress) -> None:
    """Creates bench.train and appends one data file at a time."""
    catalog.create_namespace_if_not_exists(NAMESPACE)
    if catalog.table_exists(IDENT):
        catalog.drop_table(IDENT)
    tbl = catalog.create_table(
        IDENT,
        schema=iceberg_schema(p.features),
        properties={
            "write.parquet.row-group-limit": str(p.row_group_rows),
            "write.target-file-size-bytes": str(1 << 31),
        },
    )
    arrow_schema = tbl.schema().as_arrow()
    for f in range(p.files):
        tbl.append(rows_of_file(p, f, arrow_schema))
        progress(f"wrote file {f + 1}/{p.files}")
