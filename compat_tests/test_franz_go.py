"""Behavioural compat tests with franz-go (Go, its own protocol codec: kgo + kadm), through the
driver program in compat_tests/franzgo/ (versions pinned in go.mod/go.sum, built into .cache).

franz-go producers are idempotent by default (InitProducerId before any Produce), consumers are
read_committed here unless asked otherwise, and group members use the cooperative-sticky
balancer unless a test picks another.
"""

from __future__ import annotations

import time
import uuid

import pytest

from compat_tests.extclient import Driver, ensure_franzgo, value
from compat_tests.helpers import T0_MS, wait_for_sole_owner, wait_until

CLIENT = "franz-go"
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.fixture(scope="session")
def fg():
    return Driver(ensure_franzgo(), "franz-go")


def run_ok(fg, bootstrap, ops):
    return [value(r, op) for r, op in zip(fg.run(bootstrap, ops), ops)]


def create_op(topic, partitions=1, **configs):
    return {"op": "createTopics", "topics": [{"topic": topic, "numPartitions": partitions,
                                              "configs": configs}]}


def assign_op(topic, count, partitions=(0,), offset=0, **extra):
    return {"op": "consume", "topic": topic, "count": count,
            "assign": [{"partition": p, "offset": offset} for p in partitions], **extra}


def test_round_trip_keys_headers_timestamps(fg, bootstrap, topic_name):
    messages = [
        {"key": "k1", "value": "v1", "headers": [["h1", "x"], ["h2", ""], ["h1", "again"]],
         "timestamp": T0_MS, "partition": 1},
        {"key": None, "value": "no key", "timestamp": T0_MS + 1, "partition": 1},
        {"key": "k3", "value": None, "headers": [["only", "header"]], "timestamp": T0_MS + 2,
         "partition": 1},
        {"key": "k4", "value": "v4", "timestamp": T0_MS + 3, "partition": 0},
    ]
    created, produced, offsets, consumed = run_ok(fg, bootstrap, [
        create_op(topic_name, 2),
        {"op": "produce", "topic": topic_name, "messages": messages},
        {"op": "listOffsets", "topic": topic_name},
        assign_op(topic_name, 4, partitions=(0, 1)),
    ])
    assert created == [{"topic": topic_name, "error": None, "numPartitions": 2,
                        "replicationFactor": 1}]
    assert sorted((p["partition"], p["offset"], p["value"]) for p in produced) == \
        [(0, 0, "v4"), (1, 0, "v1"), (1, 1, "no key"), (1, 2, None)]
    assert offsets == [{"partition": 0, "start": 0, "end": 1, "error": None},
                       {"partition": 1, "start": 0, "end": 3, "error": None}]
    records = sorted(consumed["records"], key=lambda r: (r["partition"], r["offset"]))
    got = [(r["partition"], r["offset"], r["key"], r["value"], r["headers"], r["timestamp"])
           for r in records]
    assert got == [
        (0, 0, "k4", "v4", [], T0_MS + 3),
        (1, 0, "k1", "v1", [["h1", "x"], ["h2", ""], ["h1", "again"]], T0_MS),
        (1, 1, None, "no key", [], T0_MS + 1),
        (1, 2, "k3", None, [["only", "header"]], T0_MS + 2),
    ]
    assert consumed["errors"] is None


@pytest.mark.parametrize("codec", CODECS)
def test_compression(fg, bootstrap, topic_name, codec):
    values = [f"{codec}-{i}-" + "y" * (i * 41 % 500) for i in range(60)]
    _, produced, consumed = run_ok(fg, bootstrap, [
        create_op(topic_name),
        {"op": "produce", "topic": topic_name, "compression": codec,
         "messages": [{"key": str(i), "value": v, "partition": 0} for i, v in enumerate(values)]},
        assign_op(topic_name, 60),
    ])
    assert sorted(p["offset"] for p in produced) == list(range(60))
    assert [(r["offset"], r["key"], r["value"]) for r in consumed["records"]] == \
        [(i, str(i), v) for i, v in enumerate(values)]


def test_acks_and_offsets(fg, bootstrap, topic_name):
    """acks=1 and acks=0 (no idempotence) land like acks=all; list offsets see all of them."""
    _, all_acks, one_ack, no_ack = run_ok(fg, bootstrap, [
        create_op(topic_name),
        {"op": "produce", "topic": topic_name, "messages": [{"value": "a", "partition": 0}]},
        {"op": "produce", "topic": topic_name, "acks": 1, "messages": [{"value": "b", "partition": 0}]},
        {"op": "produce", "topic": topic_name, "acks": 0, "messages": [{"value": "c", "partition": 0}]},
    ])
    assert [all_acks[0]["offset"], one_ack[0]["offset"]] == [0, 1]
    deadline = time.monotonic() + 10
    while True:  # acks=0 gives no offset back; wait until the record is there
        (offsets,) = run_ok(fg, bootstrap, [{"op": "listOffsets", "topic": topic_name}])
        if offsets[0]["end"] == 3 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert offsets == [{"partition": 0, "start": 0, "end": 3, "error": None}]
    (consumed,) = run_ok(fg, bootstrap, [assign_op(topic_name, 3)])
    assert [r["value"] for r in consumed["records"]] == ["a", "b", "c"]


def test_offsets_by_timestamp(fg, bootstrap, topic_name):
    messages = [{"value": f"v{i}", "timestamp": T0_MS + 10 * i, "partition": 0} for i in range(3)]
    results = run_ok(fg, bootstrap, [
        create_op(topic_name),
        {"op": "produce", "topic": topic_name, "messages": messages},
        *[{"op": "listOffsetsAfterMilli", "topic": topic_name, "timestamp": ts}
          for ts in (T0_MS - 1, T0_MS + 5, T0_MS + 20, T0_MS + 1000)],
    ])
    got = [(r[0]["offset"], r[0]["timestamp"], r[0]["error"]) for r in results[2:]]
    # the first offset whose timestamp is >= the target; none: kadm answers the end offset
    assert got[:3] == [(0, T0_MS, None), (1, T0_MS + 10, None), (2, T0_MS + 20, None)]
    assert got[3][0] == 3 and got[3][2] is None


def test_out_of_range_offset(fg, bootstrap, topic_name):
    _, _, consumed = run_ok(fg, bootstrap, [
        create_op(topic_name),
        {"op": "produce", "topic": topic_name, "messages": [{"value": "only", "partition": 0}]},
        assign_op(topic_name, 1, offset=50, noReset=True, timeoutMs=8000),
    ])
    assert consumed["records"] == []
    assert consumed["errors"] == [{"partition": 0, "error": "OFFSET_OUT_OF_RANGE"}]


def test_unknown_topic_and_partition(fg, bootstrap, topic_name):
    listed, produce, bad_partition = fg.run(bootstrap, [
        {"op": "listTopics", "names": [topic_name]},
        {"op": "produce", "topic": topic_name, "messages": [{"value": "x"}], "timeoutMs": 5000},
        create_op(topic_name + "-1p"),
    ])
    (topic,) = value(listed)
    assert topic["error"] == "UNKNOWN_TOPIC_OR_PARTITION"
    assert produce["error"]["type"] == "UNKNOWN_TOPIC_OR_PARTITION", produce
    (bad,) = fg.run(bootstrap, [{"op": "produce", "topic": topic_name + "-1p", "timeoutMs": 5000,
                                 "messages": [{"value": "x", "partition": 7}]}])
    assert "error" in bad  # franz-go refuses a partition the topic does not have


def test_message_too_large(fg, bootstrap, topic_name):
    _, too_large, small = fg.run(bootstrap, [
        create_op(topic_name, **{"max.message.bytes": "2000"}),
        {"op": "produce", "topic": topic_name, "messages": [{"value": "z" * 5000, "partition": 0}]},
        {"op": "produce", "topic": topic_name, "messages": [{"value": "z" * 100, "partition": 0}]},
    ])
    assert too_large["error"]["type"] == "MESSAGE_TOO_LARGE", too_large
    assert value(small)[0]["offset"] == 0


def test_invalid_partitions_and_replication_factor(fg, bootstrap, topic_name):
    bad_partitions, bad_rf, _, shrink, missing = run_ok(fg, bootstrap, [
        {"op": "createTopics", "topics": [{"topic": topic_name, "numPartitions": -5}]},
        {"op": "createTopics", "topics": [{"topic": topic_name + "-rf", "replicationFactor": 3}]},
        create_op(topic_name + "-ok", 2),
        {"op": "createPartitions", "topic": topic_name + "-ok", "count": 1},
        {"op": "createPartitions", "topic": topic_name + "-missing", "count": 2},
    ])
    assert bad_partitions[0]["error"] == "INVALID_PARTITIONS"
    assert bad_rf[0]["error"] == "INVALID_REPLICATION_FACTOR"
    assert shrink == "INVALID_PARTITIONS"
    assert missing == "UNKNOWN_TOPIC_OR_PARTITION"


def test_topic_admin_and_configs(fg, bootstrap, topic_name):
    (created,) = run_ok(fg, bootstrap, [create_op(topic_name, 1, **{"retention.ms": "3600000"})])
    assert created[0]["error"] is None
    # Kafka's brokers learn topic configs from the metadata log asynchronously: wait until
    # the describe shows the change (kbroker answers at once)
    described = wait_until(lambda: _configs_with(fg, bootstrap, topic_name, "retention.ms", "3600000"),
                           what="retention.ms override described")
    run_ok(fg, bootstrap, [
        {"op": "alterTopicConfigs", "topic": topic_name,
         "configs": {"retention.ms": "", "segment.ms": "600000"}}])
    described2 = wait_until(lambda: _configs_with(fg, bootstrap, topic_name, "segment.ms", "600000"),
                            what="segment.ms override described")
    (grown,) = run_ok(fg, bootstrap, [{"op": "createPartitions", "topic": topic_name, "count": 4}])
    # Kafka propagates new partitions to its metadata cache asynchronously
    listed = wait_until(lambda: _with_partitions(fg, bootstrap, topic_name, 4),
                        what="4 partitions in metadata")
    (deleted,) = run_ok(fg, bootstrap, [{"op": "deleteTopics", "names": [topic_name]}])
    configs = described
    assert configs["retention.ms"] == {"value": "3600000", "source": "DYNAMIC_TOPIC_CONFIG",
                                       "sensitive": False}
    assert configs["cleanup.policy"]["value"] == "delete"
    assert configs["cleanup.policy"]["source"] == "DEFAULT_CONFIG"
    configs2 = described2
    assert configs2["retention.ms"] == {"value": "604800000", "source": "DEFAULT_CONFIG",
                                        "sensitive": False}
    assert configs2["segment.ms"]["value"] == "600000"
    assert grown is None
    (topic,) = listed
    assert [p["partition"] for p in topic["partitions"]] == [0, 1, 2, 3]
    assert deleted == {topic_name: None}


def _configs_with(fg, bootstrap, topic, key, value):
    """The topic's described configs once ``key`` has ``value`` (else None, to retry)."""
    (described,) = run_ok(fg, bootstrap, [{"op": "describeTopicConfigs", "names": [topic]}])
    configs = described[topic]["configs"]
    return configs if configs.get(key, {}).get("value") == value else None


def _with_partitions(fg, bootstrap, topic, count):
    (listed,) = run_ok(fg, bootstrap, [{"op": "listTopics", "names": [topic]}])
    return listed if len(listed[0]["partitions"] or []) == count else None


def test_delete_records(fg, bootstrap, topic_name):
    _, _, deleted, offsets, consumed = run_ok(fg, bootstrap, [
        create_op(topic_name),
        {"op": "produce", "topic": topic_name,
         "messages": [{"value": f"v{i}", "partition": 0} for i in range(5)]},
        {"op": "deleteRecords", "topic": topic_name, "partitions": [{"partition": 0, "offset": 3}]},
        {"op": "listOffsets", "topic": topic_name},
        assign_op(topic_name, 2, offset=0),  # below the log start: reset to the start
    ])
    assert deleted == [{"partition": 0, "lowWatermark": 3, "error": None}]
    assert offsets == [{"partition": 0, "start": 3, "end": 5, "error": None}]
    assert [(r["offset"], r["value"]) for r in consumed["records"]] == [(3, "v3"), (4, "v4")]


@pytest.mark.parametrize("balancer", ["cooperative-sticky", "range"])
def test_group_consume_commit_describe_delete(fg, bootstrap, topic_name, balancer):
    group = f"g-{topic_name}"
    results = run_ok(fg, bootstrap, [
        create_op(topic_name, 3),
        {"op": "produce", "topic": topic_name,
         "messages": [{"value": f"v{i}", "partition": i % 3} for i in range(9)]},
        {"op": "consume", "topic": topic_name, "groupId": group, "count": 9, "commit": True,
         "balancer": balancer},
        {"op": "fetchOffsets", "groupId": group},
        {"op": "describeGroups", "groupIds": [group]},
        {"op": "listGroups"},
        {"op": "commitOffsets", "groupId": group, "topic": topic_name,
         "partitions": [{"partition": 0, "offset": 1, "metadata": "hand-set"}]},
        {"op": "fetchOffsets", "groupId": group},
        {"op": "deleteGroups", "groupIds": [group]},
        {"op": "fetchOffsets", "groupId": group},
    ])
    _, _, consumed, fetched, described, listed, _, fetched2, deleted, fetched3 = results
    assert len(consumed["records"]) == 9
    assert consumed["assignments"] == [{"topic": topic_name, "partitions": [0, 1, 2]}]
    assert [(o["partition"], o["offset"], o["error"]) for o in fetched] == \
        [(0, 3, None), (1, 3, None), (2, 3, None)]
    assert described[group]["state"] == "Empty"
    assert described[group]["protocolType"] == "consumer"
    assert listed[group]["protocolType"] == "consumer"
    assert [(o["partition"], o["offset"], o["metadata"]) for o in fetched2][0] == (0, 1, "hand-set")
    assert deleted == {group: None}
    assert fetched3 is None


def test_group_with_server_side_assignment_kip848(fg, bootstrap, topic_name):
    """franz-go with ``kgo.ServerSideBalancer()`` (its ``group.protocol=consumer``): it joins
    through ConsumerGroupHeartbeat, the broker assigns, it consumes and commits; the group
    is a consumer-protocol group afterwards."""
    from confluent_kafka.admin import AdminClient
    group = f"g-{topic_name}"
    results = run_ok(fg, bootstrap, [
        create_op(topic_name, 3),
        {"op": "produce", "topic": topic_name,
         "messages": [{"value": f"v{i}", "partition": i % 3} for i in range(30)]},
        {"op": "consume", "topic": topic_name, "groupId": group, "count": 30, "commit": True,
         "balancer": "range", "serverSide": True, "timeoutMs": 40000},
        {"op": "fetchOffsets", "groupId": group},
    ])
    _, _, consumed, fetched = results
    assert sorted(r["value"] for r in consumed["records"]) == sorted(f"v{i}" for i in range(30))
    assert consumed["assignments"] == [{"topic": topic_name, "partitions": [0, 1, 2]}]
    assert [(o["partition"], o["offset"], o["error"]) for o in fetched] == \
        [(0, 10, None), (1, 10, None), (2, 10, None)]
    adm = AdminClient({"bootstrap.servers": bootstrap})          # alive until answered
    listed = adm.list_consumer_groups().result(timeout=20)
    kinds = {g.group_id: str(g.type).rsplit(".", 1)[-1] for g in listed.valid}
    assert kinds.get(group) == "CONSUMER"


@pytest.mark.slow
def test_group_rebalance_two_members(fg, bootstrap, topic_name):
    group = f"g-{topic_name}"
    run_ok(fg, bootstrap, [
        create_op(topic_name, 4),
        {"op": "produce", "topic": topic_name,
         "messages": [{"value": f"v{i}", "partition": i % 4} for i in range(12)]},
    ])
    member = {"op": "consume", "topic": topic_name, "groupId": group, "count": 100000,
              "timeoutMs": 8000, "balancer": "range"}
    first = fg.start(bootstrap, [member])
    wait_for_sole_owner(bootstrap, group, topic_name, 4)      # then a second member joins
    second = fg.start(bootstrap, [dict(member, timeoutMs=5000)])
    a = value(fg.wait(first)[0])
    b = value(fg.wait(second)[0])
    # Range over 4 partitions: two each while both are members (the first member may or may
    # not have had all four before: that depends on when the coordinator's join window closed).
    assert len(b["assignments"]) >= 1
    theirs = b["assignments"][0]["partitions"]
    assert len(theirs) == 2
    assert any(sorted(theirs + x["partitions"]) == [0, 1, 2, 3] for x in a["assignments"]), \
        (a["assignments"], b["assignments"])
    assert {r["value"] for r in a["records"] + b["records"]} == {f"v{i}" for i in range(12)}


def test_idempotent_producer(fg, bootstrap, topic_name):
    _, produced, consumed = run_ok(fg, bootstrap, [
        create_op(topic_name),
        {"op": "produce", "topic": topic_name, "idempotent": True,
         "messages": [{"value": f"v{i}", "partition": 0} for i in range(20)]},
        assign_op(topic_name, 20),
    ])
    assert sorted(p["offset"] for p in produced) == list(range(20))
    assert [r["value"] for r in consumed["records"]] == [f"v{i}" for i in range(20)]


def test_transactions_read_committed(fg, bootstrap, topic_name):
    txn = f"txn-{uuid.uuid4().hex[:8]}"
    run_ok(fg, bootstrap, [create_op(topic_name)])
    run_ok(fg, bootstrap, [
        {"op": "produce", "topic": topic_name, "transactionalId": txn, "timeoutMs": 8000,
         "messages": [{"value": "c1", "partition": 0}, {"value": "c2", "partition": 0}]}])
    _, _, committed, uncommitted, offsets = run_ok(fg, bootstrap, [
        {"op": "produce", "topic": topic_name, "transactionalId": txn, "abort": True,
         "messages": [{"value": "aborted", "partition": 0}]},
        {"op": "produce", "topic": topic_name, "messages": [{"value": "plain", "partition": 0}]},
        assign_op(topic_name, 3, timeoutMs=8000),
        assign_op(topic_name, 4, timeoutMs=8000, readUncommitted=True),
        {"op": "listOffsets", "topic": topic_name},
    ])
    assert [r["value"] for r in committed["records"]] == ["c1", "c2", "plain"]
    assert [r["value"] for r in uncommitted["records"]] == ["c1", "c2", "aborted", "plain"]
    # two data records + commit marker, one aborted record + abort marker, one plain record
    assert offsets[0]["end"] == 6
