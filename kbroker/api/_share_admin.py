"""What the share-group offsets admin APIs (90–92) share: the group check (a share group,
or none, at this coordinator), the summary of one share-partition (start offset, lag), and
resetting or deleting share-partitions' state (KIP-932)."""
from __future__ import annotations

import uuid

from kbroker.group.share.config import share_groups_enabled
from kbroker.replica import LATEST_TIMESTAMP, ReplicaError
from kbroker.share.service import share_groups, share_partitions
from kbroker.wire.error_codes import ErrorCode as E


def groups_of(broker):
    return share_groups(broker)           # started with the first share request


def group_error(broker, group_id: str, *, must_be_empty: bool,
                feature_checked: bool = False) -> int:
    """The group's error for an admin API; ``feature_checked``: UNSUPPORTED_VERSION while
    share groups are off (``share.version`` 0), as Kafka's Alter/DeleteShareGroupOffsets."""
    if feature_checked and not share_groups_enabled(broker.metadata):
        return E.UNSUPPORTED_VERSION
    sg = groups_of(broker)
    err = sg.coordinator_error(group_id)
    if err:
        return err
    if sg._other_type(group_id):
        return E.GROUP_ID_NOT_FOUND
    g = sg.groups.get(group_id)
    if must_be_empty and g is not None and g.members:
        return E.NON_EMPTY_GROUP
    return E.NONE


def summary(broker, group_id: str, topic_id: uuid.UUID, partition: int) -> tuple[int, int, int]:
    """(error, start offset, lag) of a share-partition; start offset -1 and lag -1 when the
    group never consumed it. Both as last written to the share coordinator (Kafka answers
    from there: its start offset is one write behind, F-970). Lag = high watermark − start
    offset − records already acknowledged or archived at or after the start offset."""
    mgr = share_partitions(broker)
    sp = mgr.partitions.get((group_id, topic_id, partition))
    if sp is not None:
        start = sp.written_start
        done = sp.written_complete
    else:
        state = mgr.persister.read(group_id, topic_id, partition) if mgr.persister else None
        if state is None or state[0] < 0:
            return E.NONE, -1, -1
        start = state[0]
        done = sum(b.last_offset - b.first_offset + 1 for b in state[2] if b.delivery_state in (2, 4))
    name = mgr._topic_name(topic_id)
    try:
        _, hw, _ = broker.replicas.list_offset(name, partition, LATEST_TIMESTAMP)
    except (ReplicaError, TypeError):
        return E.NONE, start, -1
    return E.NONE, start, max(0, hw - start - done)


def reset(broker, group_id: str, topic_id: uuid.UUID, partition: int, start_offset: int | None) -> int:
    """Replace a share-partition's state: start again at ``start_offset``, or (None) forget it."""
    mgr = share_partitions(broker)
    mgr.partitions.pop((group_id, topic_id, partition), None)
    try:
        if start_offset is None:
            mgr.persister.delete(group_id, topic_id, partition)
        else:
            old = mgr.persister.read(group_id, topic_id, partition)
            epoch = (old[1] + 1) if old else 0
            mgr.persister.write_state(group_id, topic_id, partition, start_offset, epoch, [])
    except ReplicaError as e:
        return e.error_code
    return E.NONE
