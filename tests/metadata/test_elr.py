"""Eligible leader replicas (KIP-966) as Kafka's controller keeps them: the ELR rules of
``reassign.build_change`` (Kafka's ``PartitionChangeBuilder``) as a table, then on a real
one-voter quorum (tests/metadata/harness.py) with virtual brokers: ISR shrinking below
``min.insync.replicas`` moves members to the ELR, the ISR may become empty, a returning ELR
member is elected cleanly, ``ClearElrRecord`` on a ``min.insync.replicas`` change and when
the feature is turned off, and DescribeTopicPartitions' view of it all."""
from __future__ import annotations

import uuid

import pytest

from kbroker.metadata.controller import NewTopic
from kbroker.metadata.feature_control import SAFE_DOWNGRADE, FeatureUpdate
from kbroker.metadata.image import PartitionImage, apply_partition_change
from kbroker.metadata.reassign import build_change, target_elr

from .harness import Harness, comparable

TID = uuid.UUID(int=7)


def P(isr, elr=(), lke=(), leader=1, replicas=(1, 2, 3)):
    return PartitionImage(0, leader, 5, tuple(replicas), tuple(isr), 9, elr=tuple(elr), last_known_elr=tuple(lke))


@pytest.mark.parametrize("p, isr, min_isr, want", [
    (P([1, 2, 3]), [1, 2], 2, ([], [])),                  # at min ISR: nothing kept
    (P([1, 2]), [1], 2, ([2], [])),                       # below: the member it lost is eligible
    (P([1], elr=[2]), [], 2, ([1, 2], [])),               # the last member joins the ELR
    (P([1], elr=[2], lke=[3]), [], 2, ([1, 2], [3])),     # last known ELR: the rest
    (P([2], elr=[1]), [2, 1], 2, ([], [])),               # back at min ISR: both cleared
    (P([1, 2]), [1], 3, ([2], [])),
])
def test_target_elr(p, isr, min_isr, want):
    assert target_elr(p, isr, min_isr) == want


def test_unclean_shutdown_replicas_leave_the_elr_for_the_last_known_elr():
    assert target_elr(P([1], elr=[2]), [1], 2, unclean_shutdown=[2]) == ([], [2])


def test_build_change_with_elr():
    everyone = lambda r: True        # noqa: E731
    # the last ISR member fenced: empty ISR, no leader, both in the ELR
    p = P([1], elr=[2])
    rec = build_change(p, TID, lambda r: r not in (1, 2), isr=[], min_isr=2)
    assert (rec.isr, rec.leader, rec.eligible_leader_replicas) == ([], -1, [1, 2])
    p = apply_partition_change(p, rec)
    # an ELR member back: elected cleanly, it alone is the ISR, the other stays eligible
    rec = build_change(p, TID, lambda r: r == 2, min_isr=2)
    assert (rec.leader, rec.isr, rec.eligible_leader_replicas) == (2, [2], [1])
    # without ELR the last ISR member is kept and nobody leads
    rec = build_change(P([1]), TID, lambda r: r != 1, isr=[])
    assert (rec.leader, rec.isr, rec.eligible_leader_replicas) == (-1, None, None)
    # ELR off with ELR fields left: they are emptied
    rec = build_change(P([1, 2], elr=[3]), TID, everyone)
    assert (rec.eligible_leader_replicas, rec.last_known_elr, rec.leader) == ([], None, -2)


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
    assert state(h) == (-1, (), (1, 2), ())
    await h.heartbeat(2)                        # broker 2 unfenced: elected from the ELR
    assert state(h) == (2, (2,), (1,), ())
    # DescribeTopicPartitions shows the sets as kept
    from kbroker.api.describe_topic_partitions import _partition
    view = _partition(h.image, h.image.topics["e"].partitions[0], "PLAINTEXT")
    assert (view.eligible_leader_replicas, view.last_known_elr) == ([1], [])
    # an unregistered broker is no eligible leader any more: last known ELR
    code, _ = await h.controller.unregister_broker(1)
    assert code == 0 and state(h) == (2, (2,), (), (1,))
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
