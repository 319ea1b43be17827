"""Eligible leader replicas (KIP-966) as Kafka's controller keeps them: the ELR rules of
``reassign.build_change`` (Kafka's ``PartitionChangeBuilder``) as a table, then on a real
one-voter quorum (tests/metadata/harness.py) with virtual brokers: ISR shrinking below
``min.insync.replicas`` moves members to the ELR, the ISR may become empty, a returning ELR
member is elected cleanly, ``ClearElrRecord`` on a ``min.insync.replicas`` change and when
the feature is turned off, DescribeTopicPartitions' view of it all, and a restarted broker's
``PreviousBrokerEpoch``: a clean restart stays eligible, an unclean one does not."""
from __future__ import annotations

import uuid

import pytest

from kbroker.metadata.controller import NewTopic
from kbroker.metadata.feature_control import SAFE_DOWNGRADE, FeatureUpdate
from kbroker.metadata.image import PartitionImage, apply_partition_change
from kbroker.metadata.reassign import build_change, target_elr

from .harness import Harness, comparable, dir_id

TID = uuid.UUID(int=7)


def P(isr, elr=(), lke=(), leader=1, replicas=(1, 2, 3)):
    return PartitionImage(0, leader, 5, tuple(replicas), tuple(isr), 9, elr=tuple(elr), last_known_elr=tuple(lke))


@pytest.mark.parametrize("p, isr, min_isr, want", [
    (P([1, 2, 3]), [1, 2], 2, []),                        # at min ISR: nothing kept
    (P([1, 2]), [1], 2, [2]),                             # below: the member it lost is eligible
    (P([1], elr=[2]), [], 2, [1, 2]),                     # the last member joins the ELR
    (P([1], elr=[2], lke=[3]), [], 2, [1, 2]),
    (P([2], elr=[1]), [2, 1], 2, []),                     # back at min ISR: cleared
    (P([1, 2]), [1], 3, [2]),
])
def test_target_elr(p, isr, min_isr, want):
    assert target_elr(p, isr, min_isr) == want


def test_unclean_shutdown_replicas_leave_the_elr():
    assert target_elr(P([1], elr=[2]), [1], 2, unclean_shutdown=[2]) == []


def test_build_change_with_elr():
    everyone = lambda r: True        # noqa: E731
    # the last ISR member fenced: empty ISR, no leader, both in the ELR; the leader it had is
    # the last known leader (Kafka 4.4 keeps that in the last known ELR)
    p = P([1], elr=[2])
    rec = build_change(p, TID, lambda r: r not in (1, 2), isr=[], min_isr=2)
    assert (rec.isr, rec.leader, rec.eligible_leader_replicas, rec.last_known_elr) == ([], -1, [1, 2], [1])
    p = apply_partition_change(p, rec)
    # an ELR member back: elected cleanly, it alone is the ISR, the other stays eligible
    rec = build_change(p, TID, lambda r: r == 2, min_isr=2)
    assert (rec.leader, rec.isr, rec.eligible_leader_replicas, rec.last_known_elr) == (2, [2], [1], [])
    # without ELR the last ISR member is kept and nobody leads
    rec = build_change(P([1]), TID, lambda r: r != 1, isr=[])
    assert (rec.leader, rec.isr, rec.eligible_leader_replicas) == (-1, None, None)
    # ELR off with ELR fields left: they are emptied
    rec = build_change(P([1, 2], elr=[3]), TID, everyone)
    assert (rec.eligible_leader_replicas, rec.last_known_elr, rec.leader) == ([], None, -2)


def test_the_last_known_leader_is_elected_when_nothing_else_can_be():
    """Kafka 4.4's balanced recovery: ISR and ELR empty, one last known leader, acceptable."""
    p = P([], leader=-1, lke=[1])
    rec = build_change(p, TID, lambda r: r == 1, min_isr=2)
    assert (rec.leader, rec.isr, rec.eligible_leader_replicas, rec.last_known_elr) == (1, [1], None, [])
    # not while it is down, nor when an ELR member is left (it waits for that one), nor
    # with ELR off, nor when the last known ELR names more than one broker
    assert build_change(p, TID, lambda r: r == 2, min_isr=2) is None
    assert build_change(P([], leader=-1, elr=[2], lke=[1]), TID, lambda r: r == 1, min_isr=2) is None
    assert build_change(p, TID, lambda r: r == 1) is None
    assert build_change(P([], leader=-1, lke=[1, 3]), TID, lambda r: r == 1, min_isr=2) is None


def state(h, topic="e"):
    p = h.image.topics[topic].partitions[0]
    return p.leader, p.isr, p.elr, p.last_known_elr


async def test_quorum_controller_keeps_elr(tmp_path, nursery):
    h = await Harness(tmp_path).start(nursery)
    assert h.image.features["eligible.leader.replicas.version"] == 1      # on by default (4.4)
    for b in (1, 2, 3):
        await h.register(b)
    [res] = await h.controller.create_topics([NewTopic("e", assignments={0: [1, 2, 3]},
                                                       configs={"min.insync.replicas": "2"})])
    assert res.error_code == 0
    assert state(h) == (1, (1, 2, 3), (), ())
    await h.controller.fence_broker(3)
    assert state(h) == (1, (1, 2), (), ())
    await h.controller.fence_broker(2)
    assert state(h) == (1, (1,), (2,), ())
    await h.controller.fence_broker(1)          # the last ISR member: the ISR empties
    assert state(h) == (-1, (), (1, 2), (1,))   # broker 1 is the last known leader
    await h.heartbeat(2)                        # broker 2 unfenced: elected from the ELR
    assert state(h) == (2, (2,), (1,), ())
    # DescribeTopicPartitions shows the sets as kept
    from kbroker.api.describe_topic_partitions import _partition
    view = _partition(h.image, h.image.topics["e"].partitions[0], "PLAINTEXT")
    assert (view.eligible_leader_replicas, view.last_known_elr) == ([1], [])
    # an unregistered broker stays in the ELR (Kafka 4.4: it is only no leader candidate)
    code, _ = await h.controller.unregister_broker(1)
    assert code == 0 and state(h) == (2, (2,), (1,), ())
    # a changed min.insync.replicas clears them (ClearElrRecord)
    start = h.end
    await h.controller.incremental_alter_configs([(2, "e", [("min.insync.replicas", 0, "1")])])
    assert "ClearElrRecord" in [type(r).__name__ for r in h.records(start)]
    assert state(h)[2:] == ((), ())
    assert comparable(h.replayed()) == comparable(h.image)
    h.close()


async def test_elr_turned_off_clears_every_topic(tmp_path, nursery):
    h = await Harness(tmp_path).start(nursery)
    for b in (1, 2):
        await h.register(b)
    await h.controller.create_topics([NewTopic("e", assignments={0: [1, 2]},
                                               configs={"min.insync.replicas": "2"})])
    await h.controller.fence_broker(2)
    assert state(h)[2] == (2,)
    code, _ = await h.controller.update_features(
        [FeatureUpdate("eligible.leader.replicas.version", 0, SAFE_DOWNGRADE)])
    assert code == 0
    assert "eligible.leader.replicas.version" not in h.image.features
    assert state(h)[2:] == ((), ())
    h.close()


async def restart(h, broker_id: int, previous_broker_epoch):
    """A new incarnation of ``broker_id`` registers (fenced) with ``previous_broker_epoch``."""
    h.incarnations[broker_id] = uuid.uuid4()
    code, epoch = await h.controller.register_broker(
        broker_id, "MkU3OEVBNTcwNTJENDM2Qg", h.incarnations[broker_id],
        [("PLAINTEXT", "127.0.0.1", 9000 + broker_id)], None, log_dirs=[dir_id(broker_id)],
        previous_broker_epoch=previous_broker_epoch)
    assert code == 0
    return epoch


async def test_previous_broker_epoch_tells_clean_restarts_from_unclean_ones(tmp_path, nursery):
    h = await Harness(tmp_path).start(nursery)
    for b in (1, 2, 3):
        await h.register(b)
    for t in ("a", "b"):
        await h.controller.create_topics([NewTopic(t, assignments={0: [1, 2, 3]},
                                                   configs={"min.insync.replicas": "3"})])
    await h.controller.fence_broker(2)
    await h.controller.fence_broker(3)
    assert state(h, "a") == (1, (1,), (2, 3), ())
    old = {b: h.image.brokers[b].broker_epoch for b in (2, 3)}
    # broker 2 proves a clean shutdown: the epoch its markers name is the registered one
    epoch = await restart(h, 2, old[2])
    assert epoch > old[2] and state(h, "a") == (1, (1,), (2, 3), ())
    # broker 3 crashed (-1): out of every ELR
    start = h.end
    await restart(h, 3, -1)
    assert state(h, "a") == state(h, "b") == (1, (1,), (2,), ())
    kinds = [type(r).__name__ for r in h.records(start)]
    assert kinds == ["PartitionChangeRecord", "PartitionChangeRecord", "RegisterBrokerRecord"], kinds
    # a stale epoch (not the registered one) or a v0-v2 request (None) is unclean too
    await restart(h, 2, old[2])
    assert state(h, "a") == (1, (1,), (), ())
    assert comparable(h.replayed()) == comparable(h.image)
    h.close()


async def test_a_new_incarnation_leaves_the_isr(tmp_path, nursery):
    h = await Harness(tmp_path).start(nursery)
    for b in (1, 2, 3):
        await h.register(b)
    await h.controller.create_topics([NewTopic("e", assignments={0: [1, 2, 3]},
                                               configs={"min.insync.replicas": "2"})])
    # restarted before its session ran out, clean: it leaves the ISR (and its leadership)
    await restart(h, 1, h.image.brokers[1].broker_epoch)
    assert state(h) == (2, (2, 3), (), ())
    await h.heartbeat(1)
    await h.controller.fence_broker(3)
    assert state(h) == (2, (2,), (3,), ())
    # the last ISR member restarted uncleanly (a v0-v2 registration cannot prove otherwise):
    # the ISR empties without it becoming eligible (it is the last known leader), and the
    # ELR member is elected when it comes back
    await restart(h, 2, None)
    assert state(h) == (-1, (), (3,), (2,))
    await h.heartbeat(2)                        # unfenced, but an ELR member is left: no leader
    assert state(h) == (-1, (), (3,), (2,))
    await h.heartbeat(3)
    assert state(h) == (3, (3,), (), ())
    h.close()


async def test_a_lone_replica_restarted_uncleanly_leads_again(tmp_path, nursery):
    """One replica, min ISR 1: its unclean restart empties the ISR and the ELR, and the last
    known leader is elected back once unfenced (Kafka 4.4's balanced recovery), so a single
    node that crashed serves its partitions again."""
    h = await Harness(tmp_path).start(nursery)
    await h.register(2)
    await h.controller.create_topics([NewTopic("e", assignments={0: [2]})])
    await restart(h, 2, -1)
    assert state(h) == (-1, (), (), (2,))
    await h.heartbeat(2)
    assert state(h) == (2, (2,), (), ())
    assert comparable(h.replayed()) == comparable(h.image)
    h.close()
