"""Per-API authorization answers over raw frames (a real in-process broker with the
StandardAuthorizer and ``allow.everyone.if.no.acl.found=true``; the connection is
User:ANONYMOUS, denied on some topics, one transactional id and one group)."""
from __future__ import annotations

import trio

from kbroker.authz.acls import (ALL, ALTER_CONFIGS, CLUSTER, DELETE, DENY, DESCRIBE_CONFIGS, GROUP, LITERAL,
                                TOPIC, TRANSACTIONAL_ID, WRITE, Acl)
from kbroker.wire import messages as M
from kbroker.wire.error_codes import ErrorCode as E
from tests.authz.test_delegation_tokens import config, start, stop
from tests.broker.raw import RawClient

ME = "User:ANONYMOUS"


async def test_per_api_denials(tmp_path, nursery):
    server = await start(nursery, config(tmp_path, **{"allow.everyone.if.no.acl.found": "true"}))
    c = await RawClient.connect(server)
    CT = M.CreateTopicsRequest
    r = await c.request("CreateTopics", 7, timeout_ms=5000, validate_only=False, topics=[
        CT.CreatableTopic(name=n, num_partitions=1, replication_factor=1) for n in ("ok", "denied")])
    assert [t.error_code for t in r.topics] == [0, 0]
    results = await server.broker.controller.create_acls([
        Acl(TOPIC, "denied", LITERAL, ME, "*", WRITE, DENY),
        Acl(TOPIC, "denied", LITERAL, ME, "*", DELETE, DENY),
        Acl(TOPIC, "denied", LITERAL, ME, "*", DESCRIBE_CONFIGS, DENY),
        Acl(TRANSACTIONAL_ID, "tx-denied", LITERAL, ME, "*", ALL, DENY),
        Acl(GROUP, "g-denied", LITERAL, ME, "*", ALL, DENY),
        Acl(CLUSTER, "kafka-cluster", LITERAL, ME, "*", ALTER_CONFIGS, DENY),
        Acl(CLUSTER, "kafka-cluster", LITERAL, ME, "*", DESCRIBE_CONFIGS, DENY)])
    assert all(code == 0 for code, _ in results)

    A = M.AddPartitionsToTxnRequest
    r = await c.request("AddPartitionsToTxn", 3, v3_and_below_transactional_id="tx-ok",
                        v3_and_below_producer_id=1, v3_and_below_producer_epoch=0, v3_and_below_topics=[
                            A.AddPartitionsToTxnTopic(name=n, partitions=[0]) for n in ("ok", "denied")])
    codes = {t.name: t.results_by_partition[0].partition_error_code for t in r.results_by_topic_v3_and_below}
    assert codes == {"ok": E.OPERATION_NOT_ATTEMPTED, "denied": E.TOPIC_AUTHORIZATION_FAILED}
    r = await c.request("AddPartitionsToTxn", 3, v3_and_below_transactional_id="tx-denied",
                        v3_and_below_producer_id=1, v3_and_below_producer_epoch=0, v3_and_below_topics=[
                            A.AddPartitionsToTxnTopic(name="ok", partitions=[0])])
    assert r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == \
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    r = await c.request("InitProducerId", 4, transactional_id="tx-denied", transaction_timeout_ms=60000,
                        producer_id=-1, producer_epoch=-1)
    assert r.error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    r = await c.request("EndTxn", 3, transactional_id="tx-denied", producer_id=1, producer_epoch=0,
                        committed=True)
    assert r.error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED

    T = M.TxnOffsetCommitRequest
    topics = [T.TxnOffsetCommitRequestTopic(name=n, partitions=[T.TxnOffsetCommitRequestPartition(
        partition_index=0, committed_offset=1)]) for n in ("ok", "denied")]
    r = await c.request("TxnOffsetCommit", 3, transactional_id="tx-ok", group_id="g-denied",
                        producer_id=1, producer_epoch=0, generation_id_or_member_epoch=-1, member_id="", topics=topics)
    assert {p.error_code for t in r.topics for p in t.partitions} == {E.GROUP_AUTHORIZATION_FAILED}
    r = await c.request("TxnOffsetCommit", 3, transactional_id="tx-ok", group_id="g-ok",
                        producer_id=1, producer_epoch=0, generation_id_or_member_epoch=-1, member_id="", topics=topics)
    codes = {t.name: t.partitions[0].error_code for t in r.topics}
    assert codes["denied"] == E.TOPIC_AUTHORIZATION_FAILED      # READ: no ACL says so
    assert codes["ok"] != E.TOPIC_AUTHORIZATION_FAILED           # committed (and refused by the txn)

    for _ in range(200):      # the offsets topic is created and loaded on first use
        r = await c.request("FindCoordinator", 4, key_type=0, coordinator_keys=["g-denied", "g-ok"])
        if r.coordinators[1].error_code not in (E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE):
            break
        await trio.sleep(0.05)
    assert [x.error_code for x in r.coordinators] == [E.GROUP_AUTHORIZATION_FAILED, 0]
    r = await c.request("FindCoordinator", 4, key_type=1, coordinator_keys=["tx-denied"])
    assert r.coordinators[0].error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    for _ in range(200):
        r = await c.request("DescribeGroups", 5, groups=["g-denied", "g-ok"], include_authorized_operations=True)
        if r.groups[1].error_code != E.COORDINATOR_LOAD_IN_PROGRESS:
            break
        await trio.sleep(0.05)
    assert [g.error_code for g in r.groups] == [E.GROUP_AUTHORIZATION_FAILED, 0]
    assert r.groups[1].authorized_operations == (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)
    r = await c.request("OffsetFetch", 7, group_id="g-denied", topics=None, require_stable=False)
    assert r.error_code == E.GROUP_AUTHORIZATION_FAILED
    r = await c.request("Heartbeat", 4, group_id="g-denied", generation_id=1, member_id="m")
    assert r.error_code == E.GROUP_AUTHORIZATION_FAILED

    D = M.DeleteRecordsRequest
    r = await c.request("DeleteRecords", 2, timeout_ms=5000, topics=[D.DeleteRecordsTopic(
        name="denied", partitions=[D.DeleteRecordsPartition(partition_index=0, offset=0)])])
    assert r.topics[0].partitions[0].error_code == E.TOPIC_AUTHORIZATION_FAILED
    R = M.DescribeConfigsRequest
    r = await c.request("DescribeConfigs", 4, resources=[R.DescribeConfigsResource(
        resource_type=2, resource_name=n, configuration_keys=None) for n in ("denied", "ok")])
    assert [x.error_code for x in r.results] == [E.TOPIC_AUTHORIZATION_FAILED, 0]
    # metadata: a topic with ACLs but none allowing DESCRIBE is hidden
    r = await c.request("Metadata", 12, topics=None, allow_auto_topic_creation=False,
                        include_topic_authorized_operations=False)
    assert "denied" not in {t.name for t in r.topics} and "ok" in {t.name for t in r.topics}
    r = await c.request("DeleteTopics", 6, timeout_ms=5000, topics=[
        M.DeleteTopicsRequest.DeleteTopicState(name="denied")])
    assert r.responses[0].error_code == E.TOPIC_AUTHORIZATION_FAILED

    # client quotas need DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster
    r = await c.request("DescribeClientQuotas", 1, components=[], strict=False)
    assert r.error_code == E.CLUSTER_AUTHORIZATION_FAILED
    Q = M.AlterClientQuotasRequest
    r = await c.request("AlterClientQuotas", 1, validate_only=False, entries=[Q.EntryData(
        entity=[Q.EntryData.EntityData(entity_type="client-id", entity_name="x")],
        ops=[Q.EntryData.OpData(key="producer_byte_rate", value=1024.0, remove=False)])])
    assert [e.error_code for e in r.entries] == [E.CLUSTER_AUTHORIZATION_FAILED]
    # KIP-848 groups: READ on the group, DESCRIBE on the subscribed topics
    H = dict(member_id="m", member_epoch=0, instance_id=None, rack_id=None, rebalance_timeout_ms=30000,
             server_assignor=None, topic_partitions=[])
    r = await c.request("ConsumerGroupHeartbeat", 0, group_id="g-denied", subscribed_topic_names=["ok"], **H)
    assert r.error_code == E.GROUP_AUTHORIZATION_FAILED
    r = await c.request("ConsumerGroupHeartbeat", 0, group_id="g-ok", subscribed_topic_names=["ok", "denied"], **H)
    assert r.error_code == E.TOPIC_AUTHORIZATION_FAILED and "denied" in r.error_message
    r = await c.request("ConsumerGroupDescribe", 0, group_ids=["g-denied"], include_authorized_operations=False)
    assert [g.error_code for g in r.groups] == [E.GROUP_AUTHORIZATION_FAILED]
    await c.aclose()
    await stop(server)
