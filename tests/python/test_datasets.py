"""Materialized datasets on a cluster of separate processes: a head and three data nodes
(`cachedb head`, `cachedb worker`) over an Iceberg table that pyiceberg wrote into MinIO.

The dataset is made with `cachedb load SPEC` and read back through unmodified clients: the
Python ADBC driver (which follows endpoint locations to the data nodes) and pyarrow.flight. Every
answer is compared with what pyiceberg reads from the same snapshot. MinIO's per-bucket request
counters show that reading or reusing a dataset reads nothing from object storage. The table's
metadata and its data files live in two buckets of their own (write.data.path), so nothing else
in the test session moves those counters and reads of Parquet files are told apart from reads of
Iceberg metadata.

The tests run in file order and share one cluster: the node-loss test kills a data node, and the
tests after it run on the two that are left.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re
import secrets
import subprocess
import threading
import time

import adbc_driver_flightsql.dbapi
import pyarrow as pa
import pyarrow.flight as flight
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DoubleType, IntegerType, LongType, NestedField, StringType

import iceberg_fixtures
from servers import CachedbProcess, cachedb_binary, minio_bucket_requests, s3_yaml, write_config

DbError = adbc_driver_flightsql.dbapi.Error

BUCKET = "datasets"  # catalog warehouse: metadata.json, manifest lists, manifests
DATA_BUCKET = "datasets-data"  # the table's Parquet data files
CATALOG = "dslake"
TABLE = "ml.features"
CATEGORIES = ["a", "b", "c", "d", "e"]
ROWS = 50_000
APPENDS = 2
WORKERS = ["w1", "w2", "w3"]

DATASET = "features"
COLUMNS = ["id", "category", "f1", "f2", "label"]
SQL_FILTER = "category <> 'e' AND f1 >= 0.25"
PYICEBERG_FILTER = "category != 'e' and f1 >= 0.25"
PARTITIONS = 6

# A killed node is suspect after this much silence and lost as soon as its port refuses
# connections; a node that is only slow on a busy machine is never lost (--lost-after 60s).
SUSPECT_AFTER = "2s"
HEARTBEAT = "500ms"
REBUILD_TIMEOUT_S = 20


# --- the table -------------------------------------------------------------------------------


def feature_rows(tbl: Table, ids: range) -> pa.Table:
    """Deterministic feature rows: every column is a function of id; label is null for every
    101st row."""
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "category": [CATEGORIES[(i * 7 + i // 3) % len(CATEGORIES)] for i in ids],
            "f1": [((i * 2654435761) % 1000) / 1000.0 for i in ids],
            "f2": [(i % 977) * 0.125 - 40.0 for i in ids],
            "f3": [float(i % 13) for i in ids],
            "label": pa.array([None if i % 101 == 0 else i % 2 for i in ids], pa.int32()),
            "note": [f"row {i}" for i in ids],
        },
        schema=tbl.schema().as_arrow(),
    )


def write_table(s3: iceberg_fixtures.S3, workdir: pathlib.Path):
    """ml.features: identity(category) partitioned, written in APPENDS appends, so it has
    len(CATEGORIES) * APPENDS data files, all in DATA_BUCKET. Returns the catalog and the
    table."""
    iceberg_fixtures.ensure_bucket(s3, BUCKET)
    iceberg_fixtures.ensure_bucket(s3, DATA_BUCKET)
    catalog = iceberg_fixtures.open_catalog(CATALOG, workdir / "catalog.db", f"s3://{BUCKET}/{CATALOG}", s3)
    catalog.create_namespace_if_not_exists("ml")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "category", StringType()),
        NestedField(3, "f1", DoubleType()),
        NestedField(4, "f2", DoubleType()),
        NestedField(5, "f3", DoubleType()),
        NestedField(6, "label", IntegerType()),
        NestedField(7, "note", StringType()),
    )
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="category"))
    properties = {"format-version": "2", "write.data.path": f"s3://{DATA_BUCKET}/features"}
    tbl = catalog.create_table(TABLE, schema=schema, partition_spec=spec, properties=properties)
    per_append = ROWS // APPENDS
    for part in range(APPENDS):
        tbl.append(feature_rows(tbl, range(part * per_append, (part + 1) * per_append)))
    tbl = tbl.refresh()
    files = iceberg_fixtures.data_files(tbl)
    assert len(files) == len(CATEGORIES) * APPENDS
    assert all(f.startswith(f"s3://{DATA_BUCKET}/") for f in files), files
    return catalog, tbl


# The Arrow types cachedb answers with for the feature columns: scans widen Iceberg's int to
# int64 (docs/architecture.md), and strings are string where pyiceberg reads large_string.
RESULT_SCHEMA = pa.schema(
    [("id", pa.int64()), ("category", pa.string()), ("f1", pa.float64()), ("f2", pa.float64()), ("label", pa.int64())]
)


def expected(tbl: Table, snapshot_id: int) -> pa.Table:
    """What the dataset must hold: pyiceberg's read of the filtered feature columns, in the
    types cachedb answers with."""
    got = tbl.scan(row_filter=PYICEBERG_FILTER, selected_fields=tuple(COLUMNS), snapshot_id=snapshot_id).to_arrow()
    return got.select(COLUMNS).cast(RESULT_SCHEMA)


def assert_same_rows(got: pa.Table, want: pa.Table) -> None:
    """Equal as sets of rows (sorted by the unique id), with equal column names and types."""
    assert got.column_names == want.column_names
    for name in want.column_names:
        assert got.schema.field(name).type == want.schema.field(name).type, name
    assert got.num_rows == want.num_rows
    got, want = got.sort_by("id"), want.sort_by("id")
    for name in want.column_names:
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), f"column {name} differs"


# --- the cluster -----------------------------------------------------------------------------


@dataclasses.dataclass
class Cluster:
    s3: iceberg_fixtures.S3
    catalog: object
    table: Table
    snapshot_id: int
    head: CachedbProcess
    workers: dict[str, CachedbProcess]
    killed: set[str]
    workdir: pathlib.Path

    @property
    def head_addr(self) -> str:
        return f"127.0.0.1:{self.head.port}"

    def connect(self):
        return adbc_driver_flightsql.dbapi.connect(self.head.uri, autocommit=True)

    def query(self, sql: str) -> pa.Table:
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetch_arrow_table()

    def dataset_row(self, name: str) -> dict | None:
        rows = self.query(f"SELECT * FROM system.datasets WHERE name = '{name}'").to_pylist()
        assert len(rows) <= 1, rows
        return rows[0] if rows else None

    def get_requests(self) -> dict[str, int]:
        """GetObject requests MinIO has answered on each of the table's buckets, read once the
        counts have settled (MinIO counts a request after answering it)."""

        def read() -> dict[str, int]:
            return {b: minio_bucket_requests(self.s3, b).get("GetObject", 0) for b in (BUCKET, DATA_BUCKET)}

        last = read()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            time.sleep(0.2)
            now = read()
            if now == last:
                return now
            last = now
        pytest.fail(f"MinIO's request counts on {BUCKET}, {DATA_BUCKET} kept moving for 10s: {last}")

    def write_spec(self, filename: str, text: str) -> pathlib.Path:
        path = self.workdir / filename
        path.write_text(text)
        return path

    def load(self, spec: pathlib.Path, *flags: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [cachedb_binary(), "load", str(spec), "--head", self.head_addr, *flags],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )


def dataset_spec(name: str, snapshot_id: int | None) -> str:
    """A job spec in YAML: the filtered feature columns of the table, pinned to snapshot_id."""
    lines = [
        f"name: {name}",
        f"table: {TABLE}",
        f"columns: [{', '.join(COLUMNS)}]",
        f'filter: "{SQL_FILTER}"',
        f"partitions: {PARTITIONS}",
    ]
    if snapshot_id is not None:
        lines.append(f'snapshot: "{snapshot_id}"')
    return "\n".join(lines) + "\n"


def wait_alive_nodes(c: Cluster, n: int) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if c.query("SELECT count(*) AS n FROM system.nodes WHERE state = 'alive'").column("n")[0].as_py() == n:
            return
        time.sleep(0.1)
    pytest.fail(f"{n} data nodes did not register with the head:\n" + c.head.log())


@pytest.fixture(scope="module")
def cluster(minio, tmp_path_factory):
    """The table in MinIO, a head and three data nodes reading the same catalog config, all
    with the same cluster secret. Stopped with SIGTERM at the end (each must exit 0), except a
    node the tests killed."""
    workdir = tmp_path_factory.mktemp("datasets")
    catalog, tbl = write_table(minio, workdir)
    config = {
        "default_catalog": CATALOG,
        "s3": s3_yaml(minio),
        "catalogs": [
            {
                "name": CATALOG,
                "type": "sql",
                "uri": f"sqlite:///{workdir / 'catalog.db'}",
                "warehouse": f"s3://{BUCKET}/{CATALOG}",
                "default_namespace": "ml",
            }
        ],
    }
    config_path = write_config(workdir / "cachedb.yaml", config)
    env = {"CACHEDB_CLUSTER_SECRET": secrets.token_hex(16), "AWS_EC2_METADATA_DISABLED": "true"}
    common = ["--config", str(config_path), "--no-warehouse"]
    head = CachedbProcess(
        [*common, "--no-demo", "--suspect-after", SUSPECT_AFTER, "--heartbeat-interval", HEARTBEAT],
        env=env,
        name="cachedb-head",
        command="head",
    )
    workers: dict[str, CachedbProcess] = {}
    killed: set[str] = set()
    try:
        for wid in WORKERS:
            workers[wid] = CachedbProcess(
                [*common, "--head", f"127.0.0.1:{head.port}", "--id", wid],
                env=env,
                name=f"cachedb-{wid}",
                command="worker",
            )
        c = Cluster(minio, catalog, tbl, tbl.current_snapshot().snapshot_id, head, workers, killed, workdir)
        wait_alive_nodes(c, len(WORKERS))
        yield c
    finally:
        for wid, w in workers.items():
            if wid in killed:
                w.proc.wait()
                pathlib.Path(w.log_path).unlink(missing_ok=True)
            else:
                w.stop()
        head.stop()


@dataclasses.dataclass
class Loaded:
    spec: pathlib.Path
    out: subprocess.CompletedProcess
    # Cluster.get_requests before and after the load
    gets_before: dict[str, int]
    gets_after: dict[str, int]


@pytest.fixture(scope="module")
def loaded(cluster) -> Loaded:
    """The dataset made once by `cachedb load` of a spec pinned to the table's snapshot."""
    spec = cluster.write_spec("features.yaml", dataset_spec(DATASET, cluster.snapshot_id))
    gets_before = cluster.get_requests()
    out = cluster.load(spec)
    gets_after = cluster.get_requests()
    assert out.returncode == 0, f"cachedb load failed:\n{out.stdout}\n{out.stderr}\n" + cluster.head.log()
    return Loaded(spec, out, gets_before, gets_after)


# --- pyarrow.flight, by hand -----------------------------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _bytes_field(number: int, data: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def statement_query_command(sql: str) -> bytes:
    """A Flight SQL CommandStatementQuery packed in a protobuf Any: the command bytes of a
    FlightDescriptor that any Flight client can send to GetFlightInfo."""
    command = _bytes_field(1, sql.encode())
    type_url = b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery"
    return _bytes_field(1, type_url) + _bytes_field(2, command)


# --- tests -----------------------------------------------------------------------------------


def test_load_materializes_the_filtered_feature_set_on_three_nodes(cluster, loaded):
    want = expected(cluster.table, cluster.snapshot_id)
    assert 0 < want.num_rows < ROWS
    line = loaded.out.stdout.strip()
    m = re.fullmatch(
        rf"dataset {DATASET} materialized: (\d+) rows, .* in (\d+) partitions on (.+), snapshot (\S+), [\d.]+s", line
    )
    assert m, f"unexpected output of cachedb load: {loaded.out.stdout!r}"
    assert int(m.group(1)) == want.num_rows
    assert int(m.group(2)) == PARTITIONS
    assert sorted(m.group(3).split(", ")) == WORKERS
    assert str(cluster.snapshot_id) in m.group(4)

    row = cluster.dataset_row(DATASET)
    assert row is not None, "system.datasets does not list the dataset"
    assert row["state"] == "ready"
    assert row["row_count"] == want.num_rows
    assert row["partitions"] == PARTITIONS
    assert sorted(row["nodes"].split(",")) == WORKERS
    assert str(cluster.snapshot_id) in row["snapshot"]
    assert row["bytes"] > 0


def test_partitions_are_read_from_the_data_nodes(cluster, loaded):
    want = expected(cluster.table, cluster.snapshot_id)
    query = f"SELECT * FROM {DATASET}"

    # ADBC: one partition per node holding the dataset, each read on its own.
    with cluster.connect() as conn, conn.cursor() as cur:
        partitions, schema = cur.adbc_execute_partitions(query)
        assert schema.names == COLUMNS
        assert len(partitions) == len(WORKERS)
        parts = []
        for p in partitions:
            cur.adbc_read_partition(p)
            parts.append(cur.fetch_arrow_table())
    assert all(t.num_rows > 0 for t in parts)
    assert_same_rows(pa.concat_tables(parts), want)

    # pyarrow.flight: GetFlightInfo on the head for a Flight SQL statement names one endpoint
    # at each data node's address; DoGet there, with the head's ticket, returns its rows.
    addresses = {
        r["id"]: r["address"] for r in cluster.query("SELECT id, address FROM system.nodes").to_pylist()
    }
    assert sorted(addresses) == WORKERS
    head = flight.FlightClient(cluster.head.uri)
    try:
        info = head.get_flight_info(flight.FlightDescriptor.for_command(statement_query_command(query)))
    finally:
        head.close()
    locations = []
    tables = []
    for ep in info.endpoints:
        assert len(ep.locations) == 1, ep.locations
        uri = ep.locations[0].uri.decode()
        locations.append(uri)
        node = flight.FlightClient(uri)
        try:
            tables.append(node.do_get(ep.ticket).read_all())
        finally:
            node.close()
    assert sorted(re.sub(r"^grpc(\+tcp)?://", "", u) for u in locations) == sorted(addresses.values())
    assert_same_rows(pa.concat_tables(tables), want)


def test_reuse_and_reads_read_no_object_storage(cluster, loaded):
    # The counters work: the first load read every data file the filter keeps (the category
    # partition 'e' is pruned).
    kept_files = (len(CATEGORIES) - 1) * APPENDS
    assert loaded.gets_after[DATA_BUCKET] - loaded.gets_before[DATA_BUCKET] >= kept_files

    want = expected(cluster.table, cluster.snapshot_id)
    before = cluster.get_requests()
    out = cluster.load(loaded.spec, "-q")
    assert out.returncode == 0, out.stderr
    assert re.match(rf"dataset {DATASET} reused\b", out.stdout), out.stdout
    assert f"{want.num_rows} rows" in out.stdout
    after_reuse = cluster.get_requests()
    assert after_reuse[DATA_BUCKET] == before[DATA_BUCKET], "reusing the dataset read data files"

    for _ in range(2):
        assert_same_rows(cluster.query(f"SELECT * FROM {DATASET}"), want)
    assert cluster.get_requests() == after_reuse, "reading the dataset read objects from MinIO"
    assert cluster.dataset_row(DATASET)["hits"] >= 3


def test_reuse_reads_no_table_metadata(cluster, loaded):
    """A reused load finds the dataset by the fingerprint of the bound plan before planning the
    scan, and the metadata.json it binds against is one the head has read before (Iceberg
    metadata files are immutable, and kept): no request reaches the table's buckets at all."""

    def all_requests():
        return {b: sum(minio_bucket_requests(cluster.s3, b).values()) for b in (BUCKET, DATA_BUCKET)}

    cluster.get_requests()  # let the counters settle
    before = all_requests()
    out = cluster.load(loaded.spec, "-q")
    assert out.returncode == 0 and "reused" in out.stdout, out.stdout + out.stderr
    cluster.get_requests()
    after = all_requests()
    assert after == before, f"requests during a reused load: {before} -> {after}"


def test_load_by_metadata_location(cluster, loaded):
    """A spec may name the table by its metadata file (as pyiceberg reports it) instead of its
    catalog name: the dataset holds that version's rows. A location that does not exist is
    refused, naming it."""
    location = cluster.table.metadata_location
    spec = cluster.write_spec(
        "by_location.yaml",
        f"name: by_location\nmetadata_location: {location}\ncolumns: [{', '.join(COLUMNS)}]\n"
        f'filter: "{SQL_FILTER}"\npartitions: 3\n',
    )
    out = cluster.load(spec, "-q")
    assert out.returncode == 0, out.stdout + out.stderr
    try:
        assert_same_rows(cluster.query("SELECT * FROM by_location"), expected(cluster.table, cluster.snapshot_id))
        assert cluster.dataset_row("by_location")["source"].startswith(location)
    finally:
        cluster.query("DROP TABLE by_location")
    gone = location.replace(".metadata.json", "-gone.metadata.json")
    bad = cluster.write_spec("gone_location.yaml", f"name: gone_location\nmetadata_location: {gone}\n")
    out = cluster.load(bad, "-q")
    assert out.returncode != 0 and gone in out.stderr and "does not exist" in out.stderr, out.stderr
    assert cluster.dataset_row("gone_location") is None


def test_dataset_stays_on_its_snapshot_after_new_commits(cluster, loaded):
    old = expected(cluster.table, cluster.snapshot_id)
    tbl = cluster.table
    tbl.append(feature_rows(tbl, range(ROWS, ROWS + 5_000)))
    tbl = tbl.refresh()
    new_snapshot = tbl.current_snapshot().snapshot_id
    assert new_snapshot != cluster.snapshot_id
    new = expected(tbl, new_snapshot)
    assert new.num_rows > old.num_rows

    # The pinned dataset still holds the old rows, and its spec is still reused.
    assert_same_rows(cluster.query(f"SELECT * FROM {DATASET}"), old)
    out = cluster.load(loaded.spec, "-q")
    assert out.returncode == 0 and "reused" in out.stdout, out.stdout + out.stderr

    # The same spec without a pin, under another name, takes the new snapshot.
    latest = "features_latest"
    spec = cluster.write_spec("latest.yaml", dataset_spec(latest, None))
    out = cluster.load(spec, "-q")
    assert out.returncode == 0, out.stderr
    assert f"dataset {latest} materialized: {new.num_rows} rows" in out.stdout, out.stdout
    assert str(new_snapshot) in out.stdout
    assert cluster.dataset_row(latest)["row_count"] == new.num_rows
    assert_same_rows(cluster.query(f"SELECT * FROM {latest}"), new)
    assert_same_rows(cluster.query(f"SELECT * FROM {DATASET}"), old)

    with cluster.connect() as conn, conn.cursor() as cur:
        cur.execute(f"DROP TABLE {latest}")
    assert cluster.dataset_row(latest) is None
    assert cluster.dataset_row(DATASET)["state"] == "ready"


def test_node_loss_rebuilds_partitions_on_the_survivors(cluster, loaded):
    want = expected(cluster.table, cluster.snapshot_id)
    victim = "w2"
    survivors = [w for w in WORKERS if w != victim]

    # Reads race the loss from the moment of the kill: each one returns the complete, correct
    # rows or fails with Unavailable; none returns a partial or wrong answer.
    stop = threading.Event()
    outcomes: list[str] = []
    problems: list[str] = []

    def read_loop() -> None:
        with cluster.connect() as conn:
            while not stop.is_set():
                try:
                    with conn.cursor() as cur:
                        cur.execute(f"SELECT * FROM {DATASET}")
                        got = cur.fetch_arrow_table()
                except Exception as e:  # noqa: BLE001 - any failure must be an Unavailable one
                    if isinstance(e, DbError) and "unavailable" in str(e).lower():
                        outcomes.append("unavailable")
                    else:
                        problems.append(f"error without Unavailable: {type(e).__name__}: {e}")
                    time.sleep(0.05)
                    continue
                try:
                    assert_same_rows(got, want)
                    outcomes.append("ok")
                except AssertionError as e:
                    problems.append(f"wrong answer ({got.num_rows} rows): {e}")

    cluster.workers[victim].proc.kill()
    cluster.killed.add(victim)
    reader = threading.Thread(target=read_loop)
    reader.start()
    try:
        deadline = time.monotonic() + REBUILD_TIMEOUT_S
        states = []
        while True:
            row = cluster.dataset_row(DATASET)
            states.append((row["state"], row["nodes"]))
            if row["state"] == "ready" and sorted(row["nodes"].split(",")) == survivors:
                break
            if time.monotonic() > deadline:
                pytest.fail(f"dataset not rebuilt on {survivors} within {REBUILD_TIMEOUT_S}s; states seen: {states}")
            time.sleep(0.1)
    finally:
        stop.set()
        reader.join(timeout=30)
    assert not reader.is_alive()
    assert not problems, problems[:3]
    assert outcomes, "no read ran during the rebuild"

    nodes = {r["id"]: r["state"] for r in cluster.query("SELECT id, state FROM system.nodes").to_pylist()}
    assert nodes[victim] != "alive"
    row = cluster.dataset_row(DATASET)
    assert row["row_count"] == want.num_rows
    assert row["partitions"] == PARTITIONS

    with cluster.connect() as conn, conn.cursor() as cur:
        partitions, _ = cur.adbc_execute_partitions(f"SELECT * FROM {DATASET}")
        assert len(partitions) == len(survivors)
        cur.execute(f"SELECT * FROM {DATASET}")
        assert_same_rows(cur.fetch_arrow_table(), want)


def test_bad_specs_fail_clearly_and_leave_the_head_serving(cluster, loaded):
    spec = cluster.write_spec("unknown_table.yaml", "name: nope\ntable: ml.no_such_table\ncolumns: [id]\n")
    out = cluster.load(spec, "-q")
    assert out.returncode != 0
    assert "no_such_table" in out.stderr, out.stderr
    assert cluster.s3.secret_access_key not in out.stdout + out.stderr

    spec = cluster.write_spec("unknown_key.yaml", f"name: nope\ntable: {TABLE}\ncolumnz: [id]\n")
    out = cluster.load(spec, "-q")
    assert out.returncode != 0
    assert "columnz" in out.stderr, out.stderr

    spec = cluster.write_spec("bad_json.json", json.dumps({"name": "nope", "table": TABLE, "filter": "f1 >>> 1"}))
    out = cluster.load(spec, "-q")
    assert out.returncode != 0
    assert out.stderr.strip(), "a failed load must say why"

    assert cluster.dataset_row("nope") is None
    assert cluster.dataset_row(DATASET)["state"] == "ready"
    want = expected(cluster.table, cluster.snapshot_id)
    assert_same_rows(cluster.query(f"SELECT * FROM {DATASET}"), want)
    got = cluster.query(f"SELECT count(*) AS n FROM {DATASET} WHERE category = 'a'")
    assert got.column("n")[0].as_py() == sum(1 for c in want.column("category").to_pylist() if c == "a")
