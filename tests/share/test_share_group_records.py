"""Share group membership as ``__consumer_offsets`` records (KIP-932, Kafka 4.3.1's record
types 10-15): every heartbeat's records, replayed by a new coordinator shard, rebuild the same
group; a failed append leaves the group as it was; session expiry writes the leave."""
from __future__ import annotations

import uuid

from kbroker.group.consumer.topics import TopicsView
from kbroker.group.manager import GroupManager
from kbroker.group.records import decode_key
from kbroker.group.share import records as srec
from kbroker.group.share.state import HeartbeatRequest
from kbroker.wire.error_codes import ErrorCode as E

TID = uuid.UUID(int=7)


def shard(loaded=True):
    m = GroupManager()
    m.config.num_partitions = 1
    if loaded:
        m.loaded.add(0)
    m.set_topics(TopicsView({"t": (TID, 3)}))
    return m


def hb(m, log, member, epoch, now, topics=None, error=0):
    res = m.share_group_heartbeat(HeartbeatRequest("g", member, epoch, subscribed_topic_names=topics), now)
    log.extend(res.records)
    out = m.after_append(res, error, now)
    return out.response or res.response


def state(g):
    return (g.group_epoch, g.assignment_epoch,
            {k: (v.member_epoch, v.previous_member_epoch, dict(v.assigned), v.subscribed_topic_names)
             for k, v in g.members.items()}, g.target, g.initialized)


def test_records_replayed_rebuild_the_group_and_heartbeats_carry_on():
    m, log = shard(), []
    a = hb(m, log, "a", 0, 0, ["t"])
    b = hb(m, log, "b", 0, 10, ["t"])
    a = hb(m, log, "a", a.member_epoch, 1500)           # the assignment batch ran
    b = hb(m, log, "b", b.member_epoch, 1600)
    assert a.assignment and b.assignment
    types = {r.parsed_key.record_type for r in log}
    assert types == set(srec.RECORD_TYPES)
    for r in log:                                       # the bytes decode as written
        assert decode_key(r.key) == r.parsed_key
    new = shard(loaded=False)
    for r in log:
        new.replay(r.key, r.value)
    new.complete_load(0, 5000)
    assert state(new.groups["g"]) == state(m.groups["g"])
    log2 = []
    again = hb(new, log2, "a", a.member_epoch, 5100)
    assert (again.error, again.member_epoch) == (0, a.member_epoch)
    assert log2 == []                                   # nothing changed: nothing written


def test_failed_append_reverts_and_session_expiry_writes_the_leave():
    m, log = shard(), []
    r = hb(m, log, "a", 0, 0, ["t"], error=E.NOT_ENOUGH_REPLICAS)
    assert r.error == E.COORDINATOR_NOT_AVAILABLE and "g" not in m.groups
    r = hb(m, log, "a", 0, 0, ["t"])
    before = state(m.groups["g"])
    r2 = hb(m, log, "b", 0, 100, ["t"], error=E.NOT_LEADER_OR_FOLLOWER)
    assert r2.error == E.NOT_COORDINATOR and state(m.groups["g"]) == before
    gone = []
    m.share.on_member_gone = lambda g, mid: gone.append(mid)
    res = m.fire_due(45_000)
    assert {(x.parsed_key.record_type, x.value is None) for x in res.records} >= {
        (srec.MEMBER_METADATA, True), (srec.GROUP_METADATA, False)}
    m.after_append(res, 0, 45_000)
    assert gone == ["a"] and not m.groups["g"].members
    assert m.list_groups_typed()[0].state == "Empty"
    deleted = m.delete_groups(["g"], 46_000)
    m.after_append(deleted, 0, 46_000)
    assert deleted.response == [("g", 0)] and "g" not in m.groups


def test_a_classic_join_never_takes_a_share_groups_id():
    """Kafka's classicGroupJoin: a share group id (even of an empty group) answers
    INCONSISTENT_GROUP_PROTOCOL and the share group stays."""
    from kbroker.group.classic.protocol import JoinRequest
    m, log = shard(), []
    r = hb(m, log, "a", 0, 0, ["t"])
    hb(m, log, "a", -1, 10)
    assert m.groups["g"].is_empty()
    res = m.join_group(JoinRequest(group_id="g", member_id="", group_instance_id=None,
                                   session_timeout_ms=45_000, rebalance_timeout_ms=60_000,
                                   protocol_type="consumer", protocols=[("range", b"")]),
                       "slot", 20)
    assert res.replies[0][1].error == E.INCONSISTENT_GROUP_PROTOCOL
    assert m.groups["g"].group_type == "share" and not res.records
