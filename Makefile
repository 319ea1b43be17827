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

test: $(STAMP)
	$(PY) -m pytest -q tests --kafka-protocol=$(KAFKA_PROTOCOL)

test-fast: $(STAMP)
	$(PY) -m pytest -q -x tests --kafka-protocol=$(KAFKA_PROTOCOL) -m "not slow"

clean:
	rm -rf $(VENV) .cache data
