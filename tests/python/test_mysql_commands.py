"""MySQL habits through the Python ADBC driver: SHOW, DESCRIBE, USE, information_schema, the
functions and @@variables drivers probe, and transaction statements (autocommit no-ops)."""

import adbc_driver_flightsql.dbapi
import pytest


def rows(cur, query):
    cur.execute(query)
    names = [d[0] for d in cur.description] if cur.description else []
    return names, cur.fetchall()


@pytest.fixture
def cookie_conn(server):
    """A connection that returns the session cookie, so USE lasts across statements."""
    with adbc_driver_flightsql.dbapi.connect(
        server, autocommit=True, db_kwargs={"adbc.flight.sql.rpc.with_cookie_middleware": "true"}
    ) as c:
        yield c


def test_show_and_describe_have_mysql_shapes(conn):
    with conn.cursor() as cur:
        for q in ["SHOW DATABASES", "SHOW SCHEMAS"]:
            names, got = rows(cur, q)
            assert names == ["Database"]
            assert {"cachedb", "system", "information_schema", "local.demo"} <= {r[0] for r in got}
        names, got = rows(cur, "SHOW TABLES")
        assert names == ["Tables_in_cachedb"] and ("demo",) in got
        names, got = rows(cur, "SHOW FULL TABLES FROM `local.demo`")
        assert names == ["Tables_in_local.demo", "Table_type"] and got == [("rides", "BASE TABLE")]
        assert rows(cur, "SHOW TABLES FROM system LIKE 'n%'")[1] == [("nodes",)]
        for q in ["DESCRIBE demo.rides", "DESC demo.rides", "SHOW COLUMNS FROM rides FROM `local.demo`"]:
            names, got = rows(cur, q)
            assert names == ["Field", "Type", "Null", "Key", "Default", "Extra"], q
            by_field = {r[0]: r for r in got}
            assert by_field["passengers"][1] == "bigint" and by_field["fare"][1] == "decimal(10,2)", q
            assert by_field["ride_id"][2] == "NO" and by_field["passengers"][2] == "YES", q
        names, got = rows(cur, "SHOW CREATE TABLE demo.rides")
        assert names == ["Table", "Create Table"] and got[0][0] == "rides"
        assert got[0][1].startswith("CREATE TABLE `rides` (") and "`fare` decimal(10,2)" in got[0][1]


def test_information_schema(conn):
    with conn.cursor() as cur:
        got = rows(cur, "SELECT SCHEMA_NAME FROM information_schema.schemata ORDER BY 1")[1]
        assert ("local.demo",) in got and ("cachedb",) in got
        got = rows(cur, "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.tables WHERE TABLE_SCHEMA = 'local.demo'")[1]
        assert got == [("rides", "BASE TABLE")]
        got = rows(
            cur,
            "SELECT COLUMN_NAME, ORDINAL_POSITION, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE FROM information_schema.columns "
            "WHERE TABLE_SCHEMA = 'local.demo' AND TABLE_NAME = 'rides' ORDER BY ORDINAL_POSITION",
        )[1]
        assert got[0] == ("ride_id", 1, "bigint", "bigint", "NO")
        assert ("fare", 6, "decimal", "decimal(10,2)", "YES") in got


def test_driver_probes(conn):
    with conn.cursor() as cur:
        names, got = rows(cur, "SELECT version(), database(), schema(), CONNECTION_ID()")
        assert got[0][0].startswith("8.0") and got[0][1:3] == ("cachedb", "cachedb")
        _, got = rows(cur, "SELECT @@version, @@version_comment, @@session.auto_increment_increment, @@autocommit")
        assert got[0][0].startswith("8.0") and got[0][2:] == (1, 1)
        for q in ["BEGIN", "START TRANSACTION", "COMMIT", "ROLLBACK"]:
            cur.execute(q)  # accepted: every statement commits itself
        with pytest.raises(adbc_driver_flightsql.dbapi.Error, match="@@no_such_variable"):
            cur.execute("SELECT @@no_such_variable")


def test_use_sets_the_session_database(cookie_conn):
    with cookie_conn.cursor() as cur:
        cur.execute("USE `local.demo`")
        assert rows(cur, "SELECT database()")[1] == [("local.demo",)]
        assert rows(cur, "SELECT count(*) FROM rides")[1][0][0] > 0
        assert rows(cur, "SHOW TABLES")[0] == ["Tables_in_local.demo"]
        with pytest.raises(adbc_driver_flightsql.dbapi.Error, match="Unknown database 'nope'"):
            cur.execute("USE nope")
        cur.execute("USE cachedb")
        assert rows(cur, "SELECT database()")[1] == [("cachedb",)]


def test_set_limits_the_session(cookie_conn, conn):
    """SET max_execution_time and SET cachedb_memory_limit change the session (its cookie), as
    the session options memory_limit and statement_timeout do; bad values are refused."""
    long_count = "SELECT count(*) FROM demo a, demo b, demo c WHERE a.label + b.label + c.label >= 0"
    with cookie_conn.cursor() as cur:
        cur.execute("SET max_execution_time = 200")
        cur.execute("SET cachedb_memory_limit = '256MiB'")
        assert rows(cur, "SELECT 1")[1] == [(1,)]
        options = cookie_conn.adbc_connection.get_option("adbc.flight.sql.session.options")
        assert '"statement_timeout":200' in options.replace(" ", "")
        assert '"memory_limit":268435456' in options.replace(" ", "")
        with pytest.raises(adbc_driver_flightsql.dbapi.Error, match="DEADLINE_EXCEEDED|[Dd]eadline|timed out"):
            cur.execute(long_count)
            cur.fetchall()
        with pytest.raises(adbc_driver_flightsql.dbapi.Error, match="max_execution_time"):
            cur.execute("SET max_execution_time = -1")
        cur.execute("SET max_execution_time = DEFAULT")
        assert rows(cur, "SELECT count(*) FROM demo a, demo b")[1] == [(1000000,)]
    with conn.cursor() as cur:  # another session, without the cookie: no limits
        assert rows(cur, "SELECT count(*) FROM demo")[1] == [(1000,)]


def test_set_sql_mode_ansi_quotes_reads_double_quotes_as_names(cookie_conn):
    with cookie_conn.cursor() as cur:
        cur.execute("SELECT \"ride_id\" FROM demo.rides ORDER BY ride_id LIMIT 1")
        assert cur.fetchall() == [("ride_id",)]  # MySQL's dialect: a string
        cur.execute("SET SESSION sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')")
        cur.fetchall()
        cur.execute("SELECT @@sql_mode")
        assert cur.fetchone()[0].startswith("ANSI_QUOTES,ONLY_FULL_GROUP_BY,")
        cur.execute("SELECT \"ride_id\", 'a \"b\"' FROM \"demo\".\"rides\" ORDER BY ride_id LIMIT 1")
        [(ride_id, text)] = cur.fetchall()
        assert isinstance(ride_id, int) and text == 'a "b"'
        with pytest.raises(adbc_driver_flightsql.dbapi.Error, match="can't be set to the value of 'NOPE'"):
            cur.execute("SET sql_mode = 'NOPE'")
        cur.execute("SET sql_mode = DEFAULT")
        cur.fetchall()
        cur.execute("SELECT \"ride_id\" FROM demo.rides ORDER BY ride_id LIMIT 1")
        assert cur.fetchall() == [("ride_id",)]
