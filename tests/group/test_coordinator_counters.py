"""The shard's counters behind /metrics' group coordinator families (Kafka 4.4's
GroupCoordinatorMetrics sensors), scripted on the pure shard: a rebalance is counted where
Kafka records it — a classic group's leader assignment written, a heartbeat bumping a
consumer, share or streams group's epoch — and nowhere else; transactional offsets count
when the TxnOffsetCommit is written, not again at the marker or on replay."""
from __future__ import annotations

from kbroker.group.offsets import OffsetAndMetadata
from kbroker.group.share.state import HeartbeatRequest as ShareHeartbeat

from tests.group.consumer_harness import ConsumerHarness
from tests.group.harness import Harness
from tests.streams.test_streams_protocol import StreamsHarness, all_topics


def test_a_classic_rebalance_counts_once_the_leaders_assignment_is_written():
    h = Harness()
    c = h.mgr.counters
    slots = [h.join_new("g", client=f"c{i}") for i in range(2)]
    h.advance_until(lambda: all(s.done for s in slots))
    assert h.state() == "CompletingRebalance" and c["classic_rebalances_completed"] == 0
    replies = [s.value for s in slots]
    gen, leader = replies[0].generation_id, replies[0].leader
    follower = next(r.member_id for r in replies if r.member_id != leader)
    h.sync("g", follower, gen)
    assert c["classic_rebalances_completed"] == 0
    h.sync("g", leader, gen, [(r.member_id, b"x") for r in replies])
    assert h.state() == "Stable" and c["classic_rebalances_completed"] == 1
    h.heartbeat("g", leader, gen)
    assert c["classic_rebalances_completed"] == 1


def test_consumer_group_epoch_bumps_count_as_rebalances():
    h = ConsumerHarness({"t": 2})
    c = h.mgr.counters
    h.join("a", ["t"])
    assert c["consumer_rebalances"] == 1
    h.hb("a", h.ep("a"))                       # nothing changed: no bump
    assert c["consumer_rebalances"] == 1
    h.join("b", ["t"])
    assert c["consumer_rebalances"] == 2
    h.hb("b", h.ep("b"), topics=["t", "u"])    # a subscription change
    assert c["consumer_rebalances"] == 3


def test_streams_group_epoch_bumps_count_as_rebalances():
    h = StreamsHarness(all_topics())
    c = h.mgr.counters
    a = h.shb("a", 0)
    assert c["streams_rebalances"] == 1
    h.shb("a", a.member_epoch, active={}, standby={})
    assert c["streams_rebalances"] == 1
    h.shb("b", 0)
    assert c["streams_rebalances"] == 2


def test_share_group_epoch_bumps_count_as_rebalances_and_a_leave_does_not():
    h = ConsumerHarness({"t": 2})
    c = h.mgr.counters

    def shb(member, epoch, topics=None):
        return h.drive(h.mgr.share_group_heartbeat(
            ShareHeartbeat("sg", member, epoch, subscribed_topic_names=topics), h.now, h.mono))

    r = shb("m1", 0, ["t"])
    assert r.error == 0 and c["share_rebalances"] == 1
    shb("m1", r.member_epoch)
    assert c["share_rebalances"] == 1
    r2 = shb("m2", 0, ["t"])
    assert r2.error == 0 and c["share_rebalances"] == 2
    assert shb("m2", -1).error == 0
    assert c["share_rebalances"] == 2


def test_transactional_offsets_count_when_written_not_at_the_marker():
    h = ConsumerHarness({"t": 2})
    c = h.mgr.counters
    offsets = {("t", 0): OffsetAndMetadata(5, -1, "", 0), ("t", 1): OffsetAndMetadata(7, -1, "", 0)}
    h.mgr.stage_txn_offsets(42, "txn-g", offsets)
    assert c["offset_commits"] == 2
    assert h.mgr.complete_txn_offsets(42, h.mgr.partition_for("txn-g"), True) == 2
    assert c["offset_commits"] == 2
    assert h.mgr.offsets["txn-g"][("t", 1)].offset == 7


def test_a_classic_member_joining_a_consumer_group_counts_a_consumer_group_rebalance():
    """Kafka's classicGroupJoinToConsumerGroup bumps the epoch through the same
    updateSubscriptionMetadata as a heartbeat, which records ConsumerGroupRebalances."""
    from tests.group.test_consumer_classic_members import Mixed
    h = Mixed({"t": 4})
    c = h.mgr.counters
    h.join("A", ["t"])
    assert c["consumer_rebalances"] == 1
    j = h.cjoin_new()
    assert j.error == 0 and c["consumer_rebalances"] == 2
    assert c["classic_rebalances_completed"] == 0       # not a classic group
