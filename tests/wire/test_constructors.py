"""The generated constructors (kbroker/wire/codegen.py): ``Cls(**fields)`` and its plain-call
twin ``Cls.make(**fields)`` build the same message, defaults that are immutable are shared,
lists and unshared structs are fresh per message, and a shared default struct is never
written as a tagged field."""
from __future__ import annotations

import pytest

from kbroker.wire import codegen, messages
from kbroker.wire.messages import KafkaMessage

_SET = object()     # a value no field defaults to


def _struct_classes():
    return [pytest.param(cls, id=cls.__qualname__) for name in messages.specs()
            for cls in messages.get(name)._classes.values()]


@pytest.mark.parametrize("cls", _struct_classes())
def test_make_builds_what_the_class_call_builds(cls):
    assert cls.make() == cls()
    made = cls.make()
    assert all(hasattr(made, a) for a in cls.__slots__)
    for f in cls._spec.fields:
        one = cls.make(**{f.attr: _SET})
        assert getattr(one, f.attr) is _SET
        assert one == cls(**{f.attr: _SET})
    assert cls.make(_unknown_tags={9: b"x"}) == cls(_unknown_tags={9: b"x"})


def test_make_takes_keywords_only():
    R = messages.ProduceResponse.PartitionProduceResponse
    with pytest.raises(TypeError):
        R.make(3)
    with pytest.raises(TypeError):
        R.make(_positional=3)
    with pytest.raises(TypeError):
        R.make(no_such_field=3)


def test_immutable_defaults_are_shared_and_lists_fresh():
    R = messages.FetchResponse.PartitionData
    a, b = R(), R.make()
    # structs of scalars alone: one default instance
    for attr, cls in (("current_leader", R.LeaderIdAndEpoch), ("snapshot_id", R.SnapshotId),
                      ("diverging_epoch", R.EpochEndOffset)):
        assert getattr(a, attr) is getattr(b, attr) is cls._default
        assert cls._default == cls()
    assert a.aborted_transactions == [] and a.aborted_transactions is not b.aborted_transactions
    # a struct holding an array is made fresh for every message
    M = messages.ConsumerGroupDescribeResponse.Member
    m1, m2 = M(), M.make()
    assert m1.assignment == m2.assignment and m1.assignment is not m2.assignment
    assert M.Assignment._default is None and not codegen.shares_default(M.Assignment._spec)
    # an explicit None is kept, not replaced by the default
    assert R.make(aborted_transactions=None).aborted_transactions is None


def test_a_decoded_absent_tagged_struct_is_the_shared_default():
    R = messages.ProduceResponse
    P = R.PartitionProduceResponse
    body = R(responses=[R.TopicProduceResponse(name="t", partition_responses=[
        P(index=1)])]).encode(11)
    pr = R.decode(body, 11).responses[0].partition_responses[0]
    assert pr.current_leader is P.LeaderIdAndEpoch._default


@pytest.mark.parametrize("version", [10, 11])
def test_a_tagged_struct_is_written_when_it_differs_from_the_default(version):
    R = messages.ProduceResponse
    P = R.PartitionProduceResponse

    def encoded(leader):
        return R(responses=[R.TopicProduceResponse(name="t", partition_responses=[
            P.make(index=1, current_leader=leader)])]).encode(version)
    shared = encoded(P.LeaderIdAndEpoch._default)
    # an equal instance of its own is left out as the shared one is
    assert encoded(P.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)) == shared
    named = encoded(P.LeaderIdAndEpoch(leader_id=4, leader_epoch=2))
    assert named != shared
    back = R.decode(named, version).responses[0].partition_responses[0].current_leader
    assert (back.leader_id, back.leader_epoch) == (4, 2)


def test_a_changed_shared_default_is_reported():
    # classes of their own: the broker's shared instances stay untouched
    R = codegen.build_classes(messages.spec("ProduceResponse"), KafkaMessage)
    assert codegen.changed_shared_defaults([R]) == []
    R.LeaderIdAndEpoch._default.leader_id = 5
    assert codegen.changed_shared_defaults([R]) == [
        "ProduceResponse.TopicProduceResponse.PartitionProduceResponse.LeaderIdAndEpoch"]
