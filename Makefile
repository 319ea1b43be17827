# kbroker — every set-up step is here, idempotent and cached in ignored folders.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
KAFKA_PROTOCOL ?= ../shared/kafka-protocol

.PHONY: all setup run test test-fast clean

all: setup

setup: $(STAMP)

$(STAMP): pyproject.toml requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e . -r requirements-dev.txt
	touch $@

run: $(STAMP)
	$(PY) -m kbroker serve --data-dir ./data

# The whole suite: unit and real-client tests, then the compatibility suite against both
# kbroker and a real Apache Kafka (its non-slow part; `make compat` runs all of it).
test: setup kafka-dist kcat
	$(PY) -m pytest -q tests --kafka-protocol=$(KAFKA_PROTOCOL)
	$(PY) -m pytest -q compat_tests -m "not slow" --matrix=compat_tests/results/matrix.md

# The inner loop: no slow tests, no real Kafka, stop at the first failure.
test-fast: setup kcat
	$(PY) -m pytest -q -x tests --kafka-protocol=$(KAFKA_PROTOCOL) -m "not slow"

clean:
	rm -rf $(VENV) .cache data

# --- compatibility suite ---
# compat_tests/ runs the same behavioural tests against kbroker and a real Apache Kafka (jars
# pinned in tools/kafka_dist/pom.xml, cached in .cache/kafka). COMPAT_TARGETS=kafka runs the
# Kafka side alone; the matrix is written to compat_tests/results/matrix.md.
COMPAT_TARGETS ?= kafka,kbroker
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: kafka-dist kcat compat

kafka-dist:
	bash tools/fetch_kafka.sh

kcat:
	command -v kcat >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q kcat; }

compat: setup kafka-dist kcat
	$(PY) -m pytest -q compat_tests --targets=$(COMPAT_TARGETS) --matrix=compat_tests/results/matrix.md
