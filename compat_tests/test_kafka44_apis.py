"""The API versions Kafka 4.4 adds, frame by frame, answered alike by both brokers (issue 31).

ApiVersions v5 (KIP-1242: the cluster and node the client means to reach; a misrouted
connection gets REBOOTSTRAP_REQUIRED), DeleteGroups v3 (per-group error message),
StreamsGroupHeartbeat v1 (static members, the int64 recovery lag), StreamsGroupDescribe v1
(topology description status, assignor name), StreamsGroupTopologyDescriptionUpdate (93) on a
broker without a description plugin, UnregisterController (94); and the Metadata answer for a
topic the request auto-creates (UNKNOWN_TOPIC_OR_PARTITION since Kafka 4.3). TxnOffsetCommit v6 (topics by
id) is in tests/txn/test_tv2.py and in the Java clients' transactions of the matrix.
"""
from __future__ import annotations

import time
import uuid

from compat_tests.differential.common import Connection
from compat_tests.helpers import create_topic
from kbroker.wire import messages as M

CLIENT = "hand-built"
AV = M.ApiVersionsRequest
SH = M.StreamsGroupHeartbeatRequest


def _connect(bootstrap) -> Connection:
    host, port = bootstrap.rsplit(":", 1)
    return Connection((host, int(port)), timeout=30)


def _find_coordinator(conn, group) -> None:
    for _ in range(100):
        fc = conn.request(10, 4, M.FindCoordinatorRequest(key_type=0, coordinator_keys=[group]))
        if fc.coordinators[0].error_code == 0:
            return
        time.sleep(0.2)
    raise AssertionError(f"no coordinator for {group}")


def _api_versions(conn, **kw):
    r = conn.request(18, 5, AV(client_software_name="compat", client_software_version="1", **kw))
    return r.error_code, len(r.api_keys), r.finalized_features_epoch


def test_api_versions_v5_names_the_cluster_and_node(bootstrap):
    conn = _connect(bootstrap)
    try:
        md = conn.request(3, 12, M.MetadataRequest(topics=[], allow_auto_topic_creation=False))
        cluster, node = md.cluster_id, md.brokers[0].node_id
        code, keys, epoch = _api_versions(conn)                 # neither: as v4
        assert code == 0 and keys > 70 and epoch >= 0
        code, keys, epoch = _api_versions(conn, cluster_id=cluster, node_id=node)
        assert code == 0 and keys > 70 and epoch >= 0
        # the wrong cluster or the wrong node: rebootstrap, no keys
        assert _api_versions(conn, cluster_id="not-" + cluster, node_id=node) == (129, 0, -1)
        assert _api_versions(conn, cluster_id=cluster, node_id=node + 7) == (129, 0, -1)
        # one without the other: an invalid request
        assert _api_versions(conn, cluster_id=None, node_id=node) == (42, 0, -1)
        assert _api_versions(conn, cluster_id=cluster, node_id=-1) == (42, 0, -1)
        # the connection still serves
        assert _api_versions(conn)[0] == 0
    finally:
        conn.close()


def test_delete_groups_v3_and_unregister_controller(bootstrap):
    conn = _connect(bootstrap)
    try:
        group = "no-such-" + uuid.uuid4().hex[:6]
        _find_coordinator(conn, group)
        for _ in range(100):
            r = conn.request(42, 3, M.DeleteGroupsRequest(groups_names=[group]))
            if r.results[0].error_code not in (14, 15, 16):
                break
            time.sleep(0.2)
        assert [(g.error_code, g.error_message) for g in r.results] == [(69, None)]
        md = conn.request(3, 12, M.MetadataRequest(topics=[], allow_auto_topic_creation=False))
        r = conn.request(94, 0, M.UnregisterControllerRequest(controller_id=md.controller_id))
        assert (r.error_code, r.error_message) == (
            42, "Controller cannot unregister itself while it is active.")
        r = conn.request(94, 0, M.UnregisterControllerRequest(controller_id=99))
        assert (r.error_code, r.error_message) == (136, "Controller ID 99 is not currently registered.")
    finally:
        conn.close()


def _topology(source: str, app: str):
    return SH.Topology(epoch=1, subtopologies=[SH.Subtopology(
        subtopology_id="0", source_topics=[source], source_topic_regex=[],
        state_changelog_topics=[], repartition_sink_topics=[], repartition_source_topics=[],
        copartition_groups=[])])


def _hb(conn, group, member, epoch, **kw):
    fields = dict(group_id=group, member_id=member, member_epoch=epoch,
                  endpoint_information_epoch=0, instance_id=None, rack_id=None,
                  rebalance_timeout_ms=-1, topology=None, active_tasks=None, standby_tasks=None,
                  warmup_tasks=None, process_id=None, user_endpoint=None, client_tags=None,
                  task_offsets=None, task_end_offsets=None, shutdown_application=False)
    fields.update(kw)
    return conn.request(88, 1, SH(**fields))


def _join(conn, group, member, source, **kw):
    for _ in range(100):
        r = _hb(conn, group, member, 0, rebalance_timeout_ms=30000, topology=_topology(source, group),
                active_tasks=[], standby_tasks=[], warmup_tasks=[], process_id="p-" + member,
                client_tags=[], **kw)
        if r.error_code not in (14, 15, 16):       # the coordinator is loading
            return r
        time.sleep(0.2)
    return r


def _describe(conn, group, include):
    r = conn.request(89, 1, M.StreamsGroupDescribeRequest(
        group_ids=[group], include_authorized_operations=False, include_topology_description=include))
    g = r.groups[0]
    return (g.error_code, g.topology_description, g.topology_description_status, g.assignor_name,
            sorted((m.member_id, m.instance_id) for m in g.members))


def test_streams_groups_v1_static_members_and_descriptions(bootstrap):
    app = "s44-" + uuid.uuid4().hex[:8]
    source = app + "-in"
    create_topic(bootstrap, source, partitions=2)
    conn = _connect(bootstrap)
    try:
        _find_coordinator(conn, app)
        r = _join(conn, app, "m1", source)
        assert (r.error_code, r.member_id, r.acceptable_recovery_lag, r.task_offset_interval_ms,
                r.topology_description_required) == (0, "m1", 10_000, 60_000, False)
        r = _join(conn, app, "m2", source, instance_id="i2")
        assert (r.error_code, r.member_id) == (0, "m2")
        epoch2 = r.member_epoch
        # the instance id is held by a live member: another join is refused
        r = _join(conn, app, "m3", source, instance_id="i2")
        assert (r.error_code, r.error_message, r.acceptable_recovery_lag) == (
            111, "Static member m3 with instance id i2 cannot join the group because the instance "
                 "id is owned by m2 member.", -1)
        # a temporary leave keeps the member; a rejoin under a new id takes its place
        r = _hb(conn, app, "m2", -2, instance_id="i2")
        assert (r.error_code, r.member_id, r.member_epoch) == (0, "m2", -2)
        assert _describe(conn, app, False)[4] == [("m1", None), ("m2", "i2")]
        r = _join(conn, app, "m4", source, instance_id="i2")
        assert (r.error_code, r.member_id) == (0, "m4")
        r = _hb(conn, app, "m2", epoch2, instance_id="i2")
        assert (r.error_code, r.error_message) == (
            82, "Static member m2 with instance id i2 was fenced by member m4.")
        # no description plugin: descriptions are not stored, pushes are unsupported
        assert _describe(conn, app, True) == (0, None, 1, "sticky", [("m1", None), ("m4", "i2")])
        assert _describe(conn, app, False)[:4] == (0, None, 0, "sticky")
        T = M.StreamsGroupTopologyDescriptionUpdateRequest
        r = conn.request(93, 0, T(group_id=app, member_id="m1", topology_epoch=1,
                                  topology_description=T.TopologyDescription(subtopologies=[],
                                                                             global_stores=[])))
        assert (r.error_code, r.error_message) == (
            35, "The broker has no streams group topology description plugin configured.")
        missing = _describe(conn, "no-such-" + app, True)
        assert missing[:4] == (69, None, 0, None)
    finally:
        conn.close()


def test_metadata_answers_a_failing_auto_creation_unknown(broker_factory):
    # the broker asks its controller and answers at once: a creation the controller refuses
    # (a default replication factor above the one broker) changes nothing in the answer
    private = broker_factory(**{"default.replication.factor": "2"})
    R = M.MetadataRequest
    name = "needs-two-" + uuid.uuid4().hex[:8]
    conn = _connect(private.bootstrap_servers)
    try:
        for v in (4, 12, 12):
            r = conn.request(3, v, R(topics=[R.MetadataRequestTopic(name=name)],
                                     allow_auto_topic_creation=True))
            assert [(t.name, t.error_code, t.partitions) for t in r.topics] == [(name, 3, [])]
    finally:
        conn.close()


def test_metadata_answers_an_auto_created_topic_unknown(bootstrap):
    R = M.MetadataRequest
    name = "auto44-" + uuid.uuid4().hex[:8]
    conn = _connect(bootstrap)
    try:
        for v in (1, 4, 12):
            r = conn.request(3, v, R(topics=[R.MetadataRequestTopic(name=f"{name}-{v}")],
                                     allow_auto_topic_creation=True))
            assert [(t.name, t.error_code, t.partitions) for t in r.topics] == [(f"{name}-{v}", 3, [])]
        r = conn.request(3, 12, R(topics=[R.MetadataRequestTopic(name="bad name!")],
                                  allow_auto_topic_creation=True))
        assert [(t.error_code, t.partitions) for t in r.topics] == [(17, [])]
        for _ in range(100):          # created: it soon has its partition
            r = conn.request(3, 12, R(topics=[R.MetadataRequestTopic(name=f"{name}-12")],
                                      allow_auto_topic_creation=False))
            if r.topics[0].error_code == 0:
                break
            time.sleep(0.1)
        assert (r.topics[0].error_code, len(r.topics[0].partitions)) == (0, 1)
    finally:
        conn.close()
