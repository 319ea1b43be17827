"""What a broker tells clients about a partition's leader and replicas: Metadata (3) and
DescribeTopicPartitions (75), as Kafka 4's ``KRaftMetadataCache`` answers them from its image.

All of it depends on the listener the request came in on, since a client can reach a broker
only through an endpoint of that listener:

- a replica is **offline** when its broker is not registered, is fenced, has no endpoint on
  the listener, or the replica's directory (KIP-858 ``Directories``) is not among the broker's
  online log dirs (:func:`kbroker.metadata.directories.is_online`: MIGRATING and UNASSIGNED
  count as online, LOST as offline). Every replica is checked, in replica order;
- the **leader** is answered when its broker is registered and has an endpoint on the
  listener (fenced or not: Kafka does not look at fencing here). Otherwise the leader is -1
  and the partition's error is LEADER_NOT_AVAILABLE, or LISTENER_NOT_FOUND when the broker is
  registered without that listener and the request asks for it (Metadata v6+; before, clients
  knew only LEADER_NOT_AVAILABLE). A partition without a leader (-1) is LEADER_NOT_AVAILABLE;
- **replicas and ISR** are the partition's own lists, except for Metadata v0, which leaves out
  the brokers that are fenced, unregistered or without the listener and then answers
  REPLICA_NOT_AVAILABLE for a partition whose leader is there but whose lists were shortened.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from kbroker.wire.error_codes import ErrorCode

from . import dir_ids as dirs

NO_LEADER = -1


@dataclass(frozen=True)
class PartitionView:
    """A partition as a client's Metadata answer shows it through one listener."""
    error_code: int
    leader_id: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]


def replica_offline(image, partition, broker_id: int, listener: str) -> bool:
    """Kafka's ``isReplicaOffline`` (an unregistered broker included)."""
    b = image.brokers.get(broker_id)
    return (b is None or b.fenced or b.endpoint(listener) is None
            or not dirs.is_online(partition.directory(broker_id), b.log_dirs))


def offline_replicas(image, partition, listener: str) -> list[int]:
    return [r for r in partition.replicas if replica_offline(image, partition, r, listener)]


def alive_replicas(image, broker_ids: Iterable[int], listener: str) -> list[int]:
    """The brokers among ``broker_ids`` that are registered, unfenced and on ``listener``."""
    out = []
    for i in broker_ids:
        b = image.brokers.get(i)
        if b is not None and not b.fenced and b.endpoint(listener) is not None:
            out.append(i)
    return out


def partition_view(image, partition, listener: str, *, filter_unavailable: bool = False,
                   listener_error: bool = False) -> PartitionView:
    """``filter_unavailable``: Metadata v0's filtered lists and REPLICA_NOT_AVAILABLE;
    ``listener_error``: LISTENER_NOT_FOUND for a leader without the listener (Metadata v6+)."""
    if filter_unavailable:
        replicas = alive_replicas(image, partition.replicas, listener)
        isr = alive_replicas(image, partition.isr, listener)
    else:
        replicas, isr = list(partition.replicas), list(partition.isr)
    offline = offline_replicas(image, partition, listener)
    leader = image.brokers.get(partition.leader)
    if leader is None or leader.endpoint(listener) is None:
        error = (ErrorCode.LISTENER_NOT_FOUND if leader is not None and listener_error
                 else ErrorCode.LEADER_NOT_AVAILABLE)
        return PartitionView(error, NO_LEADER, replicas, isr, offline)
    error = (ErrorCode.REPLICA_NOT_AVAILABLE
             if len(replicas) < len(partition.replicas) or len(isr) < len(partition.isr)
             else ErrorCode.NONE)
    return PartitionView(error, partition.leader, replicas, isr, offline)
