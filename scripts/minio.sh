#!/usr/bin/env bash
# MinIO for tests and demos. MinIO is AGPLv3: it runs as a separate process and is never linked.
#
#   scripts/minio.sh install          build the binary once (about 4 minutes) and print its path
#   scripts/minio.sh path             print where the binary is (or would be)
#   scripts/minio.sh start DIR PORT   serve DIR on 127.0.0.1:PORT in the background and print the
#                                     endpoint once it is ready
#
# The binary is $CACHEDB_MINIO when set, else ${XDG_CACHE_HOME:-~/.cache}/cachedb/bin/minio, the
# same place internal/testutil/minio looks. `start` uses MINIO_ROOT_USER / MINIO_ROOT_PASSWORD
# (default minioadmin / minioadmin), writes the server's log to DIR/.minio.log and its process id
# to DIR/.minio.pid; stop it with: kill "$(cat DIR/.minio.pid)".
set -euo pipefail

bin_dir="${XDG_CACHE_HOME:-$HOME/.cache}/cachedb/bin"
minio_bin="${CACHEDB_MINIO:-$bin_dir/minio}"

usage() {
	echo "usage: $0 install | path | start DIR PORT" >&2
	exit 2
}

install_minio() {
	if [[ -x "$minio_bin" ]]; then
		echo "$minio_bin"
		return
	fi
	if [[ -n "${CACHEDB_MINIO:-}" ]]; then
		echo "CACHEDB_MINIO=$CACHEDB_MINIO does not exist; unset it to install into $bin_dir" >&2
		exit 1
	fi
	mkdir -p "$bin_dir"
	echo "building MinIO into $bin_dir (takes a few minutes)" >&2
	GOBIN="$bin_dir" go install github.com/minio/minio@latest >&2
	echo "$minio_bin"
}

start_minio() {
	local dir="$1" port="$2"
	if [[ ! -x "$minio_bin" ]]; then
		echo "MinIO not installed: run $0 install" >&2
		exit 1
	fi
	if ! [[ "$port" =~ ^[0-9]+$ ]]; then
		echo "PORT must be a number, got '$port'" >&2
		exit 2
	fi
	mkdir -p "$dir"
	local endpoint="http://127.0.0.1:$port"
	MINIO_ROOT_USER="${MINIO_ROOT_USER:-minioadmin}" \
		MINIO_ROOT_PASSWORD="${MINIO_ROOT_PASSWORD:-minioadmin}" \
		MINIO_BROWSER=off MINIO_UPDATE=off \
		nohup "$minio_bin" server --quiet --address "127.0.0.1:$port" \
		--console-address "127.0.0.1:0" "$dir" >"$dir/.minio.log" 2>&1 &
	local pid=$!
	echo "$pid" >"$dir/.minio.pid"
	local i
	for ((i = 0; i < 200; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "MinIO exited; log:" >&2
			cat "$dir/.minio.log" >&2
			exit 1
		fi
		if curl -fsS -o /dev/null "$endpoint/minio/health/ready" 2>/dev/null; then
			echo "$endpoint"
			return
		fi
		sleep 0.05
	done
	echo "MinIO at $endpoint not ready after 10 s; log:" >&2
	cat "$dir/.minio.log" >&2
	kill "$pid" 2>/dev/null || true
	exit 1
}

case "${1:-}" in
install)
	[[ $# -eq 1 ]] || usage
	install_minio
	;;
path)
	[[ $# -eq 1 ]] || usage
	echo "$minio_bin"
	;;
start)
	[[ $# -eq 3 ]] || usage
	start_minio "$2" "$3"
	;;
*)
	usage
	;;
esac
