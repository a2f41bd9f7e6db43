"""The benchmark's wide Iceberg table: deterministic rows written with pyiceberg into MinIO.

Table `bench.wide` (SQL catalog in a SQLite file, warehouse s3://bench/):

- `id`    long, the row number, 0 … rows-1
- `ts`    timestamp, id * step after START: ascending, so every data file and every row group
          covers its own narrow time range and min/max statistics prune them
- `f000` … feature columns, kind by index modulo 3: long (20-bit values), double (in [0, 1000)),
          string (one of VOCABULARY words, so Parquet dictionary-encodes it)

The table is partitioned by day(ts), one data file per day (pyiceberg writes one file per
partition and append), with row groups of `row_group_rows` rows. Feature values are a
splitmix64-style hash of (id, column index) computed with pyarrow compute, so the same
parameters give the same table on every machine without numpy.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import DayTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestampType

# Bump when the generated rows or the table layout change, so cached data is regenerated.
GENERATOR_VERSION = 1
BUCKET = "bench"
NAMESPACE = "bench"
TABLE = "wide"
START = datetime.datetime(2026, 1, 1)
VOCABULARY = 2000
KINDS = ("long", "double", "string")


@dataclasses.dataclass(frozen=True)
class Params:
    rows: int
    days: int
    features: int
    row_group_rows: int
    seed: int

    def key(self) -> str:
        """A short digest of everything that shapes the data: the cache directory's name."""
        blob = json.dumps({**dataclasses.asdict(self), "generator": GENERATOR_VERSION}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    @property
    def step_us(self) -> int:
        """Microseconds between consecutive rows' ts: the rows spread evenly over `days`."""
        return self.days * 86_400_000_000 // self.rows

    def ts_of(self, row: int) -> datetime.datetime:
        return START + datetime.timedelta(microseconds=row * self.step_us)


def feature_names(features: int) -> list[str]:
    return [f"f{i:03d}" for i in range(features)]


def feature_kind(i: int) -> str:
    return KINDS[i % len(KINDS)]


def iceberg_schema(features: int) -> Schema:
    fields = [NestedField(1, "id", LongType(), required=True), NestedField(2, "ts", TimestampType(), required=True)]
    types = {"long": LongType(), "double": DoubleType(), "string": StringType()}
    for i, name in enumerate(feature_names(features)):
        fields.append(NestedField(3 + i, name, types[feature_kind(i)]))
    return Schema(*fields)


def _mix(ids: pa.Array, salt: int) -> pa.Array:
    """splitmix64's finalizer over (id + salt * golden ratio) as uint64: well-spread bits."""
    mask = (1 << 64) - 1

    def u(v: int) -> pa.Scalar:
        return pa.scalar(v & mask, pa.uint64())

    z = pc.add(pc.cast(ids, pa.uint64()), u(salt * 0x9E3779B97F4A7C15))
    z = pc.multiply(pc.bit_wise_xor(z, pc.shift_right(z, u(30))), u(0xBF58476D1CE4E5B9))
    z = pc.multiply(pc.bit_wise_xor(z, pc.shift_right(z, u(27))), u(0x94D049BB133111EB))
    return pc.bit_wise_xor(z, pc.shift_right(z, u(31)))


def rows_of_day(p: Params, day: int, arrow_schema: pa.Schema) -> pa.Table:
    """The rows whose ts falls on day `day` (0-based) of the table's span."""
    day_us = 86_400_000_000
    first = -(-day * day_us // p.step_us)  # ceil: first row with ts >= the day's start
    last = min(p.rows, -(-(day + 1) * day_us // p.step_us))
    ids = pa.array(range(first, last), pa.int64())
    start_us = int((START - datetime.datetime(1970, 1, 1)).total_seconds()) * 1_000_000
    ts = pc.cast(pc.add(pc.multiply(ids, p.step_us), start_us), pa.timestamp("us"))
    vocab = pa.array([f"w{i:05d}" for i in range(VOCABULARY)], pa.string())
    cols = {"id": ids, "ts": ts}
    for i, name in enumerate(feature_names(p.features)):
        h = _mix(ids, p.seed * 1_000_003 + i + 1)
        kind = feature_kind(i)
        if kind == "long":
            cols[name] = pc.cast(pc.bit_wise_and(h, pa.scalar((1 << 20) - 1, pa.uint64())), pa.int64())
        elif kind == "double":
            top53 = pc.cast(pc.shift_right(h, pa.scalar(11, pa.uint64())), pa.float64())
            cols[name] = pc.multiply(top53, 1000.0 / (1 << 53))
        else:
            cols[name] = pc.take(vocab, pc.cast(pc.remainder(h, pa.scalar(VOCABULARY, pa.uint64())), pa.int64()))
    return pa.table(cols, schema=arrow_schema)


def open_catalog(db_path: str, s3_props: dict[str, str]) -> SqlCatalog:
    # The catalog's name is the one rows are stored under in the SQLite file; cachedb's config
    # names its catalog the same so it finds them without a catalog-name property.
    return SqlCatalog("lake", uri=f"sqlite:///{db_path}", warehouse=f"s3://{BUCKET}/", **s3_props)


def write_table(catalog: SqlCatalog, p: Params, progress) -> None:
    """Creates bench.wide and appends one day at a time (one data file and one manifest per day)."""
    catalog.create_namespace_if_not_exists(NAMESPACE)
    ident = f"{NAMESPACE}.{TABLE}"
    if catalog.table_exists(ident):
        catalog.drop_table(ident)
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=DayTransform(), name="ts_day"))
    tbl = catalog.create_table(
        ident,
        schema=iceberg_schema(p.features),
        partition_spec=spec,
        properties={
            "write.parquet.row-group-limit": str(p.row_group_rows),
            "write.target-file-size-bytes": str(1 << 31),
        },
    )
    arrow_schema = tbl.schema().as_arrow()
    for day in range(p.days):
        tbl.append(rows_of_day(p, day, arrow_schema))
        progress(f"wrote day {day + 1}/{p.days}")
