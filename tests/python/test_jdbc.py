"""cachedb through the Apache Arrow Flight SQL JDBC driver, as DBeaver or DataGrip use it: the
Java program tests/jdbc/FlightSqlJdbcCheck.java browses the metadata, runs prepared statements
with int, bigint, double, string and date parameters (single and batched), queries every table
by the catalog.schema.table name the metadata gives, checks that getColumns types match a query's,
and reads every column type of demo.rides. scripts/jdbc-driver.sh fetches the driver jar once per machine."""

import os
import shutil
import subprocess

import pytest

from servers import REPO_ROOT

CHECK = REPO_ROOT / "tests" / "jdbc" / "FlightSqlJdbcCheck.java"


def driver_jar() -> str:
    if shutil.which("java") is None:
        why = "the JDBC test needs java (17+) on PATH"
        if os.environ.get("CACHEDB_REQUIRE_ALL"):
            pytest.fail(why + " (CACHEDB_REQUIRE_ALL is set)")
        pytest.skip(why)
    out = subprocess.run(
        [str(REPO_ROOT / "scripts" / "jdbc-driver.sh"), "install"], capture_output=True, text=True, timeout=600
    )
    if out.returncode != 0:
        pytest.fail("scripts/jdbc-driver.sh install failed:\n" + out.stderr)
    return out.stdout.strip()


def run_check(server: str, jar: str) -> str:
    host_port = server.removeprefix("grpc://")
    # Arrow's memory code needs java.nio opened to it on Java 17.
    cmd = ["java", "--add-opens=java.base/java.nio=ALL-UNNAMED", "-cp", jar, str(CHECK), host_port]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "PASS" in out.stdout, (
        f"JDBC check failed (exit {out.returncode}):\n{out.stdout}\n{out.stderr[-4000:]}"
    )
    return out.stdout


def test_jdbc_driver_metadata_prepared_statements_and_types(server):
    stdout = run_check(server, driver_jar())
    assert "ok prepared SELECT with five parameter types" in stdout
    assert "ok every table getTables lists can be queried by catalog.schema.table" in stdout
    # Every column of demo.rides reaches Java as a value of its SQL type.
    for line in ["column fare DECIMAL BigDecimal", "column pickup_at TIMESTAMP Timestamp", "column city VARCHAR String"]:
        assert line in stdout, stdout
