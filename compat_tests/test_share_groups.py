"""Share groups (KIP-932) on both targets: Kafka's Java ``KafkaShareConsumer`` through
``kafka-console-share-consumer`` reads every record once the GROUP config
``share.auto.offset.reset=earliest`` is set; librdkafka share consumers (explicit
acknowledgement) see released records again and rejected ones never; ``kafka-share-groups
--list`` names the group."""

from __future__ import annotations

import time

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from compat_tests.cli import run_tool
from compat_tests.helpers import create_topic


def _earliest(bootstrap: str, group: str) -> None:
    a = AdminClient({"bootstrap.servers": bootstrap})
    entry = ConfigEntry("share.auto.offset.reset", "earliest",
                        incremental_operation=AlterConfigOpType.SET)
    for f in a.incremental_alter_configs([ConfigResource("GROUP", group,
                                                         incremental_configs=[entry])]).values():
        f.result()


def _produce(bootstrap: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, f"r{i}".encode())
    p.flush()


def test_console_share_consumer_reads_every_record(bootstrap, topic_name):
    create_topic(bootstrap, topic_name)
    group = f"{topic_name}-share"
    _earliest(bootstrap, group)
    _produce(bootstrap, topic_name, 25)
    r = run_tool("kafka-console-share-consumer",
                 ["--bootstrap-server", bootstrap, "--topic", topic_name, "--group", group,
                  "--max-messages", "25", "--timeout-ms", "30000"], timeout=120).check()
    assert sorted(r.lines[:25], key=lambda s: int(s[1:])) == [f"r{i}" for i in range(25)]
    listed = run_tool("kafka-share-groups", ["--bootstrap-server", bootstrap, "--list"]).check()
    assert group in listed.lines


def test_released_records_return_and_rejected_never(bootstrap, topic_name):
    create_topic(bootstrap, topic_name)
    group = f"{topic_name}-share"
    _earliest(bootstrap, group)
    _produce(bootstrap, topic_name, 6)
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic_name])
    again: list[int] = []
    try:
        first: list = []
        deadline = time.time() + 30
        while len(first) < 6 and time.time() < deadline:
            first += [m for m in c.poll(0.5) if m.error() is None]
        assert sorted(m.offset() for m in first) == list(range(6))
        for m in first:
            c.acknowledge(m, {0: AcknowledgeType.RELEASE, 1: AcknowledgeType.REJECT}.get(
                m.offset() % 3, AcknowledgeType.ACCEPT))
        c.commit_sync()
        deadline = time.time() + 10
        while time.time() < deadline and len(again) < 2:
            for m in c.poll(0.5):
                if m.error() is None:
                    again.append(m.offset())
                    c.acknowledge(m)
            c.commit_sync()
        end = time.time() + 2
        while time.time() < end:
            for m in c.poll(0.5):
                if m.error() is None:
                    again.append(m.offset())
                    c.acknowledge(m)
    finally:
        c.close()
    assert sorted(again) == [0, 3]


def test_share_groups_tool_describes_resets_and_deletes(bootstrap, topic_name):
    create_topic(bootstrap, topic_name)
    group = f"{topic_name}-share"
    _earliest(bootstrap, group)
    _produce(bootstrap, topic_name, 20)
    run_tool("kafka-console-share-consumer",
             ["--bootstrap-server", bootstrap, "--topic", topic_name, "--group", group,
              "--max-messages", "12", "--timeout-ms", "30000"], timeout=120).check()

    def tool(*args):
        return run_tool("kafka-share-groups",
                        ["--bootstrap-server", bootstrap, "--group", group, *args]).check()

    rows = [line.split() for line in tool("--describe").lines]
    assert rows[0] == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]
    assert rows[1] == [group, topic_name, "0", "12", "8"]
    state = [line.split() for line in tool("--describe", "--state").lines]
    assert state[1][0] == group and state[1][-2:] == ["Empty", "0"]
    reset = [line.split() for line in tool("--reset-offsets", "--to-earliest", "--topic",
                                           topic_name, "--execute").lines]
    assert reset[1] == [group, topic_name, "0", "0"]
    assert [line.split() for line in tool("--describe").lines][1][3:] == ["0", "20"]
    assert "Successful" in tool("--delete-offsets", "--topic", topic_name).stdout
    assert "no offset information" in tool("--describe").stdout
    assert "successful" in tool("--delete").stdout
