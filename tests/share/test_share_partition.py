"""The share-partition state machine (KIP-932): acquisition, locks, acknowledgement types,
delivery limits, start-offset moves, and the persisted form replayed after a "crash" at
every step of a trace. Time is a number passed in (no clock)."""
from __future__ import annotations

import pytest

from kbroker.share.partition import AcquiredRange as R
from kbroker.share.partition import RecordState as S
from kbroker.share.partition import SharePartition
from kbroker.share.partition import StateBatch as B
from kbroker.wire.error_codes import ErrorCode as E

ACCEPT, RELEASE, REJECT, GAP = 1, 2, 3, 0


def sp(**kw):
    kw.setdefault("lock_duration_ms", 1000)
    kw.setdefault("delivery_count_limit", 3)
    return SharePartition(0, **kw)


def states(p):
    return {o: (r.state, r.delivery_count) for o, r in sorted(p.in_flight.items())}


def test_batch_acquisition_respects_max_records_and_members_never_share_a_record():
    p = sp()
    assert p.acquire("a", 10, 4, now_ms=0) == [R(0, 3, 1)]
    assert p.acquire("b", 10, 4, now_ms=0) == [R(4, 7, 1)]
    assert p.acquire("c", 10, 4, now_ms=0) == [R(8, 9, 1)]
    assert p.acquire("c", 10, 4, now_ms=0) == []          # nothing left, nothing held twice
    assert (p.start_offset, p.end_offset) == (0, 10)


@pytest.mark.parametrize("ack,after,start", [
    ([ACCEPT], {0: (S.ACKNOWLEDGED, 1)}, 4),             # all accepted: start moves past
    ([RELEASE], {0: (S.AVAILABLE, 1)}, 0),
    ([REJECT], {0: (S.ARCHIVED, 1)}, 4),
    ([ACCEPT, RELEASE, REJECT, ACCEPT], {1: (S.AVAILABLE, 1)}, 1),
    ([GAP, ACCEPT, ACCEPT, ACCEPT], {}, 4),
])
def test_acknowledgement_types(ack, after, start):
    p = sp()
    p.acquire("a", 4, 10, now_ms=0)
    assert p.acknowledge("a", 0, 3, ack, now_ms=1) == E.NONE
    assert p.start_offset == start
    for off, st in after.items():
        if off >= start:
            assert states(p)[off] == st


def test_released_records_come_back_rejected_ones_never():
    p = sp()
    p.acquire("a", 4, 10, now_ms=0)
    p.acknowledge("a", 0, 3, [RELEASE, REJECT, RELEASE, ACCEPT], now_ms=1)
    assert p.acquire("b", 4, 10, now_ms=2) == [R(0, 0, 2), R(2, 2, 2)]
    assert p.acquire("c", 4, 10, now_ms=2) == []


@pytest.mark.parametrize("bad", [
    ("b", 0, 3, [ACCEPT]),        # held by another member
    ("a", 0, 5, [ACCEPT]),        # beyond what was acquired
    ("a", 3, 2, [ACCEPT]),        # empty range
    ("a", 0, 3, [ACCEPT, ACCEPT]),  # wrong number of types
    ("a", 0, 3, [7]),             # unknown type
])
def test_bad_acknowledgements_change_nothing(bad):
    p = sp()
    p.acquire("a", 4, 10, now_ms=0)
    before = states(p)
    assert p.acknowledge(*bad, now_ms=1) in (E.INVALID_RECORD_STATE, E.INVALID_REQUEST)
    assert states(p) == before


def test_lock_expiry_returns_records_and_a_late_ack_fails():
    p = sp(lock_duration_ms=1000)
    p.acquire("a", 2, 10, now_ms=0)
    assert p.next_lock_deadline_ms() == 1000
    assert p.expire_locks(999) == 0
    assert p.expire_locks(1000) == 2
    assert states(p) == {0: (S.AVAILABLE, 1), 1: (S.AVAILABLE, 1)}
    assert p.acknowledge("a", 0, 1, [ACCEPT], now_ms=1001) == E.INVALID_RECORD_STATE
    assert p.acquire("b", 2, 10, now_ms=1001) == [R(0, 1, 2)]


def test_delivery_count_limit_archives():
    p = sp(delivery_count_limit=2)
    p.acquire("a", 1, 10, now_ms=0)
    p.acknowledge("a", 0, 0, [RELEASE], now_ms=1)
    assert p.acquire("a", 1, 10, now_ms=2) == [R(0, 0, 2)]
    assert p.expire_locks(10_000) == 1              # second delivery timed out: limit reached
    assert p.start_offset == 1 and p.in_flight == {}
    assert p.acquire("a", 1, 10, now_ms=10_001) == []


def test_member_leaving_releases_its_records():
    p = sp()
    p.acquire("a", 3, 10, now_ms=0)
    assert p.release_member("a") == 3
    assert p.acquire("b", 3, 10, now_ms=1) == [R(0, 2, 2)]


def test_skipped_offsets_are_archived_not_delivered():
    p = sp()                    # e.g. a commit marker at 2, aborted records at 3-4
    assert p.acquire("a", 6, 10, now_ms=0, skip={2, 3, 4}) == [R(0, 1, 1), R(5, 5, 1)]
    p.acknowledge("a", 0, 1, [ACCEPT], now_ms=1)
    assert p.start_offset == 5


def test_start_offset_follows_the_log_start_and_in_flight_is_bounded():
    p = sp(max_in_flight=5)
    assert p.acquire("a", 100, 100, now_ms=0) == [R(0, 4, 1)]
    assert p.acquire("a", 100, 100, now_ms=0) == []
    p.advance_start_to(3)
    assert (p.start_offset, sorted(p.in_flight)) == (3, [3, 4])
    assert p.acquire("b", 100, 100, now_ms=0) == [R(5, 7, 1)]
    p.advance_start_to(50)
    assert (p.start_offset, p.end_offset, p.in_flight) == (50, 50, {})


def test_limit_offset_bounds_acquisition_to_the_fetched_data():
    p = sp()
    assert p.acquire("a", 100, 100, now_ms=0, limit_offset=7) == [R(0, 6, 1)]


TRACE = [
    ("acquire", "a", 4), ("acquire", "b", 3), ("ack", "a", 0, 3, [ACCEPT, RELEASE, REJECT, ACCEPT]),
    ("expire", 2000), ("acquire", "c", 10), ("ack", "c", 1, 1, [ACCEPT]),
    ("ack", "c", 4, 6, [RELEASE]), ("acquire", "a", 2), ("member_gone", "a"),
    ("acquire", "b", 10), ("ack", "b", 6, 6, [ACCEPT]),
]


def _run(p, step, now):
    kind = step[0]
    if kind == "acquire":
        p.acquire(step[1], 8, step[2], now_ms=now)
    elif kind == "ack":
        assert p.acknowledge(step[1], step[2], step[3], step[4], now_ms=now) == E.NONE
    elif kind == "expire":
        p.expire_locks(step[1])
    elif kind == "member_gone":
        p.release_member(step[1])


@pytest.mark.parametrize("crash_after", range(len(TRACE) + 1))
def test_replay_of_the_persisted_state_after_a_crash_at_every_step(crash_after):
    """Persist after every step (as a write to the share coordinator would), crash after
    ``crash_after`` steps, rebuild from what was persisted: every acknowledged or archived
    record stays done, every other record is still deliverable, held locks are gone."""
    p = sp(lock_duration_ms=1000)
    now = 0
    for step in TRACE[:crash_after]:
        now += 10
        _run(p, step, now)
    saved = (p.start_offset, p.state_batches())
    q = SharePartition.from_state(saved[0], saved[1], lock_duration_ms=1000, delivery_count_limit=3)
    assert q.start_offset == p.start_offset
    assert q.end_offset == p.end_offset
    for off in range(p.start_offset, p.end_offset):
        a, b = p.in_flight[off], q.in_flight[off]
        assert b.delivery_count == a.delivery_count
        expected = S.AVAILABLE if a.state is S.ACQUIRED else a.state
        assert b.state == expected
    # the resumed partition delivers exactly what was not done, before anything new
    got = q.acquire("z", 8, 100, now_ms=now + 1)
    pending = {o for o in range(p.start_offset, p.end_offset)
               if p.in_flight[o].state in (S.AVAILABLE, S.ACQUIRED)}
    delivered = {o for r in got for o in range(r.first_offset, r.last_offset + 1)}
    assert delivered == pending | set(range(p.end_offset, 8))


def test_written_start_offset_is_one_write_behind_as_kafkas():
    """F-970: Kafka 4.4 writes an acknowledgement with the start offset from before it and
    the acknowledged records as a state batch; the next write carries the moved start
    offset. An acquisition (kbroker writes it, Kafka does not) repeats what was written."""
    p = sp()
    assert p.take_snapshot() == (0, [])
    p.acquire("a", 5, 10, now_ms=0)
    assert p.take_snapshot(advance=False) == (0, [B(0, 4, S.AVAILABLE, 1)])
    p.acknowledge("a", 0, 4, [ACCEPT], now_ms=1)
    assert p.start_offset == 5
    assert p.take_snapshot() == (0, [B(0, 4, S.ACKNOWLEDGED, 1)])
    assert (p.written_start, p.written_complete) == (0, 5)
    p.acquire("a", 6, 10, now_ms=2)
    assert p.take_snapshot(advance=False) == (0, [B(0, 4, S.ACKNOWLEDGED, 1), B(5, 5, S.AVAILABLE, 1)])
    p.acknowledge("a", 5, 5, [ACCEPT], now_ms=3)
    assert p.take_snapshot() == (5, [B(5, 5, S.ACKNOWLEDGED, 1)])
    assert (p.written_start, p.written_complete, p.start_offset) == (5, 1, 6)
    # read back, the settled records are skipped in memory and the next write moves on
    q = SharePartition.from_state(5, [B(5, 5, S.ACKNOWLEDGED, 1)])
    assert (q.start_offset, q.written_start, q.written_complete) == (6, 5, 1)
    assert q.take_snapshot(advance=False) == (5, [B(5, 5, S.ACKNOWLEDGED, 1)])
    assert q.take_snapshot() == (6, [])


@pytest.mark.parametrize("crash_after", range(len(TRACE) + 1))
def test_one_write_behind_snapshots_lose_nothing(crash_after):
    """Snapshots taken the Kafka way (one write behind; acquisitions not advancing) after
    every step: rebuilt from the last one, every acknowledged or archived record stays done
    and every other record is still deliverable."""
    p = sp(lock_duration_ms=1000)
    now = 0
    saved = p.take_snapshot()
    for step in TRACE[:crash_after]:
        now += 10
        _run(p, step, now)
        saved = p.take_snapshot(advance=step[0] != "acquire")
    q = SharePartition.from_state(saved[0], saved[1], lock_duration_ms=1000, delivery_count_limit=3)
    assert q.start_offset == p.start_offset and q.end_offset == p.end_offset
    for off in range(p.start_offset, p.end_offset):
        expected = S.AVAILABLE if p.in_flight[off].state is S.ACQUIRED else p.in_flight[off].state
        assert q.in_flight[off].state == expected


def test_share_snapshot_records_round_trip():
    """The ShareSnapshot key/value kbroker writes to ``__share_group_state`` decode back to
    the same share-partition state (schema: kafka-share-coordinator 4.3.1's definitions)."""
    import uuid

    from kbroker.share import persister

    p = sp()
    p.acquire("a", 6, 10, now_ms=0)
    p.acknowledge("a", 0, 5, [ACCEPT, RELEASE, REJECT, ACCEPT, RELEASE, RELEASE], now_ms=1)
    tid = uuid.uuid4()
    key = persister.encode_key("g", tid, 3)
    value = persister.encode_value(p, leader_epoch=0, now_ms=5)
    assert key[:2] == b"\x00\x00" and value[:2] == b"\x00\x00"   # ShareSnapshot, version 0
    ident, (start, epoch, batches) = persister.decode(key, value)
    assert ident == ("g", tid, 3)
    q = SharePartition.from_state(start, batches, lock_duration_ms=1000, delivery_count_limit=3)
    assert states(q) == states(p) and q.start_offset == p.start_offset == 1


def test_share_update_deltas_apply_on_top_of_the_last_snapshot():
    """ShareUpdate records (key type 1, as Kafka's share coordinator writes between snapshots)
    replayed after a ShareSnapshot: the start offset moves, updated ranges replace what they
    cover, batches below the start offset go, equal neighbours merge; a tombstone deletes."""
    import struct
    import uuid

    from kbroker.share import persister
    from kbroker.share.partition import StateBatch as B

    tid = uuid.uuid4()
    snap_key = persister.encode_key("g", tid, 0)
    snap = struct.pack(">h", 0) + persister.message("ShareSnapshotValue")(
        snapshot_epoch=0, state_epoch=3, leader_epoch=0, start_offset=10, create_timestamp=0,
        write_timestamp=0, state_batches=[persister.message("ShareSnapshotValue").StateBatch(
            first_offset=10, last_offset=19, delivery_state=0, delivery_count=1)]).encode(0)
    U = persister.message("ShareUpdateValue")

    def update(start, batches):
        key = struct.pack(">h", 1) + persister.message("ShareUpdateKey")(
            group_id="g", topic_id=tid, partition=0).encode(0)
        return key, struct.pack(">h", 0) + U(
            snapshot_epoch=0, leader_epoch=0, start_offset=start, state_batches=[
                U.StateBatch(first_offset=f, last_offset=l, delivery_state=s, delivery_count=c)
                for f, l, s, c in batches]).encode(0)

    table: dict = {}
    assert persister.replay_record(table, snap_key, snap)
    assert persister.replay_record(table, *update(-1, [(12, 13, 2, 1), (20, 21, 4, 5)]))
    assert table[("g", tid, 0)] == (10, 3, [B(10, 11, 0, 1), B(12, 13, 2, 1), B(14, 19, 0, 1),
                                            B(20, 21, 4, 5)])
    assert persister.replay_record(table, *update(13, [(14, 19, 2, 1)]))
    assert table[("g", tid, 0)] == (13, 3, [B(13, 19, 2, 1), B(20, 21, 4, 5)])
    assert persister.replay_record(table, snap_key, None)
    assert table == {}
    assert not persister.replay_record(table, b"\x00\x07" + b"x", None)   # another record type


def test_share_state_placement_is_kafkas():
    """``abs(hashCode("group:topicId:partition")) % n`` with Kafka's Uuid text, as
    ShareCoordinatorService.partitionFor (FindCoordinator key type 2 agrees)."""
    import uuid

    from kbroker.group.records import java_string_hash
    from kbroker.share import persister

    assert persister.kafka_uuid_text(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"
    tid = uuid.UUID("0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9")
    key = persister.coordinator_key("grp", tid, 7)
    assert key == "grp:ChssPU5fYHGCk6S1xtfo-Q:7"
    assert persister.partition_for("grp", tid, 7, 50) == abs(java_string_hash(key)) % 50


def test_renew_restarts_the_lock_of_held_records_only():
    """KIP-1222 RENEW (type 4): the member's acquired records stay acquired with a new lock
    and the same delivery count; records it does not hold are INVALID_RECORD_STATE; with
    renewals disabled for the group, INVALID_RECORD_STATE."""
    p = sp()
    p.acquire("a", 4, 10, now_ms=0)                       # locks until 1000
    assert p.acknowledge("a", 0, 1, [4], now_ms=900) == E.NONE
    assert p.expire_locks(1500)                            # 2, 3 expire; 0, 1 renewed to 1900
    assert [int(p.in_flight[o].state) for o in range(4)] == [S.ACQUIRED, S.ACQUIRED, S.AVAILABLE, S.AVAILABLE]
    assert p.in_flight[0].delivery_count == 1
    assert p.acknowledge("b", 0, 0, [4], now_ms=1600) == E.INVALID_RECORD_STATE
    assert p.acknowledge("a", 0, 0, [4], now_ms=1600, renew_enabled=False) == E.INVALID_RECORD_STATE
    assert p.acknowledge("a", 0, 1, [1], now_ms=1700) == E.NONE


def test_records_archived_for_good_are_dead_letters():
    """KIP-1191: the offsets archived by the delivery count limit (release, lock expiry, a
    member leaving) or by a REJECT are handed out once, with their cause and delivery count;
    accepted records and gaps are not dead letters."""
    from kbroker.share.partition import DELIVERY_LIMIT, REJECTED
    p = sp(delivery_count_limit=2)
    assert p.acquire("a", 5, 10, now_ms=0) == [R(0, 4, 1)]
    p.acknowledge("a", 0, 4, [RELEASE, REJECT, ACCEPT, 0, RELEASE], now_ms=1)
    assert p.take_dead_letters() == [(1, 1, REJECTED)]
    assert p.acquire("a", 5, 10, now_ms=2) == [R(0, 0, 2), R(4, 4, 2)]
    p.acknowledge("a", 0, 0, [RELEASE], now_ms=3)              # second delivery released
    assert p.expire_locks(10_000) == 1                         # second delivery timed out
    assert p.take_dead_letters() == [(0, 2, DELIVERY_LIMIT), (4, 2, DELIVERY_LIMIT)]
    assert p.take_dead_letters() == []
