"""Fixtures that start real `cachedb serve` processes for the Python client tests.

The binary is $CACHEDB_BIN, or bin/cachedb at the repository root (`make build` makes it).
Each test session gets one server on a free loopback port; it is stopped with SIGTERM at the
end and must exit with status 0.

The Iceberg end-to-end tests (test_iceberg.py) share one MinIO, one set of tables written with
pyiceberg (iceberg_fixtures.build_lake) and one cachedb configured with a YAML file, all started
once per session. MinIO is required: when it cannot start, those tests fail.
"""

import tempfile

import adbc_driver_flightsql.dbapi
import pytest

from servers import CachedbProcess, MinioProcess, lake_catalog_yaml, s3_yaml, write_config


def pytest_configure(config):
    # cachedb.tensors ignores this warning when it is imported; pytest restores the filters it
    # had before each test, which drops that one when the import happened inside a test.
    config.addinivalue_line("filterwarnings", r"ignore:The given buffer is not writable:UserWarning:cachedb\.tensors")


@pytest.fixture(scope="session")
def server():
    """Yields the grpc:// URI of a server started as `make run` starts it: the embedded Iceberg
    warehouse (here in a temporary directory) beside the in-memory demo table."""
    warehouse = tempfile.mkdtemp(prefix="cachedb-warehouse-")
    proc = CachedbProcess(["--warehouse", warehouse])
    try:
        yield proc.uri
    finally:
        proc.stop()


@pytest.fixture
def conn(server):
    """A fresh ADBC DB-API connection to the session's server."""
    with adbc_driver_flightsql.dbapi.connect(server, autocommit=True) as c:
        yield c


@pytest.fixture(scope="session")
def minio(tmp_path_factory):
    """A MinIO server with random root credentials; yields an iceberg_fixtures.S3."""
    proc = MinioProcess(tmp_path_factory.mktemp("minio") / "data")
    try:
        yield proc.s3
    finally:
        proc.stop()


@pytest.fixture(scope="session")
def lake(minio, tmp_path_factory):
    """Every Iceberg test table, written once. The data file of `default.corrupt` holding ids
    100..199 has a corrupted Parquet footer (lake.corrupt_file); ids 0..99 are readable."""
    import iceberg_fixtures

    built = iceberg_fixtures.build_lake(minio, tmp_path_factory.mktemp("lake"))
    corrupt_table = built.table("default.corrupt")
    [task] = list(corrupt_table.scan(row_filter="id >= 100").plan_files())
    iceberg_fixtures.corrupt_parquet_footer(minio, task.file.file_path)
    built.corrupt_file = task.file.file_path
    return built


@pytest.fixture(scope="session")
def iceberg_server(lake, minio, tmp_path_factory):
    """cachedb serving the lake: catalog `lake` (the default), `lake2` (the same tables found
    through the catalog-name property) and a `files` catalog whose table `history_v2` is
    history's second metadata.json."""
    config = {
        "default_catalog": "lake",
        "s3": s3_yaml(minio),
        "catalogs": [
            lake_catalog_yaml(lake),
            lake_catalog_yaml(lake, "lake2"),
            {"name": "files", "type": "files", "tables": {"history_v2": lake.history[1].metadata_location}},
        ],
    }
    path = write_config(tmp_path_factory.mktemp("cachedb") / "cachedb.yaml", config)
    proc = CachedbProcess(["--config", str(path), "--no-demo"], name="cachedb-iceberg")
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def iconn(iceberg_server):
    """A fresh ADBC connection to the Iceberg server."""
    with adbc_driver_flightsql.dbapi.connect(iceberg_server.uri, autocommit=True) as c:
        yield c
