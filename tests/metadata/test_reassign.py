"""Partition reassignment (KIP-455) on the quorum controller: Kafka's
``changePartitionReassignment`` / ``cancelPartitionReassignment`` /
``listPartitionReassignments`` and the completion in ``PartitionChangeBuilder`` when the ISR
holds every target replica (AlterPartition, fencing).

A real one-voter quorum (tests/metadata/harness.py) with virtual brokers 1-4."""
from __future__ import annotations

from kbroker.metadata import snapshot
from kbroker.metadata.channel import ControllerChannel
from kbroker.metadata.controller import NewTopic
from kbroker.metadata.image import empty_image, replay_all
from kbroker.metadata.reassign import build_change, target_replicas
from kbroker.wire.error_codes import ErrorCode as E

from .harness import CLUSTER_ID, Harness, comparable
from .test_alter_partition import alter, state


async def cluster(tmp_path, nursery, assignments):
    h = await Harness(tmp_path).start(nursery)
    for b in (1, 2, 3, 4):
        await h.register(b)
    [res] = await h.controller.create_topics([NewTopic("q", assignments=assignments)])
    assert res.error_code == 0
    return h


def part(h, p=0):
    return h.image.topics["q"].partitions[p]


async def reassign(h, *entries, topic="q"):
    [(name, answers)] = await h.controller.alter_partition_reassignments([(topic, list(entries))])
    assert name == topic
    return [(i, c) for i, c, _ in answers]


async def listed(h, topics=None):
    return await h.controller.list_partition_reassignments(topics)


def test_target_replicas_is_kafkas():
    assert target_replicas([1, 2], [2, 3]) == ([2, 3, 1], [1], [3])
    assert target_replicas([1, 2, 3], [3, 2, 1]) == ([3, 2, 1], [], [])
    assert target_replicas([5, 1, 2], [4, 3]) == ([4, 3, 1, 2, 5], [1, 2, 5], [3, 4])


async def test_move_leader_away_completes_through_alter_partition(tmp_path, nursery):
    h = await cluster(tmp_path, nursery, {0: [1, 2]})
    assert state(h, "q") == (1, 0, (1, 2), 0)
    start = h.end
    assert await reassign(h, (0, [2, 3])) == [(0, E.NONE)]
    [rec] = h.records(start)
    assert (rec.replicas, rec.removing_replicas, rec.adding_replicas, rec.isr, rec.leader) == \
        ([2, 3, 1], [1], [3], None, -2)
    p = part(h)
    assert (p.replicas, p.removing_replicas, p.adding_replicas, p.leader, p.leader_epoch) == \
        ((2, 3, 1), (1,), (3,), 1, 0), "the leader stays while the new replica catches up"
    assert await listed(h) == [("q", [(0, [2, 3, 1], [3], [1])])]
    assert await listed(h, [("q", [0, 5]), ("nope", [0])]) == [("q", [(0, [2, 3, 1], [3], [1])])]
    assert await listed(h, [("q", [1])]) == []
    # the ISR after the first record, and after a restart of the image from the log/snapshot
    assert comparable(h.replayed()) == comparable(h.image)
    assert comparable(replay_all(empty_image(CLUSTER_ID, 1), snapshot.image_records(h.image))) == comparable(h.image)

    # the leader adds 3 to the ISR: every target replica in sync -> complete, 1 leaves, 2 leads
    start = h.end
    r = await alter(h, 1, "q", 0, [1, 2, 3])
    assert r.error_code == E.NEW_LEADER_ELECTED
    [rec] = h.records(start)
    assert (rec.replicas, rec.isr, rec.removing_replicas, rec.adding_replicas, rec.leader) == \
        ([2, 3], [2, 3], [], [], 2)
    p = part(h)
    assert (p.replicas, p.isr, p.leader, p.leader_epoch, p.reassigning) == ((2, 3), (2, 3), 2, 1, False)
    assert await listed(h) == []
    assert comparable(h.replayed()) == comparable(h.image)
    h.close()


async def test_completion_answer_before_v2_is_fenced_leader_epoch(tmp_path, nursery):
    h = await cluster(tmp_path, nursery, {0: [1, 2]})
    await reassign(h, (0, [2, 3]))
    r = await alter(h, 1, "q", 0, [1, 2, 3], version=1)
    assert r.error_code == E.FENCED_LEADER_EPOCH
    assert part(h).replicas == (2, 3) and part(h).leader == 2
    h.close()


async def test_leader_stays_and_removed_replica_bumps_the_leader_epoch(tmp_path, nursery):
    h = await cluster(tmp_path, nursery, {0: [2, 1]})
    await reassign(h, (0, [2, 3]))
    assert part(h).replicas == (2, 3, 1)
    # an ISR change that does not hold 3 yet: no completion
    r = await alter(h, 2, "q", 0, [2])
    assert r.error_code == 0 and part(h).reassigning
    r = await alter(h, 2, "q", 0, [2, 3])
    assert r.error_code == 0
    p = part(h)
    assert (p.replicas, p.isr, p.leader, p.leader_epoch, p.reassigning) == ((2, 3), (2, 3), 2, 1, False)
    assert (r.leader_id, r.leader_epoch, r.isr, r.partition_epoch) == (2, 1, (2, 3), p.partition_epoch)
    h.close()


async def test_shrink_and_reorder_complete_at_once(tmp_path, nursery):
    h = await cluster(tmp_path, nursery, {0: [1, 2, 3], 1: [1, 2, 3]})
    start = h.end
    assert await reassign(h, (0, [1, 2]), (1, [3, 2, 1])) == [(0, E.NONE), (1, E.NONE)]
    recs = h.records(start)
    assert len(recs) == 2, "one batch, one record per partition"
    p0, p1 = part(h, 0), part(h, 1)
    assert (p0.replicas, p0.isr, p0.leader, p0.leader_epoch, p0.reassigning) == ((1, 2), (1, 2), 1, 1, False)
    assert (p1.replicas, p1.isr, p1.leader, p1.leader_epoch) == ((3, 2, 1), (1, 2, 3), 1, 0), \
        "a reorder keeps the leader and its epoch"
    # the same target again: nothing to write
    start = h.end
    assert await reassign(h, (1, [3, 2, 1])) == [(1, E.NONE)]
    assert h.end == start
    h.close()


async def test_cancel_reverts_and_refusals(tmp_path, nursery):
    h = await cluster(tmp_path, nursery, {0: [1, 2]})
    assert await reassign(h, (0, None)) == [(0, E.NO_REASSIGNMENT_IN_PROGRESS)]
    assert await reassign(h, (0, [])) == [(0, E.INVALID_REPLICA_ASSIGNMENT)]
    assert await reassign(h, (0, [1, 9])) == [(0, E.INVALID_REPLICA_ASSIGNMENT)]
    assert await reassign(h, (0, [2, 2])) == [(0, E.INVALID_REPLICA_ASSIGNMENT)]
    assert await reassign(h, (7, [1])) == [(7, E.UNKNOWN_TOPIC_OR_PARTITION)]
    assert await reassign(h, (0, [1]), topic="nope") == [(0, E.UNKNOWN_TOPIC_OR_PARTITION)]
    assert await reassign(h, (0, [2, 3]), (0, [3, 4])) == [(0, E.NONE), (0, E.INVALID_REQUEST)]
    assert part(h).replicas == (2, 3, 1)
    await alter(h, 1, "q", 0, [1, 2])   # an ISR change that does not complete
    start = h.end
    assert await reassign(h, (0, None)) == [(0, E.NONE)]
    [rec] = h.records(start)
    # Kafka's revert keeps the order of the reassignment's replica list without the added
    # ones: [2, 3, 1] - [3] = [2, 1]
    assert (rec.replicas, rec.removing_replicas, rec.adding_replicas) == ([2, 1], [], [])
    p = part(h)
    assert (p.replicas, p.isr, p.leader, p.reassigning) == ((2, 1), (1, 2), 1, False)
    assert await reassign(h, (0, None)) == [(0, E.NO_REASSIGNMENT_IN_PROGRESS)]
    assert comparable(h.replayed()) == comparable(h.image)
    h.close()


async def test_fencing_during_a_reassignment(tmp_path, nursery):
    """Partition changes made by fencing keep the reassignment's lists; a leader being
    removed that is fenced hands over to the first live ISR member in replica order."""
    h = await cluster(tmp_path, nursery, {0: [1, 2, 3]})
    await reassign(h, (0, [2, 3, 4]))
    assert (part(h).replicas, part(h).leader) == ((2, 3, 4, 1), 1)
    await h.heartbeat(4, want_fence=True)           # the adding replica: nothing in the ISR changes
    assert part(h).reassigning and part(h).leader == 1
    await h.heartbeat(1, want_fence=True)           # the leader, being removed
    p = part(h)
    assert (p.leader, p.isr, p.replicas, p.removing_replicas, p.adding_replicas) == \
        (2, (2, 3), (2, 3, 4, 1), (1,), (4,))
    await h.heartbeat(4)
    r = await alter(h, 2, "q", 0, [2, 3, 4])        # 4 caught up: complete
    assert r.error_code == 0
    p = part(h)
    assert (p.replicas, p.isr, p.leader, p.reassigning) == ((2, 3, 4), (2, 3, 4), 2, False)
    assert comparable(h.replayed()) == comparable(h.image)
    h.close()


async def test_channel_local_path(tmp_path, nursery):
    h = await cluster(tmp_path, nursery, {0: [1, 2]})
    channel = ControllerChannel(h.config, h.quorum, h.controller)
    assert await channel.alter_partition_reassignments([("q", [(0, [2, 3])])]) == [("q", [(0, E.NONE, None)])]
    assert await channel.list_partition_reassignments(None) == [("q", [(0, [2, 3, 1], [3], [1])])]
    h.close()


def test_build_change_is_none_without_change():
    from kbroker.metadata.image import PartitionImage
    p = PartitionImage(0, 1, 3, (1, 2), (1, 2), 4)
    assert build_change(p, None, lambda r: True) is None
    rec = build_change(p, None, lambda r: True, isr=[])
    assert (rec.leader, rec.isr) == (-1, None), "never an empty ISR; no leader out of it"
    rec = build_change(p, None, lambda r: r != 1)
    assert (rec.leader, rec.isr) == (2, None), "an unacceptable leader is replaced from the ISR"


async def test_disallowed_replication_factor_change(tmp_path, nursery):
    """v1 (KIP-860): without allow_replication_factor_change a target of another size is
    INVALID_REPLICATION_FACTOR; during a reassignment the size it will have counts."""
    h = await cluster(tmp_path, nursery, {0: [1, 2]})

    async def go(target, allow):
        [(_, answers)] = await h.controller.alter_partition_reassignments([("q", [(0, target)])], allow)
        return [(c, m) for _, c, m in answers]
    start = h.end
    assert await go([2, 3, 4], False) == [(E.INVALID_REPLICATION_FACTOR,
                                           "The replication factor is changed from 2 to 3")]
    assert h.end == start, "nothing written"
    assert await go([3, 4], False) == [(E.NONE, None)]
    # ongoing: replicas (3, 4, 1, 2) adding (3, 4) removing (1, 2): the partition will have 2
    assert await go([1], False) == [(E.INVALID_REPLICATION_FACTOR, "The replication factor is changed from 2 to 1")]
    assert await go([2, 4, 3], True) == [(E.NONE, None)]
