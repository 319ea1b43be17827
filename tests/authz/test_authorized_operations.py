"""KIP-430 authorized-operations bitfields with the StandardAuthorizer on, over raw frames
to a real in-process broker (Metadata v10 topics and cluster, DescribeCluster)."""
from __future__ import annotations

from kbroker.wire import messages
from tests.authz.test_delegation_tokens import config, start, stop
from tests.broker.raw import RawClient



async def test_authorized_operations_bitfields(tmp_path, nursery):
    """KIP-430 bitfields with an authorizer: computed from the ACLs for the caller."""
    from kbroker.authz.acls import ALLOW, ALTER_CONFIGS, CLUSTER, DESCRIBE, DESCRIBE_CONFIGS, IDEMPOTENT_WRITE, LITERAL, READ, TOPIC, Acl
    server = await start(nursery, config(tmp_path, **{"allow.everyone.if.no.acl.found": "true"}))
    c = await RawClient.connect(server)
    r = await c.request("CreateTopics", 5, topics=[messages.CreateTopicsRequest.CreatableTopic(
        name="t", num_partitions=1, replication_factor=1, assignments=[], configs=[])], timeout_ms=5000,
        validate_only=False)
    assert r.topics[0].error_code == 0
    me = "User:ANONYMOUS"
    results = await server.broker.controller.create_acls([
        Acl(TOPIC, "t", LITERAL, me, "*", READ, ALLOW),
        Acl(TOPIC, "t", LITERAL, me, "*", ALTER_CONFIGS, ALLOW),
        Acl(CLUSTER, "kafka-cluster", LITERAL, me, "*", IDEMPOTENT_WRITE, ALLOW)])
    assert [code for code, _ in results] == [0, 0, 0]
    M = messages.MetadataRequest
    r = await c.request("Metadata", 10, topics=[M.MetadataRequestTopic(name="t")],
                        allow_auto_topic_creation=False, include_cluster_authorized_operations=True,
                        include_topic_authorized_operations=True)
    assert r.topics[0].topic_authorized_operations == \
        (1 << READ) | (1 << DESCRIBE) | (1 << ALTER_CONFIGS) | (1 << DESCRIBE_CONFIGS)
    assert r.cluster_authorized_operations == 1 << IDEMPOTENT_WRITE
    r = await c.request("DescribeCluster", 0, include_cluster_authorized_operations=True)
    assert r.cluster_authorized_operations == 1 << IDEMPOTENT_WRITE
    await c.aclose()
    await stop(server)
