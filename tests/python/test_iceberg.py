"""cachedb over real Iceberg tables in MinIO, checked against what pyiceberg (and DuckDB over
pyiceberg's Arrow output) computes for the same tables.

The tables are described in iceberg_fixtures.py; the servers in conftest.py. Naming, as clients
write it (MySQL dialect): `ns.tbl` is namespace ns of the default catalog, `cat.tbl` is catalog
cat's default namespace, `` `cat.ns`.tbl `` names all three parts, and `` ns.`tbl@version` ``
pins a snapshot id, a UTC timestamp or a tag.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import pathlib
import re
import urllib.request
import uuid

import adbc_driver_flightsql.dbapi
import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import iceberg_fixtures
from servers import CachedbProcess, RestCatalogProcess, free_port, lake_catalog_yaml, s3_yaml, write_config

DbError = adbc_driver_flightsql.dbapi.Error


# --- helpers ---------------------------------------------------------------------------------


def query(conn, sql: str) -> pa.Table:
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetch_arrow_table()


def query_error(conn, sql: str) -> str:
    """Runs a query that must fail and returns the error text."""
    with conn.cursor() as cur:
        with pytest.raises(DbError) as caught:
            cur.execute(sql)
            cur.fetch_arrow_table()
    return str(caught.value)


def assert_still_serving(uri: str) -> None:
    """A fresh connection still gets a right answer after an error."""
    with adbc_driver_flightsql.dbapi.connect(uri, autocommit=True) as c:
        got = query(c, "SELECT COUNT(*), MIN(id), MAX(id) FROM `default`.history")
    assert rows_of(got) == [(250, 50, 299)]


def norm(v):
    """Makes values from cachedb and from pyiceberg comparable: aware datetimes become naive
    UTC, UUIDs bytes, nested values recursively."""
    if isinstance(v, datetime.datetime) and v.tzinfo is not None:
        return v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    if isinstance(v, uuid.UUID):
        return v.bytes
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(norm(x) for x in v)
    return v


def _sort_key(row):
    return tuple((x is None, repr(x) if isinstance(x, (dict, list, tuple)) else x) for x in row)


def rows_of(table: pa.Table, ordered: bool = False) -> list[tuple]:
    rows = [tuple(norm(v) for v in r.values()) for r in table.to_pylist()]
    return rows if ordered else sorted(rows, key=_sort_key)


def assert_same(got: pa.Table, expected: pa.Table, ordered: bool = False, names: bool = True) -> None:
    if names:
        assert got.column_names == expected.column_names
    assert got.num_rows == expected.num_rows
    g, e = rows_of(got, ordered), rows_of(expected, ordered)
    if g != e:
        diff = [(i, a, b) for i, (a, b) in enumerate(zip(g, e)) if a != b][:5]
        pytest.fail(f"{len(g)} rows differ from the reference; first differences (index, got, expected): {diff}")


def _is_number(x) -> bool:
    return isinstance(x, (int, float, decimal.Decimal)) and not isinstance(x, bool)


def assert_same_numbers(got: pa.Table, expected_rows: list[tuple]) -> None:
    """Compares rows with numbers as floats, approximately: cachedb follows MySQL, where SUM of
    integers and AVG are DECIMAL, while DuckDB answers with integers and doubles."""

    def key(row):
        return _sort_key(tuple(float(x) if _is_number(x) else x for x in row))

    g = sorted(rows_of(got), key=key)
    e = sorted(expected_rows, key=key)
    assert len(g) == len(e), (g[:5], e[:5])
    for a, b in zip(g, e):
        assert len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            if _is_number(x) and _is_number(y):
                assert float(x) == pytest.approx(float(y), rel=1e-9, abs=1e-9), (a, b)
            else:
                assert x == y, (a, b)


_references: dict[tuple, pa.Table] = {}


def reference(lake, name: str, snapshot_id: int | None = None) -> pa.Table:
    """pyiceberg's reading of a table (cached for the session)."""
    key = (name, snapshot_id)
    if key not in _references:
        tbl = lake.table(name)
        scan = tbl.scan(snapshot_id=snapshot_id) if snapshot_id is not None else tbl.scan()
        _references[key] = scan.to_arrow()
    return _references[key]


def duck(lake, sql: str, **tables: str) -> list[tuple]:
    """Runs sql in DuckDB over pyiceberg's reading of the named tables (alias=iceberg name)."""
    con = duckdb.connect()
    for alias, name in tables.items():
        con.register(alias, reference(lake, name))
    return [tuple(norm(v) for v in r) for r in con.execute(sql).fetchall()]


def explain(conn, sql: str) -> list[str]:
    got = query(conn, sql)
    return [line for line in got.column("plan").to_pylist() if line]


def scan_lines(lines: list[str]) -> list[str]:
    found = [line for line in lines if "files=" in line]
    assert found, "no Iceberg scan line (with files=k/n) in:\n" + "\n".join(lines)
    return found


def metric(line: str, key: str) -> tuple[int, ...]:
    m = re.search(rf"\b{key}=(\d+)(?:/(\d+))?", line)
    assert m, f"{key}= missing from scan line: {line}"
    return tuple(int(g) for g in m.groups() if g is not None)


def sql_name(name: str) -> str:
    """A pyiceberg table name as SQL writes it: DEFAULT is a reserved word in MySQL, so the
    namespace is quoted."""
    ns, table = name.rsplit(".", 1)
    return f"`{ns}`.{table}"


def utc_seconds(ms: int) -> str:
    """The first whole UTC second at or after a commit time, as cachedb's time travel takes it."""
    t = datetime.datetime.fromtimestamp(math.ceil(ms / 1000), tz=datetime.timezone.utc)
    return t.strftime("%Y-%m-%d %H:%M:%S")


# --- whole tables, projections, filters ------------------------------------------------------

# Names as pyiceberg spells them; the SQL quotes the namespace (sql_name).
FULL_TABLES = [
    "default.users",
    "default.events",
    "default.clicks",
    "default.history",
    "default.deletes_cow",
    "analytics.evolving",
]


@pytest.mark.parametrize("name", FULL_TABLES)
def test_full_scan_matches_pyiceberg(iconn, lake, name):
    assert_same(query(iconn, f"SELECT * FROM {sql_name(name)}"), reference(lake, name))


def test_projection_in_requested_order(iconn, lake):
    got = query(iconn, "SELECT ts, region, event_id FROM `default`.events")
    expected = lake.table("default.events").scan(selected_fields=("ts", "region", "event_id")).to_arrow()
    assert_same(got, expected.select(["ts", "region", "event_id"]))


FILTERS = [
    # (table, SQL condition, pyiceberg row filter, columns)
    ("default.events", "region = 'eu'", "region = 'eu'", "*"),
    ("default.events", "region IN ('af', 'sa') AND qty >= 5", "region in ('af', 'sa') and qty >= 5", "event_id, region, qty"),
    ("default.events", "amount > 1000", "amount > 1000", "event_id, amount"),
    ("default.events", "amount IS NULL", "amount is null", "event_id, amount"),
    ("default.events", "event_id BETWEEN 5000 AND 5100", "event_id >= 5000 and event_id <= 5100", "*"),
    ("default.events", "ts < '2024-03-02 00:00:00'", "ts < '2024-03-02T00:00:00'", "event_id, ts"),
    ("default.clicks", "ts >= '2024-05-10 00:00:00' AND ts < '2024-05-12 00:00:00'",
     "ts >= '2024-05-10T00:00:00' and ts < '2024-05-12T00:00:00'", "*"),
    ("default.users", "id = 1234", "id = 1234", "*"),
    ("default.users", "id IN (1, 2, 3, 1999)", "id in (1, 2, 3, 1999)", "*"),
    ("default.users", "country = 'jp' AND id < 100", "country = 'jp' and id < 100", "id, name"),
    ("default.users", "signup = '2023-02-01'", "signup = '2023-02-01'", "id, signup"),
    ("analytics.wide", "id BETWEEN 120500 AND 120600", "id >= 120500 and id <= 120600", "id, grp, c000, c001, c002"),
    ("analytics.evolving", "b_renamed < 5 OR d = 'd120'", "b_renamed < 5 or d = 'd120'", "*"),
]


@pytest.mark.parametrize("name, where, row_filter, columns", FILTERS, ids=[f"{f[0]}:{f[1]}" for f in FILTERS])
def test_filter_matches_pyiceberg(iconn, lake, name, where, row_filter, columns):
    got = query(iconn, f"SELECT {columns} FROM {sql_name(name)} WHERE {where}")
    fields = ("*",) if columns == "*" else tuple(c.strip() for c in columns.split(","))
    expected = lake.table(name).scan(row_filter=row_filter, selected_fields=fields).to_arrow()
    if columns != "*":
        expected = expected.select(list(fields))
    assert expected.num_rows > 0, "the reference must not be empty, or the test proves little"
    assert_same(got, expected)


# --- aggregates and joins --------------------------------------------------------------------

AGGREGATES = [
    (
        "SELECT region, COUNT(*), SUM(qty), MIN(amount), MAX(amount), COUNT(amount) FROM {events} GROUP BY region",
        {"events": "default.events"},
    ),
    ("SELECT COUNT(*), COUNT(DISTINCT user_id), AVG(amount) FROM {events} WHERE region = 'eu'", {"events": "default.events"}),
    ("SELECT country, COUNT(*), MIN(signup), MAX(name) FROM {users} GROUP BY country", {"users": "default.users"}),
    ("SELECT grp, COUNT(*), SUM(c000), MAX(c001) FROM {wide} WHERE grp < 5 GROUP BY grp", {"wide": "analytics.wide"}),
    ("SELECT COUNT(*), SUM(id), MIN(id), MAX(id) FROM {wide}", {"wide": "analytics.wide"}),
    (
        "SELECT u.country, COUNT(*), SUM(e.qty) FROM {events} e JOIN {users} u ON e.user_id = u.id "
        "WHERE e.region = 'eu' GROUP BY u.country",
        {"events": "default.events", "users": "default.users"},
    ),
    (
        "SELECT e.event_id, e.user_id, u.name FROM {events} e LEFT JOIN {users} u ON e.user_id = u.id "
        "WHERE e.event_id < 300",
        {"events": "default.events", "users": "default.users"},
    ),
    (
        "SELECT c.url, COUNT(*) FROM {clicks} c JOIN {users} u ON c.user_id = u.id "
        "WHERE u.country = 'de' AND c.ts < '2024-05-04 00:00:00' GROUP BY c.url",
        {"clicks": "default.clicks", "users": "default.users"},
    ),
    (
        "SELECT e.region, COUNT(DISTINCT c.click_id) FROM {events} e JOIN {clicks} c ON e.user_id = c.user_id "
        "WHERE e.event_id < 2000 AND c.click_id < 2000 GROUP BY e.region",
        {"events": "default.events", "clicks": "default.clicks"},
    ),
]


@pytest.mark.parametrize("template, tables", AGGREGATES, ids=[f"agg{i}" for i in range(len(AGGREGATES))])
def test_aggregates_and_joins_match_duckdb(iconn, lake, template, tables):
    got = query(iconn, template.format(**{k: sql_name(v) for k, v in tables.items()}))
    expected = duck(lake, template.format(**{k: k for k in tables}), **tables)
    assert expected, "the reference must not be empty"
    assert_same_numbers(got, expected)


def test_join_across_catalogs(iconn, lake):
    """The same tables reached through two catalogs (lake2 finds them through catalog-name)."""
    sql = (
        "SELECT u.country, COUNT(*) FROM {a} e JOIN {b} u ON e.user_id = u.id "
        "WHERE e.region = 'na' GROUP BY u.country"
    )
    got = query(iconn, sql.format(a="lake.events", b="lake2.users"))
    expected = duck(lake, sql.format(a="events", b="users"), events="default.events", users="default.users")
    assert_same_numbers(got, expected)


@pytest.mark.parametrize(
    "name, count",
    [
        ("events", 20_000),
        ("`default`.events", 20_000),
        ("lake.events", 20_000),
        ("`lake.default`.events", 20_000),
        ("lake2.events", 20_000),
        ("`lake2.default`.events", 20_000),
        ("analytics.evolving", 151),
        ("`lake.analytics`.evolving", 151),
        ("files.history_v2", 200),
    ],
)
def test_table_names_resolve(iconn, name, count):
    assert rows_of(query(iconn, f"SELECT COUNT(*) FROM {name}")) == [(count,)]


# --- time travel ------------------------------------------------------------------------------


def test_time_travel_by_snapshot_id(iconn, lake):
    assert len(lake.history) == 4
    for snap in lake.history:
        got = query(iconn, f"SELECT * FROM `default`.`history@{snap.snapshot_id}`")
        assert got.num_rows == snap.row_count
        assert_same(got, reference(lake, "default.history", snap.snapshot_id))


def test_time_travel_by_timestamp(iconn, lake):
    for i, snap in enumerate(lake.history):
        at = utc_seconds(snap.timestamp_ms)
        at_ms = datetime.datetime.strptime(at, "%Y-%m-%d %H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp() * 1000
        if i + 1 < len(lake.history):
            assert at_ms < lake.history[i + 1].timestamp_ms, "fixture: commits must lie in different seconds"
        got = query(iconn, f"SELECT id FROM `default`.`history@{at}`")
        expected = reference(lake, "default.history", snap.snapshot_id).select(["id"])
        assert_same(got, expected)


def test_time_travel_before_first_snapshot_is_an_error(iceberg_server, iconn, lake):
    message = query_error(iconn, "SELECT * FROM `default`.`history@2001-01-01 00:00:00`")
    assert "history" in message
    assert_still_serving(iceberg_server.uri)


def test_time_travel_by_tag(iconn, lake):
    got = query(iconn, f"SELECT * FROM `default`.`history@{lake.history_tag}`")
    assert_same(got, reference(lake, "default.history", lake.history[0].snapshot_id))


def test_bare_metadata_json_is_its_snapshot(iconn, lake):
    """files.history_v2 is the metadata.json written by history's second commit."""
    got = query(iconn, "SELECT * FROM files.history_v2")
    assert_same(got, reference(lake, "default.history", lake.history[1].snapshot_id))


def test_explain_names_the_pinned_snapshot(iconn, lake):
    first = lake.history[0].snapshot_id
    [line] = scan_lines(explain(iconn, f"EXPLAIN SELECT * FROM `default`.`history@{first}`"))
    assert metric(line, "snapshot") == (first,)
    [line] = scan_lines(explain(iconn, "EXPLAIN SELECT * FROM `default`.history"))
    assert metric(line, "snapshot") == (lake.history[-1].snapshot_id,)


# --- schema evolution -------------------------------------------------------------------------


def test_evolved_schema_reads_by_field_id(iconn, lake):
    got = query(iconn, "SELECT * FROM analytics.evolving")
    assert got.column_names == ["id", "a", "b_renamed", "d", "c"]
    by_id = {r["id"]: r for r in got.to_pylist()}
    # old rows: the renamed column keeps its values, the added ones are null, and the new "c"
    # does not resurrect the dropped double column of the same name
    assert by_id[7] == {"id": 7, "a": "a7", "b_renamed": 7, "d": None, "c": None}
    assert by_id[120] == {"id": 120, "a": "a120", "b_renamed": 120, "d": "d120", "c": None}
    assert by_id[150] == {"id": 150, "a": "a150", "b_renamed": 150, "d": "d150", "c": "new-c"}
    assert_same(got, reference(lake, "analytics.evolving"))


def test_evolved_schema_filters(iconn):
    assert rows_of(query(iconn, "SELECT id FROM analytics.evolving WHERE b_renamed < 3")) == [(0,), (1,), (2,)]
    assert rows_of(query(iconn, "SELECT COUNT(*) FROM analytics.evolving WHERE d IS NULL")) == [(100,)]
    assert rows_of(query(iconn, "SELECT id, c FROM analytics.evolving WHERE c IS NOT NULL")) == [(150, "new-c")]


def test_time_travel_before_schema_change_uses_that_snapshots_schema(iconn, lake):
    """As in Iceberg's Java API and Spark, reading an old snapshot uses the schema it was
    written with: b under its old name and the dropped double column c."""
    before = lake.evolving_before
    got = query(iconn, f"SELECT * FROM analytics.`evolving@{before.snapshot_id}`")
    expected = reference(lake, "analytics.evolving", before.snapshot_id)
    assert expected.column_names == ["id", "a", "b", "c"]
    assert_same(got, expected)


# --- deletes ----------------------------------------------------------------------------------


def mor_expected(lake) -> pa.Table:
    """deletes_mor as it must read now: pyiceberg's reading after the position deletes, less the
    equality-deleted ids, plus the rows appended afterwards."""
    ref = reference(lake, "default.deletes_mor", lake.mor_reference_snapshot)
    eq = pa.array(sorted(lake.mor_equality_deleted_ids), pa.int64())
    kept = ref.filter(pc.invert(pc.is_in(ref.column("id"), value_set=eq)))
    return pa.concat_tables([kept, lake.mor_appended.cast(kept.schema)])


def test_merge_on_read_deletes_hide_rows(iconn, lake):
    got = query(iconn, "SELECT * FROM `default`.deletes_mor")
    expected = mor_expected(lake)
    deleted = lake.mor_position_deleted_ids | lake.mor_equality_deleted_ids
    # 5,000 written, the union of both deletes gone, 3 appended afterwards
    assert got.num_rows == expected.num_rows == 5000 - len(deleted) + 3
    ids = set(got.column("id").to_pylist())
    assert not (ids & (lake.mor_position_deleted_ids | (lake.mor_equality_deleted_ids - {3050})))
    assert_same(got, expected)


def test_equality_deletes_spare_later_rows(iconn):
    """id 3050 was equality-deleted, then appended again: only the new row is visible."""
    got = query(iconn, "SELECT id, name FROM `default`.deletes_mor WHERE id BETWEEN 3000 AND 3099")
    assert rows_of(got) == [(3050, "n3050")]


def test_position_deletes_only_snapshot(iconn, lake):
    got = query(iconn, f"SELECT * FROM `default`.`deletes_mor@{lake.mor_reference_snapshot}`")
    assert_same(got, reference(lake, "default.deletes_mor", lake.mor_reference_snapshot))


def test_merge_on_read_aggregate(iconn, lake):
    expected = mor_expected(lake)
    got = query(iconn, "SELECT COUNT(*), SUM(id), MAX(score) FROM `default`.deletes_mor")
    assert_same_numbers(
        got, [(expected.num_rows, pc.sum(expected.column("id")).as_py(), pc.max(expected.column("score")).as_py())]
    )


def test_explain_counts_delete_files(iconn):
    [line] = scan_lines(explain(iconn, "EXPLAIN SELECT * FROM `default`.deletes_mor"))
    assert metric(line, "delete_files") == (2,)


def test_copy_on_write_deletes_and_overwrite(iconn):
    assert rows_of(query(iconn, "SELECT COUNT(*) FROM `default`.deletes_cow WHERE id >= 1000 AND id < 1700")) == [(0,)]
    got = query(iconn, "SELECT category, COUNT(*), MIN(value) FROM `default`.deletes_cow WHERE id < 100 GROUP BY category")
    assert_same_numbers(got, [("z", 100, -1.0)])
    assert rows_of(query(iconn, "SELECT COUNT(*) FROM `default`.deletes_cow WHERE category = 'c' AND id < 300")) == [(0,)]


# --- types -----------------------------------------------------------------------------------

# The Arrow types clients receive (docs/catalogs.md): Iceberg int and float are widened to the
# engine's 64-bit types, and booleans arrive as MySQL's BOOLEAN does, as 0/1 integers.
ZOO_COLUMNS = [
    ("c_bool", lambda t: t == pa.int64()),
    ("c_int", lambda t: t == pa.int64()),
    ("c_long", lambda t: t == pa.int64()),
    ("c_float", lambda t: t == pa.float64()),
    ("c_double", lambda t: t == pa.float64()),
    ("c_dec", lambda t: t == pa.decimal128(10, 2)),
    ("c_dec38", lambda t: t == pa.decimal128(38, 10)),
    ("c_date", lambda t: t == pa.date32()),
    ("c_time", lambda t: t == pa.time64("us")),
    ("c_ts", lambda t: t == pa.timestamp("us")),
    ("c_tstz", lambda t: pa.types.is_timestamp(t) and t.unit == "us" and t.tz in ("UTC", "+00:00", "Etc/UTC")),
    ("c_string", lambda t: pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)),
    ("c_uuid", lambda t: t == pa.binary(16) or isinstance(t, pa.UuidType)),
    ("c_fixed", lambda t: t == pa.binary(8)),
    ("c_binary", lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)),
    ("c_struct", pa.types.is_struct),
    ("c_list", lambda t: pa.types.is_list(t) or pa.types.is_large_list(t)),
    ("c_map", pa.types.is_map),
]


@pytest.mark.parametrize("column, type_ok", ZOO_COLUMNS, ids=[c for c, _ in ZOO_COLUMNS])
def test_type_zoo_column(iconn, lake, column, type_ok):
    got = query(iconn, f"SELECT id, {column} FROM `default`.type_zoo ORDER BY id")
    arrow_type = got.schema.field(column).type
    assert type_ok(arrow_type), f"{column} arrives as {arrow_type}"
    expected = reference(lake, "default.type_zoo").select(["id", column]).sort_by("id")
    if column == "c_bool":
        expected = expected.set_column(1, column, expected.column(column).cast(pa.int64()))
    assert_same(got, expected, ordered=True)


@pytest.mark.parametrize(
    "where, ids",
    [
        ("c_bool = true", [1]),
        ("c_bool = false", [2]),
        ("c_int = 2147483647", [2]),
        ("c_long > 0", [1]),
        ("c_float < 0", [2]),
        ("c_double = 2.25", [1]),
        ("c_dec = 12345678.91", [1]),
        ("c_dec < 0", [2]),
        ("c_dec38 < 0", [2]),
        ("c_date = '2024-02-29'", [1]),
        ("c_date < '1970-01-01'", [2]),
        ("c_time > '12:00:00'", [1]),
        ("c_ts < '2000-01-01 00:00:00'", [2]),
        ("c_tstz >= '2024-01-01 00:00:00'", [1]),
        ("c_string = ''", [2]),
        ("c_string LIKE 'h%'", [1]),
        ("c_string IS NULL", [3]),
        ("c_struct IS NULL", [3]),
    ],
)
def test_type_zoo_filters(iconn, where, ids):
    got = query(iconn, f"SELECT id FROM `default`.type_zoo WHERE {where}")
    assert sorted(got.column("id").to_pylist()) == ids


# --- pruning and bytes read ------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql, expect_files",
    [
        ("SELECT * FROM `default`.events WHERE region = 'eu'", (2, 12)),  # identity partition
        ("SELECT * FROM `default`.clicks WHERE ts >= '2024-05-10 00:00:00' AND ts < '2024-05-11 00:00:00'", (1, 20)),  # day
        ("SELECT * FROM `default`.users WHERE id = 42", (1, 8)),  # bucket
    ],
)
def test_explain_shows_partition_pruning(iconn, sql, expect_files):
    [line] = scan_lines(explain(iconn, "EXPLAIN " + sql))
    kept, total = metric(line, "files")
    assert kept < total, line
    assert (kept, total) == expect_files, line


def test_explain_shows_row_group_pruning(iconn, lake):
    wide = lake.table("analytics.wide")
    [line] = scan_lines(explain(iconn, "EXPLAIN SELECT id, c000 FROM analytics.wide WHERE id BETWEEN 120500 AND 120600"))
    files_kept, files_total = metric(line, "files")
    assert (files_kept, files_total) == (1, iceberg_fixtures.WIDE_FILES), line
    kept, total = metric(line, "row_groups")
    assert kept < total, line
    assert kept == 1, line
    assert total in (iceberg_fixtures.row_group_count(wide), iceberg_fixtures.row_group_count(wide) // iceberg_fixtures.WIDE_FILES), line


def test_explain_analyze_projection_reads_a_fraction(iconn, lake):
    total = iceberg_fixtures.total_data_bytes(lake.table("analytics.wide"))
    # a long, two doubles and two strings (c000, c003, ... are ints)
    lines = explain(iconn, "EXPLAIN ANALYZE SELECT id, c001, c002, c004, c005 FROM analytics.wide")
    [line] = scan_lines(lines)
    [fetched] = metric(line, "bytes_fetched")
    [requests] = metric(line, "requests")
    assert requests > 0, line
    # 5 of 120 columns: about 4 % of the data, plus footers
    assert 0 < fetched < total * 0.15, f"fetched {fetched} of {total} bytes: {line}"


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql, named",
    [
        ("SELECT * FROM `default`.no_such_table", "no_such_table"),
        ("SELECT * FROM no_such_ns.events", "no_such_ns"),
        ("SELECT * FROM lake.no_such_table", "no_such_table"),
        ("SELECT * FROM `lake.no_such_ns`.events", "no_such_ns"),
        ("SELECT * FROM `default`.`history@123456789`", "123456789"),
        ("SELECT * FROM `default`.`history@no_such_tag`", "no_such_tag"),
        ("SELECT no_such_column FROM `default`.events", "no_such_column"),
    ],
)
def test_unknown_names_are_errors(iceberg_server, iconn, sql, named):
    message = query_error(iconn, sql)
    assert named in message
    assert_still_serving(iceberg_server.uri)


def test_corrupt_parquet_footer_names_the_file(iceberg_server, iconn, lake):
    message = query_error(iconn, "SELECT * FROM `default`.corrupt")
    assert pathlib.PurePosixPath(lake.corrupt_file).name in message
    assert_still_serving(iceberg_server.uri)


def test_pruned_corrupt_file_is_never_opened(iconn):
    """The corrupt file holds ids 100..199; its statistics rule it out for id < 100."""
    assert rows_of(query(iconn, "SELECT COUNT(*), MAX(id) FROM `default`.corrupt WHERE id < 100")) == [(100, 99)]


@pytest.fixture(scope="module")
def bad_server(lake, minio, tmp_path_factory):
    """cachedb with broken catalogs beside a good one: wrong S3 secret, an endpoint nobody
    listens on, and a files table whose metadata.json was deleted."""
    wrong_secret = "WRONG-" + minio.secret_access_key[::-1]
    dead_endpoint = f"http://127.0.0.1:{free_dead_port()}"
    config = {
        "default_catalog": "lake",
        "s3": s3_yaml(minio),
        "catalogs": [
            lake_catalog_yaml(lake),
            lake_catalog_yaml(lake, "badcreds", s3={"secret_access_key": wrong_secret}),
            lake_catalog_yaml(lake, "nowhere", s3={"endpoint": dead_endpoint, "max_attempts": 1}),
            {"name": "files", "type": "files", "tables": {"default.gone": lake.gone_metadata_location,
                                                           "history_now": lake.history[-1].metadata_location}},
        ],
    }
    path = write_config(tmp_path_factory.mktemp("cachedb-bad") / "cachedb.yaml", config)
    proc = CachedbProcess(["--config", str(path), "--no-demo"], name="cachedb-bad")
    proc.wrong_secret = wrong_secret
    proc.dead_endpoint = dead_endpoint
    try:
        yield proc
    finally:
        proc.stop()


def free_dead_port() -> int:
    return free_port()  # closed again at once, so connections to it are refused


@pytest.fixture
def bconn(bad_server):
    with adbc_driver_flightsql.dbapi.connect(bad_server.uri, autocommit=True) as c:
        yield c


def test_bad_server_serves_its_good_tables(bconn, lake):
    assert rows_of(query(bconn, "SELECT COUNT(*) FROM files.history_now")) == [(250,)]
    assert rows_of(query(bconn, "SELECT COUNT(*) FROM `default`.events")) == [(20_000,)]


def test_deleted_metadata_json(bad_server, bconn, lake):
    message = query_error(bconn, "SELECT * FROM `files.default`.gone")
    assert "gone" in message
    assert pathlib.PurePosixPath(lake.gone_metadata_location).name in message
    assert_still_serving(bad_server.uri)


def test_wrong_credentials(bad_server, bconn, minio):
    message = query_error(bconn, "SELECT * FROM badcreds.events")
    lowered = message.lower()
    assert "access denied" in lowered or "credential" in lowered, message
    assert "events" in message, "the error names the table"
    assert bad_server.wrong_secret not in message
    assert minio.secret_access_key not in message
    assert_still_serving(bad_server.uri)
    log = bad_server.log()
    assert bad_server.wrong_secret not in log
    assert minio.secret_access_key not in log


def test_unreachable_endpoint(bad_server, bconn):
    message = query_error(bconn, "SELECT * FROM nowhere.events")
    assert bad_server.dead_endpoint in message, "the error names the endpoint it could not reach"
    assert "events" in message, "the error names the table"
    assert_still_serving(bad_server.uri)


# --- a server configured by flags only -------------------------------------------------------


def test_table_flag_with_s3_flags(lake, minio):
    """The way a training job's initializer starts it: one --table and the S3 flags."""
    location = lake.metadata_location("default.events")
    args = [
        "--no-demo",
        "--table", f"events={location}",
        "--s3-endpoint", minio.endpoint,
        "--s3-region", minio.region,
        "--s3-access-key-id", minio.access_key_id,
        "--s3-path-style", "true",
    ]
    # A secret never goes on the command line (ps shows it): the environment gives it.
    env = {"CACHEDB_S3_SECRET_ACCESS_KEY": minio.secret_access_key}
    with CachedbProcess(args, env=env, name="cachedb-flags") as proc:
        with adbc_driver_flightsql.dbapi.connect(proc.uri, autocommit=True) as c:
            assert rows_of(query(c, "SELECT COUNT(*) FROM events")) == [(20_000,)]
            assert rows_of(query(c, "SELECT COUNT(*) FROM files.events")) == [(20_000,)]
            got = query(c, "SELECT event_id, amount FROM events WHERE region = 'me' AND qty = 2")
            expected = lake.table("default.events").scan(
                row_filter="region = 'me' and qty = 2", selected_fields=("event_id", "amount")
            ).to_arrow()
            assert_same(got, expected)
        assert minio.secret_access_key not in proc.log()


# --- the REST catalog ------------------------------------------------------------------------


def java_plan(rest_uri: str, namespace: str, table: str) -> dict:
    """Asks the REST catalog server to plan a scan (POST .../plan): Iceberg's Java core reads the
    manifests and matches delete files to data files."""
    req = urllib.request.Request(
        f"{rest_uri}/v1/namespaces/{namespace}/tables/{table}/plan",
        data=b"{}",
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def test_rest_catalog(minio, lake, tmp_path_factory):
    """pyiceberg writes through Apache Iceberg's REST catalog server; cachedb reads the table
    through the same server. The lake's deletes_mor table is registered there too: Java's scan
    planning confirms that the hand-written delete files are well formed, and cachedb reads the
    table through REST with its deletes applied."""
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType

    iceberg_fixtures.ensure_bucket(minio)
    rest = RestCatalogProcess(minio, f"s3://{iceberg_fixtures.BUCKET}/rest", tmp_path_factory.mktemp("rest"))
    try:
        catalog = RestCatalog("rest", uri=rest.uri, **minio.pyiceberg_properties())
        catalog.create_namespace_if_not_exists("rns")
        schema = Schema(
            NestedField(1, "trip_id", LongType(), required=True),
            NestedField(2, "city", StringType()),
            NestedField(3, "fare", DoubleType()),
        )
        spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="city"))
        tbl = catalog.create_table("rns.trips", schema=schema, partition_spec=spec)
        for part in range(2):
            ids = range(part * 500, (part + 1) * 500)
            tbl.append(
                pa.table(
                    {"trip_id": pa.array(ids, pa.int64()), "city": [["ber", "par", "tok"][i % 3] for i in ids],
                     "fare": [i * 0.25 for i in ids]},
                    schema=tbl.schema().as_arrow(),
                )
            )
        tbl = catalog.load_table("rns.trips")
        catalog.register_table("rns.mor", lake.metadata_location("default.deletes_mor"))
        plan = java_plan(rest.uri, "rns", "mor")
        assert plan["status"] == "completed", plan
        deletes = sorted((d["content"], d.get("equality-ids")) for d in plan["delete-files"])
        assert deletes == [("equality-deletes", [1]), ("position-deletes", None)]
        refs = sorted(len(t.get("delete-file-references", [])) for t in plan["file-scan-tasks"])
        assert refs == [0, 2, 2], "both deletes apply to the two older data files, none to the newest"
        config = {
            "default_catalog": "rest",
            "s3": s3_yaml(minio),
            "catalogs": [{"name": "rest", "type": "rest", "uri": rest.uri, "default_namespace": "rns"}],
        }
        path = write_config(tmp_path_factory.mktemp("cachedb-rest") / "cachedb.yaml", config)
        with CachedbProcess(["--config", str(path), "--no-demo"], name="cachedb-rest") as proc:
            with adbc_driver_flightsql.dbapi.connect(proc.uri, autocommit=True) as c:
                assert_same(query(c, "SELECT * FROM rns.trips"), tbl.scan().to_arrow())
                assert rows_of(query(c, "SELECT COUNT(*) FROM rest.trips")) == [(1000,)]
                got = query(c, "SELECT trip_id, fare FROM `rest.rns`.trips WHERE city = 'par' AND fare > 100")
                expected = tbl.scan(row_filter="city = 'par' and fare > 100", selected_fields=("trip_id", "fare")).to_arrow()
                assert_same(got, expected)
                [line] = scan_lines(explain(c, "EXPLAIN SELECT * FROM rns.trips WHERE city = 'tok'"))
                kept, total = metric(line, "files")
                assert (kept, total) == (2, 6), line
                assert_same(query(c, "SELECT * FROM rns.mor"), mor_expected(lake))
    finally:
        rest.stop()
