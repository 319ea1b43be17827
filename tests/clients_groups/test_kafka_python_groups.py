"""kafka-python 3.x consumer groups against a real kbroker: splitting partitions without
overlap, rebalancing on leave / crash / join within the session timeout, resuming from
committed offsets, and the group admin APIs."""
from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from .conftest import SESSION_MS, admin, create_topic, produce, wait_until
from .kp_helpers import ConsumerProcess, ConsumerThread, consumer_config

P = 6


def split_ok(members, n=P):
    """Assignments are disjoint, cover all partitions, and nobody is empty-handed."""
    sets = [m.assignment for m in members]
    union = set().union(*sets)
    return (sum(len(s) for s in sets) == len(union) == n) and all(sets)


def test_members_split_partitions_and_rebalance_on_crash_leave_and_join(bootstrap, names):
    topic, group = names
    create_topic(bootstrap, topic, P)
    produce(bootstrap, topic, 60, P)
    c1 = ConsumerThread(bootstrap, group, topic)
    # c2 leaves with a LeaveGroup later; its session is far longer than any wait here, so
    # only the leave (not a session expiry) can hand its partitions over in time
    c2 = ConsumerThread(bootstrap, group, topic, session_timeout_ms=300_000,
                        max_poll_interval_ms=300_000, request_timeout_ms=305_000)
    crash = ConsumerProcess(bootstrap, group, topic)
    try:
        wait_until(lambda: split_ok([c1, c2, crash]), 40, what="3-way split")
        # the split holds steady (no member keeps re-joining)
        time.sleep(1.5)
        assert split_ok([c1, c2, crash])
        # crash: no LeaveGroup; the session timeout must expel it
        crash.kill()
        wait_until(lambda: split_ok([c1, c2]), SESSION_MS / 1000 + 15, what="split after crash")
        # nothing was committed, so the dead member's partitions are re-read from the
        # start by the survivors: together they see every record
        wait_until(lambda: set(c1.values()) | set(c2.values()) == {str(i).encode() for i in range(60)},
                   what="all records")
        # leave: immediate rebalance
        c2.close()
        wait_until(lambda: c1.assignment == set(range(P)), 30, what="c1 takes everything")
        # join: the newcomer gets a share
        c3 = ConsumerThread(bootstrap, group, topic)
        wait_until(lambda: split_ok([c1, c3]), 20, what="split after join")
        c3.close()
    finally:
        crash.kill()
        c1.close()
        if c2.thread.is_alive():
            c2.close()


def test_commit_then_new_consumer_continues_from_committed_offset(bootstrap, names):
    topic, group = names
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, 20, 1)
    tp = TopicPartition(topic, 0)
    c = KafkaConsumer(topic, **consumer_config(bootstrap, group))
    got = []
    wait_until(lambda: got.extend(r for rs in c.poll(200).values() for r in rs) or len(got) >= 20,
               what="first 20")
    c.commit({tp: OffsetAndMetadata(12, "checkpoint-12", -1)})
    assert c.committed(tp) == 12
    c.close()
    c2 = KafkaConsumer(topic, **consumer_config(bootstrap, group))
    got2 = []
    wait_until(lambda: got2.extend(r for rs in c2.poll(200).values() for r in rs) or len(got2) >= 8,
               what="the rest")
    assert [r.offset for r in got2] == list(range(12, 20))
    md = c2.committed(tp, metadata=True)
    assert md.offset == 12 and md.metadata == "checkpoint-12"
    c2.close()


def test_group_admin_list_describe_delete_offsets_and_groups(bootstrap, names):
    topic, group = names
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, 10, 2)
    a = admin(bootstrap)
    c = ConsumerThread(bootstrap, group, topic)
    try:
        wait_until(lambda: c.assignment == {0, 1}, what="assignment")
        wait_until(lambda: len(c.records) == 10, what="records")
        c.commit()
        groups = {g["group_id"]: g for g in a.list_groups()}
        assert groups[group]["protocol_type"] == "consumer"
        assert groups[group]["group_state"] == "Stable"
        d = a.describe_groups([group])[group]
        assert d["group_state"] == "Stable" and d["protocol_data"] in ("range", "roundrobin")
        assert len(d["members"]) == 1
        offsets = a.list_group_offsets(group)[group]
        assert {tp.partition: om.offset for tp, om in offsets.items()} == {0: 5, 1: 5}
        # active group, subscribed topic: the broker refuses (GROUP_SUBSCRIBED_TO_TOPIC)
        res = a.delete_group_offsets(group, [TopicPartition(topic, 0)])
        assert "GroupSubscribedToTopic" in repr(res) or "GROUP_SUBSCRIBED" in repr(res).upper()
        r = a.delete_groups([group])
        assert r[group] != "OK" and "NONEMPTYGROUP" in repr(r).upper().replace("_", ""), r
    finally:
        c.close()
    d = a.describe_groups([group])[group]
    assert d["group_state"] == "Empty" and d["members"] == []
    a.delete_group_offsets(group, [TopicPartition(topic, 0)])
    offsets = a.list_group_offsets(group)[group]
    assert {tp.partition for tp in offsets} == {1}
    assert a.delete_groups([group]) == {group: "OK"}
    assert group not in {g["group_id"] for g in a.list_groups()}
    a.close()
