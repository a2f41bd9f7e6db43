"""Checks of the cluster benchmark's own arithmetic: the expected dataset and aggregate, the
comparisons that decide whether answers agree, and MinIO metric parsing. No servers; run with

    "$(scripts/venv.sh)/bin/python" -m pytest -q bench/cluster
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "iceberg"))
sys.path.insert(0, str(HERE))

import answers  # noqa: E402
import data  # noqa: E402
from answers import Served, Workload  # noqa: E402

SMALL = data.Params(rows=20_011, days=3, features=14, row_group_rows=500, seed=5)
W = Workload(dataset="ds", threshold=500.0, cond=1 << 19)


def full_table(p: data.Params) -> pa.Table:
    schema = data.iceberg_schema(p.features).as_arrow()
    return pa.concat_tables([data.rows_of_day(p, d, schema) for d in range(p.days)])


@pytest.fixture(scope="module")
def dataset() -> pa.Table:
    return answers.expected_dataset(SMALL, W)


def test_expected_dataset_is_the_wide_tables_rows_and_columns(dataset):
    # Generated with ten features, it must equal the real (wider) table's first ten features.
    wide = full_table(SMALL)
    want = wide.filter(pc.less(wide.column("f001"), 500.0)).select(answers.COLUMNS)
    assert dataset.column_names == answers.COLUMNS
    assert dataset.equals(want)
    assert 0.45 < dataset.num_rows / SMALL.rows < 0.55  # "about half"


def test_expected_dataset_needs_ten_features():
    with pytest.raises(ValueError):
        answers.expected_dataset(dataclasses.replace(SMALL, features=9), W)


def test_expected_groups_match_a_plain_python_group_by(dataset):
    want: dict[str, list] = {}
    for row in dataset.to_pylist():
        if row["f000"] < W.cond:
            n, s = want.get(row["f002"], (0, 0.0))
            want[row["f002"]] = (n + 1, s + row["f004"])
    got = answers.expected_groups(dataset, W)
    assert got.keys() == want.keys()
    for k, (n, s) in want.items():
        assert got[k][0] == n
        assert got[k][1] == pytest.approx(s, rel=1e-12)
        assert got[k][2] == pytest.approx(s / n, rel=1e-12)


def answer_of(groups: answers.Groups) -> pa.Table:
    keys = list(groups)
    return pa.table({
        "f002": keys,
        "n": [groups[k][0] for k in keys],
        "s": [groups[k][1] for k in keys],
        "a": [groups[k][2] for k in keys],
    })


def test_aggregate_checks_accept_rounding_and_catch_real_differences(dataset):
    want = answers.expected_groups(dataset, W)
    k = sorted(want)[0]
    assert answers.check_aggregate(answer_of(want), want)["as_expected"]

    n, s, a = want[k]
    rounded = {**want, k: (n, s * (1 + 1e-14), a * (1 - 1e-14))}
    assert answers.check_aggregate(answer_of(rounded), want)["as_expected"]

    for wrong in (
        {**want, k: (n + 1, s, a)},  # a row too many
        {**want, k: (n, s + 1.0, a)},  # a sum off by one
        {**want, k: (n, s, a * 1.001)},
        {kk: v for kk, v in want.items() if kk != k},  # a group missing
        {**want, "zzz": (1, 1.0, 1.0)},  # a group too many
    ):
        r = answers.check_aggregate(answer_of(wrong), want)
        assert not r["as_expected"] and r["problems"]


def test_a_group_returned_twice_is_a_problem(dataset):
    want = answers.expected_groups(dataset, W)
    t = answer_of(want)
    doubled = pa.concat_tables([t, t.slice(0, 1)])
    r = answers.check_aggregate(doubled, want)
    assert not r["as_expected"] and "twice" in r["problems"][0]


def test_read_checks(dataset):
    want = answers.expected_read(dataset)
    assert want["rows"] == dataset.num_rows
    assert want["id_sum"] == sum(dataset.column("id").to_pylist())
    shuffled = dataset.take(pa.array(list(range(dataset.num_rows))[::-1]))  # order does not matter
    ok = answers.check_read(shuffled, want, full=True)
    assert ok["as_expected"] and ok["digest"] == want["digest"]

    short = answers.check_read(dataset.slice(1), want, full=True)
    assert not short["as_expected"]

    # Same rows, ids and f004 sum, one string changed: only the digest sees it.
    f008 = dataset.column("f008").to_pylist()
    f008[7] = "changed"
    changed = dataset.set_column(dataset.column_names.index("f008"), "f008", pa.array(f008))
    assert answers.check_read(changed, want, full=False)["as_expected"]
    assert not answers.check_read(changed, want, full=True)["as_expected"]

    narrow = answers.check_read(dataset.drop_columns(["f009"]), want, full=False)
    assert not narrow["as_expected"] and "columns" in narrow["problems"][0]


def test_workload_sql():
    assert W.iceberg_read_sql == ("SELECT id, ts, f000, f001, f002, f003, f004, f005, f006, f007, f008, f009 "
                                  "FROM bench.wide WHERE f001 < 500.0")
    assert W.dataset_aggregate_sql.endswith("FROM ds WHERE f000 < 524288 GROUP BY f002")
    # Over the table, the aggregate must also apply the dataset's own filter.
    assert "WHERE f001 < 500.0 AND f000 < 524288" in W.iceberg_aggregate_sql
    assert W.spec() == {"name": "ds", "table": "bench.wide", "columns": answers.COLUMNS, "filter": "f001 < 500.0"}


METRICS = """\
# HELP minio_api_requests_total Total number of requests
minio_api_requests_total{name="GetObject",server="127.0.0.1:9000",type="s3"} 1358
minio_api_requests_total{name="HeadObject",server="127.0.0.1:9000",type="s3"} 129
minio_api_requests_total{name="ListBuckets",server="127.0.0.1:9000",type="admin"} 5
minio_api_requests_traffic_sent_bytes{server="127.0.0.1:9000",type="s3"} 3.0157961e+07
minio_api_requests_traffic_sent_bytes{server="127.0.0.1:9000",type="admin"} 999
minio_api_requests_ttfb_seconds_distribution{le="+Inf",name="GetObject",server="127.0.0.1:9000",type="s3"} 1358
"""


def test_parse_minio_requests_and_differences():
    sent, by_api = answers.parse_minio_requests(METRICS)
    assert sent == 30_157_961
    assert by_api == {"GetObject": 1358, "HeadObject": 129}
    later = (sent + 100, {"GetObject": 1360, "HeadObject": 130, "ListObjectsV2": 1})
    assert Served.between((sent, by_api), later) == Served(bytes=100, gets=2, requests=4)
    assert Served.between((sent, by_api), (sent, dict(by_api))) == Served(0, 0, 0)
    # An API first seen after the first reading counts from zero.
    assert Served.between((0, {}), (0, {"GetObject": 3})).gets == 3


def test_ratio():
    assert answers.ratio(1.0, 4.0) == 0.25
    assert answers.ratio(1.0, 0) is None and answers.ratio(None, 1.0) is None
