#!/usr/bin/env bash
# A loopback stand-in for Kubeflow Trainer's data cache: a cachedb head and N workers started as
# the torch-distributed-with-cache runtime's pods start them (the commands `head HOST PORT` and
# `worker HOST PORT`, run through links of those names, with only Kubeflow's environment), in
# Kubeflow's own local mode (RUNTIME_ENV: everything on 127.0.0.1, workers on the ports after the
# head's), so a DataCacheDataset can be tried against it without a cluster.
#
#   scripts/kubeflow-standin.sh [-n WORKERS] [-p PORT] [-H HEALTH_PORT] [--check]
#
#   -n WORKERS      data nodes (default 3): LWS_GROUP_SIZE is WORKERS + 1
#   -p PORT         the head's Flight port (default 50051); worker i listens on PORT + i
#   -H HEALTH_PORT  the head's HTTP port for /ready (default 8080); worker i's is HEALTH_PORT + i
#   --check         once every /ready says 200, read the dataset as DataCacheDataset does for
#                   1, 4 and 7 shards, check every row arrives once, stop and exit (needs the
#                   test environment, scripts/venv.sh)
#
# The table: METADATA_LOC, SCHEMA_NAME and TABLE_NAME as Kubeflow sets them (s3:// or s3a://,
# with AWS_* credentials and, for MinIO, CACHEDB_S3_ENDPOINT), or by default demo.rides of an
# embedded demo warehouse generated under the log directory. The binary is $CACHEDB_BIN, else
# bin/cachedb (make build). Logs go to $KUBEFLOW_STANDIN_DIR (default a new temporary
# directory). Ctrl-C stops every process it started.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
workers=3
port=50051
health=8080
check=false
while [[ $# -gt 0 ]]; do
	case "$1" in
	-n) workers="$2"; shift 2 ;;
	-p) port="$2"; shift 2 ;;
	-H) health="$2"; shift 2 ;;
	--check) check=true; shift ;;
	*) echo "usage: $0 [-n WORKERS] [-p PORT] [-H HEALTH_PORT] [--check]" >&2; exit 2 ;;
	esac
done

bin="${CACHEDB_BIN:-$repo/bin/cachedb}"
if [[ ! -x "$bin" ]]; then
	echo "cachedb binary $bin not found: run make build (or set CACHEDB_BIN)" >&2
	exit 1
fi
dir="${KUBEFLOW_STANDIN_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/kubeflow-standin.XXXXXX")}"
mkdir -p "$dir/bin"
# The image's links: the pods' commands are `head` and `worker`.
ln -sf "$bin" "$dir/bin/head"
ln -sf "$bin" "$dir/bin/worker"

pids=()
stop_all() {
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# wait_log FILE PATTERN PID: until FILE has a line matching PATTERN (or PID exits).
wait_log() {
	for _ in $(seq 600); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || { echo "process $3 exited; its log $1:" >&2; cat "$1" >&2; return 1; }
		sleep 0.1
	done
	echo "timed out waiting for '$2' in $1" >&2
	return 1
}

if [[ -z "${METADATA_LOC:-}" ]]; then
	# Generate the demo warehouse with a short-lived serve, then serve its demo.rides.
	"$bin" serve --warehouse "$dir/warehouse" --listen 127.0.0.1:0 >"$dir/warehouse.log" 2>&1 &
	gen=$!
	pids+=("$gen")
	wait_log "$dir/warehouse.log" "cachedb listening on" "$gen"
	kill "$gen"
	wait "$gen" 2>/dev/null || true
	METADATA_LOC="$(ls "$dir"/warehouse/gen-*/warehouse/demo.db/rides/metadata/*.metadata.json | sort | tail -1)"
	SCHEMA_NAME=demo
	TABLE_NAME=rides
fi
export METADATA_LOC SCHEMA_NAME="${SCHEMA_NAME:-default}" TABLE_NAME
export RUNTIME_ENV=LOCAL LWS_GROUP_SIZE=$((workers + 1)) AWS_EC2_METADATA_DISABLED="${AWS_EC2_METADATA_DISABLED:-true}"
# Kubeflow's local mode puts the head at 127.0.0.1:50051; another port needs cachedb's own
# variable.
if [[ "$port" != 50051 ]]; then
	export CACHEDB_HEAD="127.0.0.1:$port"
fi

LWS_WORKER_INDEX=0 HEALTH_PORT="$health" "$dir/bin/head" 127.0.0.1 "$port" >"$dir/head.log" 2>&1 &
pids+=("$!")
for i in $(seq "$workers"); do
	LWS_WORKER_INDEX="$i" HEALTH_PORT=$((health + i)) "$dir/bin/worker" 127.0.0.1 $((port + i)) >"$dir/worker-$i.log" 2>&1 &
	pids+=("$!")
done

echo "waiting for /ready on ports $health..$((health + workers)) (logs in $dir)" >&2
for i in $(seq 0 "$workers"); do
	for _ in $(seq 1200); do
		if [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((health + i))/ready")" == 200 ]]; then
			continue 2
		fi
		kill -0 "${pids[-1 - workers + i]}" 2>/dev/null || { echo "a process exited; logs in $dir" >&2; tail -n 20 "$dir"/*.log >&2; exit 1; }
		sleep 0.1
	done
	echo "port $((health + i)) never answered /ready with 200; logs in $dir" >&2
	exit 1
done
echo "ready: grpc://127.0.0.1:$port serves $SCHEMA_NAME.$TABLE_NAME as dataset $TABLE_NAME to DataCacheDataset" >&2

if ! $check; then
	echo "Ctrl-C stops it" >&2
	wait
	exit 0
fi

"$("$repo/scripts/venv.sh")/bin/python" - "grpc://127.0.0.1:$port" <<'EOF'
# The calls of Kubeflow Trainer's DataCacheDataset.__iter__ (examples/pytorch/data-cache/
# fine-tune-with-cache.ipynb in kubeflow/trainer), over all shards of each shard count.
import sys

import pyarrow as pa
import pyarrow.flight
from pyarrow._flight import FlightClient

endpoint = sys.argv[1]
counts = []
for total_workers in (1, 4, 7):
    rows, seen = 0, set()
    for index in range(total_workers):
        descriptor = pa.flight.FlightDescriptor.for_path(*[s for s in [str(index), str(total_workers)]])
        client = pa.flight.connect(endpoint)
        flight_info = client.get_flight_info(descriptor)
        for ep in flight_info.endpoints:
            for location in ep.locations:
                for rb in FlightClient(location.uri).do_get(ep.ticket):
                    rows += rb.data.num_rows
                    seen.update(map(tuple, zip(*(c.to_pylist() for c in rb.data.columns))))
    counts.append(rows)
    print(f"{total_workers} shards: {rows} rows, {len(seen)} distinct", file=sys.stderr)
    if rows != len(seen):
        sys.exit(f"{total_workers} shards read {rows} rows but only {len(seen)} distinct ones")
if len(set(counts)) != 1 or counts[0] == 0:
    sys.exit(f"the shard counts read different row totals: {counts}")
print("every row once for 1, 4 and 7 shards", file=sys.stderr)
EOF
