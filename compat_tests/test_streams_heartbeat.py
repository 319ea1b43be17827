"""StreamsGroupHeartbeat frame by frame on both targets (KIP-1071): Kafka's error codes for bad
joins, fencing and unknown members, the status of a topology whose source topic is missing,
internal topics the broker creates, epochs, and leaving."""

from __future__ import annotations

import time

from compat_tests.helpers import create_topic
from compat_tests.kafka_runner import kafka_version
from kbroker.wire import messages
from tests.support.kafka_streams_app import raw

CLIENT = "raw frames"
Req = messages.StreamsGroupHeartbeatRequest


def topology(source: str, app: str, epoch: int = 1):
    return Req.Topology(epoch=epoch, subtopologies=[
        Req.Subtopology(subtopology_id="0", source_topics=[source], source_topic_regex=[],
                        state_changelog_topics=[Req.TopicInfo(name=f"{app}-store-changelog",
                                                              partitions=0, replication_factor=0,
                                                              topic_configs=[])],
                        repartition_sink_topics=[], repartition_source_topics=[],
                        copartition_groups=[])])


def hb(bs, group, member, epoch, **kw):
    fields = dict(group_id=group, member_id=member, member_epoch=epoch,
                  endpoint_information_epoch=0, instance_id=None, rack_id=None,
                  rebalance_timeout_ms=-1, topology=None, active_tasks=None, standby_tasks=None,
                  warmup_tasks=None, process_id=None, user_endpoint=None, client_tags=None,
                  task_offsets=None, task_end_offsets=None, shutdown_application=False)
    fields.update(kw)
    return raw(bs, 88, 0, Req(**fields))


def join(bs, group, member, topo, **kw):
    return hb(bs, group, member, 0, rebalance_timeout_ms=30000, topology=topo, active_tasks=[],
              standby_tasks=[], warmup_tasks=[], process_id="proc-" + member, client_tags=[],
              **kw)


def find_coordinator(bs, group):
    for _ in range(100):
        r = raw(bs, 10, 4, messages.FindCoordinatorRequest(key_type=0, coordinator_keys=[group]))
        if r.coordinators[0].error_code == 0:
            return
        time.sleep(0.2)
    raise AssertionError(f"no coordinator for {group}")


def statuses(r):
    return [(x.status_code, x.status_detail) for x in r.status]


def tasks(task_ids):
    return None if task_ids is None else [(t.subtopology_id, t.partitions) for t in task_ids]


def test_streams_heartbeat_errors_and_status(bootstrap, target, topic_name):
    bs, group = bootstrap, f"{topic_name}-app"
    changelog = f"{group}-store-changelog"
    find_coordinator(bs, group)
    r = join(bs, group, "", topology(topic_name, group))
    assert (r.error_code, r.error_message, r.member_id, r.status) == (
        42, "MemberId can't be empty.", "", [])
    r = hb(bs, group, "m1", 0, rebalance_timeout_ms=30000, active_tasks=[], standby_tasks=[],
           warmup_tasks=[], process_id="p")
    assert (r.error_code, r.error_message) == (42, "Topology must be non-null when (re-)joining.")

    # a new group whose source topic is missing: epoch 2, the member at 1 with no task
    for _ in range(100):
        r = join(bs, group, "m1", topology(topic_name, group))
        if r.error_code not in (14, 15, 16):
            break
        time.sleep(0.2)
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (0, "m1", 1, 5000)
    # Kafka 4.4 answers its task offset interval (60 s by default; 4.3.1 answered 0)
    kafka_4_3 = target == "kafka" and kafka_version() == "4.3.1"
    interval = 0 if kafka_4_3 else 60_000
    assert (r.acceptable_recovery_lag_legacy, r.task_offset_interval_ms) == (0, interval)
    assert statuses(r) == [(5, "Assignment delayed due to the configured initial rebalance delay."),
                           (1, f"Source topics {topic_name} are missing.")]
    assert (tasks(r.active_tasks), tasks(r.standby_tasks), tasks(r.warmup_tasks)) == ([], [], [])

    # the source topic appears; the broker creates the changelog topic; the delay ends
    create_topic(bs, topic_name, 2)
    seen = set()
    for _ in range(120):
        r = hb(bs, group, "m1", r.member_epoch, active_tasks=[], standby_tasks=[], warmup_tasks=[])
        assert r.error_code == 0, r
        seen |= {c for c, _ in statuses(r)}
        if r.active_tasks:
            break
        time.sleep(0.5)
    assert seen <= {1, 3, 5} and 3 in seen
    assert (r.member_epoch, statuses(r), tasks(r.active_tasks)) == (4, [], [("0", [0, 1])])

    e = r.member_epoch
    r = hb(bs, group, "m1", e + 5)
    assert (r.error_code, r.error_message) == (
        110, f"The streams group member has a greater member epoch ({e + 5}) than the one known "
        f"by the group coordinator ({e}). The member must abandon all its partitions and rejoin.")
    r = hb(bs, group, "m2", 3)
    assert (r.error_code, r.error_message) == (25, f"Member m2 is not a member of group {group}.")
    r = join(bs, group, "m3", topology(topic_name + "x", group))
    assert (r.error_code, r.error_message) == (42, "Topology updates are not supported yet.")
    r = hb(bs, group, "m1", -1)
    assert (r.error_code, r.member_id, r.member_epoch, r.status) == (0, "m1", -1, [])

    (g,) = raw(bs, 89, 0, messages.StreamsGroupDescribeRequest(
        group_ids=[group], include_authorized_operations=False)).groups
    # Kafka 4.4 moves an emptied group's assignment epoch to its group epoch (4.3.1: one behind)
    assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch, g.members) == (
        0, "Empty", 5, 4 if kafka_4_3 else 5, [])
    (sub,) = g.topology.subtopologies
    assert [(t.name, t.partitions, t.replication_factor) for t in sub.state_changelog_topics] == [
        (changelog, 2, 0)]
