"""Which log directory holds each replica (KIP-858), as Kafka keeps it in the metadata log.

From ``metadata.version`` 3.7-IV2 (level 17) Kafka records directories in the metadata log
itself, so every controller (and every broker) reads them from its image:

- ``RegisterBrokerRecord.LogDirs``: the directory ids of the broker's online log dirs when it
  registered (Kafka's ``BrokerRegistration`` keeps them sorted, in ``Uuid.compareTo``'s order:
  signed 64-bit halves, :func:`kafka_order`); ``BrokerRegistrationChangeRecord.LogDirs`` (v2)
  replaces them when directories go offline (an empty list changes nothing);
- ``PartitionRecord.Directories`` / ``PartitionChangeRecord.Directories``: one directory id
  per replica, in the order of ``Replicas`` (a change record leaves them as they were when
  null). A record without them (older versions) means every replica is ``MIGRATING``.

Reserved ids (the first 100, Kafka's ``DirectoryId``): ``MIGRATING`` (0) — placed, but the
directory was never recorded (a cluster from before 3.7-IV2); ``UNASSIGNED`` (1) — not placed
in a directory yet, the broker will say where it put it; ``LOST`` (2) — an unknown directory
that is offline. For leadership (:meth:`DirRules.online`, Kafka's ``DirectoryId.isOnline``)
MIGRATING and UNASSIGNED count as online, LOST as offline, a real id as online when it is
among the broker's registered online dirs (or when the broker registered none).

The controller's rules (Kafka's ``ReplicationControlManager``, ``ClusterControlManager``,
``PartitionChangeBuilder``), written as records here and replayed like any other:

- a new partition's replica gets its broker's default directory (:meth:`DirRules.default_dir`):
  the broker's only log dir, ``UNASSIGNED`` when it has several, ``MIGRATING`` when it
  registered none, ``UNASSIGNED`` when it is not registered;
- every partition change keeps the directory of each replica that stays, gives an added
  replica its broker's default, and writes ``Directories`` only when the list changes
  (``reassign.build_change`` with the :class:`DirRules` of the image);
- AssignReplicasToDirs (:func:`assign_records`): one change record per replica a broker
  placed, setting its directory; a replica placed in a directory the broker no longer reports
  online also leaves its ISR and, if it led, its leadership moves;
- OfflineLogDirs in a heartbeat (:func:`offline_dir_records`): for each reported directory
  still registered online, every partition with a replica of that broker assigned to it
  leaves the ISR (leadership moves), then one ``BrokerRegistrationChangeRecord`` (v2) with the
  remaining online dirs, so a new active controller knows it from the log;
- an election never picks a replica whose directory is offline.

Below ``metadata.version`` 17 none of this is written (:func:`rules` is None), as in Kafka.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

from .dir_ids import (DIRECTORY_ASSIGNMENT_MV, LOST, MIGRATING, UNASSIGNED,  # noqa: F401
                      is_online, kafka_order, normalized, reserved, sorted_dirs, supported)


@dataclass(frozen=True)
class DirRules:
    """The directory facts of one image (Kafka's ``KRaftClusterDescriber`` and
    ``ClusterControlManager``) that partition changes consult."""

    image: object

    def default_dir(self, broker_id: int) -> uuid.UUID:
        b = self.image.brokers.get(broker_id)
        if b is None:
            return UNASSIGNED            # the missing registration is refused elsewhere
        if not b.log_dirs:
            return MIGRATING
        if len(b.log_dirs) == 1:
            return b.log_dirs[0]
        return UNASSIGNED                # the broker places it and reports (AssignReplicasToDirs)

    def online(self, broker_id: int, directory: uuid.UUID) -> bool:
        b = self.image.brokers.get(broker_id)
        return b is not None and is_online(directory, b.log_dirs)


def rules(image) -> DirRules | None:
    """The image's :class:`DirRules`, or None below ``metadata.version`` 3.7-IV2."""
    return DirRules(image) if supported(image.features.get("metadata.version")) else None


def partition_dirs(image, replicas: Sequence[int]) -> list[uuid.UUID]:
    """``Directories`` of a new partition (Kafka's ``PartitionAssignment``); [] when the
    metadata version has none."""
    r = rules(image)
    return [r.default_dir(b) for b in replicas] if r is not None else []


# A partition change that takes one broker out of the ISR: (partition, topic id, broker) -> record
LeaveIsr = Callable[[object, uuid.UUID, int], object]


def offline_dir_records(image, broker_id: int, broker_epoch: int, offline: Iterable[uuid.UUID],
                        leave_isr: LeaveIsr) -> tuple[list, list[uuid.UUID]]:
    """Kafka's ``handleDirectoriesOffline``: ``(records, newly offline dirs)`` for the
    directories a heartbeat reports offline. Only dirs still registered online count, so a
    broker repeating them in every heartbeat (as Kafka's do) changes nothing more, and a new
    active controller that already replayed the change does nothing either."""
    b = image.brokers.get(broker_id)
    if b is None or rules(image) is None:
        return [], []
    offline = set(offline)
    newly = [d for d in b.log_dirs if d in offline]
    if not newly:
        return [], []
    records = []
    for t in image.topics.values():
        for p in t.partitions.values():
            if broker_id in p.replicas and p.directory(broker_id) in newly:
                rec = leave_isr(p, t.topic_id, broker_id)
                if rec is not None:
                    records.append(rec)
    remaining = [d for d in b.log_dirs if d not in offline]
    records.append(messages.BrokerRegistrationChangeRecord(
        broker_id=broker_id, broker_epoch=broker_epoch, log_dirs=remaining))
    return records, newly


def assign_records(image, broker_id: int, assignments: dict, change: Callable,
                   leave_isr: LeaveIsr) -> tuple[list, dict]:
    """Kafka's ``handleAssignReplicasToDirs`` for a registered broker at a current epoch:
    ``assignments`` maps a directory id to ``[(topic id, partition)]``; returns ``(records,
    {(directory id, topic id, partition): error code})``. ``change(p, topic_id, broker,
    directory)`` builds the change record setting one replica's directory. Errors per
    partition: UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (the
    broker holds no replica of it)."""
    b = image.brokers[broker_id]
    records: list = []
    errors: dict = {}
    changed: dict = {}               # (topic id, partition) -> the partition after its change
    offline_parts: list = []
    from .image import apply_partition_change
    for dir_id, parts in assignments.items():
        dir_offline = not is_online(dir_id, b.log_dirs)
        for topic_id, index in parts:
            t = image.topics_by_id.get(topic_id)
            if t is None:
                errors[(dir_id, topic_id, index)] = E.UNKNOWN_TOPIC_ID
                continue
            p = changed.get((topic_id, index)) or t.partitions.get(index)
            if p is None:
                errors[(dir_id, topic_id, index)] = E.UNKNOWN_TOPIC_OR_PARTITION
                continue
            if broker_id not in p.replicas:
                errors[(dir_id, topic_id, index)] = E.NOT_LEADER_OR_FOLLOWER
                continue
            errors[(dir_id, topic_id, index)] = E.NONE
            rec = change(p, topic_id, broker_id, dir_id)
            if rec is not None:
                records.append(rec)
                changed[(topic_id, index)] = apply_partition_change(p, rec)
            if dir_offline:
                offline_parts.append((topic_id, index))
    for topic_id, index in dict.fromkeys(offline_parts):
        p = changed.get((topic_id, index)) or image.topics_by_id[topic_id].partitions[index]
        rec = leave_isr(p, topic_id, broker_id)
        if rec is not None:
            records.append(rec)
    return records, errors
