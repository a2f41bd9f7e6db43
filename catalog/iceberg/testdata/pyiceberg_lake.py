"""Writes a small lake with pyiceberg for catalog/iceberg's interop test.

usage: pyiceberg_lake.py DIR

A SqlCatalog named "default" in DIR/catalog.db (the URI written SQLAlchemy's way,
sqlite:////abs/path), the warehouse in DIR/warehouse, and table default.trips, partitioned by
identity(city), written in two appends. Prints a JSON object with the snapshot ids.
"""

import json
import sys

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType

root = sys.argv[1]
cat = SqlCatalog("default", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse")
cat.create_namespace("default")
schema = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "city", StringType(), required=False),
    NestedField(3, "fare", DoubleType(), required=False),
)
spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="city"))
tbl = cat.create_table("default.trips", schema=schema, partition_spec=spec)
arrow_schema = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("city", pa.string()),
    pa.field("fare", pa.float64()),
])
tbl.append(pa.table({"id": [1, 2, 3], "city": ["oslo", "rome", "oslo"], "fare": [10.5, None, 7.25]}, schema=arrow_schema))
first = tbl.current_snapshot().snapshot_id
tbl.append(pa.table({"id": [4], "city": ["lima"], "fare": [3.0]}, schema=arrow_schema))
print(json.dumps({"first": first, "second": tbl.current_snapshot().snapshot_id}))
