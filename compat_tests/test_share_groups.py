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
from compat_tests.helpers import create_topic, wait_until


def _set_group_configs(a: AdminClient, group: str, *pairs: tuple[str, str]) -> None:
    """Set GROUP configs, then wait until a describe shows them: a broker applies a committed
    config change when its metadata catches up (on Kafka, after the alter has answered)."""
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in pairs]
    for f in a.incremental_alter_configs([ConfigResource("GROUP", group,
                                                         incremental_configs=entries)]).values():
        f.result()

    def shown():
        (f,) = a.describe_configs([ConfigResource("GROUP", group)]).values()
        entries = f.result()
        return all(k in entries and entries[k].value == v for k, v in pairs)
    wait_until(shown, what=f"group {group}'s configs {pairs}")


def _earliest(bootstrap: str, group: str) -> None:
    _set_group_configs(AdminClient({"bootstrap.servers": bootstrap}), group,
                       ("share.auto.offset.reset", "earliest"))


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


def _raw(bootstrap: str):
    from compat_tests.differential.common import Connection
    host, port = bootstrap.rsplit(":", 1)
    return Connection((host, int(port)), timeout=30)


# A share consumer in a process of its own: it joins, polls until it holds every record of the
# topic (explicit acknowledgement: nothing is acknowledged) or a minute has passed, says which,
# and waits to be killed.
_HOLDER = """
import sys, time
from confluent_kafka import ShareConsumer
bootstrap, group, topic, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                   "share.acknowledgement.mode": "explicit"})
c.subscribe([topic])
held, deadline = [], time.time() + 60
while len(held) < n and time.time() < deadline:
    held += [(m.offset(), m.delivery_count()) for m in c.poll(0.5) if m.error() is None]
print("held", sorted(held), flush=True)
time.sleep(600)
"""


def test_killed_share_consumer_records_go_to_another_member_at_once(bootstrap, topic_name):
    """A share consumer process killed (SIGKILL) mid-batch — holding five records it never
    acknowledged, no final ShareFetch, no leave — has them released when its connections
    drop, so another member of the group gets them again (delivery count 2) long before the
    acquisition lock (60 s here) would have expired: Kafka's share session cache on
    disconnect, on both brokers."""
    import subprocess
    import sys
    create_topic(bootstrap, topic_name)
    group = f"{topic_name}-share"
    a = AdminClient({"bootstrap.servers": bootstrap})
    _set_group_configs(a, group, ("share.auto.offset.reset", "earliest"),
                       ("share.record.lock.duration.ms", "60000"))
    _produce(bootstrap, topic_name, 5)
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, bootstrap, group, topic_name, "5"],
                              stdout=subprocess.PIPE, text=True)
    try:
        line = holder.stdout.readline()            # blocks until it holds the records (or dies)
        assert line.strip() == "held [(0, 1), (1, 1), (2, 1), (3, 1), (4, 1)]", line
    finally:
        holder.kill()                              # the consumer dies holding the five records
        holder.wait(timeout=30)
        holder.stdout.close()
    killed_at = time.monotonic()
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic_name])
    again: list = []
    try:
        # well inside the 60 s lock: only the release on disconnect can hand them over
        while len(again) < 5 and time.monotonic() < killed_at + 40:
            again += [(m.offset(), m.delivery_count()) for m in c.poll(0.5) if m.error() is None]
        waited = time.monotonic() - killed_at
    finally:
        c.close()
    assert sorted(again) == [(o, 2) for o in range(5)], (again, waited)


def test_share_fetch_max_records_whole_batches_one_partition_per_answer(bootstrap, topic_name):
    """ShareFetch shaping as Kafka 4.4's: MaxRecords (3) is shared by an answer's partitions
    and reached at a record batch's end — a partition's five-record batch is acquired whole —
    so each answer carries one partition and the others come in the next answers."""
    from kbroker.wire import messages as M
    F = M.ShareFetchRequest
    create_topic(bootstrap, topic_name, partitions=3)
    group = f"{topic_name}-share"
    _earliest(bootstrap, group)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 200})
    for part in range(3):
        for i in range(5):                  # one batch of five records per partition
            p.produce(topic_name, f"p{part}-{i}".encode(), partition=part)
        p.flush()
    conn = _raw(bootstrap)
    try:
        md = conn.request(3, 12, M.MetadataRequest(
            topics=[M.MetadataRequest.MetadataRequestTopic(name=topic_name)], allow_auto_topic_creation=False))
        topic_id = md.topics[0].topic_id
        for _ in range(100):
            fc = conn.request(10, 4, M.FindCoordinatorRequest(key_type=0, coordinator_keys=[group]))
            if fc.coordinators[0].error_code == 0:
                break
            time.sleep(0.2)
        hb = None
        deadline = time.time() + 30
        while time.time() < deadline:
            hb = conn.request(76, 1, M.ShareGroupHeartbeatRequest(
                group_id=group, member_id="shaper", member_epoch=0 if hb is None or hb.error_code else hb.member_epoch,
                rack_id=None, subscribed_topic_names=[topic_name] if hb is None or hb.error_code else None))
            if hb.error_code == 0 and hb.assignment is not None and hb.assignment.topic_partitions:
                break
            time.sleep(0.2)
        answers, epoch = [], 0
        while time.time() < deadline and sum(len(a) for a in answers) < 3:
            r = conn.request(78, 1, F(
                group_id=group, member_id="shaper", share_session_epoch=epoch, max_wait_ms=1000,
                min_bytes=1, max_bytes=1 << 20, max_records=3, batch_size=2,
                topics=[F.FetchTopic(topic_id=topic_id, partitions=[F.FetchPartition(
                    partition_index=q, partition_max_bytes=0, acknowledgement_batches=[])
                    for q in range(3)])] if epoch == 0 else [],
                forgotten_topics_data=[]))
            assert r.error_code == 0, r
            epoch += 1
            got = {q.partition_index: [(a.first_offset, a.last_offset, a.delivery_count)
                                       for a in q.acquired_records]
                   for t in r.responses for q in t.partitions if q.acquired_records}
            if got:
                answers.append(got)
    finally:
        conn.close()
    assert all(len(a) == 1 for a in answers), answers
    assert sorted(q for a in answers for q in a) == [0, 1, 2]
    assert all(acq == [(0, 4, 1)] for a in answers for acq in a.values()), answers


def test_rejected_record_goes_to_the_dead_letter_topic(bootstrap, topic_name):
    """KIP-1191 (share.version 2, finalized on a new cluster by both): a record a share
    consumer rejects is written to the group's dead-letter topic (one allowing it, with the
    ``dlq.`` prefix) with the original key and value (``copy.record.enable``) and the
    ``__dlq.errors.*`` headers; a DLQ name starting with ``__`` is refused."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    from confluent_kafka.admin import NewTopic
    group, dlq = f"{topic_name}-share", f"dlq.{topic_name}"
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([NewTopic(dlq, 1, 1, config={"errors.deadletterqueue.group.enable": "true"})])[dlq].result()
    create_topic(bootstrap, topic_name)

    try:
        _set_group_configs(a, group, ("errors.deadletterqueue.topic.name", "__" + topic_name))
        refused = None
    except KafkaException as e:
        refused = e.args[0].name()
    assert refused == "INVALID_CONFIG"
    _set_group_configs(a, group, ("share.auto.offset.reset", "earliest"), ("errors.deadletterqueue.topic.name", dlq),
                       ("errors.deadletterqueue.copy.record.enable", "true"))
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(3):
        p.produce(topic_name, value=f"r{i}".encode(), key=f"k{i}".encode())
    p.flush()
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic_name])
    try:
        got: list = []
        deadline = time.time() + 30
        while len(got) < 3 and time.time() < deadline:
            got += [m for m in c.poll(0.5) if m.error() is None]
        assert sorted(m.offset() for m in got) == [0, 1, 2]
        for m in got:
            c.acknowledge(m, AcknowledgeType.REJECT if m.offset() == 2 else AcknowledgeType.ACCEPT)
        c.commit_sync()
    finally:
        c.close()
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic_name}-reader",
                       "enable.auto.commit": False})
    reader.assign([TopicPartition(dlq, 0, 0)])
    letters: list = []
    try:
        deadline = time.time() + 60          # Kafka's DLQ manager sends from a thread of its own
        while not letters and time.time() < deadline:
            m = reader.poll(0.5)
            if m is not None and m.error() is None:
                letters.append(m)
    finally:
        reader.close()
    assert len(letters) == 1, "no dead letter"
    [m] = letters
    assert (m.key(), m.value()) == (b"k2", b"r2")
    assert dict((k, v.decode()) for k, v in m.headers()) == {
        "__dlq.errors.topic": topic_name, "__dlq.errors.partition": "0", "__dlq.errors.offset": "2",
        "__dlq.errors.group": group, "__dlq.errors.delivery.count": "1",
        "__dlq.errors.message": "Offset rejected by client."}
