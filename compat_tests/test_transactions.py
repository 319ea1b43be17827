"""Transactions on both brokers: confluent-kafka's transactional producer (commit, abort,
fencing, offsets sent to the transaction) under read_committed / read_uncommitted, and
Kafka's ``kafka-transactions`` tool (ListTransactions, DescribeTransactions,
DescribeProducers) from the pinned jars."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests.cli import run_tool
from compat_tests.helpers import wait_until

CLIENT = "confluent-kafka"


def create(bootstrap, name, partitions=1):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=20)[name].result(30)
    wait_until(lambda: name in admin.list_topics(name, timeout=10).topics
               and len(admin.list_topics(name, timeout=10).topics[name].partitions) == partitions,
               what=f"topic {name}")


def txn_producer(bootstrap, tid, **extra):
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5, **extra})
    p.init_transactions(60)
    return p


def read(bootstrap, topic, partitions, isolation, expect, timeout=30.0):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "compat-unused",
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        got, eof = [], set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                eof.add(m.partition())
                if len(eof) == partitions and len(got) >= expect:
                    break
                continue
            eof.discard(m.partition())
            got.append(m.value())
        return sorted(got)
    finally:
        c.close()


def test_commit_and_abort_visibility(bootstrap, topic_name):
    create(bootstrap, topic_name, 2)
    p = txn_producer(bootstrap, topic_name + "-tx")
    p.begin_transaction()
    for i in range(8):
        p.produce(topic_name, b"c-%d" % i, partition=i % 2)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(4):
        p.produce(topic_name, b"a-%d" % i, partition=i % 2)
    p.flush(30)
    p.abort_transaction(30)
    committed = sorted(b"c-%d" % i for i in range(8))
    assert read(bootstrap, topic_name, 2, "read_committed", 8) == committed
    assert read(bootstrap, topic_name, 2, "read_uncommitted", 12) == \
        sorted(committed + [b"a-%d" % i for i in range(4)])


def test_second_producer_fences_first(bootstrap, topic_name):
    create(bootstrap, topic_name)
    tid = topic_name + "-tx"
    first = txn_producer(bootstrap, tid)
    first.begin_transaction()
    first.produce(topic_name, b"zombie")
    first.flush(30)
    second = txn_producer(bootstrap, tid)
    second.begin_transaction()
    second.produce(topic_name, b"new")
    second.commit_transaction(30)
    with pytest.raises(KafkaException):
        first.produce(topic_name, b"zombie-2")
        first.commit_transaction(30)
    assert read(bootstrap, topic_name, 1, "read_committed", 1) == [b"new"]


def test_offsets_committed_with_the_transaction(bootstrap, topic_name):
    create(bootstrap, topic_name)
    p = txn_producer(bootstrap, topic_name + "-tx")
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": topic_name + "-g",
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    tp = TopicPartition(topic_name, 0)
    try:
        p.begin_transaction()
        p.produce(topic_name, b"x")
        p.send_offsets_to_transaction([TopicPartition(topic_name, 0, 3)], c.consumer_group_metadata(), 30)
        p.abort_transaction(30)
        assert c.committed([tp], timeout=20)[0].offset < 0
        p.begin_transaction()
        p.produce(topic_name, b"y")
        p.send_offsets_to_transaction([TopicPartition(topic_name, 0, 9)], c.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        assert c.committed([tp], timeout=20)[0].offset == 9
    finally:
        c.close()


def test_kafka_transactions_tool(kafka_dist, bootstrap, topic_name):
    create(bootstrap, topic_name)
    tid = topic_name + "-tx"
    p = txn_producer(bootstrap, tid)
    p.begin_transaction()
    p.produce(topic_name, b"open")
    p.flush(30)
    try:
        listed = run_tool("kafka-transactions", ["--bootstrap-server", bootstrap, "list"]).check()
        rows = [line.split() for line in listed.lines[1:]]
        assert any(r[0] == tid and "Ongoing" in r for r in rows), listed.stdout
        described = run_tool("kafka-transactions", ["--bootstrap-server", bootstrap, "describe",
                                                    "--transactional-id", tid]).check()
        assert "Ongoing" in described.stdout and f"{topic_name}-0" in described.stdout, described.stdout
        producers = run_tool("kafka-transactions", ["--bootstrap-server", bootstrap,
                                                    "describe-producers", "--topic", topic_name,
                                                    "--partition", "0"]).check()
        header, *rows = producers.lines
        assert "ProducerId" in header and len(rows) == 1, producers.stdout
        assert rows[0].split()[-1] == "0", producers.stdout   # CurrentTransactionStartOffset
    finally:
        p.commit_transaction(30)
