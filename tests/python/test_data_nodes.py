"""Queries divided among data nodes: `cachedb serve --workers 2` over the embedded warehouse,
read through the Python ADBC driver, which fetches every endpoint from the node it names."""

import tempfile
import time

import adbc_driver_flightsql.dbapi
import pytest

from servers import CachedbProcess

QUERY = "SELECT ride_id, fare FROM demo.rides WHERE city = 'Lisbon' AND passengers >= 3"


@pytest.fixture(scope="module")
def cluster():
    warehouse = tempfile.mkdtemp(prefix="cachedb-warehouse-")
    with CachedbProcess(["--warehouse", warehouse, "--workers", "2"], name="cachedb-workers") as proc:
        with adbc_driver_flightsql.dbapi.connect(proc.uri, autocommit=True) as conn:
            wait_for_nodes(conn, 2)
            yield conn


def wait_for_nodes(conn, n):
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM system.nodes WHERE state = 'alive'")
            if cur.fetchone()[0] == n:
                return
        time.sleep(0.1)
    pytest.fail(f"{n} data nodes did not register")


def test_divided_query_has_one_partition_per_data_node(cluster):
    with cluster.cursor() as cur:
        partitions, schema = cur.adbc_execute_partitions(QUERY)
    assert len(partitions) == 2
    assert schema.names == ["ride_id", "fare"]


def test_divided_query_returns_every_row_once(cluster):
    with cluster.cursor() as cur:
        cur.execute(QUERY)
        rows = cur.fetch_arrow_table()
        cur.execute("SELECT count(*), sum(ride_id) FROM (" + QUERY + ") q")  # aggregates run whole
        count, id_sum = cur.fetchone()
    ids = rows.column("ride_id").to_pylist()
    assert len(ids) == count > 0
    assert len(set(ids)) == len(ids)
    assert sum(ids) == id_sum


def test_grouped_aggregate_ends_on_the_data_nodes(cluster):
    """GROUP BY: partial aggregates where the rows are read, a shuffle by key, the final stage
    on each node (one endpoint per node); the per-city counts add up to the table."""
    with cluster.cursor() as cur:
        partitions, _ = cur.adbc_execute_partitions("SELECT city, count(*) FROM demo.rides GROUP BY city")
        assert len(partitions) == 2
        cur.execute("SELECT city, count(*) FROM demo.rides GROUP BY city")
        counts = dict(cur.fetchall())
        cur.execute("SELECT count(*) FROM demo.rides")
        assert len(counts) == 8 and sum(counts.values()) == cur.fetchone()[0]


def test_global_aggregates_and_sorts_finish_on_the_head(cluster):
    with cluster.cursor() as cur:
        partitions, _ = cur.adbc_execute_partitions("SELECT city, count(*) AS n FROM demo.rides GROUP BY city ORDER BY n")
        assert len(partitions) == 1
        cur.execute("SELECT count(DISTINCT city) FROM demo.rides")
        assert cur.fetchone()[0] == 8
