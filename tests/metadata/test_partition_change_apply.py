"""``apply_partition_change`` (Kafka's ``PartitionRegistration.merge``): each field a
``PartitionChangeRecord`` carries replaces the partition's, the ones it leaves out (-2 for
the leader, null lists) stay, and every change bumps the partition epoch, a leader change
the leader epoch too."""
from __future__ import annotations

import uuid

import pytest

from kbroker.metadata.image import PartitionImage, apply_partition_change
from kbroker.wire import messages

D1, D2, D3 = (uuid.UUID(int=0x1000 + i) for i in range(3))


def base() -> PartitionImage:
    return PartitionImage(partition=3, leader=1, leader_epoch=7, replicas=(1, 2), isr=(1, 2),
                          partition_epoch=11, directories=(D1, D2))


def change(**kw):
    return messages.PartitionChangeRecord(topic_id=uuid.uuid4(), partition_id=3, **kw)


def test_a_record_that_changes_nothing_but_the_isr_keeps_the_rest():
    new = apply_partition_change(base(), change(isr=[1]))
    assert new == PartitionImage(partition=3, leader=1, leader_epoch=7, replicas=(1, 2), isr=(1,),
                                 partition_epoch=12, directories=(D1, D2))


def test_every_field_a_record_carries_is_applied():
    new = apply_partition_change(base(), change(
        leader=3, isr=[3], replicas=[1, 2, 3], removing_replicas=[1], adding_replicas=[3],
        directories=[D1, D2, D3], eligible_leader_replicas=[2], last_known_elr=[1]))
    assert new == PartitionImage(partition=3, leader=3, leader_epoch=8, replicas=(1, 2, 3), isr=(3,),
                                 partition_epoch=12, removing_replicas=(1,), adding_replicas=(3,),
                                 directories=(D1, D2, D3), elr=(2,), last_known_elr=(1,))


def test_leader_none_bumps_the_leader_epoch():
    new = apply_partition_change(base(), change(leader=-1))
    assert (new.leader, new.leader_epoch, new.partition_epoch, new.isr) == (-1, 8, 12, (1, 2))


def test_new_replicas_without_their_directories_are_refused():
    with pytest.raises(ValueError):
        apply_partition_change(base(), change(replicas=[1, 2, 3]))
