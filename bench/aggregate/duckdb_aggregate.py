"""DuckDB side of the aggregate benchmark (run by bench/aggregate; not meant to be run alone).

Usage: python duckdb_aggregate.py PARQUET_PATH RUNS THRESHOLD THREADS

Times the benchmark query twice over the same rows: reading the Parquet file directly, and over
an in-memory table loaded from it first (so the comparison with cachedb's in-memory table is
like for like). Prints one JSON object on stdout: timings and the checksum of each answer,
computed exactly as the Go side computes its own.
"""

import json
import statistics
import sys
import time

import duckdb

QUERY = "SELECT k, count(*), sum(v), avg(x) FROM {source} WHERE x > {threshold} GROUP BY k"


def checksum(rows):
    return {
        "rows": len(rows),
        "sum_k": sum(int(r[0]) for r in rows),
        "sum_count": sum(int(r[1]) for r in rows),
        "sum_sum_v": sum(float(r[2] or 0) for r in rows),
        "sum_avg_x": sum(float(r[3] or 0) for r in rows),
    }


def timed(con, sql, runs):
    secs, rows = [], None
    for _ in range(runs):
        began = time.perf_counter()
        rows = con.execute(sql).fetchall()
        secs.append(time.perf_counter() - began)
    return {
        "runs_s": secs,
        "best_s": min(secs),
        "median_s": statistics.median(secs),
        "checksum": checksum(rows),
    }


def main():
    parquet, runs, threshold, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    con = duckdb.connect()
    con.execute(f"SET threads TO {threads}")
    source = "read_parquet('{}')".format(parquet.replace("'", "''"))
    result = {"duckdb_version": duckdb.__version__, "threads": threads}
    result["parquet"] = timed(con, QUERY.format(source=source, threshold=threshold), runs)
    began = time.perf_counter()
    con.execute(f"CREATE TABLE t AS SELECT * FROM {source}")
    result["load_s"] = time.perf_counter() - began
    result["memory"] = timed(con, QUERY.format(source="t", threshold=threshold), runs)
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
