# cachedb build, test and benchmark entry points. `make help` lists them.

GO                  ?= go
SLT_DIR             ?= ../shared/slt
# The conformance smoke in `make test` fails when its pass rate (percent) is below this.
SMOKE_MIN_PASS      ?= 99
CONFORMANCE_PARALLEL ?= 2
STATICCHECK_VERSION ?= v0.8.2
# `make fuzz-long` runs every fuzz target this long; `make fuzz` runs FUZZ_TARGET this long.
FUZZ_TIME           ?= 10m
FUZZ_TARGET         ?= engine:FuzzSQL
# `make test` runs every fuzz target for this many inputs, to catch panics early. A count, not a
# duration: a duration that ends while the fuzzer still replays its corpus (a busy machine, a
# grown cache) fails the run with "context deadline exceeded".
FUZZ_SMOKE_TIME     ?= 1000x
# Every fuzz target, as package:Target (go test fuzzes one target of one package at a time).
FUZZ_TARGETS := engine:FuzzSQL engine:FuzzSQLRows \
	flightsql:FuzzStatementTicket flightsql:FuzzNodeTicket flightsql:FuzzFlightInfoCommand \
	flightsql:FuzzDoAction flightsql:FuzzPreparedStatement flightsql:FuzzIngest flightsql:FuzzDistributedSQL flightsql:FuzzHandshake \
	cluster:FuzzPartitionTicket cluster:FuzzShuffleTicket cluster/ticket:FuzzOpen
LISTEN              ?= 127.0.0.1:32010
# The release and commit stamped into bin/cachedb (`cachedb version` prints both); deploy/Dockerfile
# takes the same two as build arguments. Without a tag, git describe gives the abbreviated commit.
VERSION             ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT              ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS             := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
# `make randomized-long`: the first seed (0: from the clock) and how long to run.
SEED                ?= 0
DURATION            ?= 10m

SLT_RUNNER := bin/cachedb-slt --cachedb bin/cachedb
SMOKE_FILES := sqlite/select1.test sqlite/select2.test sqlite/evidence sqlite/random/groupby/slt_good_0.test
# The Python environment lives outside the clone; scripts/venv.sh creates it on first use and
# prints its directory.
PYTHON = "$$(scripts/venv.sh)/bin/python"

.PHONY: help build run test python-client lint-python test-servers test-go test-python test-slt test-fuzz fuzz-long conformance conformance-workers bench bench-iceberg bench-cluster bench-planning lint fuzz randomized-long clean

help:
	@echo "make run          build and serve the demo catalog over Flight SQL on $(LISTEN), with 2 data nodes"
	@echo "make test         vet, Go tests, Python tests, conformance smoke and project .slt files"
	@echo "make build        bin/cachedb and bin/cachedb-slt"
	@echo "make conformance  the whole sqllogictest corpus; writes conformance-results.txt/.json"
	@echo "make bench        both benchmarks (aggregate, iceberg); writes bench/results/"
	@echo "make bench-iceberg  pushdown on a wide Iceberg table in MinIO vs --no-pushdown, DuckDB, pyiceberg"
	@echo "make bench-cluster  datasets and divided queries on 1, 2 and 4 data nodes vs reading Iceberg"
	@echo "make bench-training training epochs into torch tensors vs raw Flight and vs re-reading Parquet"
	@echo "make bench-memory   epochs from the disk tier vs memory vs Parquet; spilling vs in-memory queries"
	@echo "make bench-small-batches  small batches from DataLoader workers vs in process"
	@echo "make bench-gpu-wait       a training step's wait for data on a CUDA device"
	@echo "make bench-shuffle-quality  the training shuffle against a uniform one at 10^4, 10^6, 10^8 rows"
	@echo "make bench-ingest   bulk ingest (ADBC, pandas to_sql, polars write_database) vs reading the rows back"
	@echo "make bench-membership [MINUTES=10]  a busy, throttled, stopped and killed data node: what moves"
	@echo "make bench-tpch [SF=1]  the 22 TPC-H queries on cachedb (Iceberg, datasets) vs DuckDB and DataFusion"
	@echo "make bench-planning planning time of hostile statement shapes at n and 10n"
	@echo "make lint         gofmt, go vet, staticcheck"
	@echo "make lint-python  ruff and mypy over the Python client (python/)"
	@echo "make image        the container image (deploy/Dockerfile; needs Docker), tagged cachedb:VERSION"
	@echo "make lint-docker  hadolint over deploy/Dockerfile"
	@echo "make test-deploy  the deploy/ module's tests: static image binary, Helm chart and manifests against the Kubernetes API types"
	@echo "make chart-standin  the chart's head and data-node pods as local processes, probed and queried (CHART_STANDIN_VALUES=FILE, CHART_STANDIN_KEEP=1)"
	@echo "make helm-lint    helm lint --strict and helm template of deploy/helm/cachedb (helm from the Go module proxy)"
	@echo "make manifests    render deploy/manifests/*.yaml from the chart again"
	@echo "make fuzz         FUZZ_TIME (10m) of one fuzz target, FUZZ_TARGET=package:Target (default engine:FuzzSQL)"
	@echo "make fuzz-long    every fuzz target (SQL over memory, Iceberg and data nodes; tickets, commands, actions, parameters) for FUZZ_TIME each"
	@echo "make randomized-long [SEED=n] [DURATION=10m]  random queries checked by TLP/NoREC oracles, seeds from SEED on"

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/cachedb ./cmd/cachedb
	$(GO) build -o bin/cachedb-slt ./cmd/cachedb-slt

run: build
	bin/cachedb serve --listen $(LISTEN) --workers 2

test: test-servers test-go lint-python test-python test-slt test-fuzz

# The servers the tests start: MinIO (built once per machine) and Apache Iceberg's REST catalog
# (jars from Maven Central, fetched once), and the Flight SQL JDBC driver the JDBC client test
# runs (one jar from Maven Central). All land under ~/.cache/cachedb.
test-servers:
	scripts/minio.sh install >/dev/null
	scripts/iceberg-rest.sh install >/dev/null
	scripts/jdbc-driver.sh install >/dev/null

# CACHEDB_REQUIRE_ALL turns "not installed" skips into failures: test-servers installed them.
test-go:
	$(GO) vet ./...
	CACHEDB_REQUIRE_ALL=1 CACHEDB_PYICEBERG_PYTHON=$(PYTHON) $(GO) test ./...

# The client package is installed into the environment as a user would (pip install ./python);
# its dependencies are already there (tests/python/requirements.txt).
python-client:
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation ./python
	rm -rf python/build python/cachedb.egg-info

# ruff and mypy over the Python client, from their own small environment (scripts/lint-venv.sh);
# mypy resolves imports (pyarrow, torch) in the test environment. Settings: python/pyproject.toml.
lint-python:
	cd python && "$$(../scripts/lint-venv.sh)/bin/ruff" check .
	cd python && "$$(../scripts/lint-venv.sh)/bin/mypy" --python-executable "$$(../scripts/venv.sh)/bin/python" cachedb

test-python: build python-client
	CACHEDB_REQUIRE_ALL=1 CACHEDB_BIN=$(CURDIR)/bin/cachedb $(PYTHON) -m pytest -q -p no:cacheprovider tests/python

test-slt: build
	$(SLT_RUNNER) -q --dir $(SLT_DIR) --min-pass $(SMOKE_MIN_PASS) $(SMOKE_FILES)
	$(SLT_RUNNER) -q --dir $(SLT_DIR) --min-pass $(SMOKE_MIN_PASS) --workers 3 $(SMOKE_FILES)
	$(SLT_RUNNER) -q --min-pass 100 --dir testdata/slt

conformance: build
	$(SLT_RUNNER) --dir $(SLT_DIR) --parallel $(CONFORMANCE_PARALLEL) \
		--results conformance-results --failures conformance-failures.txt

# The same corpus against servers that each run 3 in-process data nodes.
conformance-workers: build
	$(SLT_RUNNER) --dir $(SLT_DIR) --parallel $(CONFORMANCE_PARALLEL) --workers 3 \
		--results conformance-workers-results --failures conformance-workers-failures.txt

bench: build bench-assign bench-cluster bench-training bench-planning bench-ingest
	$(GO) run ./bench/aggregate --python $(PYTHON)
	$(PYTHON) bench/iceberg/main.py

bench-iceberg: build
	$(PYTHON) bench/iceberg/main.py

# Dataset load, warm reads and aggregates on 1, 2 and 4 in-process data nodes against reading the
# same Iceberg table in MinIO; writes bench/results/cluster.json. About 2 minutes.
bench-cluster: build
	$(PYTHON) bench/cluster/main.py

# Planning time of hostile statement shapes (long AND/OR/UNION chains, IN and CASE lists, deep
# nesting) at n and 10n; writes bench/results/planning.json. Pure Go, about a minute.
bench-planning:
	$(GO) run ./bench/planning

# Dividing 100,000 skewed scan tasks over 100 data nodes: exec.AssignShares against round-robin
# and a contiguous split; writes bench/results/assign.json. Pure Go, seconds.
# Training reads: warm epochs into torch tensors from cachedb vs a raw arrow-go Flight server
# and vs re-reading Parquet from MinIO, and the example's loop from both; writes
# bench/results/training.json. About 4 minutes.
.PHONY: bench-training
bench-training: build python-client
	$(GO) build -o bin/rawflight ./bench/training/rawflight
	$(PYTHON) bench/training/main.py

# Epochs from the disk tier vs the memory tier vs re-reading Parquet, and a spilling aggregate
# and join vs in memory, on a local Iceberg table (bench/memory); writes bench/results/memory.json.
.PHONY: bench-memory
bench-memory: build python-client
	$(PYTHON) bench/memory/main.py

# 64 clients of queries and full reads on a server at its memory limit for 2 minutes: only
# RESOURCE_EXHAUSTED refusals, then goroutines, open files, reservations and spill files back to
# their baseline (make test runs the same test for 10 s).
.PHONY: soak-memory
soak-memory: build
	CACHEDB_SOAK=2m $(GO) test ./cmd/cachedb -run TestConcurrentLoadAtTheMemoryLimit -count=1 -v -timeout 10m

# The training shuffle's quality (files per batch, epoch-to-epoch rank correlation, same-rank
# fraction) against a uniform shuffle on synthetic datasets of 10^4, 10^6 and 10^8 rows; writes
# bench/results/shuffle_quality.json. Pure Go, under a minute; `go run ./bench/shufflequality -h`.
.PHONY: bench-shuffle-quality
bench-shuffle-quality:
	$(GO) run ./bench/shufflequality

# Small batches with DataLoader workers: turns of batches vs one batch per transfer vs in
# process; writes bench/results/small_batches.json. About a minute.
.PHONY: bench-small-batches
bench-small-batches: build
	$(PYTHON) bench/training/small_batches.py

# How long a training step on a CUDA device waits for its batch, from cachedb (in process and
# with DataLoader workers) and from memory; writes bench/results/gpu_wait.json. Needs a GPU and
# torch with CUDA; about 2 minutes. Not part of `make bench`.
.PHONY: bench-gpu-wait
bench-gpu-wait: build
	$(PYTHON) bench/training/gpu_wait.py

# Membership on a busy machine: a head and three worker processes idle under saturating load,
# a throttled, a stopped and a killed node; writes bench/results/membership.json. MINUTES sets
# the idle phase (default 10); about MINUTES + 3 minutes. Not part of `make bench`.
.PHONY: bench-membership
MINUTES ?= 10
bench-membership: build
	$(PYTHON) bench/membership/main.py --no-build --minutes $(MINUTES)

# The 22 TPC-H queries at scale factor SF on cachedb over Iceberg tables (serve, and with 2 data
# nodes) and over datasets, vs DuckDB and DataFusion on the same Parquet; every answer is
# checked. Data is generated once per SF with tpchgen-cli and cached under ~/.cache/cachedb/tpch.
# Writes bench/results/tpch.json.
.PHONY: bench-tpch
SF ?= 1
TPCH_RUNS ?= 3
TPCH_TIMEOUT ?= 120
TPCH_WARMUP ?= 1
bench-tpch: build
	$(PYTHON) bench/tpch/main.py --sf $(SF) --runs $(TPCH_RUNS) --warmup $(TPCH_WARMUP) --timeout $(TPCH_TIMEOUT)

# Bulk ingest of 1,000,000 mixed rows through ADBC, pandas to_sql and polars write_database, each
# against reading the same rows back in the same run (the ratio); writes bench/results/ingest.json.
# About 15 seconds.
.PHONY: bench-ingest
bench-ingest: build
	$(PYTHON) bench/ingest/main.py

.PHONY: bench-assign
bench-assign:
	$(GO) run ./bench/assign

# The container image (docs/kubernetes.md). Docker is not needed for anything else: the deploy
# tests build the image's binary with the same script (deploy/build-static.sh) and lint the
# Dockerfile with hadolint.
.PHONY: image lint-docker test-deploy
IMAGE ?= cachedb:$(VERSION)
image:
	docker build -f deploy/Dockerfile --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE) .

lint-docker:
	"$$(scripts/lint-venv.sh)/bin/hadolint" deploy/Dockerfile

# The helm CLI itself, from the Go module proxy (built once, then cached): `helm lint --strict`
# and `helm template` of the chart. make test-deploy does the same through Helm's Go packages.
HELM_VERSION ?= v3.22.0
HELM = $(GO) run helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
.PHONY: helm-lint manifests
helm-lint:
	$(HELM) lint --strict deploy/helm/cachedb --set clusterSecret.value=lint
	$(HELM) template cachedb deploy/helm/cachedb --set clusterSecret.value=lint >/dev/null

# deploy/manifests/*.yaml: the chart rendered with deploy/manifests/values.yaml.
manifests:
	cd deploy && $(GO) test -run '^TestPlainManifests$$' -update -count=1 .

# deploy/ is a Go module of its own (the Kubernetes, LeaderWorkerSet, Kubeflow Trainer and Helm
# modules stay out of cachedb's), so `go test ./...` at the root does not reach it.
# Warm, under a minute; on a fresh machine it compiles Helm's and Kubernetes' modules and a
# static cachedb (CGO off, so nothing of `make test`'s build is reused): many minutes on a busy
# 2-core machine, hence its own target and the long timeout.
test-deploy: lint-docker
	cd deploy && $(GO) vet ./... && $(GO) test -count=1 -timeout 30m ./...

# The chart's LeaderWorkerSet group on loopback (deploy/standin_test.go, also part of
# test-deploy): a head and its data nodes run as the chart's pods would, probed, queried and
# stopped. CHART_STANDIN_VALUES=FILE renders other values; CHART_STANDIN_KEEP=1 leaves the group
# running until Ctrl-C.
.PHONY: chart-standin
chart-standin:
	cd deploy && CHART_STANDIN_VALUES="$(if $(CHART_STANDIN_VALUES),$(abspath $(CHART_STANDIN_VALUES)))" \
		CHART_STANDIN_KEEP="$(CHART_STANDIN_KEEP)" $(GO) test -run '^TestChartStandin$$' -count=1 -timeout 0 -v .

lint:
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# run-fuzz fuzzes each package:Target of $(2) for $(1). A failing input is written under the
# package's testdata/fuzz/Target/ and replayed by plain `go test` from then on.
define run-fuzz
	@set -e; for t in $(2); do pkg=$${t%%:*}; name=$${t#*:}; \
		echo "fuzzing $$name in ./$$pkg for $(1)"; \
		$(GO) test ./$$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(1); \
	done
endef

fuzz:
	$(call run-fuzz,$(FUZZ_TIME),$(FUZZ_TARGET))

fuzz-long:
	$(call run-fuzz,$(FUZZ_TIME),$(FUZZ_TARGETS))

# TestRandomizedOracles over consecutive seeds from SEED for DURATION (`make test` runs its fixed
# seeds in a few seconds); a failure prints its seed, schema and queries.
randomized-long:
	$(GO) test ./engine -run '^TestRandomizedOracles$$' -count=1 -v -timeout 0 \
		-randomized.seed=$(SEED) -randomized.duration=$(DURATION)
	$(GO) test ./flightsql -run '^TestRandomizedOnDataNodes$$' -count=1 -v -timeout 0 \
		-randomized.seed=$(SEED) -randomized.duration=$(DURATION)

test-fuzz:
	$(call run-fuzz,$(FUZZ_SMOKE_TIME),$(FUZZ_TARGETS))

clean:
	rm -rf bin conformance-results.txt conformance-results.json conformance-failures.txt conformance-workers-* bench/out
