"""Streams groups' Kafka 4.4 features (KIP-1071's second part, KIP-1357) frame by frame, on a
broker of each target that lists Kafka's ``MockAssignor`` beside ``sticky`` in
``group.streams.assignors``:

- static members: a live instance id refuses a join also under its own member id; after a
  temporary leave (epoch -2) the same member id takes its tasks back without a new epoch;
- task offsets: a task twice in a report is INVALID_REQUEST; reports are described; owned
  tasks outside the topology, and task lists given only in part, are INVALID_REQUEST;
- assignors: the GROUP config ``streams.assignor.name`` must name a registered assignor
  (INVALID_CONFIG with Kafka's message), is described with the broker's default, is what
  StreamsGroupDescribe v1 answers as ``AssignorName``, and takes effect at the next
  assignment: with ``mock`` a second member gets nothing from the first;
- rack-aware assignment tags (GROUP ``streams.rack.aware.assignment.tags``): no duplicates,
  a change starts a rebalance, a member lacking a tag hears MISSING_CLIENT_TAGS.
"""
from __future__ import annotations

import time
import uuid

from compat_tests.differential.common import Connection
from compat_tests.helpers import create_topic
from kbroker.wire import messages as M

CLIENT = "hand-built"
SH = M.StreamsGroupHeartbeatRequest
MOCK = "org.apache.kafka.coordinator.group.streams.assignor.MockAssignor"
OVERRIDES = {"group.streams.assignors": f"sticky,{MOCK}",
             "group.streams.initial.rebalance.delay.ms": "0",
             "group.streams.assignment.interval.ms": "0"}


def _topology(source: str, app: str):
    return SH.Topology(epoch=1, subtopologies=[SH.Subtopology(
        subtopology_id="0", source_topics=[source], source_topic_regex=[],
        state_changelog_topics=[SH.TopicInfo(name=f"{app}-store-changelog", partitions=0,
                                             replication_factor=0, topic_configs=[])],
        repartition_sink_topics=[], repartition_source_topics=[], copartition_groups=[])])


def _hb(conn, group, member, epoch, **kw):
    fields = dict(group_id=group, member_id=member, member_epoch=epoch,
                  endpoint_information_epoch=0, instance_id=None, rack_id=None,
                  rebalance_timeout_ms=-1, topology=None, active_tasks=None, standby_tasks=None,
                  warmup_tasks=None, process_id=None, user_endpoint=None, client_tags=None,
                  task_offsets=None, task_end_offsets=None, shutdown_application=False)
    fields.update(kw)
    for _ in range(100):
        r = conn.request(88, 1, SH(**fields))
        if r.error_code not in (14, 15, 16):           # the coordinator is loading
            return r
        time.sleep(0.2)
    return r


def _join(conn, group, member, source, **kw):
    return _hb(conn, group, member, 0, rebalance_timeout_ms=30000,
               topology=_topology(source, group), active_tasks=[], standby_tasks=[],
               warmup_tasks=[], process_id="p-" + member, client_tags=[], **kw)


def _tasks(task_ids):
    return None if task_ids is None else sorted((t.subtopology_id, tuple(t.partitions))
                                                for t in task_ids)


def _owned(r):
    return [SH.TaskIds(subtopology_id=t.subtopology_id, partitions=t.partitions)
            for t in r.active_tasks or []]


def _until_tasks(conn, group, member, r, **kw):
    """Heartbeats until the member holds active tasks (internal topics are being created)."""
    for _ in range(120):
        assert r.error_code == 0, r
        if r.active_tasks:
            return r
        time.sleep(0.25)
        r = _hb(conn, group, member, r.member_epoch, active_tasks=[], standby_tasks=[],
                warmup_tasks=[], **kw)
    raise AssertionError(f"{member} got no task: {r}")


def _find_coordinator(conn, group) -> None:
    """FindCoordinator creates __consumer_offsets on a fresh broker."""
    for _ in range(100):
        fc = conn.request(10, 4, M.FindCoordinatorRequest(key_type=0, coordinator_keys=[group]))
        if fc.coordinators[0].error_code == 0:
            return
        time.sleep(0.2)
    raise AssertionError(f"no coordinator for {group}")


def _eventually(check, tries=50):
    for _ in range(tries):
        if check():
            return
        time.sleep(0.2)
    raise AssertionError("never happened")


def _offset(sid, p, off):
    return SH.TaskOffset(subtopology_id=sid, partition=p, offset=off)


def _describe(conn, group):
    (g,) = conn.request(89, 1, M.StreamsGroupDescribeRequest(
        group_ids=[group], include_authorized_operations=False,
        include_topology_description=False)).groups
    return g


def _alter_group(conn, group, name, value):
    R = M.IncrementalAlterConfigsRequest
    r = conn.request(44, 1, R(validate_only=False, resources=[R.AlterConfigsResource(
        resource_type=32, resource_name=group, configs=[R.AlterableConfig(
            name=name, config_operation=0, value=value)])]))
    (res,) = r.responses
    return res.error_code, res.error_message


def _group_configs(conn, group):
    D = M.DescribeConfigsRequest
    r = conn.request(32, 4, D(resources=[D.DescribeConfigsResource(
        resource_type=32, resource_name=group, configuration_keys=None)],
        include_synonyms=False, include_documentation=False))
    (res,) = r.results
    return {c.name: c.value for c in res.configs}


def test_streams_v1_static_members_task_offsets_and_assignors(broker_factory):
    bs = broker_factory(**OVERRIDES).bootstrap_servers
    app = "sv1-" + uuid.uuid4().hex[:8]
    source = app + "-in"
    create_topic(bs, source, partitions=2)
    host, port = bs.rsplit(":", 1)
    conn = Connection((host, int(port)), timeout=30)
    try:
        _find_coordinator(conn, app)
        # --- a static member, its rejoin at epoch 0
        r = _until_tasks(conn, app, "m1", _join(conn, app, "m1", source, instance_id="i1"),
                         instance_id="i1")
        assert _tasks(r.active_tasks) == [("0", (0, 1))]
        epoch = _describe(conn, app).group_epoch
        r = _join(conn, app, "m1", source, instance_id="i1")
        assert (r.error_code, r.error_message) == (
            111, "Static member m1 with instance id i1 cannot join the group because the "
                 "instance id is owned by m1 member.")
        assert _hb(conn, app, "m1", -2, instance_id="i1").member_epoch == -2
        r = _join(conn, app, "m1", source, instance_id="i1")
        assert (r.error_code, _tasks(r.active_tasks)) == (0, [("0", (0, 1))])
        assert _describe(conn, app).group_epoch == epoch
        e1 = r.member_epoch
        # a static member's new endpoint is no reason to rebalance (a dynamic one's would be)
        r = _hb(conn, app, "m1", e1, instance_id="i1",
                user_endpoint=SH.Endpoint(host="127.0.0.1", port=7999))
        assert r.error_code == 0 and _describe(conn, app).group_epoch == epoch

        # --- task offsets
        r = _hb(conn, app, "m1", e1, instance_id="i1",
                task_offsets=[_offset("0", 1, 5), _offset("0", 1, 6)])
        assert (r.error_code, r.error_message) == (
            42, "Task offsets contain a duplicate entry for subtopology 0 and partition 1.")
        r = _hb(conn, app, "m1", e1, instance_id="i1", task_offsets=[_offset("0", 1, 7),
                                                                     _offset("0", 0, -2)],
                task_end_offsets=[_offset("0", 1, 9)])
        assert r.error_code == 0
        (m,) = _describe(conn, app).members
        assert [(o.subtopology_id, o.partition, o.offset) for o in m.task_offsets] == [
            ("0", 0, -2), ("0", 1, 7)]
        assert [(o.subtopology_id, o.partition, o.offset) for o in m.task_end_offsets] == [
            ("0", 1, 9)]
        r = _hb(conn, app, "m1", e1, instance_id="i1", active_tasks=[], standby_tasks=None,
                warmup_tasks=[])
        assert (r.error_code, r.error_message) == (
            42, "If one task-type is non-null, all must be non-null.")
        r = _hb(conn, app, "m1", e1, instance_id="i1", standby_tasks=[], warmup_tasks=[],
                active_tasks=[SH.TaskIds(subtopology_id="0", partitions=[0, 5])])
        assert (r.error_code, r.error_message) == (
            42, "Task 5 for subtopology 0 is invalid. Number of tasks for this subtopology: 2")
        r = _hb(conn, app, "m1", e1, instance_id="i1", active_tasks=[], warmup_tasks=[],
                standby_tasks=[SH.TaskIds(subtopology_id="7", partitions=[0])])
        assert (r.error_code, r.error_message) == (
            42, "Subtopology 7 does not exist in the topology.")

        # --- assignors (KIP-1357)
        assert _describe(conn, app).assignor_name == "sticky"
        configs = _group_configs(conn, app)
        assert configs["streams.assignor.name"] == "sticky"
        assert "streams.num.warmup.replicas" not in configs
        assert _alter_group(conn, app, "streams.assignor.name", "range") == (
            40, "streams.assignor.name 'range' is not a registered task assignor. Registered "
                "assignors are: [sticky, mock].")
        assert _alter_group(conn, app, "streams.assignor.name", "mock") == (0, None)
        assert _alter_group(conn, app, "streams.num.warmup.replicas", "3") == (0, None)
        _eventually(lambda: {k: v for k, v in _group_configs(conn, app).items() if k in (
            "streams.assignor.name", "streams.num.warmup.replicas")} == {
            "streams.assignor.name": "mock", "streams.num.warmup.replicas": "3"})
        # the coordinator learns of a GROUP config from the metadata log: Kafka a moment later
        _eventually(lambda: _describe(conn, app).assignor_name == "mock")
        # a second member: the mock assignor leaves every task with m1
        r2 = _join(conn, app, "m2", source)
        assert (r2.error_code, _tasks(r2.active_tasks)) == (0, [])
        held, e1 = [SH.TaskIds(subtopology_id="0", partitions=[0, 1])], e1
        for _ in range(20):
            r = _hb(conn, app, "m1", e1, instance_id="i1", active_tasks=held,
                    standby_tasks=[], warmup_tasks=[])
            assert r.error_code == 0, r
            e1, held = r.member_epoch, held if r.active_tasks is None else _owned(r)
            r2 = _hb(conn, app, "m2", r2.member_epoch, active_tasks=[], standby_tasks=[],
                     warmup_tasks=[])
            g = _describe(conn, app)
            if g.group_state == "Stable":
                break
            time.sleep(0.2)
        assert (g.group_state, g.group_epoch, g.assignment_epoch) == (
            "Stable", epoch + 1, epoch + 1), [(x.member_id, x.member_epoch) for x in g.members]
        targets = {x.member_id: _tasks(x.target_assignment.active_tasks) for x in g.members}
        assert targets == {"m1": [("0", (0, 1))], "m2": []}

        # --- rack-aware assignment tags: an assignment config; members lacking one are told
        assert configs["streams.rack.aware.assignment.tags"] == ""
        assert _alter_group(conn, app, "streams.rack.aware.assignment.tags", "zone,zone") == (
            40, "streams.rack.aware.assignment.tags must not contain duplicate tag keys.")
        assert _alter_group(conn, app, "streams.rack.aware.assignment.tags", "zone") == (0, None)
        for _ in range(50):
            r = _hb(conn, app, "m1", e1, instance_id="i1")
            assert r.error_code == 0, r
            e1 = r.member_epoch
            if r.status:
                break
            time.sleep(0.2)
        assert [(x.status_code, x.status_detail) for x in r.status] == [(
            6, "Missing required client tags for rack-aware standby assignment: [zone]. "
               "Configure them via 'client.tag.<tagKey>' in your Streams config.")]
        assert _describe(conn, app).group_epoch == epoch + 2
    finally:
        conn.close()
