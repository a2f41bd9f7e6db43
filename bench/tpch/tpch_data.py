"""TPC-H data for the benchmark and its test: Parquet from tpchgen-cli, then Iceberg tables.

tpchgen-cli (tpchgen-rs, from PyPI) is installed on first use with `pip install --target` into
~/.cache/cachedb/tpchgen, outside the shared virtual environment so that its hash (keyed on
tests/python/requirements.txt) stays as it is. For a scale factor SF, `prepare(SF)` leaves in
~/.cache/cachedb/tpch/sf<SF>/ (or another root):

- parquet/<table>.parquet: the generator's files, which DuckDB reads directly;
- catalog.db + warehouse/: a pyiceberg SQL catalog (SQLite) whose namespace `tpch` holds the 8
  tables, with the same rows, written from those files (string_view columns as strings);
- a `.done` marker written last, so an interrupted preparation is redone, never half-used.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")
NAMESPACE = "tpch"
CATALOG = "tpch"
CACHE = pathlib.Path(os.environ.get("CACHEDB_CACHE", pathlib.Path.home() / ".cache" / "cachedb"))
GENERATOR_DIR = CACHE / "tpchgen"
GENERATOR_VERSION = "4.0.0"
DATAFUSION_DIR = CACHE / "datafusion"
DATAFUSION_VERSION = "55.0.0"


def generator() -> pathlib.Path:
    """The tpchgen-cli binary, installed from PyPI the first time."""
    binary = GENERATOR_DIR / "bin" / "tpchgen-cli"
    if not binary.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "--target", str(GENERATOR_DIR), f"tpchgen-cli=={GENERATOR_VERSION}"],
            check=True,
        )
    return binary


def sf_dir(sf: float, root: pathlib.Path | None = None) -> pathlib.Path:
    return (root or CACHE / "tpch") / f"sf{sf:g}"


def _plain_strings(t: pa.Table) -> pa.Table:
    """string_view columns (tpchgen writes them) as strings: Iceberg has one string type."""
    fields = [pa.field(f.name, pa.string(), f.nullable) if pa.types.is_string_view(f.type) else f for f in t.schema]
    return t.cast(pa.schema(fields))


def open_catalog(d: pathlib.Path):
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog(CATALOG, uri=f"sqlite:///{d / 'catalog.db'}", warehouse=(d / "warehouse").as_uri())


def prepare(sf: float, root: pathlib.Path | None = None, log=print) -> pathlib.Path:
    """Generates and writes SF's data once; returns its directory."""
    d = sf_dir(sf, root)
    if (d / ".done").exists():
        return d
    d.parent.mkdir(parents=True, exist_ok=True)
    with _locked(d.parent / f".{d.name}.lock"):
        if (d / ".done").exists():  # another process prepared it meanwhile
            return d
        return _prepare(sf, d, log)


@contextlib.contextmanager
def _locked(path: pathlib.Path):
    """An exclusive lock on path, so that concurrent runs prepare a scale factor once."""
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _prepare(sf: float, d: pathlib.Path, log) -> pathlib.Path:
    if d.exists():
        shutil.rmtree(d)
    pq_dir = d / "parquet"
    pq_dir.mkdir(parents=True)
    log(f"generating TPC-H SF {sf:g} into {pq_dir}")
    subprocess.run([str(generator()), "parquet", "-s", f"{sf:g}", "--output-dir", str(pq_dir)],
                   check=True, stdout=subprocess.DEVNULL)
    (d / "warehouse").mkdir()
    catalog = open_catalog(d)
    catalog.create_namespace_if_not_exists(NAMESPACE)
    for name in TABLES:
        t = _plain_strings(pq.read_table(pq_dir / f"{name}.parquet"))
        tbl = catalog.create_table(f"{NAMESPACE}.{name}", schema=t.schema,
                                   properties={"write.target-file-size-bytes": str(1 << 31)})
        tbl.append(t)
        log(f"wrote {NAMESPACE}.{name}: {t.num_rows} rows")
    (d / ".done").write_text("ok\n")
    return d


def write_cachedb_config(path: pathlib.Path, d: pathlib.Path) -> None:
    """A cachedb config whose default catalog is this SQL catalog, namespace tpch: the queries'
    bare table names (`lineitem`) resolve there."""
    path.write_text(
        "default_catalog: tpch\n"
        "catalogs:\n"
        f"  - name: {CATALOG}\n"
        "    type: sql\n"
        f"    uri: sqlite:///{d / 'catalog.db'}\n"
        f"    warehouse: {(d / 'warehouse').as_uri()}\n"
        f"    default_namespace: {NAMESPACE}\n"
    )


def duckdb_connection(d: pathlib.Path):
    """An in-memory DuckDB with a view per table over the generator's Parquet files."""
    import duckdb

    con = duckdb.connect()
    for name in TABLES:
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{d / 'parquet' / (name + '.parquet')}')")
    return con


def datafusion_context(d: pathlib.Path):
    """A DataFusion session with each table registered over the generator's Parquet files.
    DataFusion (from PyPI) is installed the first time into its own directory, like the
    generator, outside the shared virtual environment."""
    target = DATAFUSION_DIR / DATAFUSION_VERSION
    if not (target / "datafusion").is_dir():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
             "--target", str(target), f"datafusion=={DATAFUSION_VERSION}"],
            check=True,
        )
    sys.path.insert(0, str(target))
    import datafusion

    ctx = datafusion.SessionContext()
    for name in TABLES:
        ctx.register_parquet(name, str(d / "parquet" / (name + ".parquet")))
    return ctx


_MYSQL_INTERVAL = re.compile(r"INTERVAL\s+(\d+)\s+(DAY|MONTH|YEAR)\b", re.IGNORECASE)


def datafusion_text(sql: str) -> str:
    """The query in DataFusion's dialect: MySQL's `INTERVAL 90 DAY` becomes `INTERVAL '90 DAY'`,
    the only difference the 22 texts have."""
    return _MYSQL_INTERVAL.sub(r"INTERVAL '\1 \2'", sql)
