"""Share groups with a real share consumer (librdkafka's, through confluent-kafka's
``ShareConsumer``) against a real kbroker process.

- several members on one partition share the records: every record is delivered, and no
  record is held by two members at once (each accepted record is delivered once);
- released records come back (delivery count 2), rejected ones never do;
- a SIGKILLed single-node broker resumes every share-partition where it was: nothing
  acknowledged is delivered again, nothing unacknowledged is lost.
"""
from __future__ import annotations

import time

import pytest

import confluent_kafka as ck
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                   ConfigResource, NewTopic)

from tests.support.broker_proc import BrokerProcess

pytestmark = pytest.mark.slow

OVERRIDES = {"share.coordinator.state.topic.replication.factor": 1,
             "share.coordinator.state.topic.min.isr": 1,
             "share.coordinator.state.topic.num.partitions": 3,
             "offsets.topic.replication.factor": 1,
             "offsets.topic.num.partitions": 3}


@pytest.fixture
def broker(tmp_path):
    b = BrokerProcess(tmp_path / "data", overrides=OVERRIDES)
    b.start()
    yield b
    if b.running:
        b.stop()


def setup_topic(bootstrap, topic, group, n, *, lock_ms=None):
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([NewTopic(topic, 1, 1)])[topic].result()
    entries = [ConfigEntry("share.auto.offset.reset", "earliest",
                           incremental_operation=AlterConfigOpType.SET)]
    if lock_ms:
        entries.append(ConfigEntry("share.record.lock.duration.ms", str(lock_ms),
                                   incremental_operation=AlterConfigOpType.SET))
    for f in a.incremental_alter_configs([ConfigResource("GROUP", group,
                                                         incremental_configs=entries)]).values():
        f.result()
    p = ck.Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, f"v{i}".encode())
    p.flush()


def share_consumer(bootstrap, group, topic):
    c = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                          "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])
    return c


def poll(c, timeout=0.5):
    out = []
    for m in c.poll(timeout):
        assert m.error() is None, m.error()
        out.append(m)
    return out


def test_members_share_one_partition_without_holding_a_record_twice(broker):
    setup_topic(broker.bootstrap, "q", "g", 300)
    members = [share_consumer(broker.bootstrap, "g", "q") for _ in range(3)]
    delivered: dict[int, int] = {}
    by_member = [0, 0, 0]
    deadline = time.time() + 60
    try:
        while len(delivered) < 300 and time.time() < deadline:
            for i, c in enumerate(members):
                for m in poll(c, 0.2):
                    delivered[m.offset()] = delivered.get(m.offset(), 0) + 1
                    by_member[i] += 1
                    c.acknowledge(m)
                c.commit_sync()
    finally:
        for c in members:
            c.close()
    assert sorted(delivered) == list(range(300))
    # accepted before any lock expired: a record was never handed to two members
    assert set(delivered.values()) == {1}
    assert sum(by_member) == 300


def test_released_records_come_back_rejected_ones_never(broker):
    setup_topic(broker.bootstrap, "q2", "g2", 6)
    c = share_consumer(broker.bootstrap, "g2", "q2")
    seen: list[tuple[int, int]] = []
    try:
        first: list = []
        deadline = time.time() + 30
        while len(first) < 6 and time.time() < deadline:
            first += poll(c)
        assert sorted(m.offset() for m in first) == list(range(6))
        for m in first:
            t = {0: ck.AcknowledgeType.RELEASE, 1: ck.AcknowledgeType.REJECT}.get(m.offset() % 3,
                                                                            ck.AcknowledgeType.ACCEPT)
            c.acknowledge(m, t)
        c.commit_sync()
        deadline = time.time() + 10
        while time.time() < deadline:
            for m in poll(c):
                seen.append((m.offset(), m.delivery_count() if hasattr(m, "delivery_count") else 2))
                c.acknowledge(m)
            c.commit_sync()
            if len(seen) >= 2:
                break
        time.sleep(1.0)
        for m in poll(c):                      # nothing else may come
            seen.append((m.offset(), -1))
            c.acknowledge(m)
    finally:
        c.close()
    assert sorted(o for o, _ in seen) == [0, 3]          # released: back; rejected 1, 4: never


def test_sigkill_resumes_share_partitions(broker):
    setup_topic(broker.bootstrap, "q3", "g3", 100)
    c = share_consumer(broker.bootstrap, "g3", "q3")
    accepted: set[int] = set()
    try:
        deadline = time.time() + 30
        while len(accepted) < 40 and time.time() < deadline:
            for m in poll(c):
                if len(accepted) < 40:
                    c.acknowledge(m)
                    accepted.add(m.offset())
                else:
                    c.acknowledge(m, ck.AcknowledgeType.RELEASE)
            c.commit_sync()
    finally:
        broker.kill()                              # SIGKILL while the consumer is a member
        c.close()
    assert len(accepted) >= 40
    broker.restart()
    c = share_consumer(broker.bootstrap, "g3", "q3")
    after: list[int] = []
    try:
        deadline = time.time() + 60
        while len(set(after)) < 100 - len(accepted) and time.time() < deadline:
            for m in poll(c):
                after.append(m.offset())
                c.acknowledge(m)
            c.commit_sync()
    finally:
        c.close()
    assert not (set(after) & accepted), "an acknowledged record was delivered again"
    assert set(after) | accepted == set(range(100)), "an unacknowledged record was lost"


def test_rejected_records_go_to_the_groups_dead_letter_topic(broker):
    """KIP-1191 (share.version 2, finalized on a new cluster as Kafka 4.4 does): a record a
    consumer rejects is written to the group's dead-letter topic — partition = source
    partition modulo its partition count, the original key and value with
    ``errors.deadletterqueue.copy.record.enable``, Kafka's ``__dlq.errors.*`` headers — once
    the topic allows it (``errors.deadletterqueue.group.enable=true``); a DLQ name starting
    with ``__`` is refused as a GROUP config."""
    bs, topic, group, dlq = broker.bootstrap, "orders", "dlq-group", "dlq.orders"
    a = AdminClient({"bootstrap.servers": bs})
    a.create_topics([NewTopic(dlq, 2, 1, config={"errors.deadletterqueue.group.enable": "true"})])[dlq].result()

    def group_config(*pairs):
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in pairs]
        for f in a.incremental_alter_configs([ConfigResource("GROUP", group, incremental_configs=entries)]).values():
            f.result()
    with pytest.raises(ck.KafkaException, match="must not start with '__'"):
        group_config(("errors.deadletterqueue.topic.name", "__orders"))
    group_config(("errors.deadletterqueue.topic.name", dlq),
                 ("errors.deadletterqueue.copy.record.enable", "true"))
    setup_topic(bs, topic, group, 3)
    c = share_consumer(bs, group, topic)
    try:
        got: list = []
        deadline = time.time() + 30
        while len(got) < 3 and time.time() < deadline:
            got += poll(c)
        assert sorted(m.offset() for m in got) == [0, 1, 2]
        for m in got:
            c.acknowledge(m, ck.AcknowledgeType.REJECT if m.offset() == 1 else ck.AcknowledgeType.ACCEPT)
        c.commit_sync()
    finally:
        c.close()
    reader = ck.Consumer({"bootstrap.servers": bs, "group.id": "dlq-reader", "enable.auto.commit": False})
    reader.assign([ck.TopicPartition(dlq, 0, ck.OFFSET_BEGINNING)])     # partition 0 % 2
    try:
        letters: list = []
        deadline = time.time() + 30
        while not letters and time.time() < deadline:
            m = reader.poll(0.5)
            if m is not None and m.error() is None:
                letters.append(m)
    finally:
        reader.close()
    assert len(letters) == 1, "no dead letter written"
    [m] = letters
    assert (m.key(), m.value()) == (None, b"v1")
    assert dict((k, v.decode()) for k, v in m.headers()) == {
        "__dlq.errors.topic": topic, "__dlq.errors.partition": "0", "__dlq.errors.offset": "1",
        "__dlq.errors.group": group, "__dlq.errors.delivery.count": "1",
        "__dlq.errors.message": "Offset rejected by client."}
