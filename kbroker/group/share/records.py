"""The ``__consumer_offsets`` records of share groups (KIP-932), Kafka 4.3.1's layout.

The definitions are in the project's message model (``kbroker/wire/schema/messages.json``,
generated from the pinned 4.3.1 ``group-coordinator`` JSON). Key = int16 record type + the
key struct (version 0); value = int16 version (0) + the value struct, or null (tombstone).

====  ==========================================  ===============================
type  record                                      key
====  ==========================================  ===============================
10    ShareGroupMemberMetadata (subscription)     group, member
11    ShareGroupMetadata (group epoch, hash)      group
12    ShareGroupTargetAssignmentMetadata          group
13    ShareGroupTargetAssignmentMember            group, member
14    ShareGroupCurrentMemberAssignment           group, member
15    ShareGroupStatePartitionMetadata            group
====  ==========================================  ===============================

Pure data: builders and decoders, no I/O.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from kbroker.wire import messages

from ..record_base import CoordinatorRecord, decode_v0_value, v0_record


MEMBER_METADATA = 10
GROUP_METADATA = 11
TARGET_ASSIGNMENT_METADATA = 12
TARGET_ASSIGNMENT_MEMBER = 13
CURRENT_MEMBER_ASSIGNMENT = 14
STATE_PARTITION_METADATA = 15

_NAMES = {
    MEMBER_METADATA: "ShareGroupMemberMetadata",
    GROUP_METADATA: "ShareGroupMetadata",
    TARGET_ASSIGNMENT_METADATA: "ShareGroupTargetAssignmentMetadata",
    TARGET_ASSIGNMENT_MEMBER: "ShareGroupTargetAssignmentMember",
    CURRENT_MEMBER_ASSIGNMENT: "ShareGroupCurrentMemberAssignment",
    STATE_PARTITION_METADATA: "ShareGroupStatePartitionMetadata",
}
RECORD_TYPES = frozenset(_NAMES)
_MEMBER_KEYED = frozenset({MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT})

# Kafka's MemberState of a share group member: always STABLE (no revocation in share groups)
MEMBER_STATE_STABLE = 0


def _cls(name: str):
    return getattr(messages, name)


@dataclass(frozen=True)
class ShareKey:
    """A decoded key: ``record_type``, the group and the member id (or None)."""
    record_type: int
    group: str
    member_id: str | None = None


def decode_key(record_type: int, buf) -> ShareKey:
    k = _cls(_NAMES[record_type] + "Key").decode(buf, 0, 2)
    if record_type in _MEMBER_KEYED:
        return ShareKey(record_type, k.group_id, k.member_id)
    return ShareKey(record_type, k.group_id)


def decode_value(record_type: int, buf):
    """The value struct, or None for a tombstone."""
    if buf is None:
        return None
    name = _NAMES[record_type] + "Value"
    return decode_v0_value(_cls(name), name, buf)


def _record(partition: int, record_type: int, group: str, member_id: str | None,
            value) -> CoordinatorRecord:
    kcls = _cls(_NAMES[record_type] + "Key")
    kmsg = kcls(group_id=group, member_id=member_id) if record_type in _MEMBER_KEYED \
        else kcls(group_id=group)
    return v0_record(partition, record_type, kmsg, value, ShareKey(record_type, group, member_id))


def _sorted_topics(assignment) -> list[tuple[uuid.UUID, list[int]]]:
    return [(t, sorted(ps)) for t, ps in sorted(assignment.items(), key=lambda kv: str(kv[0]))
            if ps]


# --------------------------------------------------------------------------- builders
def member_metadata_record(partition: int, group: str, m) -> CoordinatorRecord:
    """``m``: a :class:`~kbroker.group.share.state.ShareGroupMember`."""
    v = messages.ShareGroupMemberMetadataValue(
        rack_id=m.rack_id, client_id=m.client_id, client_host=m.client_host,
        subscribed_topic_names=list(m.subscribed_topic_names))
    return _record(partition, MEMBER_METADATA, group, m.member_id, v)


def group_epoch_record(partition: int, group: str, epoch: int, metadata_hash: int) -> CoordinatorRecord:
    v = messages.ShareGroupMetadataValue(epoch=epoch, metadata_hash=metadata_hash)
    return _record(partition, GROUP_METADATA, group, None, v)


def target_assignment_metadata_record(partition: int, group: str, epoch: int,
                                      timestamp_ms: int) -> CoordinatorRecord:
    v = messages.ShareGroupTargetAssignmentMetadataValue(assignment_epoch=epoch,
                                                         assignment_timestamp=timestamp_ms)
    return _record(partition, TARGET_ASSIGNMENT_METADATA, group, None, v)


def target_assignment_member_record(partition: int, group: str, member_id: str,
                                    target) -> CoordinatorRecord:
    cls = messages.ShareGroupTargetAssignmentMemberValue
    v = cls(topic_partitions=[cls.TopicPartition(topic_id=t, partitions=ps)
                              for t, ps in _sorted_topics(target)])
    return _record(partition, TARGET_ASSIGNMENT_MEMBER, group, member_id, v)


def current_assignment_record(partition: int, group: str, m) -> CoordinatorRecord:
    cls = messages.ShareGroupCurrentMemberAssignmentValue
    v = cls(member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch,
            state=MEMBER_STATE_STABLE,
            assigned_partitions=[cls.TopicPartitions(topic_id=t, partitions=ps)
                                 for t, ps in _sorted_topics(m.assigned)])
    return _record(partition, CURRENT_MEMBER_ASSIGNMENT, group, m.member_id, v)


def state_partition_metadata_record(partition: int, group: str, initialized) -> CoordinatorRecord:
    """``initialized``: topic id → (topic name, partitions) whose share state the group keeps."""
    cls = messages.ShareGroupStatePartitionMetadataValue
    v = cls(initializing_topics=[], deleting_topics=[], initialized_topics=[
        cls.TopicPartitionsInfo(topic_id=t, topic_name=name, partitions=sorted(ps))
        for t, (name, ps) in sorted(initialized.items(), key=lambda kv: str(kv[0]))])
    return _record(partition, STATE_PARTITION_METADATA, group, None, v)


def tombstone(partition: int, record_type: int, group: str,
              member_id: str | None = None) -> CoordinatorRecord:
    return _record(partition, record_type, group, member_id, None)


def member_tombstones(partition: int, group: str, member_id: str) -> list[CoordinatorRecord]:
    """A member leaves: its current assignment, target and metadata (Kafka's order)."""
    return [tombstone(partition, CURRENT_MEMBER_ASSIGNMENT, group, member_id),
            tombstone(partition, TARGET_ASSIGNMENT_MEMBER, group, member_id),
            tombstone(partition, MEMBER_METADATA, group, member_id)]


def group_tombstones(partition: int, group: str, member_ids) -> list[CoordinatorRecord]:
    """Every record of a deleted group."""
    out: list[CoordinatorRecord] = []
    for mid in member_ids:
        out += member_tombstones(partition, group, mid)
    out += [tombstone(partition, TARGET_ASSIGNMENT_METADATA, group),
            tombstone(partition, STATE_PARTITION_METADATA, group),
            tombstone(partition, GROUP_METADATA, group)]
    return out
