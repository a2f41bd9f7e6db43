"""What the TPC-H tables take in cachedb's memory against their size as Parquet.

For each table: the bytes of its Iceberg data files (Parquet, as pyiceberg wrote them), the Arrow
bytes of the dataset made of it (`system.datasets.bytes`, summed over the data nodes), and the
server's resident memory before and after the tables were loaded (VmRSS, the process holding
head and data nodes). Memory tables (on the head, when there are no data nodes) are measured the
same way, from the resident memory they add, in a server of their own.
"""

from __future__ import annotations

import pathlib


def parquet_bytes(warehouse: pathlib.Path, table: str) -> int:
    """The bytes of a table's Parquet data files in the local warehouse."""
    data = warehouse / "tpch" / table / "data"
    return sum(p.stat().st_size for p in data.rglob("*.parquet"))


def rss_bytes(pid: int) -> int:
    """The resident set of a process (VmRSS), in bytes."""
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def dataset_bytes(conn) -> dict[str, int]:
    """The Arrow bytes of each dataset the server lists, by name."""
    with conn.cursor() as cur:
        cur.execute("SELECT name, bytes FROM system.datasets")
        return {name: int(b or 0) for name, b in cur.fetchall()}


def report(tables: dict[str, dict], rss: dict[str, int]) -> None:
    """Prints the per-table sizes and the resident memory the load added."""
    print(f"\n{'table':<10}{'parquet MB':>12}{'arrow MB':>10}{'x parquet':>10}")
    parquet_total = arrow_total = 0
    for name, t in tables.items():
        parquet_total += t["parquet_bytes"]
        arrow_total += t.get("arrow_bytes", 0)
        ratio = t["arrow_bytes"] / t["parquet_bytes"] if t.get("arrow_bytes") and t["parquet_bytes"] else None
        print(f"{name:<10}{t['parquet_bytes'] / 1e6:>12.1f}{t.get('arrow_bytes', 0) / 1e6:>10.1f}"
              f"{'-' if ratio is None else f'{ratio:.2f}':>10}")
    print(f"{'all':<10}{parquet_total / 1e6:>12.1f}{arrow_total / 1e6:>10.1f}"
          f"{arrow_total / parquet_total if parquet_total else 0:>10.2f}")
    for what, added in rss.items():
        print(f"resident memory added by the {what}: {added / 1e6:.0f} MB "
              f"({added / parquet_total if parquet_total else 0:.2f}x the Parquet)")
