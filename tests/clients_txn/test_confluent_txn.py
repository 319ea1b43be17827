"""confluent-kafka (librdkafka) transactional producers against a real kbroker process:
commit/abort visibility under both isolation levels, the last stable offset, fencing of a
zombie instance, transactional offsets, and the admin view of transactions."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tests.clients.conftest import create_topic

from .helpers import end_offsets, read_all


def txn_producer(bootstrap, tid, **extra):
    conf = {"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5}
    conf.update(extra)
    p = Producer(conf)
    p.init_transactions(20)
    return p


def test_committed_visible_aborted_never(bootstrap, name):
    create_topic(bootstrap, name, 2)
    p = txn_producer(bootstrap, name + "-tx")
    p.begin_transaction()
    for i in range(20):
        p.produce(name, b"c1-%d" % i, partition=i % 2)
    p.commit_transaction(20)
    p.begin_transaction()
    for i in range(10):
        p.produce(name, b"a-%d" % i, partition=i % 2)
    p.flush(10)
    p.abort_transaction(20)
    p.begin_transaction()
    for i in range(6):
        p.produce(name, b"c2-%d" % i, partition=i % 2)
    p.commit_transaction(20)
    committed = sorted([b"c1-%d" % i for i in range(20)] + [b"c2-%d" % i for i in range(6)])
    aborted = sorted(b"a-%d" % i for i in range(10))
    assert sorted(read_all(bootstrap, name, 2, isolation="read_committed")) == committed
    assert sorted(read_all(bootstrap, name, 2, isolation="read_uncommitted")) == \
        sorted(committed + aborted)
    # 36 records + 3 markers per partition
    assert sum(end_offsets(bootstrap, name, 2, "read_uncommitted")) == 36 + 6


def test_open_transaction_holds_back_read_committed(bootstrap, name):
    create_topic(bootstrap, name, 1)
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(name, b"before")
    plain.flush(10)
    p = txn_producer(bootstrap, name + "-tx")
    p.begin_transaction()
    p.produce(name, b"open")
    p.flush(10)
    plain.produce(name, b"after-open")          # non-transactional, behind the open txn
    plain.flush(10)
    # LSO = first offset of the open transaction: read_committed stops before it
    assert end_offsets(bootstrap, name, 1, "read_committed") == [1]
    assert end_offsets(bootstrap, name, 1, "read_uncommitted") == [3]
    assert read_all(bootstrap, name, 1, isolation="read_committed", timeout=5) == [b"before"]
    p.commit_transaction(20)
    assert read_all(bootstrap, name, 1, isolation="read_committed") == \
        [b"before", b"open", b"after-open"]
    assert end_offsets(bootstrap, name, 1, "read_committed") == [4]


def test_second_instance_fences_the_first(bootstrap, name):
    create_topic(bootstrap, name, 1)
    tid = name + "-tx"
    first = txn_producer(bootstrap, tid)
    first.begin_transaction()
    first.produce(name, b"zombie")
    first.flush(10)
    second = txn_producer(bootstrap, tid)       # aborts the zombie's transaction
    second.begin_transaction()
    second.produce(name, b"new")
    second.commit_transaction(20)
    with pytest.raises(KafkaException) as e:
        first.produce(name, b"zombie-2")
        first.commit_transaction(20)
    err = e.value.args[0]
    assert err.fatal() or "fenced" in err.str().lower(), err
    assert read_all(bootstrap, name, 1, isolation="read_committed") == [b"new"]
    assert sorted(read_all(bootstrap, name, 1, isolation="read_uncommitted")) == [b"new", b"zombie"]


def test_offsets_sent_to_transaction_visible_only_on_commit(bootstrap, name):
    create_topic(bootstrap, name, 1)
    group = name + "-g"
    p = txn_producer(bootstrap, name + "-tx")
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    tp = TopicPartition(name, 0)
    try:
        p.begin_transaction()
        p.produce(name, b"x")
        p.send_offsets_to_transaction([TopicPartition(name, 0, 5)], c.consumer_group_metadata(), 20)
        p.abort_transaction(20)
        assert c.committed([tp], timeout=10)[0].offset < 0
        p.begin_transaction()
        p.produce(name, b"y")
        p.send_offsets_to_transaction([TopicPartition(name, 0, 7)], c.consumer_group_metadata(), 20)
        p.commit_transaction(20)
        assert c.committed([tp], timeout=10)[0].offset == 7
    finally:
        c.close()
