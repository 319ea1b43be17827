"""API v3 over plain HTTP: clusters, brokers, topics (create, list, get, delete), topic
configs (get, set, reset, alter in batch), partitions, consumer groups with their consumers,
lags and lag summary, and the streaming records endpoint (one answer per record)."""
from __future__ import annotations

import base64

from confluent_kafka import Consumer, TopicPartition

from .conftest import JSON, b64, wait_for


def test_clusters_and_brokers(rest, cluster_id, gateway_broker):
    status, headers, body = rest.get("/v3/clusters")
    assert status == 200 and headers["content-type"] == "application/json"
    assert body["kind"] == "KafkaClusterList" and len(body["data"]) == 1
    c = body["data"][0]
    assert c["kind"] == "KafkaCluster" and c["cluster_id"] == cluster_id
    assert c["metadata"]["resource_name"] == f"crn:///kafka={cluster_id}"
    assert c["controller"]["related"].endswith(f"/v3/clusters/{cluster_id}/brokers/1")
    assert rest.get(f"/v3/clusters/{cluster_id}")[2]["cluster_id"] == cluster_id
    status, _, body = rest.get("/v3/clusters/not-this-one")
    assert (status, body["error_code"]) == (404, 404)
    status, _, brokers = rest.get(f"/v3/clusters/{cluster_id}/brokers")
    assert [(b["broker_id"], b["host"], b["port"]) for b in brokers["data"]] == \
        [(1, "127.0.0.1", gateway_broker.port)]
    status, _, b = rest.get(f"/v3/clusters/{cluster_id}/brokers/1")
    assert status == 200 and b["kind"] == "KafkaBroker"
    assert rest.get(f"/v3/clusters/{cluster_id}/brokers/9")[0] == 404
    status, _, configs = rest.get(b["configs"]["related"].split(rest.base.split("//")[1])[-1])
    assert status == 200 and configs["kind"] == "KafkaBrokerConfigList"
    by_name = {c["name"]: c for c in configs["data"]}
    assert by_name["num.partitions"]["value"] == "1" and by_name["num.partitions"]["broker_id"] == 1
    assert rest.get(f"/v3/clusters/{cluster_id}/brokers/9/configs")[0] == 404


def test_topic_lifecycle_and_configs(rest, cluster_id):
    base = f"/v3/clusters/{cluster_id}/topics"
    status, _, t = rest.post(base, {"topic_name": "v3-topic", "partitions_count": 3,
                                    "replication_factor": 1,
                                    "configs": [{"name": "retention.ms", "value": "3600000"}]})
    assert status == 201, t
    assert (t["kind"], t["topic_name"], t["partitions_count"], t["replication_factor"]) == \
        ("KafkaTopic", "v3-topic", 3, 1)
    status, _, body = rest.post(base, {"topic_name": "v3-topic", "partitions_count": 1})
    assert (status, body["error_code"]) == (400, 400) and "already exists" in body["message"]
    status, _, body = rest.post(base, {"topic_name": "bad-parts", "partitions_count": -5})
    assert (status, body["error_code"]) == (400, 400)
    names = [t["topic_name"] for t in rest.get(base)[2]["data"]]
    assert "v3-topic" in names
    status, _, t = rest.get(f"{base}/v3-topic")
    assert status == 200 and t["partitions_count"] == 3 and t["is_internal"] is False
    # configs
    status, _, cfgs = rest.get(f"{base}/v3-topic/configs")
    by_name = {c["name"]: c for c in cfgs["data"]}
    assert by_name["retention.ms"]["value"] == "3600000"
    assert by_name["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG" and not by_name["retention.ms"]["is_default"]
    assert by_name["cleanup.policy"]["is_default"] is True
    assert rest.put(f"{base}/v3-topic/configs/retention.ms", {"value": "7200000"})[0] == 204
    assert rest.get(f"{base}/v3-topic/configs/retention.ms")[2]["value"] == "7200000"
    assert rest.delete(f"{base}/v3-topic/configs/retention.ms")[0] == 204
    c = rest.get(f"{base}/v3-topic/configs/retention.ms")[2]
    assert c["value"] == "604800000" and c["is_default"] is True
    status, _, _ = rest.post(f"{base}/v3-topic/configs:alter", {"data": [
        {"name": "cleanup.policy", "value": "compact"},
        {"name": "segment.ms", "value": "100000"}]})
    assert status == 204
    assert rest.get(f"{base}/v3-topic/configs/cleanup.policy")[2]["value"] == "compact"
    status, _, body = rest.put(f"{base}/v3-topic/configs/no.such.config", {"value": "1"})
    assert (status, body["error_code"]) == (400, 400)
    # partitions
    status, _, parts = rest.get(f"{base}/v3-topic/partitions")
    assert [p["partition_id"] for p in parts["data"]] == [0, 1, 2]
    status, _, p = rest.get(f"{base}/v3-topic/partitions/2")
    assert status == 200 and p["leader"]["related"].endswith("/partitions/2/replicas/1")
    assert rest.get(f"{base}/v3-topic/partitions/3")[0] == 404
    status, _, replicas = rest.get(f"{base}/v3-topic/partitions/2/replicas")
    assert [(r["broker_id"], r["is_leader"], r["is_in_sync"]) for r in replicas["data"]] == [(1, True, True)]
    # delete
    assert rest.delete(f"{base}/v3-topic")[0] == 204
    wait_for(lambda: rest.get(f"{base}/v3-topic")[0] == 404, what="the topic gone")
    status, _, body = rest.delete(f"{base}/v3-topic")
    assert (status, body["error_code"]) == (404, 404)


def test_streaming_records(rest, cluster_id, gateway_broker):
    base = f"/v3/clusters/{cluster_id}/topics"
    assert rest.post(base, {"topic_name": "v3-records", "partitions_count": 2})[0] == 201
    status, _, one = rest.post(f"{base}/v3-records/records",
                               {"key": {"type": "STRING", "data": "k"},
                                "value": {"type": "JSON", "data": {"a": 1}}})
    assert status == 200, one
    assert (one["error_code"], one["topic_name"], one["offset"]) == (200, "v3-records", 0)
    assert one["key"] == {"type": "STRING", "size": 1} and one["value"] == {"type": "JSON", "size": 7}
    stream = b"\n".join([
        b'{"partition_id": 1, "value": {"type": "BINARY", "data": "' + b64(b"\x00bin").encode() + b'"},'
        b' "headers": [{"name": "h1", "value": "' + b64(b"hv").encode() + b'"}]}',
        b'{"partition_id": 7, "value": {"data": 1}}',
        b'{"value": {"type": "AVRO", "data": 1}}',
        b'{"partition_id": 1, "value": {"data": [1, 2]}, "timestamp": "2026-01-02T03:04:05.678Z"}'])
    status, _, answers = rest.post(f"{base}/v3-records/records", raw=stream,
                                   content_type="application/json")
    assert status == 200 and len(answers) == 4
    assert answers[0]["error_code"] == 200 and answers[0]["partition_id"] == 1
    assert answers[1]["error_code"] == 404
    assert answers[2]["error_code"] == 400
    assert answers[3]["error_code"] == 200 and answers[3]["timestamp"] == "2026-01-02T03:04:05.678Z"
    # what a Kafka client reads: the two good records of the stream, headers and timestamp kept
    c = Consumer({"bootstrap.servers": gateway_broker.bootstrap_servers, "group.id": "v3-verify"})
    c.assign([TopicPartition("v3-records", 1, 0)])
    got = []
    try:
        while len(got) < 2:
            m = c.poll(10)
            assert m is not None and m.error() is None
            got.append(m)
    finally:
        c.close()
    assert got[0].value() == b"\x00bin" and got[0].headers() == [("h1", b"hv")]
    assert got[1].value() == b"[1,2]" and got[1].timestamp()[1] == 1767323045678
    status, _, body = rest.post(f"/v3/clusters/{cluster_id}/topics/nope/records",
                                {"value": {"data": 1}})
    assert (status, body["error_code"]) == (404, 404)


def test_consumer_groups_consumers_and_lag(rest, cluster_id):
    base = f"/v3/clusters/{cluster_id}"
    assert rest.post(f"{base}/topics", {"topic_name": "v3-lag", "partitions_count": 2})[0] == 201
    rest.post("/topics/v3-lag/partitions/0", {"records": [{"value": i} for i in range(5)]},
              content_type=JSON)
    rest.post("/topics/v3-lag/partitions/1", {"records": [{"value": i} for i in range(3)]},
              content_type=JSON)
    status, _, inst = rest.post("/consumers/v3-group", {"name": "m1", "format": "json",
                                                        "auto.commit.enable": "false",
                                                        "auto.offset.reset": "earliest"})
    ibase = f"/consumers/v3-group/instances/m1"
    rest.post(ibase + "/subscription", {"topics": ["v3-lag"]})
    wait_for(lambda: len(rest.get(ibase + "/assignments")[2]["partitions"]) == 2, what="assignment")
    # the last offsets consumed (1 and 2): 2 and 3 are committed
    rest.post(ibase + "/offsets", {"offsets": [{"topic": "v3-lag", "partition": 0, "offset": 1},
                                               {"topic": "v3-lag", "partition": 1, "offset": 2}]})
    status, _, groups = rest.get(f"{base}/consumer-groups")
    g = next(g for g in groups["data"] if g["consumer_group_id"] == "v3-group")
    assert g["kind"] == "KafkaConsumerGroup" and g["type"] == "CONSUMER" and g["is_simple"] is False
    status, _, consumers = rest.get(f"{base}/consumer-groups/v3-group/consumers")
    [member] = consumers["data"]
    assert member["client_id"] == "kbroker-rest-proxy"
    status, _, one = rest.get(f"{base}/consumer-groups/v3-group/consumers/{member['consumer_id']}")
    assert status == 200 and one["consumer_id"] == member["consumer_id"]
    status, _, assigned = rest.get(f"{base}/consumer-groups/v3-group/consumers/{member['consumer_id']}/assignments")
    assert status == 200
    assert sorted((a["topic_name"], a["partition_id"]) for a in assigned["data"]) == [("v3-lag", 0), ("v3-lag", 1)]
    status, _, lags = rest.get(f"{base}/consumer-groups/v3-group/lags")
    assert sorted((l["partition_id"], l["current_offset"], l["log_end_offset"], l["lag"])
                  for l in lags["data"]) == [(0, 2, 5, 3), (1, 3, 3, 0)]
    status, _, summary = rest.get(f"{base}/consumer-groups/v3-group/lag-summary")
    assert status == 200
    assert (summary["max_lag"], summary["total_lag"], summary["max_lag_topic_name"],
            summary["max_lag_partition_id"], summary["max_lag_consumer_id"]) == \
        (3, 3, "v3-lag", 0, member["consumer_id"])
    status, _, one_lag = rest.get(f"{base}/consumer-groups/v3-group/lags/v3-lag/partitions/0")
    assert status == 200 and (one_lag["kind"], one_lag["lag"]) == ("KafkaConsumerLag", 3)
    assert rest.get(f"{base}/consumer-groups/v3-group/lags/v3-lag/partitions/7")[0] == 404
    assert rest.get(f"{base}/consumer-groups/nope")[0] == 404
    rest.delete(ibase)


def test_acls_need_an_authorizer(rest, cluster_id):
    # without authorizer.class.name Kafka answers SECURITY_DISABLED; the ACL paths with an
    # authorizer are in test_auth.py
    status, _, body = rest.get(f"/v3/clusters/{cluster_id}/acls")
    assert status >= 400 and "Authorizer" in body["message"]


def test_broker_and_cluster_config_writes(rest, cluster_id):
    one = f"/v3/clusters/{cluster_id}/brokers/1/configs"
    assert rest.put(f"{one}/message.max.bytes", {"value": "2000000"})[0] == 204
    status, _, c = rest.get(f"{one}/message.max.bytes")
    assert status == 200, c
    assert (c["kind"], c["broker_id"], c["value"], c["source"], c["is_default"]) == (
        "KafkaBrokerConfig", 1, "2000000", "DYNAMIC_BROKER_CONFIG", False)
    assert rest.delete(f"{one}/message.max.bytes")[0] == 204
    assert rest.get(f"{one}/message.max.bytes")[2]["source"] != "DYNAMIC_BROKER_CONFIG"
    assert rest.post(f"{one}:alter", {"data": [
        {"name": "log.cleaner.threads", "value": "2"},
        {"name": "message.max.bytes", "operation": "DELETE"}]})[0] == 204
    assert rest.get(f"{one}/log.cleaner.threads")[2]["value"] == "2"
    status, _, body = rest.put(f"{one}/log.dirs", {"value": "/elsewhere"})   # not dynamic
    assert (status, body["error_code"]) == (400, 400), body
    status, _, body = rest.post(f"{one}:alter", {"data": [{"name": "x", "operation": "FLIP"}]})
    assert (status, body["error_code"]) == (400, 400)
    assert rest.get(f"{one}/no.such.config")[0] == 404
    assert rest.put(f"/v3/clusters/{cluster_id}/brokers/9/configs/message.max.bytes",
                    {"value": "1"})[0] == 404
    # cluster-wide dynamic defaults (Kafka's --entity-default)
    cl = f"/v3/clusters/{cluster_id}/broker-configs"
    assert rest.put(f"{cl}/log.retention.ms", {"value": "7200000"})[0] == 204
    status, _, c = rest.get(f"{cl}/log.retention.ms")
    assert status == 200, c
    assert (c["kind"], c["config_type"], c["value"], c["source"]) == (
        "KafkaClusterConfig", "BROKER", "7200000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    listed = {c["name"]: c for c in rest.get(cl)[2]["data"]}
    assert listed["log.retention.ms"]["value"] == "7200000"
    # broker 1 sees the default through its synonyms
    assert rest.get(f"{one}/log.retention.ms")[2]["value"] == "7200000"
    assert rest.post(f"{cl}:alter", {"data": [{"name": "log.retention.ms", "operation": "DELETE"}]})[0] == 204
    assert rest.get(f"{cl}/log.retention.ms")[0] == 404 or \
        rest.get(f"{cl}/log.retention.ms")[2]["source"] != "DYNAMIC_DEFAULT_BROKER_CONFIG"
    assert rest.delete(f"{one}/log.cleaner.threads")[0] == 204


def test_partition_reassignments_are_listed(rest, cluster_id):
    base = f"/v3/clusters/{cluster_id}/topics"
    assert rest.post(base, {"topic_name": "v3-reassign", "partitions_count": 2})[0] == 201
    status, _, body = rest.get(f"{base}/-/partitions/-/reassignment")
    assert status == 200 and body["kind"] == "KafkaReassignmentList" and body["data"] == []
    status, _, body = rest.get(f"{base}/v3-reassign/partitions/-/reassignment")
    assert status == 200 and body["data"] == []
    # nothing ongoing for the partition, and no such partition or topic
    for path in ("v3-reassign/partitions/0", "v3-reassign/partitions/7", "no-such-topic/partitions/0"):
        status, _, body = rest.get(f"{base}/{path}/reassignment")
        assert (status, body["error_code"]) == (404, 404), (path, body)


def test_partition_count_replicas_and_config_listings(rest, cluster_id):
    base = f"/v3/clusters/{cluster_id}"
    assert rest.post(f"{base}/topics", {"topic_name": "v3-grow", "partitions_count": 1,
                                        "configs": [{"name": "retention.ms", "value": "1000000"}]})[0] == 201
    status, _, t = rest.call("PATCH", f"{base}/topics/v3-grow", {"partitions_count": 3})
    assert status == 200 and (t["kind"], t["partitions_count"]) == ("KafkaTopic", 3), t
    assert [p["partition_id"] for p in rest.get(f"{base}/topics/v3-grow/partitions")[2]["data"]] == [0, 1, 2]
    status, _, body = rest.call("PATCH", f"{base}/topics/v3-grow", {"partitions_count": 2})
    assert (status, body["error_code"]) == (400, 400)           # a topic never shrinks
    status, _, body = rest.call("PATCH", f"{base}/topics/no-such-topic", {"partitions_count": 2})
    assert (status, body["error_code"]) == (404, 404)
    status, _, r = rest.get(f"{base}/topics/v3-grow/partitions/2/replicas/1")
    assert status == 200 and (r["kind"], r["broker_id"], r["is_leader"]) == ("KafkaReplica", 1, True)
    assert rest.get(f"{base}/topics/v3-grow/partitions/2/replicas/5")[0] == 404
    status, _, held = rest.get(f"{base}/brokers/1/partition-replicas")
    assert status == 200 and held["kind"] == "KafkaReplicaList"
    assert {("v3-grow", 0), ("v3-grow", 1), ("v3-grow", 2)} <= {
        (r["topic_name"], r["partition_id"]) for r in held["data"]}
    assert rest.get(f"{base}/brokers/9/partition-replicas")[0] == 404
    status, _, every = rest.get(f"{base}/topics/-/configs")
    assert status == 200 and every["kind"] == "KafkaTopicConfigList"
    assert {"topic_name": "v3-grow", "name": "retention.ms", "value": "1000000"}.items() <= next(
        c for c in every["data"] if c["topic_name"] == "v3-grow" and c["name"] == "retention.ms").items()
    status, _, brokers = rest.get(f"{base}/brokers/-/configs")
    assert status == 200 and {c["broker_id"] for c in brokers["data"]} == {1}
    assert any(c["name"] == "num.partitions" for c in brokers["data"])
