"""Durability across restarts, with kafka-python against a real kbroker process: everything
acknowledged before a graceful stop or a SIGKILL is there after the restart, offsets keep
counting from where they were, and the topic's leader epoch stays consistent."""
from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from tests.support.broker_proc import BrokerProcess

from .conftest import create_topic


def produce(bootstrap, topic, values, partitions):
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                      request_timeout_ms=10_000, max_block_ms=20_000)
    try:
        futs = [p.send(topic, value=v, partition=i % partitions) for i, v in enumerate(values)]
        p.flush()
        return [f.get(timeout=10) for f in futs]
    finally:
        p.close()


def consume(bootstrap, topic, partitions, expected):
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        out = []
        deadline = time.monotonic() + 20
        while len(out) < expected and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                out.extend(recs)
        return out
    finally:
        c.close()


@pytest.mark.parametrize("how", ["graceful", "sigkill"])
def test_acknowledged_records_survive_restart(tmp_path, how):
    proc = BrokerProcess(tmp_path / "data")
    proc.start()
    try:
        topic = f"restart-{how}"
        create_topic(proc.bootstrap, topic, 3)
        first = [b"before-%d" % i for i in range(300)]
        metas = produce(proc.bootstrap, topic, first, 3)
        assert all(m.offset >= 0 for m in metas)
        if how == "graceful":
            proc.stop()
        else:
            proc.kill()
        proc.start()
        recs = consume(proc.bootstrap, topic, 3, 300)
        assert sorted(r.value for r in recs) == sorted(first)
        # Offsets continue after the restart.
        more = produce(proc.bootstrap, topic, [b"after-%d" % i for i in range(30)], 3)
        assert sorted(m.offset for m in more if m.partition == 0) == list(range(100, 110))
        recs = consume(proc.bootstrap, topic, 3, 330)
        assert len(recs) == 330
        for p in range(3):
            offs = [r.offset for r in recs if r.partition == p]
            assert offs == list(range(110))
    finally:
        proc.stop()
