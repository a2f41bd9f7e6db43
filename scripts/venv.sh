#!/usr/bin/env bash
# Creates (or reuses) the Python virtual environment that the tests and benchmarks use, and
# prints its directory on stdout (progress goes to stderr).
#
# The environment lives outside the clone, under
#   ${XDG_CACHE_HOME:-~/.cache}/cachedb/venv-<first 12 hex digits of sha256(requirements.txt)>
# so every clone on a machine shares it and it is rebuilt only when the pinned requirements
# change. It counts as built only once the marker file .complete exists, which is written after
# pip succeeded: an interrupted build is thrown away and redone. A lock serializes builders.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requirements="$repo_root/tests/python/requirements.txt"
python="${PYTHON:-python3}"

hash="$(sha256sum "$requirements" | cut -c1-12)"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/cachedb"
venv="$cache_root/venv-$hash"

mkdir -p "$cache_root"
exec 9>"$venv.lock"
flock 9

if [[ ! -f "$venv/.complete" ]]; then
	echo "creating Python environment $venv" >&2
	rm -rf "$venv"
	"$python" -m venv "$venv" >&2
	"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
	touch "$venv/.complete"
fi
echo "$venv"
