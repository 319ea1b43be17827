"""The ``__consumer_offsets`` records of streams groups (KIP-1071), Kafka 4.3.1's layout.

The definitions are in the schema model (``kbroker/wire/schema/messages.json``, generated from
Kafka's ``StreamsGroup*`` coordinator record definitions). Key = int16 record type + key
struct; value = int16 version (0) + value struct, or null (tombstone):

====  ==========================================  ==============
type  record                                      key
====  ==========================================  ==============
17    StreamsGroupMetadata (epoch, hash, configs)  group
19    StreamsGroupMemberMetadata                  group, member
20    StreamsGroupTargetAssignmentMetadata        group
21    StreamsGroupTargetAssignmentMember          group, member
22    StreamsGroupCurrentMemberAssignment         group, member
23    StreamsGroupTopology                        group
====  ==========================================  ==============

(18 was the partition metadata record of early KIP-1071 builds; Kafka 4.3 keeps a metadata
hash in the group record instead and has no such type.)
"""
from __future__ import annotations

from dataclasses import dataclass

from kbroker.wire import messages as m

from ..record_base import CoordinatorRecord, decode_v0_value, v0_record
from .state import KINDS, TaskSet, norm
from .topology import Topology, topology_of


GROUP_METADATA = 17
MEMBER_METADATA = 19
TARGET_ASSIGNMENT_METADATA = 20
TARGET_ASSIGNMENT_MEMBER = 21
CURRENT_MEMBER_ASSIGNMENT = 22
TOPOLOGY = 23

_NAMES = {
    GROUP_METADATA: "StreamsGroupMetadata",
    MEMBER_METADATA: "StreamsGroupMemberMetadata",
    TARGET_ASSIGNMENT_METADATA: "StreamsGroupTargetAssignmentMetadata",
    TARGET_ASSIGNMENT_MEMBER: "StreamsGroupTargetAssignmentMember",
    CURRENT_MEMBER_ASSIGNMENT: "StreamsGroupCurrentMemberAssignment",
    TOPOLOGY: "StreamsGroupTopology",
}
RECORD_TYPES = frozenset(_NAMES)
_PER_MEMBER = (MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT)


def _cls(name: str):
    return getattr(m, name)


@dataclass(frozen=True)
class StreamsKey:
    """The key of a streams group record in ``__consumer_offsets``: its type, group and member."""
    record_type: int
    group: str
    member_id: str | None = None


def decode_key(record_type: int, buf) -> StreamsKey:
    k = _cls(_NAMES[record_type] + "Key").decode(buf, 0, 2)
    return StreamsKey(record_type, k.group_id,
                      k.member_id if record_type in _PER_MEMBER else None)


def decode_value(record_type: int, buf):
    if buf is None:
        return None
    name = _NAMES[record_type] + "Value"
    return decode_v0_value(_cls(name), name, buf)


def _record(partition: int, rt: int, group: str, member: str | None, value) -> CoordinatorRecord:
    kcls = _cls(_NAMES[rt] + "Key")
    key = kcls(group_id=group, member_id=member) if rt in _PER_MEMBER else kcls(group_id=group)
    return v0_record(partition, rt, key, value, StreamsKey(rt, group, member))


def tombstone(partition: int, rt: int, group: str, member: str | None = None) -> CoordinatorRecord:
    return _record(partition, rt, group, member, None)


def group_metadata_record(partition, group, epoch, metadata_hash, validated_topology_epoch,
                          configs) -> CoordinatorRecord:
    cls = m.StreamsGroupMetadataValue
    v = cls(epoch=epoch, metadata_hash=metadata_hash,
            validated_topology_epoch=validated_topology_epoch,
            last_assignment_configs=[cls.LastAssignmentConfig(key=k, value=val) for k, val in configs])
    return _record(partition, GROUP_METADATA, group, None, v)


def topology_record(partition: int, group: str, t: Topology) -> CoordinatorRecord:
    cls = m.StreamsGroupTopologyValue

    def info(x):
        return cls.TopicInfo(name=x.name, partitions=x.partitions,
                             replication_factor=x.replication_factor,
                             topic_configs=[cls.TopicConfig(key=k, value=v) for k, v in x.configs])
    subs = [cls.Subtopology(
        subtopology_id=s.subtopology_id, source_topics=list(s.source_topics),
        source_topic_regex=list(s.source_topic_regex),
        state_changelog_topics=[info(x) for x in s.state_changelog_topics],
        repartition_sink_topics=list(s.repartition_sink_topics),
        repartition_source_topics=[info(x) for x in s.repartition_source_topics],
        copartition_groups=[cls.CopartitionGroup(
            source_topics=list(a), source_topic_regex=list(b), repartition_source_topics=list(c))
            for a, b, c in s.copartition_groups])
        for s in t.subtopologies]
    return _record(partition, TOPOLOGY, group, None, cls(epoch=t.epoch, subtopologies=subs))


def topology_from(value) -> Topology:
    return topology_of(value)


def member_metadata_record(partition: int, group: str, mb) -> CoordinatorRecord:
    cls = m.StreamsGroupMemberMetadataValue
    ep = None if mb.user_endpoint is None else cls.Endpoint(host=mb.user_endpoint[0],
                                                            port=mb.user_endpoint[1])
    v = cls(instance_id=mb.instance_id, rack_id=mb.rack_id, client_id=mb.client_id,
            client_host=mb.client_host, rebalance_timeout_ms=mb.rebalance_timeout_ms,
            topology_epoch=mb.topology_epoch, process_id=mb.process_id, user_endpoint=ep,
            client_tags=[cls.KeyValue(key=k, value=val) for k, val in mb.client_tags])
    return _record(partition, MEMBER_METADATA, group, mb.member_id, v)


def _task_ids(cls, tasks):
    out = []
    for sid, ps in sorted(norm(tasks).items()):
        out.append(cls.TaskIds(subtopology_id=sid, partitions=sorted(ps)))
    return out


def tasks_from(task_ids) -> dict[str, frozenset[int]]:
    out: dict[str, frozenset[int]] = {}
    for t in task_ids or ():
        if t.partitions:
            out[t.subtopology_id] = frozenset(out.get(t.subtopology_id, frozenset()) | set(t.partitions))
    return out


def target_assignment_member_record(partition: int, group: str, member_id: str,
                                    target: TaskSet) -> CoordinatorRecord:
    cls = m.StreamsGroupTargetAssignmentMemberValue
    v = cls(active_tasks=_task_ids(cls, target.active), standby_tasks=_task_ids(cls, target.standby),
            warmup_tasks=_task_ids(cls, target.warmup))
    return _record(partition, TARGET_ASSIGNMENT_MEMBER, group, member_id, v)


def target_assignment_metadata_record(partition: int, group: str, epoch: int,
                                      timestamp_ms: int) -> CoordinatorRecord:
    v = m.StreamsGroupTargetAssignmentMetadataValue(assignment_epoch=epoch,
                                                     assignment_timestamp=timestamp_ms)
    return _record(partition, TARGET_ASSIGNMENT_METADATA, group, None, v)


def current_assignment_record(partition: int, group: str, mb) -> CoordinatorRecord:
    cls = m.StreamsGroupCurrentMemberAssignmentValue
    a, p = mb.assigned, mb.pending_revocation
    v = cls(member_epoch=mb.member_epoch, previous_member_epoch=mb.previous_member_epoch,
            state=int(mb.state),
            active_tasks=_task_ids(cls, a.active), standby_tasks=_task_ids(cls, a.standby),
            warmup_tasks=_task_ids(cls, a.warmup),
            active_tasks_pending_revocation=_task_ids(cls, p.active),
            standby_tasks_pending_revocation=_task_ids(cls, p.standby),
            warmup_tasks_pending_revocation=_task_ids(cls, p.warmup))
    return _record(partition, CURRENT_MEMBER_ASSIGNMENT, group, mb.member_id, v)


def taskset_from(value, suffix: str = "") -> TaskSet:
    return TaskSet(**{k: tasks_from(getattr(value, f"{k}_tasks{suffix}")) for k in KINDS})
