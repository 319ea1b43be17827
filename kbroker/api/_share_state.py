"""What the share coordinator APIs (83–87) share: the persister, the check that this node
leads the ``__share_group_state`` partition of a key (``NOT_COORDINATOR`` otherwise), and
dropping a cached share-partition whose durable state was replaced."""
from __future__ import annotations

from kbroker.replica import ReplicaError
from kbroker.share.persister import TOPIC, partition_for
from kbroker.share.service import share_partitions
from kbroker.wire.error_codes import ErrorCode as E


def persister_of(broker):
    mgr = share_partitions(broker)        # started with the first share request
    if mgr.persister is None:
        raise RuntimeError("the broker has no share state persister")
    return mgr.persister


def state_error(broker, group_id, topic_id, partition, *, unknown=E.UNKNOWN_TOPIC_OR_PARTITION) -> int:
    """NONE when this node leads the key's ``__share_group_state`` partition. A topic id the
    cluster does not know answers ``unknown`` (Kafka 4.3.1, observed: UNKNOWN_TOPIC_OR_PARTITION
    for Initialize/Delete/ReadSummary, INVALID_REQUEST for Read/Write)."""
    data = getattr(broker.metadata, "topics_by_id", {}).get(topic_id)
    if data is None or partition not in data.partitions:
        return unknown
    t = broker.metadata.topics.get(TOPIC)
    if t is None:
        return E.COORDINATOR_NOT_AVAILABLE
    try:
        broker.replicas.get_partition(TOPIC, partition_for(group_id, topic_id, partition,
                                                           len(t.partitions)))
    except ReplicaError:
        return E.NOT_COORDINATOR
    return E.NONE


def forget_cached(broker, group_id, topic_id, partition) -> None:
    mgr = getattr(broker, "share_partitions", None)
    if mgr is not None:
        mgr.partitions.pop((group_id, topic_id, partition), None)


def run(fn) -> tuple[int, str | None]:
    try:
        fn()
    except ReplicaError as e:
        return (E.NOT_COORDINATOR if e.error_code == E.NOT_LEADER_OR_FOLLOWER else e.error_code), None
    return E.NONE, None
