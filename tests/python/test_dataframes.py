"""DataFrames into cachedb and back, as a data scientist moves them: pandas `to_sql` / `read_sql`
and polars `write_database(engine="adbc")` / `read_database` over an ADBC Flight SQL connection.
Writing goes through Flight SQL bulk ingest (adbc_ingest)."""

import datetime as dt
import uuid

import adbc_driver_flightsql.dbapi
import numpy as np
import pandas as pd
import polars as pl
import polars.testing
import pyarrow as pa
import pytest

ROWS = 100_000


def unique_table(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def mixed_frame(rows: int) -> pd.DataFrame:
    """Integers, floats, strings, booleans, dates and timestamps, each column with NULLs at rows
    of its own; `id` numbers the rows and has none."""
    rng = np.random.default_rng(7)
    start = dt.date(2020, 1, 1)
    df = pd.DataFrame(
        {
            "id": np.arange(rows, dtype=np.int64),
            "qty": pd.array(rng.integers(-1_000_000, 1_000_000, rows), dtype="Int64"),
            "price": rng.normal(100, 30, rows),
            "city": pd.array([f"city-{k % 97}-é" for k in range(rows)], dtype="str"),
            "active": pd.array(rng.integers(0, 2, rows).astype(bool), dtype="boolean"),
            "day": [start + dt.timedelta(days=int(k % 3000)) for k in range(rows)],
            "seen_at": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 10**12, rows), unit="us"),
        }
    )
    for offset, column in enumerate(["qty", "price", "city", "active", "day", "seen_at"]):
        df.loc[df.index[offset::7], column] = None
    return df


def as_cachedb_returns(table: pa.Table) -> dict:
    """The columns of table as Python values, as cachedb gives them back: booleans are 0/1
    integers (MySQL's BOOLEAN is TINYINT(1))."""
    out = {}
    for name in table.column_names:
        values = table.column(name).to_pylist()
        if pa.types.is_boolean(table.schema.field(name).type):
            values = [None if v is None else int(v) for v in values]
        out[name] = values
    return out


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return mixed_frame(ROWS)


def test_pandas_to_sql_and_read_sql_round_trip(conn, frame):
    name = unique_table("pandas")
    assert frame.to_sql(name, conn, index=False) == ROWS

    back = pd.read_sql(f"SELECT * FROM {name} ORDER BY id", conn, dtype_backend="pyarrow")
    assert list(back.columns) == list(frame.columns)
    assert len(back) == ROWS
    got = as_cachedb_returns(pa.Table.from_pandas(back, preserve_index=False))
    want = as_cachedb_returns(pa.Table.from_pandas(frame, preserve_index=False))
    for column in frame.columns:
        assert got[column] == want[column], column

    # The default (NumPy) read: NULLs in integer columns make them floats, as pandas does.
    default = pd.read_sql(f"SELECT id, price FROM {name} ORDER BY id", conn)
    pd.testing.assert_series_equal(default["price"], frame["price"], check_dtype=False)

    assert frame.head(1000).to_sql(name, conn, index=False, if_exists="append") == 1000
    with conn.cursor() as cur:
        cur.execute(f"SELECT count(*), count(qty), sum(id) FROM {name}")
        count, non_null, id_sum = cur.fetchone()
    assert count == ROWS + 1000
    assert non_null == int(frame["qty"].notna().sum()) + int(frame["qty"].head(1000).notna().sum())
    assert id_sum == sum(range(ROWS)) + sum(range(1000))
    with pytest.raises(ValueError, match="already exists"):
        frame.to_sql(name, conn, index=False)


def test_pandas_replace_delete_rows_and_read_sql_table(conn, frame):
    """pandas writes the names of these in ANSI double quotes (DROP TABLE "t", DELETE FROM "t",
    SELECT ... FROM "t"), which cachedb reads as names where MySQL's dialect cannot parse them."""
    name = unique_table("pandas Ansi")  # a name that needs quoting
    assert frame.head(500).to_sql(name, conn, index=False) == 500
    assert frame.head(300).to_sql(name, conn, index=False, if_exists="replace") == 300
    # Replaced again, with another schema.
    other = pd.DataFrame({"id": np.arange(50, dtype=np.int64), 'say "hi"': [f"hi {k}" for k in range(50)]})
    assert other.to_sql(name, conn, index=False, if_exists="replace") == 50

    back = pd.read_sql_table(name, conn, dtype_backend="pyarrow")
    assert list(back.columns) == ["id", 'say "hi"']
    back = back.sort_values("id", ignore_index=True)
    assert back["id"].tolist() == other["id"].tolist()
    assert back['say "hi"'].tolist() == other['say "hi"'].tolist()
    some = pd.read_sql_table(name, conn, columns=['say "hi"'])
    assert sorted(some['say "hi"']) == sorted(other['say "hi"'])

    assert other.head(7).to_sql(name, conn, index=False, if_exists="delete_rows") == 7
    assert len(pd.read_sql_table(name, conn)) == 7


def test_pandas_types_beyond_the_canonical_ones(conn):
    """What pandas produces for categoricals, narrow numbers, nanosecond and zoned timestamps is
    stored in cachedb's own types, with the same values."""
    name = unique_table("pandas_types")
    df = pd.DataFrame(
        {
            "kind": pd.Categorical(["a", "b", None, "a"]),
            "small": pd.array([1, -2, None, 4], dtype="Int32"),
            "ratio": pd.array([0.5, None, 1.25, 2.0], dtype="Float32"),
            "at_ns": pd.to_datetime(
                ["2024-01-01 00:00:00.000001499", None, "1969-12-31 23:59:59.999999500", "2024-06-01 00:00:00.000000000"]
            ).as_unit("ns"),
            "at_paris": pd.to_datetime(["2024-01-01 10:00", "2024-07-01 10:00", None, "2024-01-01 00:00"]).tz_localize(
                "Europe/Paris"
            ),
        }
    )
    assert df.to_sql(name, conn, index=False) == 4
    with conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {name}")
        table = cur.fetch_arrow_table()
    assert [str(t) for t in table.schema.types] == ["string", "int64", "double", "timestamp[us]", "timestamp[us, tz=UTC]"]
    by_small = sorted(zip(*[table.column(c).to_pylist() for c in table.column_names]), key=lambda r: (r[1] is None, r[1]))
    assert [r[0] for r in by_small] == ["b", "a", "a", None]
    assert [r[2] for r in by_small] == [None, 0.5, 2.0, 1.25]
    # Nanoseconds round to the nearest microsecond, halves up.
    assert by_small[1][3] == dt.datetime(2024, 1, 1, 0, 0, 0, 1)
    assert by_small[3][3] == dt.datetime(1970, 1, 1)
    # A zoned timestamp keeps its instant, in UTC.
    assert by_small[1][4] == dt.datetime(2024, 1, 1, 9, 0, tzinfo=dt.timezone.utc)
    assert by_small[0][4] == dt.datetime(2024, 7, 1, 8, 0, tzinfo=dt.timezone.utc)


def test_polars_write_database_and_read_database_round_trip(conn, frame):
    name = unique_table("polars")
    df = pl.from_pandas(frame)
    assert df.write_database(name, conn, engine="adbc") == ROWS

    back = pl.read_database(f"SELECT * FROM {name} ORDER BY id", conn)
    polars.testing.assert_frame_equal(back, df.with_columns(pl.col("active").cast(pl.Int64)))

    assert df.head(10).write_database(name, conn, engine="adbc", if_table_exists="replace") == 10
    assert df.head(5).write_database(name, conn, engine="adbc", if_table_exists="append") == 5
    assert pl.read_database(f"SELECT count(*) AS n FROM {name}", conn)["n"].to_list() == [15]
    # append to a table that is not there creates it (polars asks for create_append).
    fresh = unique_table("polars_fresh")
    assert df.head(3).write_database(fresh, conn, engine="adbc", if_table_exists="append") == 3


def test_ingest_errors_name_the_column_and_leave_no_table(conn):
    name = unique_table("refused")
    data = pa.table({"id": [1, 2], "tags": [["a"], ["b", "c"]]})
    with conn.cursor() as cur:
        with pytest.raises(adbc_driver_flightsql.dbapi.Error, match="column 'tags'"):
            cur.adbc_ingest(name, data, mode="create")
        # All or nothing: the second batch's value does not fit a BIGINT, so no row is stored.
        batches = [pa.record_batch({"n": pa.array([1], pa.uint64())}), pa.record_batch({"n": pa.array([2**63], pa.uint64())})]
        reader = pa.RecordBatchReader.from_batches(batches[0].schema, batches)
        with pytest.raises(adbc_driver_flightsql.dbapi.Error, match="Out of range value for column 'n' at row 2"):
            cur.adbc_ingest(name, reader, mode="create")
        cur.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", (name,))
        assert cur.fetchone() == (0,)


def test_a_frame_over_the_drivers_message_size_needs_its_option(server):
    """pandas sends a frame as one message; the ADBC driver sends at most 16 MiB unless told more
    (the server takes 64 MiB)."""
    name = unique_table("big_frame")
    rows = 300_000
    df = pd.DataFrame({"id": np.arange(rows), "text": pd.array(["x" * 60] * rows, dtype="str")})
    with adbc_driver_flightsql.dbapi.connect(server, autocommit=True) as conn:
        with pytest.raises(pd.errors.DatabaseError) as caught:
            df.to_sql(name, conn, index=False)
        assert "larger than max" in str(caught.value.__cause__)
    option = {"adbc.flight.sql.client_option.with_max_msg_size": str(64 << 20)}
    with adbc_driver_flightsql.dbapi.connect(server, db_kwargs=option, autocommit=True) as conn:
        assert df.to_sql(name, conn, index=False) == rows
        with conn.cursor() as cur:
            cur.execute(f"SELECT count(*), sum(length(text)) FROM {name}")
            assert cur.fetchone() == (rows, 60 * rows)
