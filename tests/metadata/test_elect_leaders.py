"""ElectLeaders and the automatic preferred-leader rebalance on the quorum controller
(Kafka's ``ReplicationControlManager.electLeader`` / ``maybeBalancePartitionLeaders``).

A real one-voter quorum (tests/metadata/harness.py) with virtual brokers 2, 3, 4."""
from __future__ import annotations

from kbroker.metadata import elect
from kbroker.metadata.channel import ControllerChannel
from kbroker.metadata.controller import NewTopic
from kbroker.wire.error_codes import ErrorCode as E

from .harness import Harness, comparable
from .test_alter_partition import alter, state


async def cluster(tmp_path, nursery, **overrides):
    h = await Harness(tmp_path, **overrides).start(nursery)
    for b in (2, 3, 4):
        await h.register(b)
    [res] = await h.controller.create_topics([NewTopic("r", assignments={0: [2, 3, 4], 1: [3, 4, 2]})])
    assert res.error_code == 0
    return h


async def leader_moved_off_preferred(h):
    """Fence 2 (preferred leader of r-0): leadership moves to 3; unfence 2: not in the ISR
    yet; the leader adds it back. Returns the state before the election."""
    await h.heartbeat(2, want_fence=True)
    assert state(h)[:3] == (3, 1, (3, 4))
    await h.heartbeat(2)
    assert not h.image.brokers[2].fenced
    assert state(h)[0] == 3, "unfencing does not move a led partition"
    return state(h)


async def test_preferred_election_needs_the_preferred_replica_live_and_in_sync(tmp_path, nursery):
    h = await cluster(tmp_path, nursery)
    await h.heartbeat(2, want_fence=True)
    start = h.end
    # fenced preferred replica: nothing written
    code, results = await h.controller.elect_leaders(0, [("r", [0])])
    assert (code, [(t, [(i, c) for i, c, _ in ps]) for t, ps in results]) == \
        (E.NONE, [("r", [(0, E.PREFERRED_LEADER_NOT_AVAILABLE)])])
    assert h.end == start
    # live but out of the ISR: still not available
    await h.heartbeat(2)
    start = h.end
    code, [(_, [(_, c, msg)])] = await h.controller.elect_leaders(0, [("r", [0])])
    assert c == E.PREFERRED_LEADER_NOT_AVAILABLE and msg and h.end == start
    # back in the ISR: elected, leader epoch + 1, one record
    r = await alter(h, 3, "r", 0, [3, 4, 2])
    assert r.error_code == 0
    before = state(h)
    start = h.end
    code, [(_, [(_p, c, msg)])] = await h.controller.elect_leaders(0, [("r", [0])])
    assert (code, c, msg) == (E.NONE, E.NONE, None)
    [rec] = h.records(start)
    assert (rec.leader, rec.isr, rec.replicas) == (2, None, None)
    assert state(h) == (2, before[1] + 1, (3, 4, 2), before[3] + 1)
    # again: not needed, nothing written
    start = h.end
    code, [(_, [(_p, c, _)])] = await h.controller.elect_leaders(0, [("r", [0])])
    assert c == E.ELECTION_NOT_NEEDED and h.end == start
    assert comparable(h.replayed()) == comparable(h.image)
    h.close()


async def test_unknown_partitions_null_list_and_bad_type(tmp_path, nursery):
    h = await cluster(tmp_path, nursery)
    code, results = await h.controller.elect_leaders(0, [("nope", [0]), ("r", [7, 1])])
    assert code == E.NONE
    assert [(t, [(i, c) for i, c, _ in ps]) for t, ps in results] == [
        ("nope", [(0, E.UNKNOWN_TOPIC_OR_PARTITION)]),
        ("r", [(7, E.UNKNOWN_TOPIC_OR_PARTITION), (1, E.ELECTION_NOT_NEEDED)])]
    # null: every topic listed, partitions that need nothing left out
    code, results = await h.controller.elect_leaders(0, None)
    assert (code, results) == (E.NONE, [("r", [])])
    await leader_moved_off_preferred(h)          # r-0 led by 3, 2 out of the ISR
    code, results = await h.controller.elect_leaders(0, None)
    assert [(t, [(i, c) for i, c, _ in ps]) for t, ps in results] == [("r", [(0, E.PREFERRED_LEADER_NOT_AVAILABLE)])]
    # an election type Kafka does not know: INVALID_REQUEST everywhere, nothing written
    start = h.end
    code, results = await h.controller.elect_leaders(5, [("r", [0])])
    assert code == E.INVALID_REQUEST and [c for _, ps in results for _, c, _ in ps] == [E.INVALID_REQUEST]
    assert h.end == start
    h.close()


async def test_unclean_type_elects_only_from_a_live_isr(tmp_path, nursery):
    h = await cluster(tmp_path, nursery)
    code, [(_, [(_p, c, _)])] = await h.controller.elect_leaders(1, [("r", [0])])
    assert c == E.ELECTION_NOT_NEEDED, "a partition with a leader"
    # every replica of r-0 fenced: leader -1, its last ISR member (4) is its ELR
    for b in (2, 3, 4):
        await h.heartbeat(b, want_fence=True)
    assert state(h)[0] == -1 and state(h)[2] == () and h.image.topics["r"].partitions[0].elr == (4,)
    await h.heartbeat(2)                 # live, but not in the ISR
    start = h.end
    code, [(_, [(_p, c, _)])] = await h.controller.elect_leaders(1, [("r", [0])])
    assert c == E.ELIGIBLE_LEADERS_NOT_AVAILABLE and h.end == start
    assert state(h)[0] == -1
    h.close()


async def test_channel_local_path(tmp_path, nursery):
    h = await cluster(tmp_path, nursery)
    await leader_moved_off_preferred(h)
    await alter(h, 3, "r", 0, [3, 4, 2])
    channel = ControllerChannel(h.config, h.quorum, h.controller)
    code, [(_, [(_p, c, _)])] = await channel.elect_leaders(0, [("r", [0])])
    assert (code, c, state(h)[0]) == (E.NONE, E.NONE, 2)
    h.close()


async def test_auto_rebalance_every_interval(tmp_path, nursery):
    h = await cluster(tmp_path, nursery, leader_imbalance_check_interval_seconds=10)
    c = h.controller
    await leader_moved_off_preferred(h)
    await alter(h, 3, "r", 0, [3, 4, 2])
    assert elect.imbalanced_partitions(h.image) == [("r", 0)]
    assert await c.maybe_balance_leaders(100.0) == 0, "the first round comes one interval later"
    assert await c.maybe_balance_leaders(105.0) == 0
    assert state(h)[0] == 3
    assert await c.maybe_balance_leaders(110.0) == 1
    assert state(h)[0] == 2 and elect.imbalanced_partitions(h.image) == []
    # a preferred replica that cannot lead: no record, the partition stays imbalanced
    await h.heartbeat(2, want_fence=True)
    start = h.end
    assert await c.maybe_balance_leaders(120.0) == 0 and h.end == start
    assert elect.imbalanced_partitions(h.image) == [("r", 0)]
    h.close()


async def test_auto_rebalance_disabled(tmp_path, nursery):
    h = await cluster(tmp_path, nursery, auto_leader_rebalance_enable="false",
                      leader_imbalance_check_interval_seconds=1)
    await leader_moved_off_preferred(h)
    await alter(h, 3, "r", 0, [3, 4, 2])
    for t in (0.0, 5.0, 50.0):
        assert await h.controller.maybe_balance_leaders(t) == 0
    assert state(h)[0] == 3
    h.close()


def test_balance_round_is_bounded():
    """``balance_records`` stops at the per-round limit (Kafka: 1000 and reschedules)."""
    import uuid

    from kbroker.metadata.image import MetadataImage, PartitionImage, TopicImage
    tid = uuid.uuid4()
    parts = {i: PartitionImage(i, 2, 0, (1, 2), (1, 2)) for i in range(5)}
    img = MetadataImage("c", 1, topics={"t": TopicImage("t", tid, parts)})
    recs = elect.balance_records(img, lambda r: True, limit=3)
    assert [(r.partition_id, r.leader) for r in recs] == [(0, 1), (1, 1), (2, 1)]
