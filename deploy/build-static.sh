#!/bin/sh
# Builds the cachedb binary the container image ships (deploy/Dockerfile runs this script, and
# deploy's Go tests run it too): static (CGO_ENABLED=0: SQLite is the pure-Go driver), without
# local paths or VCS lookups, stamped with VERSION and COMMIT from the environment as `make build`
# stamps bin/cachedb. Run it from the repository root: deploy/build-static.sh OUTPUT
set -eu
out="${1:?usage: deploy/build-static.sh OUTPUT}"
CGO_ENABLED=0 exec go build -trimpath -buildvcs=false \
	-ldflags "-s -w -X main.version=${VERSION:-dev} -X main.commit=${COMMIT:-}" \
	-o "$out" ./cmd/cachedb
