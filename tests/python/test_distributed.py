"""Distributed queries on a cluster of separate processes: a head and three data nodes
(`cachedb head`, `cachedb worker`) over the Iceberg lake that pyiceberg wrote into MinIO.

Aggregates, DISTINCT and joins are cut into stages at shuffles: partial aggregates on the nodes
that read the scan tasks, partial groups (or join inputs) moved between the nodes by key over
Arrow Flight, final stages on each node. Every answer is compared with DuckDB over the same
files (the reference of test_iceberg) and with a single cachedb process over the same lake.
"""

from __future__ import annotations

import secrets
import time

import adbc_driver_flightsql.dbapi
import pytest

from servers import CachedbProcess, lake_catalog_yaml, s3_yaml, write_config
from test_iceberg import AGGREGATES, assert_same_numbers, duck, query, sql_name

WORKERS = ["d1", "d2", "d3"]


@pytest.fixture(scope="module")
def cluster(lake, minio, tmp_path_factory):
    """A head and three data nodes serving the lake, with one cluster secret; yields the head."""
    workdir = tmp_path_factory.mktemp("distributed")
    config = {"default_catalog": "lake", "s3": s3_yaml(minio), "catalogs": [lake_catalog_yaml(lake)]}
    path = write_config(workdir / "cachedb.yaml", config)
    env = {"CACHEDB_CLUSTER_SECRET": secrets.token_hex(16), "AWS_EC2_METADATA_DISABLED": "true"}
    common = ["--config", str(path), "--no-warehouse"]
    head = CachedbProcess([*common, "--no-demo", "--lost-after", "10s"], env=env, name="cachedb-dhead", command="head")
    workers = []
    try:
        for wid in WORKERS:
            workers.append(
                CachedbProcess(
                    [*common, "--head", f"127.0.0.1:{head.port}", "--id", wid],
                    env=env,
                    name=f"cachedb-{wid}",
                    command="worker",
                )
            )
        with adbc_driver_flightsql.dbapi.connect(head.uri, autocommit=True) as conn:
            wait_alive(conn, len(WORKERS), head)
        yield head
    finally:
        for w in workers:
            w.stop()
        head.stop()


def wait_alive(conn, n, head):
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM system.nodes WHERE state = 'alive'")
            if cur.fetchone()[0] == n:
                return
        time.sleep(0.1)
    pytest.fail(f"{n} data nodes did not register:\n" + head.log())


@pytest.fixture
def hconn(cluster):
    with adbc_driver_flightsql.dbapi.connect(cluster.uri, autocommit=True) as c:
        yield c


@pytest.mark.parametrize("template, tables", AGGREGATES, ids=[f"agg{i}" for i in range(len(AGGREGATES))])
def test_distributed_answers_match_duckdb_and_one_process(hconn, iconn, lake, template, tables):
    sql = template.format(**{k: sql_name(v) for k, v in tables.items()})
    got = query(hconn, sql)
    expected = duck(lake, template.format(**{k: k for k in tables}), **tables)
    assert expected, "the reference must not be empty"
    assert_same_numbers(got, expected)
    assert_same_numbers(got, [tuple(r.values()) for r in query(iconn, sql).to_pylist()])


def test_grouped_aggregate_and_join_end_on_the_data_nodes(hconn):
    """The final stage of a GROUP BY and of a join of two tables runs on the nodes: one endpoint
    per node. A global aggregate or an ORDER BY finishes on the head: one endpoint."""
    per_node = [
        "SELECT region, count(*) FROM `default`.events GROUP BY region",
        "SELECT DISTINCT country FROM `default`.users",
        "SELECT e.event_id, u.name FROM `default`.events e JOIN `default`.users u ON e.user_id = u.id",
    ]
    on_head = [
        "SELECT count(*) FROM `default`.events",
        "SELECT region, count(*) AS n FROM `default`.events GROUP BY region ORDER BY n DESC",
    ]
    with hconn.cursor() as cur:
        for sql in per_node:
            partitions, _ = cur.adbc_execute_partitions(sql)
            assert len(partitions) == len(WORKERS), sql
        for sql in on_head:
            partitions, _ = cur.adbc_execute_partitions(sql)
            assert len(partitions) == 1, sql


def test_explain_shows_the_stages(hconn):
    with hconn.cursor() as cur:
        cur.execute("EXPLAIN SELECT region, count(*) FROM `default`.events GROUP BY region")
        rows = cur.fetchall()
    text = "\n".join(r[1] for r in rows)
    assert any(r[0] == "distributed_plan" for r in rows), rows
    assert "3 data nodes" in text and "Shuffle 0: hash(region) into 3 buckets" in text, text
