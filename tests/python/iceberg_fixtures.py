"""Real Iceberg tables in MinIO for the end-to-end tests, written with pyiceberg.

`build_lake` writes every table once through a pyiceberg SqlCatalog (a SQLite file in a temporary
directory, the warehouse in an S3 bucket) and returns a `Lake` that records what the tests need to
compute expected answers: snapshot ids and commit times for time travel, the rows deleted by
merge-on-read deletes, the locations of metadata.json files and data files.

Tables (namespace `default` unless noted):

- `users`          bucket(8, id) partitioned; 2,000 rows.
- `events`         identity(region) partitioned; 20,000 rows in two appends; user_id joins users.
- `clicks`         day(ts) partitioned; 10,000 rows over 20 days.
- `history`        four snapshots: append, append, copy-on-write delete, append; a tag `first`
                   on the first snapshot. Each commit lies in its own wall-clock second so
                   second-precision time travel can name each one.
- `deletes_mor`    merge-on-read deletes: a position-delete file and an equality-delete file,
                   followed by an append that re-adds an equality-deleted id (which must stay
                   visible: equality deletes apply only to older data).
- `deletes_cow`    pyiceberg's own deletes and a filtered overwrite (copy-on-write).
- `type_zoo`       one column of every Iceberg type, nulls included.
- `corrupt`        two data files; the tests corrupt one file's Parquet footer.
- `analytics.evolving`  schema evolution: add, rename and drop columns between snapshots.
- `analytics.wide` 120 columns, 200,000 rows in four data files, row groups of 10,000 rows,
                   sorted by id so min/max statistics prune row groups.

pyiceberg 0.12 cannot write merge-on-read deletes itself (`write.delete.mode=merge-on-read`
falls back to copy-on-write with a warning, and equality deletes are not written at all), so
`commit_position_deletes` and `commit_equality_deletes` write spec-conformant delete files with
pyarrow and commit them in a delete manifest through pyiceberg's own manifest and snapshot
writers. pyiceberg reads position deletes back (the tests use it as the reference); it refuses to
read tables with equality deletes, so expected answers for `deletes_mor` are computed from the
recorded deleted ids.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import pathlib
import time
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyiceberg.catalog import Catalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestWriterV2,
    data_file_with_partition,
    manifest_entry_schema_with_data_file,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update.snapshot import _FastAppendFiles
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

BUCKET = "warehouse"
REGIONS = ["af", "ap", "eu", "me", "na", "sa"]
WIDE_COLUMNS = 120
WIDE_ROWS = 200_000
WIDE_FILES = 4
WIDE_ROW_GROUP_ROWS = 10_000

# Field ids the Iceberg spec reserves for the columns of a position-delete file.
POS_DELETE_FILE_PATH_ID = 2147483546
POS_DELETE_POS_ID = 2147483545


@dataclasses.dataclass(frozen=True)
class S3:
    """Where MinIO listens and how to sign in."""

    endpoint: str
    access_key_id: str
    secret_access_key: str
    region: str = "us-east-1"

    def pyiceberg_properties(self) -> dict[str, str]:
        return {
            "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO",
            "s3.endpoint": self.endpoint,
            "s3.access-key-id": self.access_key_id,
            "s3.secret-access-key": self.secret_access_key,
            "s3.region": self.region,
            "s3.force-virtual-addressing": "false",
        }

    def filesystem(self, allow_bucket_creation: bool = False) -> pafs.S3FileSystem:
        scheme, _, host = self.endpoint.partition("://")
        return pafs.S3FileSystem(
            access_key=self.access_key_id,
            secret_key=self.secret_access_key,
            endpoint_override=host,
            scheme=scheme,
            region=self.region,
            allow_bucket_creation=allow_bucket_creation,
        )


@dataclasses.dataclass
class SnapshotInfo:
    snapshot_id: int
    timestamp_ms: int
    row_count: int
    # the metadata.json written by the commit that made this snapshot
    metadata_location: str


@dataclasses.dataclass
class Lake:
    """Everything the tests need to know about the written tables."""

    catalog: SqlCatalog
    catalog_name: str
    catalog_uri: str
    warehouse: str
    s3: S3
    history: list[SnapshotInfo]
    history_tag: str
    # Snapshot of analytics.evolving before its schema changed, and its row count.
    evolving_before: SnapshotInfo
    # deletes_mor: ids removed by the position-delete file and by the equality-delete file, and
    # the rows appended after the equality deletes.
    mor_position_deleted_ids: set[int]
    mor_equality_deleted_ids: set[int]
    mor_reference_snapshot: int
    mor_appended: pa.Table
    # A metadata.json that no catalog knows of whose file has been deleted.
    gone_metadata_location: str
    corrupt_file: str = ""

    def table(self, name: str) -> Table:
        return self.catalog.load_table(name)

    def metadata_location(self, name: str) -> str:
        return self.table(name).metadata_location


def ensure_bucket(s3: S3, bucket: str = BUCKET) -> None:
    fs = s3.filesystem(allow_bucket_creation=True)
    if fs.get_file_info(bucket).type == pafs.FileType.NotFound:
        fs.create_dir(bucket)


def open_catalog(name: str, db_path: pathlib.Path, warehouse: str, s3: S3) -> SqlCatalog:
    return SqlCatalog(name, uri=f"sqlite:///{db_path}", warehouse=warehouse, **s3.pyiceberg_properties())


def _wait_for_next_second(previous_ms: int) -> None:
    """Sleeps until the wall clock is in a later second than previous_ms, so that a commit made
    now can be told apart from the previous one by a second-precision timestamp."""
    next_second_ms = (previous_ms // 1000 + 1) * 1000
    delay = (next_second_ms - time.time() * 1000) / 1000 + 0.02
    if delay > 0:
        time.sleep(delay)


def _snapshot_info(tbl: Table) -> SnapshotInfo:
    snap = tbl.current_snapshot()
    assert snap is not None
    return SnapshotInfo(snap.snapshot_id, snap.timestamp_ms, tbl.scan().count(), tbl.metadata_location)


# --- merge-on-read deletes -------------------------------------------------------------------


class _DeleteManifestWriter(ManifestWriterV2):
    """A v2 manifest writer for delete files. pyiceberg's writer only labels data manifests, and
    its manifest schema declares equality_ids as list<long> where the spec (and Java, which fails
    with a ClassCastException otherwise) says list<int>."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    def _with_partition(self, format_version):
        data_file_type = data_file_with_partition(
            format_version=format_version, partition_type=self._spec.partition_type(self._schema)
        )
        fields = []
        for f in data_file_type.fields:
            if f.field_id == 135:  # equality_ids
                f = NestedField(
                    field_id=135,
                    name=f.name,
                    field_type=ListType(element_id=136, element_type=IntegerType(), element_required=True),
                    required=False,
                    doc=f.doc,
                )
            fields.append(f)
        return manifest_entry_schema_with_data_file(format_version=format_version, data_file=StructType(*fields))

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class _RowDelta(_FastAppendFiles):
    """Commits delete files as a new snapshot that keeps every existing manifest, like Java's
    RowDelta with deletes only: the delete files go into one new delete manifest."""

    def _manifests(self):
        existing = self._existing_manifests()
        if not self._added_data_files:
            return existing
        spec = self._transaction.table_metadata.spec()
        writer = _DeleteManifestWriter(
            spec, self.schema(), self.new_manifest_output(), self._snapshot_id, self._compression
        )
        with writer:
            for f in self._added_data_files:
                writer.add(
                    ManifestEntry.from_args(
                        status=ManifestEntryStatus.ADDED,
                        snapshot_id=self._snapshot_id,
                        sequence_number=None,
                        file_sequence_number=None,
                        data_file=f,
                    )
                )
        return [writer.to_manifest_file()] + existing


def _commit_delete_files(tbl: Table, files: list[DataFile]) -> Table:
    with tbl.transaction() as tx:
        producer = _RowDelta(operation=Operation.DELETE, transaction=tx, io=tbl.io)
        for f in files:
            producer.append_data_file(f)
        producer.commit()
    return tbl.refresh()


def _write_parquet(tbl: Table, arrow_table: pa.Table, name: str) -> tuple[str, int]:
    location = f"{tbl.location()}/data/{name}"
    with tbl.io.new_output(location).create(overwrite=True) as out:
        pq.write_table(arrow_table, out)
    return location, tbl.io.new_input(location).__len__()


def _long_bound(v: int) -> bytes:
    return int(v).to_bytes(8, "little", signed=True)


def commit_position_deletes(tbl: Table, positions: dict[str, list[int]]) -> Table:
    """Writes one position-delete file (file_path, pos; sorted as the spec requires) for an
    unpartitioned table and commits it."""
    paths, poss = [], []
    for path in sorted(positions):
        for pos in sorted(positions[path]):
            paths.append(path)
            poss.append(pos)
    schema = pa.schema(
        [
            pa.field("file_path", pa.string(), nullable=False, metadata={"PARQUET:field_id": str(POS_DELETE_FILE_PATH_ID)}),
            pa.field("pos", pa.int64(), nullable=False, metadata={"PARQUET:field_id": str(POS_DELETE_POS_ID)}),
        ]
    )
    arrow_table = pa.table({"file_path": paths, "pos": poss}, schema=schema)
    location, size = _write_parquet(tbl, arrow_table, f"pos-deletes-{uuid.uuid4()}.parquet")
    delete_file = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES,
        file_path=location,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=len(poss),
        file_size_in_bytes=size,
        lower_bounds={
            POS_DELETE_FILE_PATH_ID: min(paths).encode(),
            POS_DELETE_POS_ID: _long_bound(min(poss)),
        },
        upper_bounds={
            POS_DELETE_FILE_PATH_ID: max(paths).encode(),
            POS_DELETE_POS_ID: _long_bound(max(poss)),
        },
    )
    delete_file.spec_id = tbl.spec().spec_id
    return _commit_delete_files(tbl, [delete_file])


def commit_equality_deletes(tbl: Table, column: str, values: list[int]) -> Table:
    """Writes one equality-delete file on a long column of an unpartitioned table and commits
    it. Rows of data files committed earlier whose column equals any value are deleted."""
    field = tbl.schema().find_field(column)
    schema = pa.schema(
        [pa.field(column, pa.int64(), nullable=not field.required, metadata={"PARQUET:field_id": str(field.field_id)})]
    )
    arrow_table = pa.table({column: sorted(values)}, schema=schema)
    location, size = _write_parquet(tbl, arrow_table, f"eq-deletes-{uuid.uuid4()}.parquet")
    delete_file = DataFile.from_args(
        content=DataFileContent.EQUALITY_DELETES,
        file_path=location,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=len(values),
        file_size_in_bytes=size,
        equality_ids=[field.field_id],
        lower_bounds={field.field_id: _long_bound(min(values))},
        upper_bounds={field.field_id: _long_bound(max(values))},
    )
    delete_file.spec_id = tbl.spec().spec_id
    return _commit_delete_files(tbl, [delete_file])


def data_files(tbl: Table) -> list[str]:
    """The current snapshot's data file paths, sorted."""
    return sorted(task.file.file_path for task in tbl.scan().plan_files())


# --- the tables ------------------------------------------------------------------------------


def _create(catalog: Catalog, name: str, schema, spec: PartitionSpec | None = None, **props: str) -> Table:
    if catalog.table_exists(name):
        catalog.drop_table(name)
    properties = {"format-version": "2", **props}
    if spec is None:
        return catalog.create_table(name, schema=schema, properties=properties)
    return catalog.create_table(name, schema=schema, partition_spec=spec, properties=properties)


def _users(catalog: Catalog) -> None:
    n = 2000
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType()),
        NestedField(3, "country", StringType()),
        NestedField(4, "signup", DateType()),
    )
    spec = PartitionSpec(PartitionField(source_id=1, field_id=1000, transform=BucketTransform(8), name="id_bucket"))
    tbl = _create(catalog, "default.users", schema, spec)
    start = datetime.date(2023, 1, 1)
    data = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "name": [f"user{i:04d}" for i in range(n)],
            "country": [["de", "fr", "us", "jp", "br"][i % 5] for i in range(n)],
            "signup": [start + datetime.timedelta(days=i % 365) for i in range(n)],
        },
        schema=tbl.schema().as_arrow(),
    )
    tbl.append(data)


def _events(catalog: Catalog) -> None:
    schema = Schema(
        NestedField(1, "event_id", LongType(), required=True),
        NestedField(2, "user_id", LongType()),
        NestedField(3, "region", StringType()),
        NestedField(4, "amount", DoubleType()),
        NestedField(5, "qty", IntegerType()),
        NestedField(6, "ts", TimestampType()),
    )
    spec = PartitionSpec(PartitionField(source_id=3, field_id=1000, transform=IdentityTransform(), name="region"))
    tbl = _create(catalog, "default.events", schema, spec)
    base = datetime.datetime(2024, 3, 1)
    for part in range(2):
        ids = range(part * 10_000, (part + 1) * 10_000)
        tbl.append(
            pa.table(
                {
                    "event_id": pa.array(ids, pa.int64()),
                    # every 97th event has no user; user ids run past the users table's 2,000
                    "user_id": [None if i % 97 == 0 else (i * 7) % 2300 for i in ids],
                    "region": [REGIONS[(i * 5 + i // 7) % len(REGIONS)] for i in ids],
                    "amount": [None if i % 53 == 0 else round((i % 1000) * 1.25 + 0.5, 2) for i in ids],
                    "qty": [i % 9 for i in ids],
                    "ts": [base + datetime.timedelta(minutes=3 * i) for i in ids],
                },
                schema=tbl.schema().as_arrow(),
            )
        )


def _clicks(catalog: Catalog) -> None:
    n = 10_000
    schema = Schema(
        NestedField(1, "click_id", LongType(), required=True),
        NestedField(2, "user_id", LongType()),
        NestedField(3, "url", StringType()),
        NestedField(4, "ts", TimestampType()),
    )
    spec = PartitionSpec(PartitionField(source_id=4, field_id=1000, transform=DayTransform(), name="ts_day"))
    tbl = _create(catalog, "default.clicks", schema, spec)
    base = datetime.datetime(2024, 5, 1)
    # 20 days, 500 clicks a day, spread over each day
    tbl.append(
        pa.table(
            {
                "click_id": pa.array(range(n), pa.int64()),
                "user_id": [(i * 13) % 2000 for i in range(n)],
                "url": [f"/page/{i % 37}" for i in range(n)],
                "ts": [base + datetime.timedelta(days=i // 500, seconds=(i % 500) * 172) for i in range(n)],
            },
            schema=tbl.schema().as_arrow(),
        )
    )


def _history_schema() -> Schema:
    return Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "batch", IntegerType()),
        NestedField(3, "label", StringType()),
    )


def _history_rows(tbl: Table, ids: range, batch: int) -> pa.Table:
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "batch": [batch] * len(ids), "label": [f"row{i}" for i in ids]},
        schema=tbl.schema().as_arrow(),
    )


def _type_zoo(catalog: Catalog) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "c_bool", BooleanType()),
        NestedField(3, "c_int", IntegerType()),
        NestedField(4, "c_long", LongType()),
        NestedField(5, "c_float", FloatType()),
        NestedField(6, "c_double", DoubleType()),
        NestedField(7, "c_dec", DecimalType(10, 2)),
        NestedField(8, "c_dec38", DecimalType(38, 10)),
        NestedField(9, "c_date", DateType()),
        NestedField(10, "c_time", TimeType()),
        NestedField(11, "c_ts", TimestampType()),
        NestedField(12, "c_tstz", TimestamptzType()),
        NestedField(13, "c_string", StringType()),
        NestedField(14, "c_uuid", UUIDType()),
        NestedField(15, "c_fixed", FixedType(8)),
        NestedField(16, "c_binary", BinaryType()),
        NestedField(
            17, "c_struct", StructType(NestedField(18, "x", IntegerType()), NestedField(19, "y", StringType()))
        ),
        NestedField(20, "c_list", ListType(21, LongType(), element_required=False)),
        NestedField(22, "c_map", MapType(23, StringType(), 24, IntegerType(), value_required=False)),
    )
    tbl = _create(catalog, "default.type_zoo", schema)
    utc = datetime.timezone.utc
    rows = [
        dict(
            id=1, c_bool=True, c_int=-7, c_long=1 << 40, c_float=1.5, c_double=2.25,
            c_dec=decimal.Decimal("12345678.91"),
            c_dec38=decimal.Decimal("1234567890123456789012345678.0123456789"),
            c_date=datetime.date(2024, 2, 29), c_time=datetime.time(13, 14, 15, 123456),
            c_ts=datetime.datetime(2024, 1, 2, 3, 4, 5, 678901),
            c_tstz=datetime.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=utc),
            c_string="héllo, wörld", c_uuid=uuid.UUID("12345678-1234-5678-1234-567812345678").bytes,
            c_fixed=b"abcdefgh", c_binary=b"\x00\x01\xff", c_struct={"x": 1, "y": "a"},
            c_list=[1, 2, None], c_map=[("k", 1), ("z", None)],
        ),
        dict(
            id=2, c_bool=False, c_int=2147483647, c_long=-(1 << 62), c_float=-0.25, c_double=-1e300,
            c_dec=decimal.Decimal("-0.01"), c_dec38=decimal.Decimal("-0.0000000001"),
            c_date=datetime.date(1969, 12, 31), c_time=datetime.time(0, 0, 0),
            c_ts=datetime.datetime(1999, 12, 31, 23, 59, 59, 999999),
            c_tstz=datetime.datetime(2000, 1, 1, 0, 0, 0, tzinfo=utc),
            c_string="", c_uuid=uuid.UUID("00000000-0000-0000-0000-000000000001").bytes,
            c_fixed=b"\x00" * 8, c_binary=b"", c_struct={"x": None, "y": None},
            c_list=[], c_map=[],
        ),
        dict(id=3),  # every other column null
    ]
    names = [f.name for f in schema.fields]
    data = pa.Table.from_pylist([{n: r.get(n) for n in names} for r in rows], schema=tbl.schema().as_arrow())
    tbl.append(data)


def _deletes_cow(catalog: Catalog) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "category", StringType()),
        NestedField(3, "value", DoubleType()),
    )
    tbl = _create(catalog, "default.deletes_cow", schema, **{"write.delete.mode": "copy-on-write"})
    for part in range(2):
        ids = range(part * 1500, (part + 1) * 1500)
        tbl.append(
            pa.table(
                {"id": pa.array(ids, pa.int64()), "category": [["a", "b", "c"][i % 3] for i in ids],
                 "value": [i * 0.5 for i in ids]},
                schema=tbl.schema().as_arrow(),
            )
        )
    # rewrites the files holding the rows (copy-on-write)
    tbl.delete("id >= 1000 and id < 1700")
    tbl.delete("category = 'c' and id < 300")
    # replaces rows matching the filter with new ones
    replacement = pa.table(
        {"id": pa.array(range(100), pa.int64()), "category": ["z"] * 100, "value": [-1.0] * 100},
        schema=tbl.schema().as_arrow(),
    )
    tbl.overwrite(replacement, overwrite_filter="id < 100")


def _deletes_mor(catalog: Catalog) -> tuple[set[int], set[int], int, pa.Table]:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType()),
        NestedField(3, "score", DoubleType()),
    )
    tbl = _create(catalog, "default.deletes_mor", schema, **{"write.delete.mode": "merge-on-read"})

    def rows(ids: range | list[int]) -> pa.Table:
        ids = list(ids)
        return pa.table(
            {"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids], "score": [i / 4 for i in ids]},
            schema=tbl.schema().as_arrow(),
        )

    tbl.append(rows(range(0, 2500)))
    tbl.append(rows(range(2500, 5000)))
    files = data_files(tbl)
    assert len(files) == 2, files

    # Position deletes: every 7th row of the first file, the first 10 rows of the second.
    positions: dict[str, list[int]] = {}
    pos_deleted: set[int] = set()
    for path, choose in zip(files, [lambda p: p % 7 == 0, lambda p: p < 10]):
        with tbl.io.new_input(path).open() as f:
            ids = pq.read_table(f, columns=["id"]).column("id").to_pylist()
        chosen = [p for p in range(len(ids)) if choose(p)]
        positions[path] = chosen
        pos_deleted.update(ids[p] for p in chosen)
    tbl = commit_position_deletes(tbl, positions)
    reference = tbl.current_snapshot().snapshot_id
    got = tbl.scan().to_arrow()
    assert got.num_rows == 5000 - len(pos_deleted), "pyiceberg must apply the position deletes"

    # Equality deletes: ids 3000..3099 and a few scattered ones (some already position-deleted).
    eq_deleted = set(range(3000, 3100)) | {7, 8, 9, 4999}
    tbl = commit_equality_deletes(tbl, "id", sorted(eq_deleted))
    # Appended after the equality delete: id 3050 is back, and must be visible.
    appended = rows([3050, 6000, 6001])
    tbl.append(appended)
    return pos_deleted, eq_deleted, reference, appended


def _evolving(catalog: Catalog) -> SnapshotInfo:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "a", StringType()),
        NestedField(3, "b", IntegerType()),
        NestedField(4, "c", DoubleType()),
    )
    tbl = _create(catalog, "analytics.evolving", schema)
    tbl.append(
        pa.table(
            {"id": pa.array(range(100), pa.int64()), "a": [f"a{i}" for i in range(100)],
             "b": pa.array(range(100), pa.int32()), "c": [i * 1.5 for i in range(100)]},
            schema=tbl.schema().as_arrow(),
        )
    )
    before = _snapshot_info(tbl)
    with tbl.update_schema() as update:
        update.add_column("d", StringType())
    with tbl.update_schema() as update:
        update.rename_column("b", "b_renamed")
    with tbl.update_schema() as update:
        update.delete_column("c")
    tbl = tbl.refresh()
    tbl.append(
        pa.table(
            {"id": pa.array(range(100, 150), pa.int64()), "a": [f"a{i}" for i in range(100, 150)],
             "b_renamed": pa.array(range(100, 150), pa.int32()), "d": [f"d{i}" for i in range(100, 150)]},
            schema=tbl.schema().as_arrow(),
        )
    )
    # A column added later with the name of the dropped one: it must not resurrect old values.
    with tbl.update_schema() as update:
        update.add_column("c", StringType())
    tbl = tbl.refresh()
    tbl.append(
        pa.table(
            {"id": pa.array([150], pa.int64()), "a": ["a150"], "b_renamed": pa.array([150], pa.int32()),
             "d": ["d150"], "c": ["new-c"]},
            schema=tbl.schema().as_arrow(),
        )
    )
    return before


def wide_column_names() -> list[str]:
    return ["id", "grp"] + [f"c{i:03d}" for i in range(WIDE_COLUMNS - 2)]


def _wide(catalog: Catalog) -> None:
    names = wide_column_names()
    fields = [NestedField(1, "id", LongType(), required=True), NestedField(2, "grp", IntegerType())]
    for i, name in enumerate(names[2:]):
        # a mix of types: ints, doubles and strings
        kind = i % 3
        ftype = [IntegerType(), DoubleType(), StringType()][kind]
        fields.append(NestedField(3 + i, name, ftype))
    schema = Schema(*fields)
    tbl = _create(
        catalog,
        "analytics.wide",
        schema,
        **{"write.parquet.row-group-limit": str(WIDE_ROW_GROUP_ROWS), "write.target-file-size-bytes": str(1 << 30)},
    )
    arrow_schema = tbl.schema().as_arrow()
    per_file = WIDE_ROWS // WIDE_FILES
    for part in range(WIDE_FILES):
        ids = pa.array(range(part * per_file, (part + 1) * per_file), pa.int64())
        cols: dict[str, Any] = {"id": ids, "grp": pc.cast(pc.divide(ids, 1000), pa.int32())}
        for i, name in enumerate(names[2:]):
            mixed = pc.bit_wise_and(pc.multiply(ids, 2654435761 + 2 * i), (1 << 20) - 1)
            kind = i % 3
            if kind == 0:
                cols[name] = pc.cast(mixed, pa.int32())
            elif kind == 1:
                cols[name] = pc.divide(pc.cast(mixed, pa.float64()), 7.0)
            else:
                cols[name] = pc.binary_join_element_wise("s", pc.cast(mixed, pa.string()), "")
        tbl.append(pa.table(cols, schema=arrow_schema))


def _corrupt(catalog: Catalog) -> None:
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "v", StringType()))
    tbl = _create(catalog, "default.corrupt", schema)
    for part in range(2):
        ids = range(part * 100, (part + 1) * 100)
        tbl.append(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids]}, schema=tbl.schema().as_arrow()))


def corrupt_parquet_footer(s3: S3, location: str) -> None:
    """Overwrites the footer length and magic at the end of a Parquet object with garbage, so
    the file can no longer be opened."""
    fs = s3.filesystem()
    path = location.removeprefix("s3://")
    with fs.open_input_file(path) as f:
        data = f.read()
    with fs.open_output_stream(path) as f:
        f.write(data[:-12] + b"\xde\xad\xbe\xef" * 3)


def _gone(s3: S3, db_path: pathlib.Path, warehouse: str) -> str:
    """Writes a table through a throwaway catalog and deletes its metadata.json."""
    db_path.unlink(missing_ok=True)
    scratch = open_catalog("scratch", db_path, warehouse, s3)
    scratch.create_namespace_if_not_exists("default")
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    tbl = _create(scratch, "default.gone", schema)
    tbl.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}, schema=tbl.schema().as_arrow()))
    location = tbl.refresh().metadata_location
    s3.filesystem().delete_file(location.removeprefix("s3://"))
    return location


def build_lake(s3: S3, workdir: pathlib.Path, catalog_name: str = "lake") -> Lake:
    """Writes every table (about 10 s on 2 cores) and returns what the tests need."""
    ensure_bucket(s3)
    workdir.mkdir(parents=True, exist_ok=True)
    db_path = workdir / "catalog.db"
    warehouse = f"s3://{BUCKET}/{catalog_name}"
    catalog = open_catalog(catalog_name, db_path, warehouse, s3)
    for ns in ("default", "analytics"):
        catalog.create_namespace_if_not_exists(ns)

    # history's snapshots are interleaved with the other tables so that each one lands in its
    # own second without sleeping much.
    history: list[SnapshotInfo] = []
    hist = _create(catalog, "default.history", _history_schema())

    def commit_history(step: int) -> None:
        nonlocal hist
        if history:
            _wait_for_next_second(history[-1].timestamp_ms)
        if step == 0:
            hist.append(_history_rows(hist, range(0, 100), 1))
        elif step == 1:
            hist.append(_history_rows(hist, range(100, 200), 2))
        elif step == 2:
            hist.delete("id < 50")
        else:
            hist.append(_history_rows(hist, range(200, 300), 4))
        hist = hist.refresh()
        history.append(_snapshot_info(hist))

    commit_history(0)
    hist.manage_snapshots().create_tag(history[0].snapshot_id, "first").commit()
    _users(catalog)
    commit_history(1)
    _events(catalog)
    commit_history(2)
    _clicks(catalog)
    _type_zoo(catalog)
    commit_history(3)
    assert len({h.timestamp_ms // 1000 for h in history}) == len(history)

    pos_deleted, eq_deleted, mor_reference, mor_appended = _deletes_mor(catalog)
    _deletes_cow(catalog)
    evolving_before = _evolving(catalog)
    _wide(catalog)
    _corrupt(catalog)
    gone = _gone(s3, workdir / "scratch.db", f"s3://{BUCKET}/scratch")

    return Lake(
        catalog=catalog,
        catalog_name=catalog_name,
        catalog_uri=f"sqlite:///{db_path}",
        warehouse=warehouse,
        s3=s3,
        history=history,
        history_tag="first",
        evolving_before=evolving_before,
        mor_position_deleted_ids=pos_deleted,
        mor_equality_deleted_ids=eq_deleted,
        mor_reference_snapshot=mor_reference,
        mor_appended=mor_appended,
        gone_metadata_location=gone,
    )


def total_data_bytes(tbl: Table) -> int:
    """Sum of the current snapshot's data file sizes."""
    return sum(task.file.file_size_in_bytes for task in tbl.scan().plan_files())


def row_group_count(tbl: Table) -> int:
    total = 0
    for path in data_files(tbl):
        with tbl.io.new_input(path).open() as f:
            total += pq.ParquetFile(f).metadata.num_row_groups
    return total


if __name__ == "__main__":  # manual use: build the lake against a running MinIO
    import sys

    endpoint = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:9000"
    out = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else "/tmp/cachedb-lake")
    t0 = time.monotonic()
    lake = build_lake(S3(endpoint, "minioadmin", "minioadmin"), out)
    print(f"built in {time.monotonic() - t0:.1f}s; catalog {lake.catalog_uri}")
    for ident in lake.catalog.list_tables("default") + lake.catalog.list_tables("analytics"):
        print(".".join(ident), lake.catalog.load_table(ident).metadata_location)
    print("history", lake.history)
