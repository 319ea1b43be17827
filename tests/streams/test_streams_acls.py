"""Authorization of the streams group APIs over raw frames (an in-process broker with the
StandardAuthorizer, ``allow.everyone.if.no.acl.found=true``): READ on the group, DESCRIBE on
the topology's topics, DESCRIBE on described groups, and internal topics created only with
CREATE."""
from __future__ import annotations

from kbroker.authz.acls import ALL, ALLOW, CLUSTER, CREATE, DENY, DESCRIBE, GROUP, LITERAL, TOPIC, Acl
from kbroker.wire import messages as M
from kbroker.wire.error_codes import ErrorCode as E
from tests.authz.test_delegation_tokens import config, start, stop
from tests.broker.raw import RawClient
from tests.support.waiting import until

ME = "User:ANONYMOUS"
Req = M.StreamsGroupHeartbeatRequest


def topology(source: str, changelog: str):
    return Req.Topology(epoch=1, subtopologies=[Req.Subtopology(
        subtopology_id="0", source_topics=[source], source_topic_regex=[],
        state_changelog_topics=[Req.TopicInfo(name=changelog, partitions=0, replication_factor=0,
                                              topic_configs=[])],
        repartition_sink_topics=[], repartition_source_topics=[], copartition_groups=[])])


def join(group: str, source: str, changelog: str) -> dict:
    return dict(group_id=group, member_id="m", member_epoch=0, endpoint_information_epoch=0,
                instance_id=None, rack_id=None, rebalance_timeout_ms=30000,
                topology=topology(source, changelog), active_tasks=[], standby_tasks=[],
                warmup_tasks=[], process_id="p", user_endpoint=None, client_tags=[],
                task_offsets=None, task_end_offsets=None, shutdown_application=False)


async def test_streams_group_acls(tmp_path, nursery):
    server = await start(nursery, config(tmp_path, **{"allow.everyone.if.no.acl.found": "true",
                                                      "group.streams.initial.rebalance.delay.ms": "0"}))
    c = await RawClient.connect(server)
    CT = M.CreateTopicsRequest
    r = await c.request("CreateTopics", 7, timeout_ms=5000, validate_only=False, topics=[
        CT.CreatableTopic(name=n, num_partitions=2, replication_factor=1) for n in ("ok", "hidden")])
    assert [t.error_code for t in r.topics] == [0, 0]
    results = await server.broker.controller.create_acls([
        Acl(GROUP, "g-denied", LITERAL, ME, "*", ALL, DENY),
        Acl(TOPIC, "hidden", LITERAL, ME, "*", DESCRIBE, DENY),
        Acl(TOPIC, "no-create-changelog", LITERAL, ME, "*", CREATE, DENY),
        Acl(TOPIC, "no-create-changelog", LITERAL, ME, "*", DESCRIBE, ALLOW),
        Acl(CLUSTER, "kafka-cluster", LITERAL, ME, "*", CREATE, DENY)])
    assert all(code == 0 for code, _ in results)
    await c.request("FindCoordinator", 4, key_type=0, coordinator_keys=["g-ok"])

    r = await c.request("StreamsGroupHeartbeat", 0, **join("g-denied", "ok", "x-changelog"))
    assert (r.error_code, r.member_id) == (E.GROUP_AUTHORIZATION_FAILED, "")
    r = await c.request("StreamsGroupHeartbeat", 0, **join("g-ok", "hidden", "x-changelog"))
    assert r.error_code == E.TOPIC_AUTHORIZATION_FAILED and "hidden" in r.error_message
    r = await c.request("StreamsGroupDescribe", 0, group_ids=["g-denied"],
                        include_authorized_operations=False)
    assert [g.error_code for g in r.groups] == [E.GROUP_AUTHORIZATION_FAILED]

    # without CREATE on the changelog topic it is not created, and stays reported missing
    async def answered():
        r = await c.request("StreamsGroupHeartbeat", 0, **join("g-ok", "ok", "no-create-changelog"))
        return r if r.error_code == 0 else None
    r = await until(answered, what="g-ok's heartbeat answered", interval=0.05)
    assert [s.status_code for s in r.status] == [3]
    assert "no-create-changelog" not in server.broker.metadata.topics
    await c.aclose()
    await stop(server)
