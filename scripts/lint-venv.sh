#!/usr/bin/env bash
# Creates (or reuses) the small Python environment that holds the Python linters (ruff, mypy)
# and prints its directory on stdout (progress goes to stderr). Like scripts/venv.sh, it lives
# under ${XDG_CACHE_HOME:-~/.cache}/cachedb, keyed on the hash of its pinned requirements
# (tests/python/lint-requirements.txt), counts as built once .complete exists, and a lock
# serializes builders.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requirements="$repo_root/tests/python/lint-requirements.txt"
python="${PYTHON:-python3}"

hash="$(sha256sum "$requirements" | cut -c1-12)"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/cachedb"
venv="$cache_root/lint-venv-$hash"

mkdir -p "$cache_root"
exec 9>"$venv.lock"
flock 9

if [[ ! -f "$venv/.complete" ]]; then
	echo "creating Python lint environment $venv" >&2
	rm -rf "$venv"
	"$python" -m venv "$venv" >&2
	"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
	touch "$venv/.complete"
fi
echo "$venv"
