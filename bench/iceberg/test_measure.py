"""Checks of the benchmark's own arithmetic: the generated rows, the expected answer of the
query window, checksums and the parsing of EXPLAIN and MinIO metrics. No servers; run with

    "$(scripts/venv.sh)/bin/python" -m pytest -q bench/iceberg
"""

from __future__ import annotations

import pathlib
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import data  # noqa: E402
import measure  # noqa: E402
from procs import parse_minio_metrics  # noqa: E402

SMALL = data.Params(rows=10_007, days=3, features=7, row_group_rows=500, seed=5)


def all_rows(p: data.Params) -> pa.Table:
    schema = data.iceberg_schema(p.features).as_arrow()
    return pa.concat_tables([data.rows_of_day(p, d, schema) for d in range(p.days)])


def test_days_partition_the_rows_and_ts_ascends():
    schema = data.iceberg_schema(SMALL.features).as_arrow()
    seen = 0
    for day in range(SMALL.days):
        t = data.rows_of_day(SMALL, day, schema)
        assert t.column("id").to_pylist() == list(range(seen, seen + t.num_rows))
        days = {(ts - data.START).days for ts in t.column("ts").to_pylist()}
        assert days == {day}
        seen += t.num_rows
    assert seen == SMALL.rows


def test_rows_are_deterministic_and_features_vary():
    a, b = all_rows(SMALL), all_rows(SMALL)
    assert a.equals(b)
    other = all_rows(data.Params(SMALL.rows, SMALL.days, SMALL.features, SMALL.row_group_rows, seed=6))
    assert not a.column("f001").equals(other.column("f001"))
    for i, name in enumerate(data.feature_names(SMALL.features)):
        col = a.column(name)
        distinct = pc.count_distinct(col).as_py()
        if data.feature_kind(i) == "string":
            assert 100 < distinct <= data.VOCABULARY
        else:
            assert distinct > 0.9 * SMALL.rows
        if data.feature_kind(i) == "double":
            assert 0 <= pc.min(col).as_py() and pc.max(col).as_py() < 1000


@pytest.mark.parametrize("start,selectivity", [(0.0, 0.01), (0.43, 0.02), (0.9, 0.1), (0.5, 0.5)])
def test_window_matches_filtering_the_rows(start, selectivity):
    w = measure.window(SMALL, start, selectivity)
    t = all_rows(SMALL)
    ts = t.column("ts")
    lo = pa.scalar(w.lo, pa.timestamp("us"))
    hi = pa.scalar(w.hi, pa.timestamp("us"))
    kept = t.filter(pc.and_(pc.greater_equal(ts, lo), pc.less_equal(ts, hi)))
    assert kept.num_rows == w.rows
    assert kept.num_rows == pytest.approx(SMALL.rows * selectivity, rel=0.05)
    assert pc.sum(kept.column("id")).as_py() == w.id_sum
    assert kept.column("id")[0].as_py() == w.first


def test_checksum_ignores_order_and_string_width_but_not_values():
    t = pa.table({"id": pa.array([2, 1], pa.int64()), "s": pa.array(["b", "a"]), "x": [0.5, 1.5]})
    same = pa.table({"id": pa.array([1, 2], pa.int32()), "s": pa.array(["a", "b"], pa.large_string()), "x": [1.5, 0.5]})
    cols = ["id", "s", "x"]
    assert measure.checksum(t, cols) == measure.checksum(same, cols)
    assert measure.checksum(t, cols).id_sum == 3
    changed = t.set_column(2, "x", pa.array([0.5, 1.5000000001]))
    assert measure.checksum(t, cols).digest != measure.checksum(changed, cols).digest


def test_scan_figures():
    analyzed = [
        "Project: id  rows=8000 batches=1 bytes=337004 time=33.9ms",
        "  Scan: bench.wide [id, ts] filters=[between(ts, 'a', 'b')] partitions=1 snapshot=1 files=1/10 "
        "delete_files=0 row_groups=10/100 bytes_planned=1118960  rows=8000 batches=1 bytes=401004 "
        "time=33.9ms bytes_fetched=373050 requests=15",
    ]
    f = measure.scan_figures(analyzed)
    assert f == {"bytes_fetched": 373050, "requests": 15, "bytes_planned": 1118960, "files": [1, 10], "row_groups": [10, 100]}
    # no counters on the scan line: unknown, not zero
    f = measure.scan_figures(["Scan: t [a] files=2/2 bytes_planned=5  rows=3"])
    assert f["bytes_fetched"] is None and f["requests"] is None and f["files"] == [2, 2] and f["row_groups"] is None


def test_parse_minio_metrics():
    text = "\n".join([
        "# HELP minio_api_requests_total Total number of requests",
        'minio_api_requests_total{name="GetObject",server="127.0.0.1:1",type="s3"} 12',
        'minio_api_requests_total{name="HeadObject",server="127.0.0.1:1",type="s3"} 3',
        'minio_api_requests_traffic_sent_bytes{server="127.0.0.1:1",type="s3"} 1.000424e+06',
        'minio_api_requests_traffic_received_bytes{server="127.0.0.1:1",type="s3"} 7',
        'minio_api_requests_4xx_errors_total{name="GetObject",server="127.0.0.1:1",type="s3"} 1',
    ])
    assert parse_minio_metrics(text) == (1_000_424, 15)
