"""The embedded warehouse a newcomer gets from `make run`, seen through the Python ADBC driver."""

import adbc_driver_flightsql
import adbc_driver_flightsql.dbapi
import pytest


def scalar(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchone()[0]


def test_demo_rides_is_an_iceberg_table(conn):
    assert scalar(conn, "SELECT count(*) FROM demo.rides") == 200000
    assert scalar(conn, "SELECT count(*) FROM local.rides") == 200000
    # Two appends: the tag 'initial' names the first snapshot, which holds fewer rows.
    assert 0 < scalar(conn, "SELECT count(*) FROM demo.`rides@initial`") < 200000


def test_demo_rides_prunes_day_partitions(conn):
    with conn.cursor() as cur:
        cur.execute("EXPLAIN SELECT ride_id FROM demo.rides WHERE pickup_at >= '2026-01-20'")
        plan = "\n".join(str(row[1]) for row in cur.fetchall())
    assert "files=11/30" in plan, plan


def test_catalogs_and_namespaces_are_listed(conn):
    objects = conn.adbc_get_objects(depth="tables").read_all().to_pylist()
    catalogs = {o["catalog_name"]: o for o in objects}
    assert {"cachedb", "local"} <= set(catalogs), catalogs.keys()
    schemas = {s["db_schema_name"]: s for s in catalogs["local"]["catalog_db_schemas"]}
    assert "demo" in schemas
    assert [t["table_name"] for t in schemas["demo"]["db_schema_tables"]] == ["rides"]


def test_reading_iceberg_tables_is_read_only(conn):
    with conn.cursor() as cur:
        with pytest.raises(adbc_driver_flightsql.dbapi.NotSupportedError, match="read-only"):
            cur.execute("DELETE FROM demo.rides")
    assert scalar(conn, "SELECT count(*) FROM demo.rides") == 200000


def test_connection_catalog_and_schema_choose_unqualified_names(server):
    db_kwargs = {"adbc.flight.sql.rpc.with_cookie_middleware": "true"}
    with adbc_driver_flightsql.dbapi.connect(server, db_kwargs=db_kwargs, autocommit=True) as conn:
        conn.adbc_current_catalog = "local"
        conn.adbc_current_db_schema = "demo"
        assert conn.adbc_current_catalog == "local"
        assert scalar(conn, "SELECT count(*) FROM rides") == 200000
        with pytest.raises(adbc_driver_flightsql.dbapi.Error):
            conn.adbc_current_catalog = "no_such_catalog"
        assert scalar(conn, "SELECT count(*) FROM rides") == 200000
