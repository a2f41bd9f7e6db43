"""cachedb through the Python ADBC Flight SQL driver, as a data scientist would use it."""

import uuid

import adbc_driver_flightsql.dbapi
import pyarrow as pa
import pytest


def unique_table(prefix: str) -> str:
    """Table names are unique per test so tests never see each other's tables."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def test_demo_table_first_rows(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM demo LIMIT 5")
        rows = cur.fetchall()
        assert len(rows) == 5
        assert cur.description, "a query result must describe its columns"


def test_fetch_arrow_table(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM demo LIMIT 5")
        table = cur.fetch_arrow_table()
    assert isinstance(table, pa.Table)
    assert table.num_rows == 5
    assert table.num_columns >= 1


def test_create_insert_select_round_trip(conn):
    name = unique_table("people")
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {name} (id INTEGER, name VARCHAR(20), score DOUBLE)")
        cur.execute(f"INSERT INTO {name} VALUES (1, 'ada', 9.5), (2, 'brian', NULL), (3, '', 7.25)")
        cur.execute(f"SELECT id, name, score FROM {name} ORDER BY id")
        table = cur.fetch_arrow_table()
    assert table.column_names == ["id", "name", "score"]
    assert table.column("id").to_pylist() == [1, 2, 3]
    assert table.column("name").to_pylist() == ["ada", "brian", ""]
    assert table.column("score").to_pylist() == [9.5, None, 7.25]
    assert pa.types.is_integer(table.schema.field("id").type)
    assert pa.types.is_floating(table.schema.field("score").type)


def test_aggregate_over_inserted_rows(conn):
    name = unique_table("sales")
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {name} (k INTEGER, v INTEGER)")
        cur.execute(f"INSERT INTO {name} VALUES (1, 10), (1, 20), (2, 5), (NULL, 1)")
        cur.execute(f"SELECT k, count(*), min(v), max(v) FROM {name} GROUP BY k ORDER BY k")
        rows = cur.fetchall()
    # MySQL orders NULL first in ascending order.
    assert rows == [(None, 1, 1, 1), (1, 2, 10, 20), (2, 1, 5, 5)]


@pytest.mark.parametrize(
    "sql, named",
    [
        ("SELECT * FROM no_such_table_anywhere", "no_such_table_anywhere"),
        ("SELECT no_such_column FROM demo", "no_such_column"),
        ("SELEC 1", "syntax"),
    ],
)
def test_bad_query_raises_and_server_keeps_serving(server, sql, named):
    with adbc_driver_flightsql.dbapi.connect(server, autocommit=True) as conn:
        with conn.cursor() as cur:
            with pytest.raises(adbc_driver_flightsql.dbapi.Error) as caught:
                cur.execute(sql)
                cur.fetchall()
            assert named.lower() in str(caught.value).lower()
    # A new connection still works after the error.
    with adbc_driver_flightsql.dbapi.connect(server, autocommit=True) as conn:
        with conn.cursor() as cur:
            cur.execute("SELECT 1 + 1")
            assert cur.fetchall() == [(2,)]


def test_parameters_bind_through_prepared_statements(conn):
    name = unique_table("params")
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {name} (a INTEGER, b VARCHAR(10))")
        cur.executemany(f"INSERT INTO {name} VALUES (?, ?)", [(1, "x"), (2, "y"), (3, None)])
        cur.execute(f"SELECT b FROM {name} WHERE a >= ? ORDER BY a", (2,))
        assert cur.fetchall() == [("y",), (None,)]


def test_integer_division_is_decimal(conn):
    # MySQL semantics: dividing integers yields a DECIMAL with four more fractional digits.
    with conn.cursor() as cur:
        cur.execute("SELECT 1 / 3 AS q, 7 DIV 2 AS d, 1 / 0 AS z")
        table = cur.fetch_arrow_table()
    assert pa.types.is_decimal(table.schema.field("q").type)
    assert table.schema.field("q").type.scale == 4
    assert str(table.column("q")[0].as_py()) == "0.3333"
    assert table.column("d").to_pylist() == [3]
    assert table.column("z").to_pylist() == [None]


def test_listed_column_types_are_the_types_queries_return(conn):
    """The metadata (GetTables with its schemas) types each column as SELECT returns it: an
    Iceberg table's int and float columns are read as int64 and double, and listed so."""
    listed = conn.adbc_get_table_schema("rides", catalog_filter="local", db_schema_filter="demo")
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM demo.rides LIMIT 1")
        returned = cur.fetch_arrow_table().schema
    assert listed.names == returned.names
    assert [str(f.type) for f in listed] == [str(f.type) for f in returned]
    assert str(listed.field("passengers").type) == "int64" and str(listed.field("f0").type) == "double"
