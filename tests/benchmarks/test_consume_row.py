"""The librdkafka consume rows' client (``rdkafka_load consume``, benchmarks/harness/run.py).

A guard against the harness measuring itself, not a benchmark: the client reads a topic
whose record count is not a multiple of its batch (10,000 records per ``consume()`` call)
and must read exactly the bytes asked for without any call waiting out its timeout (the
last call used to ask for a full batch and wait a second for records that never came).
The fetch-idle figure that ``--stats`` adds is checked on made-up statistics reports.
No time is asserted.
"""
from __future__ import annotations

import json
import uuid

import pytest

from benchmarks.harness.rdkafka_load import CONSUME_BATCH, _fetch_idle
from benchmarks.harness.run import rdkafka

RECORDS = 2 * CONSUME_BATCH + 4_321


def test_consume_client_reads_the_bytes_asked_without_waiting_out_a_call(kbroker):
    topic = kbroker.create_topic(f"consume-row-{uuid.uuid4().hex[:8]}", partitions=1)
    # the producer sends one more record first (its warm-up): the topic holds RECORDS + 1
    rdkafka("produce", kbroker.bootstrap_servers, topic, "--num", str(RECORDS), "--size", "1024",
            timeout=120)
    out = rdkafka("consume", kbroker.bootstrap_servers, topic, "--bytes", str(RECORDS * 1024),
                  "--stats", timeout=120)
    assert out["bytes"] == RECORDS * 1024
    assert out["records"] == RECORDS
    assert out["short_calls"] == 0
    assert 0 <= out["fetch_idle_s"] <= out["seconds"]


def _report(fetches: int) -> str:
    return json.dumps({"brokers": {"localhost:9092/1": {"req": {"Fetch": fetches}},
                                   "GroupCoordinator": {"req": {}}}})


def test_fetch_idle_counts_the_intervals_without_a_new_fetch_inside_the_pass():
    reports = [(0.0, _report(0)), (1.0, _report(5)), (1.1, _report(5)), (1.2, _report(5)),
               (1.3, _report(9)), (1.4, _report(9)), (2.0, _report(9))]
    # 1.0-1.2 and 1.3-1.4 had no new Fetch; 1.4-2.0 ends after the pass (end 1.5)
    assert _fetch_idle(reports, start=0.5, end=1.5) == pytest.approx(0.3)
    # an interval that began before the pass's first record is not counted
    assert _fetch_idle(reports, start=1.05, end=1.5) == pytest.approx(0.2)
    assert _fetch_idle([], start=0.0, end=1.0) == 0.0
