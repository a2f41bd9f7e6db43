"""Whether cachedb's answer to a TPC-H query is DuckDB's.

Columns are matched by position (engines name expressions differently). Values compare as:
numbers (ints, floats, decimals alike) within a relative tolerance of 1e-6, or within half a
unit of the last digit cachedb reports when it answers a decimal (MySQL gives `avg` and `/` of
decimals 4 more digits of scale, DuckDB a double: both are right at cachedb's precision);
dates and strings exactly; NULL only with NULL. Rows compare in order when the query orders its
output, else as multisets.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re

import pyarrow as pa

REL_TOL = 1e-6
_ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)


def _column_values(col: pa.ChunkedArray) -> tuple[list, int | None]:
    """The column's Python values and, for a decimal column, its scale."""
    scale = col.type.scale if pa.types.is_decimal(col.type) else None
    return col.to_pylist(), scale


def rows(t: pa.Table) -> tuple[list[tuple], list[int | None]]:
    cols = [_column_values(t.column(i)) for i in range(t.num_columns)]
    return list(zip(*(c[0] for c in cols))) if cols else [], [c[1] for c in cols]


def _is_number(v) -> bool:
    return isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)


def values_equal(got, want, scale: int | None) -> bool:
    if got is None or want is None:
        return got is None and want is None
    if _is_number(got) and _is_number(want):
        g, w = float(got), float(want)
        if math.isclose(g, w, rel_tol=REL_TOL, abs_tol=1e-9):
            return True
        return scale is not None and abs(g - w) <= 0.5 * 10.0 ** -scale * (1 + 1e-9)
    if isinstance(got, datetime.datetime) or isinstance(want, datetime.datetime):
        return str(got)[:10] == str(want)[:10] if type(got) is not type(want) else got == want
    return got == want


def _sort_key(row: tuple):
    # A total order over mixed values for multiset comparison: numbers rounded so that near
    # values sort alike; None first.
    out = []
    for v in row:
        if v is None:
            out.append((0, ""))
        elif _is_number(v):
            out.append((1, f"{float(v):.6e}"))
        else:
            out.append((2, str(v)))
    return out


def compare(sql: str, got: pa.Table, want: pa.Table) -> str | None:
    """None when got answers like want; else a one-line reason."""
    if got.num_columns != want.num_columns:
        return f"{got.num_columns} columns, want {want.num_columns}"
    if got.num_rows != want.num_rows:
        return f"{got.num_rows} rows, want {want.num_rows}"
    g_rows, scales = rows(got)
    w_rows, _ = rows(want)
    ordered = bool(_ORDER_BY.search(sql))
    if not ordered:
        g_rows, w_rows = sorted(g_rows, key=_sort_key), sorted(w_rows, key=_sort_key)
    for i, (g, w) in enumerate(zip(g_rows, w_rows)):
        for j, (gv, wv) in enumerate(zip(g, w)):
            if not values_equal(gv, wv, scales[j]):
                where = f"row {i}" if ordered else f"sorted row {i}"
                return f"{where} column {j} ({got.column_names[j]}): {gv!r}, want {wv!r}"
    return None
