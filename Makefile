# kbroker — every set-up step is here, idempotent and cached in ignored folders.
SHELL := /bin/bash
# The interpreter .venv is made from: Debian's python3.11 when it is there with its venv module,
# else python3 from PATH; PYTHON=... chooses another. Debian's is linked statically and built
# with profile-guided and link-time optimization, as distributions' and python.org's builds and
# the container image's interpreter are; pyenv's default build (python3 on PATH here) is neither
# and runs kbroker's requests with 10-14 % more instructions and its start with ~20 % more
# (benchmarks/README.md, "The interpreter"). A .venv made from another interpreter is made again.
ifeq ($(origin PYTHON),undefined)
PYTHON := $(shell /usr/bin/python3.11 -c 'import venv, ensurepip' 2>/dev/null && echo /usr/bin/python3.11 || echo python3)
endif
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# the Docker SDK in .venv (docker_tests/; rule below)
DOCKER_STAMP := $(VENV)/.docker-installed
# Kafka's message definitions of the pinned release (tools/kafka_dist/pom.xml), extracted from
# its sources jars by tools/fetch_protocol.sh: the reference of the schema tests and of
# tools/genschema.py (which regenerates kbroker/wire/schema/messages.json from them).
KAFKA_VERSION := $(shell sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' tools/kafka_dist/pom.xml | head -n1)
KAFKA_PROTOCOL ?= .cache/kafka-protocol/$(KAFKA_VERSION)
# Python writes its bytecode caches (__pycache__/, ignored by git). A test run starts hundreds of
# Python processes (brokers, nodes of clusters, CLI commands); without the caches each one
# compiles kbroker's sources again, about 0.8 s of CPU per broker start on this kind of machine.
# Some environments set PYTHONDONTWRITEBYTECODE: make does not pass it on to what it runs.
unexport PYTHONDONTWRITEBYTECODE
# Downloads and builds that every checkout would repeat (Maven's local repository in m2/, Go's
# module and build caches in go/) live in one cache outside the work tree, as pip's does: a
# fresh clone then fetches and compiles nothing that an earlier one already had (on a cold
# cache its set-up downloads about 350 MB of jars and compiles the Go clients). What the suites
# use is still copied into the ignored .cache/ of the checkout. KBROKER_CACHE=.cache keeps it
# all inside the work tree.
# The jar folders and the protocol definitions a clone resolved are kept there too (resolved/,
# tools/pom_jars.sh): the next clone copies them without starting Maven (36 CPU-s less).
KBROKER_CACHE ?= $(HOME)/.cache/kbroker
export KBROKER_CACHE := $(abspath $(KBROKER_CACHE))

.PHONY: all setup run test test-fast test-fast-setup print-protocol flake-hunt clean protocol schema

all: setup protocol

setup: $(STAMP) codecache

# the code dataclasses/attrs generate at import, compiled once for kbroker serve's start
# (kbroker/common/codecache.py; in an ignored __pycache__, rebuilt by every make setup)
codecache: $(STAMP)
	$(PY) -m kbroker.node.codecache_build || echo "codecache not built: kbroker serve compiles as usual"
.PHONY: codecache

# A venv without ensurepip's pip and setuptools (about 5 CPU-s of compiling), its pip put in by
# $(PYTHON)'s own pip (22.3+: --python); $(PYTHON) without a pip falls back to a plain venv.
NEW_VENV = { $(PYTHON) -m venv --without-pip $(1) && $(PYTHON) -m pip --python $(1)/bin/python \
	install -q --disable-pip-version-check pip; } || $(PYTHON) -m venv --clear $(1)

# The interpreter .venv was made from, by the path $(PYTHON) resolves to. When $(PYTHON) names
# another one, .venv goes (with every stamp in it) and is made again from the new one.
VENV_BASE := $(VENV)/.base
$(VENV_BASE): FORCE
	@want="$$(command -v $(PYTHON))"; have="$$(cat $@ 2>/dev/null)"; \
	if [ -e $(PY) ] && [ "$$have" != "$$want" ]; then \
	  echo "$(VENV) was made from $${have:-another interpreter}: making it again from $$want"; \
	  rm -rf $(VENV); fi

$(STAMP): pyproject.toml requirements-dev.txt $(VENV_BASE)
	test -x $(PY) || $(call NEW_VENV,$(VENV))
	command -v $(PYTHON) > $(VENV_BASE)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e . -r requirements-dev.txt
	touch $@

protocol:
	bash tools/fetch_protocol.sh

# Regenerate the schema model from the pinned definitions (commit the result).
schema: protocol
	$(PY) tools/genschema.py $(KAFKA_PROTOCOL)

# The local-development profile (--dev): data in ./data, group.initial.rebalance.delay.ms=0.
run: $(STAMP)
	$(PY) -m kbroker serve --dev

# The whole suite, in two phases.
# 1. tests/ (unit and real-client tests) on pytest-xdist workers, by file (a module's broker or
#    cluster is started once), files with slow tests first (tests/conftest.py).
# 2. Side by side (`make -j -O`, each one's output printed whole when it ends): the
#    compatibility suite against both kbroker and a real Apache Kafka (its non-slow part; `make
#    compat` runs all of it; one file of one target per unit on four workers, compat_tests/conftest.py), Spark's Kafka
#    connector against both (test-spark), and the container image's tests (docker-test). Each
#    of the three spends much of its time waiting on JVM start-ups, containers and clients'
#    backoffs, which the others fill.
# Measured on 2 cores, the suite is CPU-bound, not wait-bound: more workers do not make it
# faster. TEST_WORKERS=0 and COMPAT_WORKERS=0 run a suite in one process; SIDE_BY_SIDE=1 runs
# phase 2's parts one after the other.
# A few CPU-heavy files of tests/ (browsers, JVMs, pip: about 100 CPU-s of the 2-core phase 1)
# run in phase 2 instead, in one process each time after docker-test and test-spark end, when
# the machine is otherwise left to the compatibility suite, which waits more than it computes
# (LATE_AFTER_DOCKER, LATE_AFTER_SPARK; with TEST_WORKERS=0 they stay in phase 1). The seeded
# fault test (SERIAL_TESTS) runs after the compatibility suite in its chain, beside those late
# files: it ran alone in phase 1 with a core idle; its schedules pass at a load average of
# 15-25 since the producer state survives clean restarts whole.
TEST_WORKERS ?= 4
COMPAT_WORKERS ?= 4
SIDE_BY_SIDE ?= 3
SERIAL_TESTS := tests/cluster/test_replication_faults.py
LATE_AFTER_DOCKER := tests/console/test_console_browser.py tests/console/test_console_cluster_browser.py \
	tests/console/test_console_group_types.py tests/console/test_console_login.py \
	tests/console/test_console_schemas.py tests/broker/test_readme.py tests/packaging/test_wheel.py
LATE_AFTER_SPARK := tests/streams/test_kafka_streams_app.py tests/streams/test_kafka_streams_warmup.py
LATE_TESTS := $(LATE_AFTER_DOCKER) $(LATE_AFTER_SPARK)
XDIST_TESTS := $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(SERIAL_TESTS:%=--ignore=%) $(LATE_TESTS:%=--ignore=%))
XDIST_COMPAT := $(if $(filter-out 0,$(COMPAT_WORKERS)),-n $(COMPAT_WORKERS) --dist loadgroup)
test: test-setup
	@date -u +"test: tests/ from %T"
	$(PY) -m pytest -q tests --kafka-protocol=$(KAFKA_PROTOCOL) --durations=25 $(XDIST_TESTS)
	@date -u +"test: compat_tests/, spark_tests/ and docker_tests/ (then tests/'s late files) from %T"
	$(MAKE) --no-print-directory -k -j$(SIDE_BY_SIDE) --output-sync=target test-compat-then-serial test-spark-then-late docker-test-then-late
	@date -u +"test: done at %T"

# Everything the suite installs, in three chains side by side (each one's steps in order): what
# goes into .venv (pip, one installer at a time), the jars (one Maven local repository), and the
# rest (Debian packages, one apt at a time; the other virtualenv; Node and Go clients).
.PHONY: test-setup test-setup-venv test-setup-jars test-setup-tools
test-setup:
	$(MAKE) --no-print-directory -j3 --output-sync=target test-setup-venv test-setup-jars test-setup-tools

test-setup-venv:
	$(MAKE) --no-print-directory -j1 setup $(SPARK_STAMP) playwright $(DOCKER_STAMP) pytest-cache

# pytest keeps the modules it rewrites for its assertions (the tests, and kbroker, an editable
# plugin package) in __pycache__/. On a fresh clone the four xdist workers of tests/ found none
# and each rewrote them at once: their collection took 54-58 CPU-s, 18-25 with the files there.
# Collected here once (tests/ in two halves, beside compat_tests/ and spark_tests/: 20 CPU-s
# for the four); collection errors are left to the real runs to report.
TEST_DIRS := $(sort $(dir $(wildcard tests/*/__init__.py)))
.PHONY: pytest-cache
pytest-cache: setup
	@cache() { $(PY) -m pytest -q --collect-only -p no:randomly -p no:cacheprovider "$$@" >/dev/null 2>&1 || true; }; \
	cache tests/test_*.py $(wordlist 1,14,$(TEST_DIRS)) & cache $(wordlist 15,999,$(TEST_DIRS)) & \
	cache compat_tests & cache spark_tests & wait

test-setup-jars:
	$(MAKE) --no-print-directory -j1 protocol kafka-dist kafka-streams-dist spark-dist

test-setup-tools:
	$(MAKE) --no-print-directory -j1 kcat faketime fuse3 netns chromium kp2 kafkajs franzgo sr-clients kafka-tool-jvm

.PHONY: test-compat test-spark-timed docker-test-timed
test-compat: setup kafka-dist kcat netns kafkajs franzgo
	@date -u +"test-compat: compat_tests/ from %T"
	$(PY) -m pytest -q compat_tests -m "not slow" --matrix=compat_tests/results/matrix.md --durations=15 $(XDIST_COMPAT)
	@date -u +"test-compat: compat_tests/ done at %T"

test-spark-timed:
	@date -u +"test-spark: spark_tests/ from %T"
	$(MAKE) --no-print-directory test-spark
	@date -u +"test-spark: spark_tests/ done at %T"

docker-test-timed:
	@date -u +"docker-test: docker_tests/ (with the images) from %T"
	$(MAKE) --no-print-directory docker-test
	@date -u +"docker-test: docker_tests/ done at %T"

# Phase 2's second and third chains: each runs its late files of tests/ after its own suite,
# whether that passed or not, and fails if either did.
.PHONY: test-spark-then-late docker-test-then-late test-late
test-spark-then-late:
	@rc=0; $(MAKE) --no-print-directory test-spark-timed || rc=$$?; \
	$(MAKE) --no-print-directory test-late LATE="$(LATE_AFTER_SPARK)" PORT_BLOCK=8 || rc=$$?; exit $$rc

docker-test-then-late:
	@rc=0; $(MAKE) --no-print-directory docker-test-timed || rc=$$?; \
	$(MAKE) --no-print-directory test-late LATE="$(LATE_AFTER_DOCKER)" PORT_BLOCK=9 || rc=$$?; exit $$rc

# Each late run picks its listener ports from a block of its own (KBROKER_PORT_BLOCK,
# kbroker/testing/processes.py), apart from the compatibility suite's workers' blocks.
LATE ?=
PORT_BLOCK ?= 9
test-late:
ifneq ($(XDIST_TESTS),)
	@date -u +"test-late: $(words $(LATE)) file(s) of tests/ from %T"
	KBROKER_PORT_BLOCK=$(PORT_BLOCK) $(PY) -m pytest -q $(LATE) --kafka-protocol=$(KAFKA_PROTOCOL) --durations=5
	@date -u +"test-late: done at %T"
else
	@echo "test-late: nothing left (TEST_WORKERS=0 ran these files with tests/)"
endif

# Phase 2's first chain: the compatibility suite, then the seeded fault test (whether compat
# passed or not; fails if either did), beside the other chains' late files.
.PHONY: test-compat-then-serial test-serial
test-compat-then-serial:
	@rc=0; $(MAKE) --no-print-directory test-compat || rc=$$?; \
	$(MAKE) --no-print-directory test-serial PORT_BLOCK=7 || rc=$$?; exit $$rc

test-serial:
ifneq ($(XDIST_TESTS),)
	@date -u +"test-serial: $(SERIAL_TESTS) from %T"
	KBROKER_PORT_BLOCK=$(PORT_BLOCK) $(PY) -m pytest -q $(SERIAL_TESTS) --kafka-protocol=$(KAFKA_PROTOCOL) --durations=5
	@date -u +"test-serial: done at %T"
else
	@echo "test-serial: nothing left (TEST_WORKERS=0 ran it with tests/)"
endif

# The inner loop, under 3 minutes on 2 cores: tests/ without the slow tests and without the
# directories that start multi-node clusters, other client families' processes, JVMs or
# browsers (TEST_FAST_SKIP; `make test` runs them all), no compatibility suite, stop at the
# first failure; on the same workers as tests/ in `make test`.
TEST_FAST_SKIP := cluster clients clients_groups clients_txn security console streams history \
	container tools pytest_plugin packaging benchmarks reference_http
test-fast-setup: setup protocol kp2 kafka-dist kcat faketime fuse3 netns console-browser kafka-tool-jvm

# The resident JVM that runs Kafka's command-line tools in the suites (compat_tests/tool_jvm.py),
# compiled with the JDK's javac into .cache/tool-jvm/<hash of its source>/ (the tests do the
# same on first use).
TOOL_JVM_SRC := compat_tests/tool_jvm/KafkaToolServer.java
.PHONY: kafka-tool-jvm
kafka-tool-jvm:
	d=.cache/tool-jvm/$$(sha256sum $(TOOL_JVM_SRC) | cut -c1-12); test -f $$d/KafkaToolServer.class || \
	{ rm -rf $$d.make && mkdir -p $$d.make && javac --release 11 -d $$d.make $(TOOL_JVM_SRC) && mv -T $$d.make $$d; }

test-fast: test-fast-setup
	$(PY) -m pytest -q -x tests --kafka-protocol=$(KAFKA_PROTOCOL) -m "not slow" \
		$(TEST_FAST_SKIP:%=--ignore=tests/%) \
		$(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile)

print-protocol:
	@echo $(KAFKA_PROTOCOL)

# Hunting flaky tests: N fresh clones of HEAD, each running `make test` (or pytest on TESTS,
# e.g. TESTS="tests/cluster tests/tools"); prints every test that failed at least once
# (tools/flake_hunt.py). A flaky test is a bug to fix, never to retry or skip.
N ?= 5
TESTS ?=
flake-hunt:
	$(PYTHON) tools/flake_hunt.py --runs $(N) $(if $(TESTS),--tests $(TESTS))

clean:
	rm -rf $(VENV) .cache data data-cluster

# --- compatibility suite ---
# compat_tests/ runs the same behavioural tests against kbroker and a real Apache Kafka (jars
# pinned in tools/kafka_dist/pom.xml, cached in .cache/kafka). COMPAT_TARGETS=kafka runs the
# Kafka side alone; the matrix is written to compat_tests/results/matrix.md.
COMPAT_TARGETS ?= kafka,kbroker
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: kafka-dist kafka-streams-dist kcat faketime fuse3 netns compat console-browser chromium playwright

kafka-dist:
	bash tools/fetch_kafka.sh

# Kafka Streams (same pin) for tests/streams: a real streams application with
# group.protocol=streams (KIP-1071); jars in .cache/kafka-streams, idempotent.
kafka-streams-dist:
	bash tools/kafka_streams/fetch.sh

kcat:
	command -v kcat >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q kcat; }

# libfaketime (Debian faketime) for the seeded fault test's clock_jump: one node's wall clock
# stepped at run time through a control file (tests/support/fake_clock.py).
faketime:
	command -v faketime >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q faketime; }

# libfuse 3 (Debian fuse3) for the fault test's slow_disk: a FUSE passthrough with a delay
# (tests/support/slow_fs.py, through mfusepy from requirements-dev.txt).
fuse3:
	command -v fusermount3 >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q fuse3; }

# The test hosts of the partition tests (tests/support/netns.py: a network namespace per node on
# a bridge, cuts by each host's nftables filter): iproute2's ip, nftables' nft, util-linux's nsenter.
netns:
	command -v ip >/dev/null 2>&1 && command -v nft >/dev/null 2>&1 && command -v nsenter >/dev/null 2>&1 || \
	{ $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q iproute2 nftables util-linux; }

# The web console's browser tests (tests/console/test_console_browser.py): Debian's chromium,
# driven by Playwright for Python through executable_path (no browser download, ever).
PLAYWRIGHT := playwright==1.65.2
console-browser: chromium playwright

chromium:
	command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium; }

playwright: setup
	$(PY) -c "import playwright" 2>/dev/null || $(PY) -m pip install -q '$(PLAYWRIGHT)'

compat: setup kafka-dist kcat netns kafkajs franzgo
	$(PY) -m pytest -q compat_tests --targets=$(COMPAT_TARGETS) --matrix=compat_tests/results/matrix.md

# --- spark ---
# Spark's built-in Kafka connector against kbroker (issue 9). pyspark is pinned in
# requirements-spark.txt, the connector jars in tools/spark_dist/pom.xml (same version); the jars
# go to .cache/spark/<version>/jars and are handed to Spark as spark.jars. test-spark runs
# spark_tests/ on both targets (SPARK_TARGETS=kafka or kbroker for one); demo runs the
# example clickstream pipeline in examples/ against an embedded kbroker.
SPARK_TARGETS ?= kafka,kbroker
DEMO_ARGS ?=
SPARK_STAMP := $(VENV)/.spark-installed

.PHONY: spark-dist spark-setup test-spark demo

spark-dist:
	bash tools/spark_dist/fetch.sh
	bash tools/spark_dist/fetch_avro.sh

$(SPARK_STAMP): $(STAMP) requirements-spark.txt
	$(PY) -m pip install -q -r requirements-spark.txt
	touch $@

spark-setup: $(SPARK_STAMP) spark-dist

test-spark: spark-setup kafka-dist
	$(PY) -m pytest -q spark_tests --targets=$(SPARK_TARGETS) --matrix=spark_tests/results/matrix.md

demo: spark-setup
	$(PY) -m examples.clickstream.run_demo $(DEMO_ARGS)

# --- benchmarks ---
# kbroker against Apache Kafka (the compat suite's jars) on this machine, same loads, same
# clients; see benchmarks/README.md. `bench` (~25 min on 2 cores; the load and security rows
# paired, both brokers alive, BENCH_ARGS=--sequential for one after the other) publishes its
# table into benchmarks/README.md and its charts into benchmarks/charts/; `bench-quick`
# (≤ 3 min) writes benchmarks/results/quick/ only. Not part of `make test`.
BENCH_STAMP := $(VENV)/.bench-installed
BENCH_ARGS ?=

.PHONY: bench bench-quick bench-setup bench-replication

bench-setup: $(BENCH_STAMP) kafka-dist

$(BENCH_STAMP): requirements-bench.txt $(STAMP)
	$(PY) -m pip install -q -r requirements-bench.txt
	touch $@

bench: bench-setup
	$(PY) -m benchmarks.bench --publish $(BENCH_ARGS)

bench-quick: bench-setup
	$(PY) -m benchmarks.bench --quick $(BENCH_ARGS)

# Three nodes, replication factor 3, acks=all and acks=1, kbroker beside Kafka (≤ 5 min);
# writes benchmarks/results/replication/ only. REPLICATION_ARGS e.g. "--records 100000".
REPLICATION_ARGS ?=
bench-replication: setup kafka-dist
	$(PY) -m benchmarks.replication_bench $(REPLICATION_ARGS)

# The schema registry: registration and lookup rates and latency, the broker's produce/fetch
# rates with the registry on and off (kbroker alone; writes benchmarks/results/schema_registry/).
SR_BENCH_ARGS ?=
.PHONY: bench-schema-registry
bench-schema-registry: setup
	$(PY) -m benchmarks.schema_registry_bench $(SR_BENCH_ARGS)

# `bench-rest-proxy`: the broker's produce/fetch rates with the REST gateway off, idle and busy
.PHONY: bench-rest-proxy
bench-rest-proxy: setup
	$(PY) -m benchmarks.rest_proxy_bench $(REST_BENCH_ARGS)

# --- cluster ---
# `cluster`: three combined nodes (broker + controller) of one metadata quorum on loopback
# (clients 19092/19094/19096, controllers 19093/19095/19097, data in ./data-cluster);
# Ctrl-C stops them (exit 0). From another terminal: `kbroker cluster restart 2 [--kill]`
# restarts node 2; `kbroker cluster describe|quorum -b 127.0.0.1:19092` describe it. `raft-soak`: the long seeded Raft simulation (tools/raft_soak.py; static, dynamic, then upgraded voters).
.PHONY: cluster raft-soak

CLUSTER_ARGS ?= --nodes 3 --base-port 19092 --data-dir ./data-cluster
cluster: $(STAMP)
	$(PY) -m kbroker cluster $(CLUSTER_ARGS)

raft-soak: $(STAMP)
	$(PY) tools/raft_soak.py
	$(PY) tools/raft_soak.py --profile dynamic --seeds 3000
	$(PY) tools/raft_soak.py --profile upgrade --seeds 3000

# `replication-soak`: seeded faults (kill, controlled shutdown, pause, partition, one-way cut, flapping link, full disk,
# clock jump, slow disk; a consumer group and a transactional producer run through them) against a replicated topic
# on three nodes, KBROKER_FAULT_RUNS random seeds (default 20) of KBROKER_FAULT_STEPS faults each
# (default 6); a failure names its seed (rerun with KBROKER_FAULT_SEED=<n>).
.PHONY: replication-soak
replication-soak: $(STAMP) faketime fuse3 netns
	KBROKER_FAULT_RUNS=$${KBROKER_FAULT_RUNS:-20} KBROKER_FAULT_STEPS=$${KBROKER_FAULT_STEPS:-6} $(PY) -m pytest -q tests/cluster/test_replication_faults.py --kafka-protocol=$(KAFKA_PROTOCOL)

# `history-check`: Jepsen-style histories (tests/support/history/): a workload of producers, transactional
# producers with read_committed consumers, consumer groups (classic and KIP-848) and assign-mode consumers
# recorded through seeded faults on three kbroker nodes and on three Kafka nodes, then checked for lost,
# duplicated, unseen, nonmonotonic, aborted and dirty reads and transaction cycles; one summary line per
# target (a few minutes). `history-soak SEEDS="..."` runs many seeds (HISTORY_STEPS faults each); runs go
# to history-runs/, seeds with an anomaly to history-runs/found.txt with a minimized history. Not in `make test`.
HISTORY_SEEDS ?= 1 2
HISTORY_TARGETS ?= kbroker,kafka
HISTORY_STEPS ?= 3
SEEDS ?= 1 2 3 4 5 6 7 8 9 10
.PHONY: history-check history-soak
history-check: $(STAMP) kafka-dist netns faketime fuse3
	$(PY) -m tests.support.history.run --targets $(HISTORY_TARGETS) --seeds "$(HISTORY_SEEDS)" --steps $(HISTORY_STEPS) --out history-runs
history-soak: $(STAMP) kafka-dist netns faketime fuse3
	$(PY) -m tests.support.history.run --targets $(HISTORY_TARGETS) --seeds "$(SEEDS)" --steps $(HISTORY_STEPS) --out history-runs

# --- compat clients ---
# The compat suite's Node and Go clients, in ignored folders, idempotent (the tests do the same
# on first use; these let `make compat` do it up front). kafkajs: `npm ci` into
# compat_tests/kafkajs/node_modules (versions in package-lock.json). franzgo: the franz-go
# driver built into .cache/bin, module and build caches under $(KBROKER_CACHE)/go (versions in
# go.sum).
# dx-capture re-records the differential corpus (compat_tests/differential/corpus) through a
# recording proxy in front of a fresh Kafka — after kbroker advertises a new API or version.
KAFKAJS_STAMP := compat_tests/kafkajs/node_modules/.installed
FRANZGO_BIN := .cache/bin/franzgo-driver
GO_ENV := GOPATH=$(KBROKER_CACHE)/go GOMODCACHE=$(KBROKER_CACHE)/go/mod \
	GOCACHE=$(KBROKER_CACHE)/go/build GOFLAGS="-mod=mod '-gcflags=all=-N -l'" GOTOOLCHAIN=local \
	CGO_ENABLED=0

.PHONY: kafkajs franzgo dx-capture

kafkajs: $(KAFKAJS_STAMP)

$(KAFKAJS_STAMP): compat_tests/kafkajs/package.json compat_tests/kafkajs/package-lock.json
	cd compat_tests/kafkajs && npm ci --no-audit --no-fund --loglevel=error
	touch $@

franzgo: $(FRANZGO_BIN)

$(FRANZGO_BIN): compat_tests/franzgo/go.mod compat_tests/franzgo/go.sum $(wildcard compat_tests/franzgo/*.go)
	mkdir -p $(dir $@)
	cd compat_tests/franzgo && $(GO_ENV) go build -o $(CURDIR)/$@ .

dx-capture: setup kafka-dist kafkajs franzgo
	$(PY) -m compat_tests.differential.capture

# The schema registry's client tests (tests/schema_registry/test_franzgo.py, test_kafkajs.py):
# franz-go's pkg/sr program built into .cache/bin/franzgo-sr-<hash of its sources> (caches under
# $(KBROKER_CACHE)/go), and `npm ci` of kafkajs with @kafkajs/confluent-schema-registry into the ignored
# tests/schema_registry/kafkajs/node_modules. The tests do the same on first use.
SR_FRANZGO_DIR := tests/schema_registry/franzgo
SR_FRANZGO_BIN := .cache/bin/franzgo-sr-$(shell cat $(SR_FRANZGO_DIR)/go.mod $(SR_FRANZGO_DIR)/go.sum $(sort $(wildcard $(SR_FRANZGO_DIR)/*.go)) | sha256sum | cut -c1-12)
SR_KAFKAJS_STAMP := tests/schema_registry/kafkajs/node_modules/.installed

.PHONY: sr-clients
sr-clients: $(SR_FRANZGO_BIN) $(SR_KAFKAJS_STAMP)

$(SR_FRANZGO_BIN):
	mkdir -p $(dir $@)
	cd $(SR_FRANZGO_DIR) && $(GO_ENV) go build -o $(CURDIR)/$@ .

$(SR_KAFKAJS_STAMP): tests/schema_registry/kafkajs/package.json tests/schema_registry/kafkajs/package-lock.json
	cd tests/schema_registry/kafkajs && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# --- kafka-python 2.x ---
# tests/clients/test_kafka_python2.py drives kafka-python 2.x (pinned with its codec packages in
# requirements-kp2.txt) in its own venv, .venv-kp2: it cannot share .venv with kafka-python 3.x.
KP2_VENV := .venv-kp2
KP2_STAMP := $(KP2_VENV)/.installed

.PHONY: kp2

kp2: $(KP2_STAMP)

$(KP2_STAMP): requirements-kp2.txt
	test -x $(KP2_VENV)/bin/python || $(call NEW_VENV,$(KP2_VENV))
	$(KP2_VENV)/bin/python -m pip install -q -r requirements-kp2.txt
	touch $@

# --- container image ---
# docker-test: Debian's engine (docker.io), debootstrap and docker-compose installed when missing,
# dockerd started when not running (docker/ensure-engine.sh); the base is DOCKER_BASE when present
# or pullable, else kbroker-base:bookworm made once from Debian's packages (docker/pick-base.sh,
# docker/make-base.sh); then the image (KBROKER_IMAGE) and the test client image are built and
# docker_tests/ runs against them with the Docker SDK (requirements-docker.txt). Everything the
# tests create is removed. `docker-image` alone builds the image.
DOCKER_BASE ?= python:3.11-slim
DOCKER_LOCAL_BASE ?= kbroker-base:bookworm
KBROKER_IMAGE ?= kbroker:test
# the one place the version is written (also read by pyproject.toml and `kbroker --version`)
KBROKER_VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' kbroker/__init__.py)
KBROKER_CLIENT_IMAGE ?= kbroker-test-client:latest

.PHONY: docker-engine docker-image docker-test dist

# dist: the sdist and the wheel (`python -m build`, pinned in requirements-dev.txt) in dist/;
# `pip install dist/kbroker-*.whl` or `pipx install dist/kbroker-*.whl` then gives `kbroker`.
dist: $(STAMP)
	$(PY) -m build --outdir dist .

$(DOCKER_STAMP): requirements-docker.txt $(STAMP)
	$(PY) -m pip install -q -r requirements-docker.txt
	touch $@

docker-engine:
	bash docker/ensure-engine.sh

docker-image: docker-engine
	base=$$(bash docker/pick-base.sh $(DOCKER_BASE) $(DOCKER_LOCAL_BASE)) && \
	echo "docker-image: kbroker:latest kbroker:$(KBROKER_VERSION) $(KBROKER_IMAGE) FROM $$base" && \
	docker build -q --force-rm --build-arg BASE=$$base -t kbroker:latest \
		-t kbroker:$(KBROKER_VERSION) -t $(KBROKER_IMAGE) .

docker-test: docker-image $(DOCKER_STAMP)
	base=$$(bash docker/pick-base.sh $(DOCKER_BASE) $(DOCKER_LOCAL_BASE)) && \
	docker build -q --force-rm --build-arg BASE=$$base -t $(KBROKER_CLIENT_IMAGE) docker_tests/client && \
	KBROKER_IMAGE=$(KBROKER_IMAGE) KBROKER_CLIENT_IMAGE=$(KBROKER_CLIENT_IMAGE) KBROKER_BASE_IMAGE=$$base \
	$(PY) -m pytest -q docker_tests

# docker-test-kafka: testcontainers' Kafka modules (docker_tests/test_testcontainers.py) against
# kbroker's image and, side by side, Apache Kafka 4.3.1 built on the same base the way
# benchmarks/docker_kafka builds it (the compat suite's jars, Debian's JRE).
KAFKA_BENCH_IMAGE ?= kbroker-bench-kafka:4.3.1
.PHONY: docker-test-kafka
docker-test-kafka: docker-image $(DOCKER_STAMP) kafka-dist
	base=$$(bash docker/pick-base.sh $(DOCKER_BASE) $(DOCKER_LOCAL_BASE)) && \
	$(PY) -c "import docker, sys; from benchmarks.docker_bench import build_kafka; \
		build_kafka(docker.from_env(timeout=900), sys.argv[1], sys.argv[2])" $$base $(KAFKA_BENCH_IMAGE) && \
	KBROKER_IMAGE=$(KBROKER_IMAGE) KBROKER_TC_KAFKA_IMAGE=$(KAFKA_BENCH_IMAGE) \
	$(PY) -m pytest -q docker_tests/test_testcontainers.py

# a prerequisite that is always out of date: its target's recipe decides whether anything changes
FORCE:
.PHONY: FORCE
