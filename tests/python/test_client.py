"""cachedb.connect() and CacheDataset(sql=...) against a `cachedb serve` with two in-process data
nodes: statement parameters, and a query's dataset that already exists."""

from __future__ import annotations

import hashlib
import tempfile

import pyarrow as pa
import pytest

import cachedb
from servers import CachedbProcess


@pytest.fixture(scope="module")
def address():
    proc = CachedbProcess(["--warehouse", tempfile.mkdtemp(prefix="cachedb-warehouse-"), "--workers", "2"])
    try:
        yield proc.uri
    finally:
        proc.stop()


def test_sql_binds_parameters(address):
    with cachedb.connect(address) as db:
        db.sql("CREATE TABLE client_params (id BIGINT, city VARCHAR(20), fare DOUBLE)")
        db.sql("INSERT INTO client_params VALUES (1, 'Lisbon', 12.5), (2, 'Porto', 30.0), (3, 'Lisbon', 41.0), (4, 'it''s', 1.0)")
        got = db.sql("SELECT id FROM client_params WHERE city = ? AND fare > ? ORDER BY id", ["Lisbon", 20.0])
        assert got.column("id").to_pylist() == [3]
        # A value is bound, never spliced into the SQL: a quote in it needs no escaping.
        got = db.sql("SELECT id FROM client_params WHERE city = ?", ("it's",))
        assert got.column("id").to_pylist() == [4]
        assert db.sql("SELECT count(*) AS n FROM client_params").column("n").to_pylist() == [4]


def test_a_querys_dataset_made_earlier_is_used_as_it_is(address):
    query = "SELECT ride_id, fare FROM demo.rides WHERE passengers > 2"
    held_query = "SELECT ride_id, fare FROM demo.rides WHERE ride_id < 5"
    with cachedb.connect(address) as db:
        want = sorted(db.sql(held_query).column("ride_id").to_pylist())
        assert want
        # The name CacheDataset gives the query's dataset, held with another definition: the
        # head refuses to make it again (ALREADY_EXISTS) and the dataset held is read.
        name = "sql_" + hashlib.sha256(query.encode()).hexdigest()[:16]
        held = db.load({"name": name, "sql": held_query})
    ds = cachedb.CacheDataset(address, sql=query, batch_size=8, shuffle=False)
    assert ds.dataset == name and ds.generation == held["generation"]
    assert sorted(v for batch in ds for v in batch["ride_id"].tolist()) == want


def test_a_query_that_cannot_be_materialized_fails(address):
    with pytest.raises(pa.ArrowException, match="no_such_table"):
        cachedb.CacheDataset(address, sql="SELECT * FROM no_such_table")
