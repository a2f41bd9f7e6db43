"""Training reads: warm epochs into torch tensors from cachedb, against a raw Flight server and
against re-reading Parquet from MinIO every epoch.

The table `bench.train` (bench/training/train_table.py: id, split, label and float features)
is written with pyiceberg into MinIO on first use and cached in bench/out/. A fresh
`cachedb serve --workers N` (head and N data nodes in one process) materializes the dataset
`bench_train`: id, the first --columns features and label of the rows with split < 8 (80 %).
Four ways to read one epoch of those rows into torch tensors, in batches of --batch-size rows,
in this process, are timed interleaved after one untimed warm-up each:

a. cachedb: `cachedb.CacheDataset` (rank 0 of 1, shuffled by seed and epoch, a new epoch each
   run), one stream per data node read at once and merged into the epoch's order (a batch holds
   rows of every partition, so of both nodes), each merged unit converted to tensors once
b. raw-flight: bench/training/rawflight, a trivial arrow-go Flight server holding the same rows
   (an Arrow IPC snapshot of the dataset) and streaming them as they are over DoGet, as many
   streams as cachedb had endpoints, in record batches of cachedb's size; read with the same
   client code (pyarrow.flight, the same parallel endpoint reader, batching and tensor
   conversion), no shuffle: Flight as arrow-go serves it (cachedb's nodes send with
   internal/flightwire, one copy of each message where arrow-go's writer makes three)
b'. raw-flight-units: the same, each record batch converted to tensors once and the tensors
   sliced into batches, as cachedb converts its merged units
c. pyarrow-reread: the table's Parquet files read from MinIO with pyarrow every epoch (the
   needed columns, the filter pushed into the read), cut into the same tensors, no shuffle:
   what a job without cachedb does

Every epoch is checked: its rows and the sum of their ids must be the dataset's. Then the loop
of examples/train_ddp.py (2 ranks under gloo, 2 DataLoader workers each, its MLP) runs
--loop-epochs epochs from cachedb and from the Parquet files (bench/training/parquet_epochs.py:
files dealt to ranks and workers, rows shuffled per file); its warm epochs are compared.

Prints a table and a bar chart, writes bench/results/training.json. A benchmark, never a test:
nothing asserts a speed.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "iceberg"))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "examples"))

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.dataset as pads  # noqa: E402
import pyarrow.flight as flight  # noqa: E402
import torch  # noqa: E402

import cachedb  # noqa: E402
import train_table  # noqa: E402
from cachedb._flight import FlightClients  # noqa: E402
from cachedb.dataset import arrow_to_tensors, rebatch, stream_endpoints  # noqa: E402
from procs import Cachedb, Minio  # noqa: E402


def _load_iceberg_bench():
    """bench/iceberg/main.py under another name: this file is `main` too."""
    spec = importlib.util.spec_from_file_location("iceberg_bench", HERE.parent / "iceberg" / "main.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


iceberg_bench = _load_iceberg_bench()
log = iceberg_bench.log
DATASET = "bench_train"
LOST_AFTER = "30s"  # see bench/cluster: a starved heartbeat must not drop partitions mid-run


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000, help="rows in the table")
    ap.add_argument("--files", type=int, default=8, help="data files (one per append)")
    ap.add_argument("--features", type=int, default=32, help="float feature columns in the table")
    ap.add_argument("--columns", type=int, default=16, help="feature columns the dataset keeps")
    ap.add_argument("--row-group-rows", type=int, default=131_072, help="rows per Parquet row group")
    ap.add_argument("--seed", type=int, default=42, help="generator seed")
    ap.add_argument("--nodes", type=int, default=2, help="data nodes")
    ap.add_argument("--batch-size", type=int, default=4096, help="rows per tensor batch")
    ap.add_argument("--prefetch", type=int, default=2, help="endpoints read at once")
    ap.add_argument("--runs", type=int, default=15, help="timed epochs per system; the median is reported")
    ap.add_argument("--warmup", type=int, default=1, help="untimed epochs per system first")
    ap.add_argument("--pause", type=float, default=0.2, help="seconds of rest before each timed epoch")
    ap.add_argument("--loop-epochs", type=int, default=3, help="epochs of the example's loop per source (0: skip it)")
    ap.add_argument("--loop-batch-size", type=int, default=2048, help="the loop's batch size")
    ap.add_argument("--cachedb", default=str(REPO / "bin" / "cachedb"), help="cachedb binary (make build)")
    ap.add_argument("--rawflight", default=str(REPO / "bin" / "rawflight"), help="raw Flight server (make bench-training builds it)")
    ap.add_argument("--out", default=str(REPO / "bench" / "out"), help="directory of the cached table")
    ap.add_argument("--no-cache", action="store_true", help="write the table into a temporary directory and drop it")
    ap.add_argument("--results", default=str(REPO / "bench" / "results" / "training.json"), help="where to write the figures")
    args = ap.parse_args()
    if not (1 <= args.columns <= args.features and args.files >= 1 and args.rows >= args.files and args.runs >= 1
            and args.nodes >= 1 and args.batch_size >= 1 and args.features >= 6):
        ap.error("need 1 <= columns <= features, features >= 6 (the loop's model reads f0..f5), rows >= files >= 1, "
                 "runs >= 1, nodes >= 1, batch size >= 1")
    return args


def tensor_bytes(batch: dict) -> int:
    return sum(t.numel() * t.element_size() for t in batch.values())


class Epochs:
    """One system's timed epochs and what each delivered."""

    def __init__(self, name: str, read, minio: Minio):
        self.name, self.read = name, read  # read(epoch) -> iterator of dicts of tensors
        self.minio = minio  # whose S3 traffic each epoch is counted (outside the timing)
        self.reset()

    def reset(self) -> None:
        """Forgets the epochs run so far (the warm-ups)."""
        self.runs_s: list[float] = []
        self.rows: list[int] = []
        self.bytes: list[int] = []
        self.id_sums: list[int] = []
        self.first_ids: list[list[int]] = []
        self.s3: list[tuple[int, int]] = []  # (bytes, requests) MinIO served during each epoch

    def run(self, epoch: int) -> float:
        rows = nbytes = id_sum = 0
        first = None
        s3_before = self.minio.served()
        began = time.perf_counter()
        for batch in self.read(epoch):
            rows += len(batch["id"])
            nbytes += tensor_bytes(batch)
            id_sum += int(batch["id"].sum())
            if first is None:
                first = batch["id"][:8].tolist()
        elapsed = time.perf_counter() - began
        s3_after = self.minio.served()
        self.s3.append((s3_after[0] - s3_before[0], s3_after[1] - s3_before[1]))
        self.runs_s.append(elapsed)
        self.rows.append(rows)
        self.bytes.append(nbytes)
        self.id_sums.append(id_sum)
        self.first_ids.append(first or [])
        return elapsed

    def report(self) -> dict:
        median = statistics.median(self.runs_s)
        return {
            "runs_s": self.runs_s, "median_s": median, "best_s": min(self.runs_s),
            "rows": self.rows[0], "tensor_bytes": self.bytes[0],
            "rows_per_s": self.rows[0] / median, "gb_per_s": self.bytes[0] / 1e9 / median,
            "first_ids_per_run": self.first_ids,
            "s3_bytes_per_epoch": statistics.median(b for b, _ in self.s3),
            "s3_requests_per_epoch": statistics.median(n for _, n in self.s3),
        }


def cachedb_reader(head: str, columns: list[str], args):
    # Made once, as a training job does; each epoch is set_epoch and a new iteration.
    ds = cachedb.CacheDataset(head, DATASET, columns=columns, batch_size=args.batch_size, seed=7,
                              rank=0, world_size=1, prefetch=args.prefetch)

    def read(epoch: int):
        ds.set_epoch(epoch)
        return iter(ds)
    return read


def raw_reader(address: str, args):
    clients = FlightClients(address)

    def read(epoch: int):
        info = clients.get().get_flight_info(flight.FlightDescriptor.for_command(b"all"), clients.call_options())
        for rb in rebatch(stream_endpoints(clients, info.endpoints, args.prefetch), args.batch_size):
            yield arrow_to_tensors(rb)
    return read


def raw_units_reader(address: str, batch_rows: int, args):
    """raw_reader converting as cachedb converts the units it merges: each record batch (a
    multiple of the batch size) once, its tensors sliced into batches."""
    clients = FlightClients(address)

    def read(epoch: int):
        info = clients.get().get_flight_info(flight.FlightDescriptor.for_command(b"all"), clients.call_options())
        for rb in rebatch(stream_endpoints(clients, info.endpoints, args.prefetch), batch_rows):
            tensors = arrow_to_tensors(rb)
            for at in range(0, rb.num_rows, args.batch_size):
                yield {k: t[at:at + args.batch_size] for k, t in tensors.items()}
    return read


def pyarrow_reader(minio: Minio, paths: list[str], columns: list[str], args):
    def read(epoch: int):
        fs = minio.filesystem()  # a new client each epoch: nothing is kept between epochs
        ds = pads.dataset(paths, filesystem=fs, format="parquet")
        batches = ds.to_batches(columns=columns, filter=pc.field("split") < train_table.TRAIN_SPLITS)
        for rb in rebatch(batches, args.batch_size):
            yield arrow_to_tensors(rb)
    return read


def start_rawflight(binary: str, ipc_path: pathlib.Path, streams: int, batch_rows: int) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([binary, "-file", str(ipc_path), "-streams", str(streams), "-batch-rows", str(batch_rows)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    line = proc.stdout.readline().strip()
    if not line.startswith("listening on "):
        proc.kill()
        raise RuntimeError(f"rawflight did not start: {line} {proc.stderr.read()}")
    return proc, line.removeprefix("listening on ")


def snapshot(head: str, query: str, path: pathlib.Path, expected_rows: int) -> int:
    """Writes the dataset's rows, as its training reads stream them (the types it holds), to an
    Arrow IPC file for the raw server; returns their bytes."""
    clients = FlightClients(head)
    try:
        t = clients.read_table(query, cachedb._flight.option_headers({"shuffle": "false"}))
    finally:
        clients.close()
    if t.num_rows != expected_rows:
        raise RuntimeError(f"the dataset has {t.num_rows} rows, expected {expected_rows}")
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, t.schema) as w:
        w.write_table(t, max_chunksize=1 << 16)
    return t.nbytes


def cachedb_batch_rows(head: str, query: str, args) -> tuple[int, int]:
    """(endpoints of a one-reader epoch, rows of its first record batch) as cachedb sends them."""
    clients = FlightClients(head)
    try:
        info = clients.flight_info(query, cachedb._flight.option_headers({"batch_size": args.batch_size, "seed": 7, "node_streams": True}))
        reader = clients.do_get(info.endpoints[0])
        rows = 0
        with contextlib.suppress(StopIteration):
            for _ in range(3):  # the first may be short, where a window ends early
                rows = max(rows, reader.read_chunk().data.num_rows)
        reader.cancel()
        return len(info.endpoints), rows
    finally:
        clients.close()


def run_loop(source: str, head: str, dataset: str, report: pathlib.Path, args) -> list[dict]:
    """examples/train_ddp.py's loop from one source; its per-epoch figures."""
    import parquet_epochs
    import train_ddp

    report.unlink(missing_ok=True)
    argv = ["--head", head, "--dataset", dataset, "--id-column", "id", "--epochs", str(args.loop_epochs),
            "--batch-size", str(args.loop_batch_size), "--report", str(report)]
    make_loader = train_ddp.cachedb_loader if source == "cachedb" else parquet_epochs.parquet_loader
    began = time.perf_counter()
    train_ddp.main(argv, make_loader=make_loader)
    log(f"loop from {source}: {time.perf_counter() - began:.1f}s")
    return [json.loads(line) for line in report.read_text().splitlines()]


def loop_summary(epochs: list[dict]) -> dict:
    warm = epochs[1:] or epochs  # epoch 0 pays for starting the workers
    return {
        "epochs": epochs,
        "warm_epoch_median_s": statistics.median(e["seconds"] for e in warm),
        "warm_wait_share": statistics.median(e["waiting_seconds"] / e["seconds"] for e in warm),
        "steps_per_epoch": epochs[0]["steps"],
        "rows_per_rank": epochs[0]["rows_per_rank"],
    }


def main() -> int:
    args = parse_args()
    for binary in (args.cachedb, args.rawflight):
        if not pathlib.Path(binary).exists():
            log(f"{binary} not found: run `make bench-training` (it builds bin/cachedb and bin/rawflight)")
            return 2
    p = train_table.Params(args.rows, args.files, args.features, args.row_group_rows, args.seed)
    columns = ["id", *train_table.feature_names(args.features)[:args.columns], "label"]
    began_all = time.monotonic()
    want = train_table.expected_train(p)
    load_average = {"start": os.getloadavg()}

    with contextlib.ExitStack() as stack:
        minio, db_path = iceberg_bench.minio_with_table(stack, args, p, train_table.write_table, train_table.IDENT)
        tbl = train_table.open_catalog(str(db_path), minio.pyiceberg_properties()).load_table(train_table.IDENT)
        tasks = sorted(tbl.scan().plan_files(), key=lambda t: t.file.file_path)
        paths = [t.file.file_path.removeprefix("s3://") for t in tasks]
        table_info = {"table": train_table.IDENT, "rows": sum(t.file.record_count for t in tasks), "data_files": len(tasks),
                      "data_bytes": sum(t.file.file_size_in_bytes for t in tasks), "columns": 3 + args.features}

        tmp = pathlib.Path(tempfile.mkdtemp(prefix="bench-training-"))
        stack.callback(shutil.rmtree, tmp, ignore_errors=True)
        config = tmp / "cachedb.yaml"
        iceberg_bench.write_cachedb_config(config, minio, db_path)
        env = {"CACHEDB_S3_ACCESS_KEY_ID": minio.access_key_id, "CACHEDB_S3_SECRET_ACCESS_KEY": minio.secret_access_key}
        server = Cachedb(pathlib.Path(args.cachedb), config,
                         ["--no-demo", "--no-warehouse", "--workers", str(args.nodes), "--lost-after", LOST_AFTER], env, "training")
        stack.callback(server.stop)
        head = f"127.0.0.1:{server.port}"
        try:
            return measure(args, p, want, columns, head, server, minio, paths, table_info, tmp, load_average, began_all, stack)
        except Exception:
            log(f"cachedb log:\n{server.log()[-3000:]}")
            raise


def measure(args, p, want, columns, head, server, minio, paths, table_info, tmp, load_average, began_all, stack) -> int:
    spec = {"name": DATASET, "table": train_table.IDENT, "columns": columns,
            "filter": f"split < {train_table.TRAIN_SPLITS}", "partitions": 4 * args.nodes}
    deadline = time.monotonic() + 30
    while True:
        try:
            with cachedb.connect(head) as db:
                alive = db.sql("SELECT count(*) AS n FROM system.nodes WHERE state = 'alive'").column("n")[0].as_py()
            if alive == args.nodes:
                break
        except Exception:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{args.nodes} data nodes did not join within 30s")
        time.sleep(0.1)
    with cachedb.connect(head) as db:
        began = time.perf_counter()
        loaded = db.load(spec)
        load_s = time.perf_counter() - began
    log(f"loaded {DATASET}: {loaded['rows']} rows in {loaded['partitions']} partitions, {load_s:.2f}s")
    if loaded["rows"] != want["rows"]:
        raise RuntimeError(f"{DATASET} holds {loaded['rows']} rows, expected {want['rows']}")
    query = f"SELECT {', '.join(columns)} FROM {DATASET}"
    ipc_path = tmp / "dataset.arrow"
    arrow_bytes = snapshot(head, query, ipc_path, want["rows"])
    streams, batch_rows = cachedb_batch_rows(head, query, args)
    raw, raw_addr = start_rawflight(args.rawflight, ipc_path, streams, batch_rows)
    stack.callback(raw.kill)
    log(f"rawflight at {raw_addr}: {streams} streams of {batch_rows}-row batches")

    systems = [
        Epochs("cachedb", cachedb_reader(head, columns, args), minio),
        Epochs("raw-flight", raw_reader(raw_addr, args), minio),
        Epochs("raw-flight-units", raw_units_reader(raw_addr, batch_rows, args), minio),
        Epochs("pyarrow-reread", pyarrow_reader(minio, paths, columns, args), minio),
    ]
    for s in systems:
        for w in range(args.warmup):
            log(f"warm-up {s.name}: {s.run(1000 + w):.3f}s")
        s.reset()
    # Each round starts with the next system, so that none always runs right after the same
    # one (the re-read, which reads and decodes from object storage, leaves the caches cold for
    # whatever follows it).
    for i in range(args.runs):
        for s in systems[i % len(systems):] + systems[:i % len(systems)]:
            time.sleep(args.pause)
            log(f"run {i + 1}/{args.runs} {s.name}: {s.run(i):.3f}s")

    loop = {}
    if args.loop_epochs:
        plan = tmp / "parquet-plan.json"
        plan.write_text(json.dumps({
            "files": paths, "rows_per_file": want["rows_per_file"], "train_splits": train_table.TRAIN_SPLITS,
            "s3": {"endpoint": minio.endpoint, "region": minio.region,
                   "access_key": minio.access_key_id, "secret_key": minio.secret_access_key},
        }))
        plan.chmod(0o600)
        loop["cachedb"] = loop_summary(run_loop("cachedb", head, DATASET, tmp / "loop-cachedb.jsonl", args))
        loop["pyarrow-reread"] = loop_summary(run_loop("parquet", head, str(plan), tmp / "loop-parquet.jsonl", args))

    load_average["end"] = os.getloadavg()
    report = build_report(args, p, want, columns, table_info, loaded, load_s, arrow_bytes, streams, batch_rows,
                          systems, loop, server, time.monotonic() - began_all)
    report["machine"]["load_average"] = load_average
    sys.stderr.flush()
    print_report(report)
    path = pathlib.Path(args.results)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    log(f"wrote {path}")
    for problem in report["problems"]:
        log(f"FAIL: {problem}")
    return 1 if report["problems"] else 0


def build_report(args, p, want, columns, table_info, loaded, load_s, arrow_bytes, streams, batch_rows, systems, loop, server, total_s) -> dict:
    per = {s.name: s.report() for s in systems}
    problems = []
    for s in systems:
        for i, (rows, id_sum) in enumerate(zip(s.rows, s.id_sums)):
            if rows != want["rows"] or id_sum != want["id_sum"]:
                problems.append(f"{s.name} run {i + 1}: {rows} rows with id sum {id_sum}, expected {want['rows']} and {want['id_sum']}")
    firsts = per["cachedb"]["first_ids_per_run"]
    if len(firsts) > 1 and len({tuple(f) for f in firsts}) != len(firsts):
        problems.append("cachedb: two epochs began with the same rows; epochs must be reshuffled")
    if server.log().count("data node lost"):
        problems.append("the head marked a data node lost during the run")
    for name, summary in loop.items():
        if summary["steps_per_epoch"] == 0:
            problems.append(f"loop from {name}: no steps")
    c = per["cachedb"]["median_s"]
    ratios = {
        "cachedb_vs_raw_flight_throughput": per["raw-flight"]["median_s"] / c,
        "cachedb_vs_raw_flight_units_throughput": per["raw-flight-units"]["median_s"] / c,
        "cachedb_vs_pyarrow_reread_throughput": per["pyarrow-reread"]["median_s"] / c,
    }
    if loop:
        ratios["loop_epoch_pyarrow_reread_vs_cachedb"] = loop["pyarrow-reread"]["warm_epoch_median_s"] / loop["cachedb"]["warm_epoch_median_s"]
    return {
        "benchmark": "training",
        "when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": iceberg_bench.machine() | {"torch": torch.__version__},
        "parameters": {k: v for k, v in vars(args).items() if k not in ("cachedb", "rawflight", "out", "results")},
        "table": table_info,
        "dataset": {"name": DATASET, "columns": columns, "filter": f"split < {train_table.TRAIN_SPLITS}",
                    "rows": loaded["rows"], "bytes_held": loaded["bytes"], "partitions": loaded["partitions"],
                    "load_s": load_s, "arrow_bytes": arrow_bytes},
        "raw_flight": {"streams": streams, "batch_rows": batch_rows},
        "epochs": per,
        "loop": loop,
        "ratios": ratios,
        "goals": {"throughput_vs_raw_flight": 0.8, "throughput_vs_pyarrow_reread": 5.0},
        "problems": problems,
        "total_s": total_s,
    }


def print_report(r: dict) -> None:
    d, t = r["dataset"], r["table"]
    print(f"{t['table']}: {t['rows']} rows, {t['columns']} columns, {t['data_files']} files, {t['data_bytes'] / 1e6:.0f} MB in MinIO; "
          f"dataset {len(d['columns'])} columns where {d['filter']}: {d['rows']} rows, {d['arrow_bytes'] / 1e6:.0f} MB "
          f"({r['machine']['cpus']} CPUs, {r['parameters']['nodes']} data nodes, batches of {r['parameters']['batch_size']}, "
          f"medians of {r['parameters']['runs']} warm epochs)")
    print(f"{'system':<16} {'epoch s':>8} {'Mrows/s':>8} {'GB/s':>6} {'cachedb vs it':>14} {'S3 MB/epoch':>12} {'S3 requests':>12}")
    c = r["epochs"]["cachedb"]["median_s"]
    for name, e in r["epochs"].items():
        print(f"{name:<16} {e['median_s']:>8.3f} {e['rows_per_s'] / 1e6:>8.2f} {e['gb_per_s']:>6.2f} {e['median_s'] / c:>13.2f}x "
              f"{e['s3_bytes_per_epoch'] / 1e6:>12.1f} {e['s3_requests_per_epoch']:>12.0f}")
    top = max(e["gb_per_s"] for e in r["epochs"].values())
    print("GB/s into torch tensors")
    for name, e in r["epochs"].items():
        print(f"  {name:<16} {'#' * max(1, round(40 * e['gb_per_s'] / top)):<40} {e['gb_per_s']:.2f}")
    if r["loop"]:
        print("examples/train_ddp.py loop (2 ranks x 2 workers), warm epochs:")
        print(f"{'source':<16} {'epoch s':>8} {'waiting':>8} {'steps':>6}")
        for name, l in r["loop"].items():
            print(f"{name:<16} {l['warm_epoch_median_s']:>8.2f} {100 * l['warm_wait_share']:>7.1f}% {l['steps_per_epoch']:>6}")
    ratios = r["ratios"]
    print(f"cachedb throughput: {ratios['cachedb_vs_raw_flight_throughput']:.2f}x raw Flight (goal >= 0.8), "
          f"{ratios['cachedb_vs_raw_flight_units_throughput']:.2f}x raw Flight converting per record batch, "
          f"{ratios['cachedb_vs_pyarrow_reread_throughput']:.2f}x pyarrow re-read (goal >= 5)"
          + (f"; loop epoch from Parquet / from cachedb: {ratios['loop_epoch_pyarrow_reread_vs_cachedb']:.2f}x" if "loop_epoch_pyarrow_reread_vs_cachedb" in ratios else ""))
    print(f"answers as expected: {not r['problems']} ({r['total_s']:.0f}s in all)")


if __name__ == "__main__":
    sys.exit(main())
