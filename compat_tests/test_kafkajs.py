"""Behavioural compat tests with kafkajs (Node.js, its own protocol codec), through the driver
program in compat_tests/kafkajs/ (kafkajs pinned in package.json/package-lock.json).

kafkajs consumers always join a group (it has no assign()), and read_committed is their
default. Codecs other than gzip are the driver's adapters of pure-JS/wasm libraries.
"""

from __future__ import annotations

import uuid

import pytest

from compat_tests.extclient import Driver, ensure_kafkajs, error_types, value
from compat_tests.helpers import T0_MS, wait_for_sole_owner

CLIENT = "kafkajs"
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.fixture(scope="session")
def js():
    return Driver(ensure_kafkajs(), "kafkajs")


def group_id(topic: str) -> str:
    return f"g-{topic}"


def fatal(crashes):
    """Consumer crashes kafkajs does not recover from (it restarts after retriable ones, e.g.
    NOT_COORDINATOR while Kafka is still creating __consumer_offsets)."""
    return [c for c in crashes
            if not c.get("retriable") and not (c.get("cause") or {}).get("retriable")]


def run_ok(js, bootstrap, ops):
    """Run ops; every one must succeed; returns their values."""
    return [value(r, op) for r, op in zip(js.run(bootstrap, ops), ops)]


def create_op(topic, partitions=1, **configs):
    return {"op": "createTopics", "topics": [{"topic": topic, "numPartitions": partitions,
                                              "configs": configs}]}


def leaders_op(topic):
    """Wait until every partition of ``topic`` answers on its leader (ListOffsets, which
    kafkajs asks again on NOT_LEADER_OR_FOLLOWER). createTopics' ``waitForLeaders`` sees the
    leaders in the metadata, but Kafka's broker may not lead a new partition yet: a produce
    to several partitions then fails for one, and kafkajs, not idempotent, sends the whole
    request again, writing the others' records twice."""
    return {"op": "fetchTopicOffsets", "topic": topic}


def test_round_trip_keys_headers_timestamps(js, bootstrap, topic_name):
    messages = [
        {"key": "k1", "value": "v1", "headers": [["h1", "x"], ["h2", ""]], "timestamp": T0_MS, "partition": 1},
        {"key": None, "value": "no key", "timestamp": T0_MS + 1, "partition": 1},
        {"key": "k3", "value": None, "headers": [["only", "header"]], "timestamp": T0_MS + 2, "partition": 1},
        {"key": "k4", "value": "v4", "timestamp": T0_MS + 3, "partition": 0},
    ]
    created, _, produced, offsets, consumed = run_ok(js, bootstrap, [
        create_op(topic_name, 2),
        leaders_op(topic_name),
        {"op": "produce", "topic": topic_name, "messages": messages},
        {"op": "fetchTopicOffsets", "topic": topic_name},
        {"op": "consume", "topic": topic_name, "groupId": group_id(topic_name), "count": 4},
    ])
    assert created is True
    by_partition = {p["partition"]: int(p["baseOffset"]) for p in produced}
    assert by_partition == {0: 0, 1: 0}
    assert all(p["errorCode"] == 0 for p in produced)
    assert offsets == [{"partition": 0, "offset": 1, "high": 1, "low": 0},
                       {"partition": 1, "offset": 3, "high": 3, "low": 0}]
    records = sorted(consumed["records"], key=lambda r: (r["partition"], r["offset"]))
    got = [(r["partition"], r["offset"], r["key"], r["value"], r["headers"], r["timestamp"])
           for r in records]
    assert got == [
        (0, 0, "k4", "v4", [], T0_MS + 3),
        (1, 0, "k1", "v1", [["h1", "x"], ["h2", ""]], T0_MS),
        (1, 1, None, "no key", [], T0_MS + 1),
        (1, 2, "k3", None, [["only", "header"]], T0_MS + 2),
    ]
    assert not fatal(consumed["crashes"])


@pytest.mark.parametrize("codec", CODECS)
def test_compression(js, bootstrap, topic_name, codec):
    values = [f"{codec}-{i}-" + "x" * (i * 37 % 300) for i in range(40)]
    _, produced, offsets, consumed = run_ok(js, bootstrap, [
        create_op(topic_name),
        {"op": "produce", "topic": topic_name, "compression": codec,
         "messages": [{"key": str(i), "value": v} for i, v in enumerate(values)]},
        {"op": "fetchTopicOffsets", "topic": topic_name},
        {"op": "consume", "topic": topic_name, "groupId": group_id(topic_name), "count": 40},
    ])
    assert [int(p["baseOffset"]) for p in produced] == [0]
    assert offsets[0]["high"] == 40
    assert [(r["offset"], r["key"], r["value"]) for r in consumed["records"]] == \
        [(i, str(i), v) for i, v in enumerate(values)]


def test_offsets_by_timestamp(js, bootstrap, topic_name):
    messages = [{"value": f"v{i}", "timestamp": T0_MS + 10 * i} for i in range(3)]
    results = run_ok(js, bootstrap, [
        create_op(topic_name),
        {"op": "produce", "topic": topic_name, "messages": messages},
        {"op": "fetchTopicOffsetsByTimestamp", "topic": topic_name, "timestamp": T0_MS - 1},
        {"op": "fetchTopicOffsetsByTimestamp", "topic": topic_name, "timestamp": T0_MS + 5},
        {"op": "fetchTopicOffsetsByTimestamp", "topic": topic_name, "timestamp": T0_MS + 20},
        {"op": "fetchTopicOffsetsByTimestamp", "topic": topic_name, "timestamp": T0_MS + 1000},
    ])
    # The first offset with a timestamp >= the target; kafkajs answers "no such offset" with
    # the high watermark (it asks ListOffsets for latest then).
    assert [r[0]["offset"] for r in results[2:]] == [0, 1, 2, 3]


def test_unknown_topic(js, bootstrap, topic_name):
    produce, offsets = js.run(bootstrap, [
        {"op": "produce", "topic": topic_name, "messages": [{"value": "x"}], "retries": 1},
        {"op": "fetchTopicOffsets", "topic": topic_name},
    ])
    assert "UNKNOWN_TOPIC_OR_PARTITION" in error_types(produce["error"]), produce
    assert "error" in offsets, offsets
    topics = value(js.run(bootstrap, [{"op": "listTopics"}])[0])
    assert topic_name not in topics  # not auto-created by either request


def test_message_too_large(js, bootstrap, topic_name):
    _, produce, small = js.run(bootstrap, [
        create_op(topic_name, **{"max.message.bytes": "2000"}),
        {"op": "produce", "topic": topic_name, "messages": [{"value": "x" * 5000}], "retries": 0},
        {"op": "produce", "topic": topic_name, "messages": [{"value": "x" * 100}]},
    ])
    assert "MESSAGE_TOO_LARGE" in error_types(produce["error"]), produce
    assert value(small)[0]["baseOffset"] == "0"


def test_invalid_partitions_and_replication_factor(js, bootstrap, topic_name):
    bad_partitions, bad_rf, bad_new_count = js.run(bootstrap, [
        {"op": "createTopics", "topics": [{"topic": topic_name, "numPartitions": -5}]},
        {"op": "createTopics", "topics": [{"topic": topic_name, "numPartitions": 1,
                                           "replicationFactor": 3}]},
        {"op": "createPartitions", "topicPartitions": [{"topic": f"{topic_name}-missing", "count": 2}]},
    ])
    assert "INVALID_PARTITIONS" in error_types(bad_partitions["error"]), bad_partitions
    assert "INVALID_REPLICATION_FACTOR" in error_types(bad_rf["error"]), bad_rf
    assert "UNKNOWN_TOPIC_OR_PARTITION" in error_types(bad_new_count["error"]), bad_new_count


def test_topic_admin_and_configs(js, bootstrap, topic_name):
    results = js.run(bootstrap, [
        create_op(topic_name, 1, **{"retention.ms": "3600000", "cleanup.policy": "delete"}),
        {"op": "describeConfigs", "resources": [{"type": "topic", "name": topic_name,
                                                 "configNames": ["retention.ms", "cleanup.policy",
                                                                 "max.message.bytes"]}]},
        {"op": "alterConfigs", "resources": [{"type": "topic", "name": topic_name,
                                              "configs": {"retention.ms": "7200000"}}]},
        {"op": "describeConfigs", "resources": [{"type": "topic", "name": topic_name,
                                                 "configNames": ["retention.ms"]}],
         "until": {"retention.ms": "7200000"}},
        {"op": "createPartitions", "topicPartitions": [{"topic": topic_name, "count": 3}]},
        {"op": "fetchTopicMetadata", "topics": [topic_name], "untilPartitions": 3},
        {"op": "deleteTopics", "topics": [topic_name]},
        {"op": "listTopics", "untilAbsent": [topic_name]},
    ])
    created, described, altered, described2, grown, meta, deleted, listed = \
        [value(r) for r in results]
    (res,) = described
    assert res["errorCode"] == 0
    assert res["configs"]["retention.ms"]["value"] == "3600000"
    assert res["configs"]["retention.ms"]["isDefault"] is False
    assert res["configs"]["cleanup.policy"]["value"] == "delete"
    assert res["configs"]["max.message.bytes"]["value"] == "1048588"
    assert res["configs"]["max.message.bytes"]["isDefault"] is True
    assert described2[0]["configs"]["retention.ms"]["value"] == "7200000"
    (topic,) = meta
    assert [p["partition"] for p in topic["partitions"]] == [0, 1, 2]
    assert all(p["leader"] >= 0 and p["replicas"] == [p["leader"]] for p in topic["partitions"])
    assert topic_name not in listed


def test_delete_records(js, bootstrap, topic_name):
    _, _, deleted, offsets, consumed = run_ok(js, bootstrap, [
        create_op(topic_name),
        {"op": "produce", "topic": topic_name, "messages": [{"value": f"v{i}"} for i in range(5)]},
        {"op": "deleteTopicRecords", "topic": topic_name, "partitions": [{"partition": 0, "offset": 3}]},
        {"op": "fetchTopicOffsets", "topic": topic_name},
        {"op": "consume", "topic": topic_name, "groupId": group_id(topic_name), "count": 2},
    ])
    assert offsets == [{"partition": 0, "offset": 5, "high": 5, "low": 3}]
    assert [(r["offset"], r["value"]) for r in consumed["records"]] == [(3, "v3"), (4, "v4")]


def test_group_commit_describe_delete(js, bootstrap, topic_name):
    group = group_id(topic_name)
    results = js.run(bootstrap, [
        create_op(topic_name, 2),
        leaders_op(topic_name),
        {"op": "produce", "topic": topic_name,
         "messages": [{"value": f"v{i}", "partition": i % 2} for i in range(6)]},
        {"op": "consume", "topic": topic_name, "groupId": group, "count": 6, "autoCommit": False,
         "commit": [{"partition": 0, "offset": 3}, {"partition": 1, "offset": 2}]},
        {"op": "fetchOffsets", "groupId": group, "topics": [topic_name]},
        {"op": "describeGroups", "groupIds": [group]},
        {"op": "listGroups"},
        {"op": "deleteGroups", "groupIds": [group]},
        {"op": "listGroups"},
        {"op": "fetchOffsets", "groupId": group, "topics": [topic_name]},
    ])
    # (admin.setOffsets is left out: kafkajs spends ~5 s in it on any broker)
    (_, _, _, consumed, fetched, described, listed, deleted, listed2, fetched3) = \
        [value(r) for r in results]
    assert len(consumed["records"]) == 6
    (join,) = consumed["joins"]
    assert join["isLeader"] and join["memberId"] == join["leaderId"]
    assert join["assignment"] == {topic_name: [0, 1]}
    assert fetched == [{"topic": topic_name, "partitions": [
        {"partition": 0, "offset": 3, "metadata": None}, {"partition": 1, "offset": 2, "metadata": None}]}]
    (desc,) = described
    assert (desc["groupId"], desc["state"], desc["protocolType"], desc["members"]) == \
        (group, "Empty", "consumer", [])
    assert {"groupId": group, "protocolType": "consumer"} in listed
    assert [d["groupId"] for d in deleted] == [group]
    assert group not in [g["groupId"] for g in listed2]
    assert [p["offset"] for p in fetched3[0]["partitions"]] == [-1, -1]


@pytest.mark.slow
def test_group_rebalance_two_members(js, bootstrap, topic_name):
    group = group_id(topic_name)
    run_ok(js, bootstrap, [
        create_op(topic_name, 2),
        leaders_op(topic_name),
        {"op": "produce", "topic": topic_name,
         "messages": [{"value": f"v{i}", "partition": i % 2} for i in range(10)]},
    ])
    member = {"op": "consume", "topic": topic_name, "groupId": group, "count": 1000,
              "timeoutMs": 9000, "autoCommit": True}
    first = js.start(bootstrap, [member])
    wait_for_sole_owner(bootstrap, group, topic_name, 2)      # then a second member joins
    second = js.start(bootstrap, [dict(member, timeoutMs=6000)])
    a = value(js.wait(first)[0])
    b = value(js.wait(second)[0])
    assert not fatal(a["crashes"]) and not fatal(b["crashes"])
    # After the second member joined, each owned one partition.
    (theirs,) = b["joins"][0]["assignment"][topic_name]
    assert {topic_name: [1 - theirs]} in [j["assignment"] for j in a["joins"]], a["joins"]
    values = {r["value"] for r in a["records"] + b["records"]}
    assert values == {f"v{i}" for i in range(10)}


def test_idempotent_producer(js, bootstrap, topic_name):
    _, produced, consumed = run_ok(js, bootstrap, [
        create_op(topic_name),
        {"op": "produce", "topic": topic_name, "idempotent": True,
         "messages": [{"value": f"v{i}"} for i in range(5)]},
        {"op": "consume", "topic": topic_name, "groupId": group_id(topic_name), "count": 5},
    ])
    assert produced[0]["baseOffset"] == "0"
    assert [r["value"] for r in consumed["records"]] == [f"v{i}" for i in range(5)]


def test_transactions_read_committed(js, bootstrap, topic_name):
    txn = f"txn-{uuid.uuid4().hex[:8]}"
    run_ok(js, bootstrap, [create_op(topic_name)])
    # kbroker (F-001) makes the producer retry for long: bound the first transaction
    run_ok(js, bootstrap, [
        {"op": "produce", "topic": topic_name, "transactionalId": txn, "retries": 1,
         "deadlineMs": 8000, "messages": [{"value": "committed-1"}, {"value": "committed-2"}]}])
    _, _, committed, uncommitted = run_ok(js, bootstrap, [
        {"op": "produce", "topic": topic_name, "transactionalId": txn, "abort": True,
         "messages": [{"value": "aborted"}]},
        {"op": "produce", "topic": topic_name, "messages": [{"value": "plain"}]},
        {"op": "consume", "topic": topic_name, "groupId": group_id(topic_name) + "-rc", "count": 3,
         "timeoutMs": 10000},
        {"op": "consume", "topic": topic_name, "groupId": group_id(topic_name) + "-ru", "count": 4,
         "timeoutMs": 10000, "readUncommitted": True},
    ])
    assert [r["value"] for r in committed["records"]] == ["committed-1", "committed-2", "plain"]
    assert [r["value"] for r in uncommitted["records"]] == \
        ["committed-1", "committed-2", "aborted", "plain"]
