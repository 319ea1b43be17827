"""The ``__consumer_offsets`` records of consumer groups (KIP-848), Kafka 4.3.1's layout.

Declared as data in ``schema.json`` (next to this file: the facts of Kafka 4.3.1's
``ConsumerGroup*`` coordinator record definitions, which the pinned 2024 protocol snapshot
predates — it lacks the regular-expression record and the 4.x tagged fields) and compiled by
the project's schema model like every other message.

Key = int16 record type + the key struct; value = int16 version (0) + the value struct,
or null (tombstone). Record types:

====  ==========================================  ===============================
type  record                                      key
====  ==========================================  ===============================
3     ConsumerGroupMetadata (group epoch, hash)   group
4     ConsumerGroupPartitionMetadata (read only)  group
5     ConsumerGroupMemberMetadata (subscription)  group, member
6     ConsumerGroupTargetAssignmentMetadata       group
7     ConsumerGroupTargetAssignmentMember         group, member
8     ConsumerGroupCurrentMemberAssignment        group, member
16    ConsumerGroupRegularExpression (resolved)   group, regular expression
====  ==========================================  ===============================

Kafka 4.1+ no longer writes the partition metadata record (the metadata hash in the group
metadata replaced it); it is decoded and ignored on replay, and tombstoned on deletion.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from kbroker.wire.codegen import build_classes
from kbroker.wire.messages import KafkaMessage
from kbroker.wire.model import build_message

from ..record_base import CoordinatorRecord, decode_v0_value, v0_record

SCHEMA_FILE = Path(__file__).with_name("schema.json")

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
TARGET_ASSIGNMENT_MEMBER = 7
CURRENT_MEMBER_ASSIGNMENT = 8
REGULAR_EXPRESSION = 16

_NAMES = {
    GROUP_METADATA: "ConsumerGroupMetadata",
    PARTITION_METADATA: "ConsumerGroupPartitionMetadata",
    MEMBER_METADATA: "ConsumerGroupMemberMetadata",
    TARGET_ASSIGNMENT_METADATA: "ConsumerGroupTargetAssignmentMetadata",
    TARGET_ASSIGNMENT_MEMBER: "ConsumerGroupTargetAssignmentMember",
    CURRENT_MEMBER_ASSIGNMENT: "ConsumerGroupCurrentMemberAssignment",
    REGULAR_EXPRESSION: "ConsumerGroupRegularExpression",
}
RECORD_TYPES = frozenset(_NAMES)


@cache
def _raw() -> dict[str, dict]:
    data = json.loads(SCHEMA_FILE.read_text())
    return {m["name"]: m for m in data["messages"]}


@cache
def message(name: str) -> type:
    """The compiled class of ``name`` (e.g. ``ConsumerGroupMetadataValue``)."""
    raw = dict(_raw()[name])
    raw["type"] = "data"              # a plain struct for the codec
    return build_classes(build_message(raw), KafkaMessage)


@dataclass(frozen=True)
class ConsumerKey:
    """A decoded key: ``record_type``, the group, and the member id or regex (or None)."""
    record_type: int
    group: str
    sub: str | None = None

    @property
    def member_id(self) -> str | None:
        return self.sub


def decode_key(record_type: int, buf) -> ConsumerKey:
    cls = message(_NAMES[record_type] + "Key")
    k = cls.decode(buf, 0, 2)
    if record_type in (MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT):
        return ConsumerKey(record_type, k.group_id, k.member_id)
    if record_type == REGULAR_EXPRESSION:
        return ConsumerKey(record_type, k.group_id, k.regular_expression)
    return ConsumerKey(record_type, k.group_id)


def decode_value(record_type: int, buf):
    """The value struct, or None for a tombstone."""
    if buf is None:
        return None
    name = _NAMES[record_type] + "Value"
    return decode_v0_value(message(name), name, buf)


def _record(partition: int, record_type: int, group: str, sub: str | None, value) -> CoordinatorRecord:
    name = _NAMES[record_type]
    kcls = message(name + "Key")
    if record_type == REGULAR_EXPRESSION:
        kmsg = kcls(group_id=group, regular_expression=sub)
    elif sub is not None:
        kmsg = kcls(group_id=group, member_id=sub)
    else:
        kmsg = kcls(group_id=group)
    return v0_record(partition, record_type, kmsg, value, ConsumerKey(record_type, group, sub))


# --------------------------------------------------------------------------- builders
def tombstone(partition: int, record_type: int, group: str, sub: str | None = None) -> CoordinatorRecord:
    """The tombstone of any record type (``sub``: the member id or regular expression)."""
    return _record(partition, record_type, group, sub, None)


def group_epoch_record(partition: int, group: str, epoch: int, metadata_hash: int) -> CoordinatorRecord:
    v = message("ConsumerGroupMetadataValue")(epoch=epoch, metadata_hash=metadata_hash)
    return _record(partition, GROUP_METADATA, group, None, v)


def group_epoch_tombstone(partition: int, group: str) -> CoordinatorRecord:
    return _record(partition, GROUP_METADATA, group, None, None)


def partition_metadata_tombstone(partition: int, group: str) -> CoordinatorRecord:
    return _record(partition, PARTITION_METADATA, group, None, None)


def member_metadata_record(partition: int, group: str, m) -> CoordinatorRecord:
    """``m`` is a :class:`~kbroker.group.consumer.state.ConsumerGroupMember`."""
    v = message("ConsumerGroupMemberMetadataValue")(
        instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
        client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
        subscribed_topic_regex=m.subscribed_topic_regex,
        rebalance_timeout_ms=m.rebalance_timeout_ms, server_assignor=m.server_assignor,
        classic_member_metadata=m.classic_metadata)
    return _record(partition, MEMBER_METADATA, group, m.member_id, v)


def member_metadata_tombstone(partition: int, group: str, member_id: str) -> CoordinatorRecord:
    return _record(partition, MEMBER_METADATA, group, member_id, None)


def target_assignment_metadata_record(partition: int, group: str, epoch: int,
                                      timestamp_ms: int) -> CoordinatorRecord:
    v = message("ConsumerGroupTargetAssignmentMetadataValue")(
        assignment_epoch=epoch, assignment_timestamp=timestamp_ms)
    return _record(partition, TARGET_ASSIGNMENT_METADATA, group, None, v)


def target_assignment_metadata_tombstone(partition: int, group: str) -> CoordinatorRecord:
    return _record(partition, TARGET_ASSIGNMENT_METADATA, group, None, None)


def target_assignment_member_record(partition: int, group: str, member_id: str,
                                    target) -> CoordinatorRecord:
    cls = message("ConsumerGroupTargetAssignmentMemberValue")
    tps = [cls.TopicPartition(topic_id=t, partitions=sorted(ps))
           for t, ps in sorted(target.items(), key=lambda kv: str(kv[0])) if ps]
    return _record(partition, TARGET_ASSIGNMENT_MEMBER, group, member_id, cls(topic_partitions=tps))


def target_assignment_member_tombstone(partition: int, group: str, member_id: str) -> CoordinatorRecord:
    return _record(partition, TARGET_ASSIGNMENT_MEMBER, group, member_id, None)


def _topic_partitions(cls, assignment):
    out = []
    for t, ps in sorted(assignment.items(), key=lambda kv: str(kv[0])):
        if not ps:
            continue
        parts = sorted(ps)
        out.append(cls.TopicPartitions(topic_id=t, partitions=parts,
                                       assignment_epochs=[ps[p] for p in parts]))
    return out


def current_assignment_record(partition: int, group: str, m) -> CoordinatorRecord:
    cls = message("ConsumerGroupCurrentMemberAssignmentValue")
    v = cls(member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch,
            state=int(m.state), assigned_partitions=_topic_partitions(cls, m.assigned),
            partitions_pending_revocation=_topic_partitions(cls, m.pending_revocation))
    return _record(partition, CURRENT_MEMBER_ASSIGNMENT, group, m.member_id, v)


def current_assignment_tombstone(partition: int, group: str, member_id: str) -> CoordinatorRecord:
    return _record(partition, CURRENT_MEMBER_ASSIGNMENT, group, member_id, None)


def regex_record(partition: int, group: str, regex: str, topics, version: int,
                 timestamp_ms: int) -> CoordinatorRecord:
    v = message("ConsumerGroupRegularExpressionValue")(topics=sorted(topics), version=version,
                                                        timestamp=timestamp_ms)
    return _record(partition, REGULAR_EXPRESSION, group, regex, v)


def regex_tombstone(partition: int, group: str, regex: str) -> CoordinatorRecord:
    return _record(partition, REGULAR_EXPRESSION, group, regex, None)


def assignment_from(value_partitions, default_epoch: int) -> dict[uuid.UUID, dict[int, int]]:
    """``TopicPartitions`` with (optional, KIP-1251) assignment epochs → our mapping."""
    out: dict[uuid.UUID, dict[int, int]] = {}
    for tp in value_partitions or ():
        epochs = tp.assignment_epochs
        if epochs is None or len(epochs) != len(tp.partitions):
            epochs = [default_epoch] * len(tp.partitions)
        if tp.partitions:
            out[tp.topic_id] = dict(zip(tp.partitions, epochs))
    return out
