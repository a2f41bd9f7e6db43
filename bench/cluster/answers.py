"""The cluster benchmark's workload and its known answers: nothing here starts a process.

The dataset keeps `COLUMNS` (id, ts and the first ten features) of the rows of bench.wide whose
`f001` (a double spread evenly over [0, 1000)) is below a threshold, 500 by default: about half
the rows. The aggregate groups the dataset's rows with `f000` (a 20-bit long) below a bound by
`f002` (one of 2,000 words) and counts, sums and averages `f004` (a double).

bench/iceberg/data.py generates every value from (id, column index, seed), so the expected
answers come from the generator itself, not from any system under test: a table generated with
only ten features holds exactly the first ten feature columns of the real one.
"""

from __future__ import annotations

import dataclasses
import math
import re

import pyarrow as pa
import pyarrow.compute as pc

import data
import measure

FEATURES = 10
COLUMNS = ["id", "ts", *data.feature_names(FEATURES)]
FILTER_COLUMN = "f001"  # double in [0, 1000): `f001 < t` keeps about t/1000 of the rows
KEY = "f002"  # string, one of data.VOCABULARY words
VALUE = "f004"  # double in [0, 1000)
COND_COLUMN = "f000"  # long in [0, 2^20)
IDENT = f"{data.NAMESPACE}.{data.TABLE}"


@dataclasses.dataclass(frozen=True)
class Workload:
    dataset: str  # the dataset's name
    threshold: float  # the dataset keeps FILTER_COLUMN < threshold
    cond: int  # the aggregate keeps COND_COLUMN < cond

    @property
    def dataset_filter(self) -> str:
        return f"{FILTER_COLUMN} < {self.threshold!r}"

    def spec(self) -> dict:
        """The `cachedb load` job spec (JSON is YAML)."""
        return {"name": self.dataset, "table": IDENT, "columns": COLUMNS, "filter": self.dataset_filter}

    @property
    def dataset_read_sql(self) -> str:
        return f"SELECT * FROM {self.dataset}"

    @property
    def iceberg_read_sql(self) -> str:
        """The dataset's own definition, run against the table: what a job without the dataset reads."""
        return f"SELECT {', '.join(COLUMNS)} FROM {IDENT} WHERE {self.dataset_filter}"

    def _aggregate(self, source: str, where: str) -> str:
        return (f"SELECT {KEY}, count(*) AS n, sum({VALUE}) AS s, avg({VALUE}) AS a "
                f"FROM {source} WHERE {where} GROUP BY {KEY}")

    @property
    def dataset_aggregate_sql(self) -> str:
        return self._aggregate(self.dataset, f"{COND_COLUMN} < {self.cond}")

    @property
    def iceberg_aggregate_sql(self) -> str:
        return self._aggregate(IDENT, f"{self.dataset_filter} AND {COND_COLUMN} < {self.cond}")


def expected_dataset(p: data.Params, w: Workload) -> pa.Table:
    """The dataset's rows, in id order, straight from the generator."""
    if p.features < FEATURES:
        raise ValueError(f"the table needs at least {FEATURES} feature columns, has {p.features}")
    narrow = dataclasses.replace(p, features=FEATURES)
    schema = data.iceberg_schema(FEATURES).as_arrow()
    rows = pa.concat_tables([data.rows_of_day(narrow, day, schema) for day in range(p.days)])
    return rows.filter(pc.less(rows.column(FILTER_COLUMN), w.threshold))


Groups = dict[str, tuple[int, float, float]]  # key -> (count, sum, avg)


def expected_groups(dataset: pa.Table, w: Workload) -> Groups:
    kept = dataset.filter(pc.less(dataset.column(COND_COLUMN), w.cond))
    g = kept.group_by(KEY).aggregate([(VALUE, "count"), (VALUE, "sum")])
    out = {}
    for k, n, s in zip(g.column(KEY).to_pylist(), g.column(f"{VALUE}_count").to_pylist(),
                       g.column(f"{VALUE}_sum").to_pylist()):
        out[k] = (n, s, s / n)
    return out


def groups_of(answer: pa.Table) -> Groups:
    """An aggregate answer (columns KEY, n, s, a) as a dict. Raises on a key seen twice: a
    GROUP BY answer must not hold one, and a dict would hide it."""
    out: Groups = {}
    for k, n, s, a in zip(*(answer.column(c).to_pylist() for c in (KEY, "n", "s", "a"))):
        if k in out:
            raise ValueError(f"group {k!r} appears twice in the answer")
        out[k] = (int(n), float(s), float(a))
    return out


def compare_groups(got: Groups, want: Groups, rel: float = 1e-9) -> list[str]:
    """What differs between two aggregate answers: keys and counts exactly, sums and averages
    to a relative `rel` (floating-point sums depend on the order rows are added in)."""
    problems = []
    missing, extra = want.keys() - got.keys(), got.keys() - want.keys()
    if missing:
        problems.append(f"{len(missing)} groups missing, e.g. {sorted(missing)[0]!r}")
    if extra:
        problems.append(f"{len(extra)} groups not expected, e.g. {sorted(extra)[0]!r}")
    for k in sorted(want.keys() & got.keys()):
        (gn, gs, ga), (wn, ws, wa) = got[k], want[k]
        if gn != wn:
            problems.append(f"group {k!r}: count {gn}, expected {wn}")
        elif not math.isclose(gs, ws, rel_tol=rel) or not math.isclose(ga, wa, rel_tol=rel):
            problems.append(f"group {k!r}: sum {gs!r} avg {ga!r}, expected {ws!r} {wa!r}")
        if len(problems) >= 5:
            break
    return problems


def totals(groups: Groups) -> dict:
    """Rows and the sum of VALUE over all groups: the figures the report shows per answer."""
    return {"groups": len(groups), "rows": sum(n for n, _, _ in groups.values()),
            "value_sum": math.fsum(s for _, s, _ in groups.values())}


def read_figures(table: pa.Table) -> dict:
    """Rows, sum of ids and sum of VALUE: the cheap figures every read answer is checked on."""
    return {
        "rows": table.num_rows,
        "id_sum": int(pc.sum(table.column("id")).as_py() or 0),
        "value_sum": float(pc.sum(table.column(VALUE)).as_py() or 0.0),
    }


def expected_read(dataset: pa.Table) -> dict:
    return {**read_figures(dataset), "digest": measure.checksum(dataset, COLUMNS).digest}


def check_read(answer: pa.Table, want: dict, full: bool) -> dict:
    """Columns, rows, sum of ids and sum of VALUE every time; the digest of all values when
    `full` (it costs about a second, so only the first timed run of each query pays it)."""
    if answer.column_names != COLUMNS:
        return {"problems": [f"columns {answer.column_names}, expected {COLUMNS}"], "as_expected": False}
    got = read_figures(answer)
    problems = []
    if got["rows"] != want["rows"] or got["id_sum"] != want["id_sum"]:
        problems.append(f"{got['rows']} rows with id sum {got['id_sum']}, expected {want['rows']} and {want['id_sum']}")
    if not math.isclose(got["value_sum"], want["value_sum"], rel_tol=1e-9):
        problems.append(f"sum({VALUE}) {got['value_sum']!r}, expected {want['value_sum']!r}")
    if full and not problems:
        got["digest"] = measure.checksum(answer, COLUMNS).digest
        if got["digest"] != want["digest"]:
            problems.append(f"digest {got['digest']}, expected {want['digest']}")
    return {**got, "problems": problems, "as_expected": not problems}


def check_aggregate(answer: pa.Table, want: Groups) -> dict:
    try:
        got = groups_of(answer)
    except (KeyError, ValueError) as e:
        return {"problems": [str(e)], "as_expected": False}
    problems = compare_groups(got, want)
    return {**totals(got), "problems": problems, "as_expected": not problems}


_SAMPLE = re.compile(r'^(\w+)\{([^}]*)\}\s+(\S+)$')
_NAME = re.compile(r'\bname="([^"]*)"')


def parse_minio_requests(text: str) -> tuple[int, dict[str, int]]:
    """MinIO's v3 api/requests metrics as (S3 bytes sent, {S3 API name: requests answered})."""
    sent, by_api = 0, {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if not m or 'type="s3"' not in m.group(2):
            continue
        if m.group(1) == "minio_api_requests_traffic_sent_bytes":
            sent += int(float(m.group(3)))
        elif m.group(1) == "minio_api_requests_total":
            name = _NAME.search(m.group(2))
            if name:
                by_api[name.group(1)] = by_api.get(name.group(1), 0) + int(float(m.group(3)))
    return sent, by_api


@dataclasses.dataclass(frozen=True)
class Served:
    """What MinIO answered between two readings of its counters."""

    bytes: int
    gets: int
    requests: int

    @staticmethod
    def between(before: tuple[int, dict[str, int]], after: tuple[int, dict[str, int]]) -> "Served":
        def total(d: dict[str, int]) -> int:
            return sum(d.values())

        return Served(bytes=after[0] - before[0],
                      gets=after[1].get("GetObject", 0) - before[1].get("GetObject", 0),
                      requests=total(after[1]) - total(before[1]))


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b
