"""Table-driven tests of the pure replication state (kbroker/replica/state.py): Kafka's rules
for the high watermark, ISR expansion and shrink, AlterPartition answers, the low watermark
and acks=all completion, each as rows of (situation, expected decision).

Broker 1 is the leader throughout; followers are 2 and 3. Times are plain milliseconds.
"""
from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

import kbroker.replica.state as state_module
from kbroker.replica.state import (FollowerState, ReplicationState, acks_all_outcome,
                                   min_insync_ok)
from kbroker.wire.error_codes import ErrorCode

ME = 1
LAG = 30_000


def make(isr=(1, 2, 3), replicas=(1, 2, 3), *, pending=None, leos=None, caught_up=None,
         starts=None, epoch_start=0, partition_epoch=5) -> ReplicationState:
    """A leader's state with followers at the given log end offsets / catch-up times."""
    st = ReplicationState(local_id=ME)
    st.apply_leader_image(replicas, isr, partition_epoch, 0, new_leader=True,
                          epoch_start=epoch_start)
    for rid, f in st.followers.items():
        f.log_end_offset = (leos or {}).get(rid, -1)
        f.last_caught_up_ms = (caught_up or {}).get(rid, 0)
        f.log_start_offset = (starts or {}).get(rid, -1)
    st.pending_isr = pending
    return st


# ---------------------------------------------------------------------------- high watermark

HW_TABLE = [
    # (isr, pending, follower LEOs, leader LEO, current HW, expected new HW or None)
    ("leader alone follows its LEO", (1,), None, {}, 10, 5, 10),
    ("min over the ISR", (1, 2), None, {2: 7}, 10, 5, 7),
    ("never backwards", (1, 2), None, {2: 3}, 10, 5, None),
    ("unchanged is no move", (1, 2), None, {2: 5}, 10, 5, None),
    ("ISR follower not fetched yet holds it", (1, 2), None, {}, 10, 0, None),
    ("follower outside the ISR does not count", (1, 2), None, {2: 9, 3: 0}, 10, 5, 9),
    ("pending expansion counts", (1, 2), (1, 2, 3), {2: 10, 3: 4}, 10, 2, 4),
    ("pending shrink does not count yet", (1, 2, 3), (1, 2), {2: 10, 3: 4}, 10, 2, 4),
    ("leader LEO bounds it", (1, 2, 3), None, {2: 12, 3: 12}, 10, 2, 10),
]


@pytest.mark.parametrize("name,isr,pending,leos,leader_leo,hw,expected", HW_TABLE,
                         ids=[row[0] for row in HW_TABLE])
def test_high_watermark(name, isr, pending, leos, leader_leo, hw, expected):
    st = make(isr=isr, pending=pending, leos=leos)
    assert st.high_watermark_after(leader_leo, hw) == expected


def test_high_watermark_never_moves_backwards_over_random_histories():
    """Fetches, appends, ISR changes and pending proposals in any order: the HW the state
    hands out never goes down and never passes the leader's LEO (seeded, reproducible)."""
    for seed in range(200):
        rng = random.Random(seed)
        st = make(isr=(1, 2, 3), leos={2: 0, 3: 0})
        leader_leo, hw, now = 0, 0, 0
        for _ in range(60):
            now += rng.randrange(0, 20_000)
            event = rng.choice(["append", "fetch", "fetch", "shrink", "expand", "commit"])
            if event == "append":
                leader_leo += rng.randrange(1, 5)
            elif event == "fetch":
                f = st.followers[rng.choice([2, 3])]
                st.record_fetch(f, rng.randrange(0, leader_leo + 1), 0, leader_leo, now)
            elif event == "shrink":
                new = st.isr_shrink(leader_leo, now, LAG)
                if new is not None:
                    st.begin_alter(new)
            elif event == "expand":
                f = st.followers[rng.choice([2, 3])]
                new = st.isr_expansion(f, hw, lambda _rid: True, lambda _rid: None)
                if new is not None:
                    st.begin_alter(new)
            elif st.pending_isr is not None:
                st.alter_committed(0, 0, st.pending_isr, st.partition_epoch + 1, now)
            new_hw = st.high_watermark_after(leader_leo, hw)
            if new_hw is not None:
                assert hw < new_hw <= leader_leo, f"seed {seed}"
                hw = new_hw


# ---------------------------------------------------------------------------- follower fetches

FETCH_TABLE = [
    # (fetch offset, leader LEO now, previous fetch's leader LEO, previous fetch time,
    #  previous lastCaughtUpTime, now, expected lastCaughtUpTime)
    ("reached the leader's LEO: caught up now", 10, 10, 8, 900, 100, 1000, 1000),
    ("reached what the leader had at the previous fetch", 8, 10, 8, 900, 100, 1000, 900),
    ("behind both: unchanged", 7, 10, 8, 900, 100, 1000, 100),
    ("never goes back in time", 10, 10, 8, 900, 2000, 1000, 2000),
]


@pytest.mark.parametrize("name,offset,leader_leo,prev_leo,prev_ms,caught_up,now,expected",
                         FETCH_TABLE, ids=[row[0] for row in FETCH_TABLE])
def test_last_caught_up_time(name, offset, leader_leo, prev_leo, prev_ms, caught_up, now,
                             expected):
    f = FollowerState(2, log_end_offset=5, last_caught_up_ms=caught_up,
                      last_fetch_leader_leo=prev_leo, last_fetch_ms=prev_ms)
    _, moved = ReplicationState.record_fetch(f, offset, 0, leader_leo, now)
    assert f.last_caught_up_ms == expected
    assert (f.log_end_offset, f.last_fetch_leader_leo, f.last_fetch_ms) == (offset, leader_leo, now)
    assert moved == (offset != 5)


def test_fetch_reports_log_start_changes():
    f = FollowerState(2, log_start_offset=0)
    assert ReplicationState.record_fetch(f, 3, 0, 3, 1)[0] is False
    assert ReplicationState.record_fetch(f, 3, 2, 3, 2)[0] is True
    assert f.log_start_offset == 2


# ---------------------------------------------------------------------------- ISR shrink

SHRINK_TABLE = [
    # (isr, pending, follower LEOs, lastCaughtUpTimes, leader LEO, now, expected ISR or None)
    ("lagging longer than replica.lag.time.max.ms leaves", (1, 2, 3), None,
     {2: 10, 3: 4}, {2: 0, 3: 1000}, 10, 1000 + LAG + 1, (1, 2)),
    ("lagging exactly the limit stays", (1, 2, 3), None,
     {2: 10, 3: 4}, {2: 0, 3: 1000}, 10, 1000 + LAG, None),
    ("behind but recently caught up stays", (1, 2, 3), None,
     {2: 10, 3: 4}, {2: 0, 3: 50_000}, 10, 60_000, None),
    ("at the leader's LEO stays however long ago", (1, 2, 3), None,
     {2: 10, 3: 10}, {2: 0, 3: 0}, 10, 10**9, None),
    ("both lagging both leave", (1, 2, 3), None,
     {2: 1, 3: 4}, {2: 0, 3: 0}, 10, LAG + 1, (1,)),
    ("the leader alone never shrinks", (1,), None, {}, {}, 10, 10**9, None),
    ("one AlterPartition in flight at a time", (1, 2, 3), (1, 2, 3),
     {2: 10, 3: 4}, {2: 0, 3: 0}, 10, 10**9, None),
    ("an ISR member with no follower state leaves", (1, 2, 4), None,
     {2: 10}, {2: 0}, 10, 1, (1, 2)),
]


@pytest.mark.parametrize("name,isr,pending,leos,caught_up,leader_leo,now,expected",
                         SHRINK_TABLE, ids=[row[0] for row in SHRINK_TABLE])
def test_isr_shrinks_only_by_lag_time(name, isr, pending, leos, caught_up, leader_leo, now,
                                      expected):
    st = make(isr=isr, pending=pending, leos=leos, caught_up=caught_up)
    assert st.isr_shrink(leader_leo, now, LAG) == expected


# ---------------------------------------------------------------------------- ISR expansion

EXPAND_TABLE = [
    # (follower 3's LEO, HW, leader epoch start, eligible, refused registration,
    #  current registration, expected ISR or None, refusal remembered afterwards)
    ("reached HW and epoch start: joins", 10, 10, 8, True, None, "r1", (1, 2, 3), False),
    ("below the HW: waits", 9, 10, 8, True, None, "r1", None, False),
    ("reached HW but not the epoch start: waits", 10, 10, 12, True, None, "r1", None, False),
    ("no epoch start (not leader yet): waits", 10, 10, -1, True, None, "r1", None, False),
    ("fenced or shutting down broker: waits", 10, 10, 8, False, None, "r1", None, False),
    ("refused under this registration: waits", 10, 10, 8, True, "r1", "r1", None, True),
    ("refused under an older registration: asks again", 10, 10, 8, True, "r0", "r1",
     (1, 2, 3), False),
]


@pytest.mark.parametrize("name,leo,hw,epoch_start,eligible,refused,registration,expected,"
                         "still_refused", EXPAND_TABLE, ids=[row[0] for row in EXPAND_TABLE])
def test_isr_expands_past_hw_and_epoch_start(name, leo, hw, epoch_start, eligible, refused,
                                             registration, expected, still_refused):
    st = make(isr=(1, 2), leos={2: hw, 3: leo}, epoch_start=epoch_start)
    if refused is not None:
        st.expand_refused[3] = refused
    got = st.isr_expansion(st.followers[3], hw, lambda _rid: eligible, lambda _rid: registration)
    assert got == expected
    assert (3 in st.expand_refused) == still_refused


def test_no_expansion_for_members_or_while_an_alter_is_in_flight():
    st = make(isr=(1, 2), leos={2: 10, 3: 10})
    assert st.isr_expansion(st.followers[2], 10, lambda _: True, lambda _: None) is None
    st.begin_alter((1,))
    assert st.isr_expansion(st.followers[3], 10, lambda _: True, lambda _: None) is None


# ---------------------------------------------------------------------------- AlterPartition answers

def test_committed_answer_takes_the_newer_isr_and_starts_catch_up_clocks():
    st = make(isr=(1, 2), leos={2: 10, 3: 10}, caught_up={2: 5, 3: 0}, partition_epoch=5)
    st.begin_alter((1, 2, 3))
    assert st.alter_committed(7, 7, [1, 2, 3], 6, now=1234) is True
    assert (st.isr, st.partition_epoch, st.pending_isr) == ((1, 2, 3), 6, None)
    assert st.followers[3].last_caught_up_ms == 1234 and st.followers[2].last_caught_up_ms == 5


@pytest.mark.parametrize("answer_epoch,answer_pepoch", [(8, 6), (7, 5), (7, 4)],
                         ids=["other leader epoch", "same partition epoch", "older partition epoch"])
def test_stale_answers_only_clear_the_proposal(answer_epoch, answer_pepoch):
    st = make(isr=(1, 2), partition_epoch=5)
    st.begin_alter((1, 2, 3))
    assert st.alter_committed(7, answer_epoch, [1, 2, 3], answer_pepoch, now=1) is False
    assert (st.isr, st.partition_epoch, st.pending_isr) == ((1, 2), 5, None)


REFUSAL_TABLE = [
    (ErrorCode.INELIGIBLE_REPLICA, True),
    (ErrorCode.OPERATION_NOT_ATTEMPTED, True),
    (ErrorCode.REQUEST_TIMED_OUT, False),
    (ErrorCode.INVALID_UPDATE_VERSION, False),
]


@pytest.mark.parametrize("code,remembered", REFUSAL_TABLE, ids=[c.name for c, _ in REFUSAL_TABLE])
def test_refusals_are_remembered_per_registration(code, remembered):
    st = make(isr=(1, 2))
    st.begin_alter((1, 2, 3), lambda rid: ("epoch", rid))
    st.alter_refused((1, 2, 3), code)
    assert st.pending_isr is None and st.isr == (1, 2)
    assert st.expand_refused == ({3: ("epoch", 3)} if remembered else {})


def test_a_registration_that_changed_while_the_refused_proposal_was_in_flight_is_asked_again():
    """The controller refused broker 3 while it was fenced; the image unfenced it before the
    answer arrived. The refusal holds for the registration the proposal saw, so the next
    fetch proposes 3 again (remembering the registration seen at the answer left the ISR
    without 3 until the broker re-registered: a seeded fault run's partition never healed)."""
    registration = {3: ("epoch 9", "fenced")}
    st = make(isr=(1, 2), leos={2: 10, 3: 10})
    new = st.isr_expansion(st.followers[3], 10, lambda _rid: True, registration.get)
    st.begin_alter(new, registration.get)
    registration[3] = ("epoch 9", "unfenced")
    st.alter_refused(new, ErrorCode.INELIGIBLE_REPLICA)
    assert st.isr_expansion(st.followers[3], 10, lambda _rid: True, registration.get) == (1, 2, 3)
    # unchanged since the refusal: not asked again
    st.begin_alter((1, 2, 3), registration.get)
    st.alter_refused((1, 2, 3), ErrorCode.INELIGIBLE_REPLICA)
    assert st.isr_expansion(st.followers[3], 10, lambda _rid: True, registration.get) is None


# ---------------------------------------------------------------------------- images

def test_new_leader_epoch_drops_the_pending_proposal_and_takes_the_image():
    st = make(isr=(1, 2), partition_epoch=5)
    st.begin_alter((1, 2, 3))
    st.apply_leader_image((1, 2, 3), (1, 2, 3), 6, 50, new_leader=False, epoch_start=20)
    assert (st.isr, st.pending_isr, st.leader_epoch_start) == ((1, 2, 3), None, 20)
    assert set(st.followers) == {2, 3}


IMAGE_TABLE = [
    # (image partition epoch, expected ISR): same leader epoch, our ISR from an answer is epoch 6
    (5, (1, 2, 3)),       # an older image does not undo an AlterPartition answer
    (6, (1, 2)),
    (7, (1, 2)),
]


@pytest.mark.parametrize("image_pepoch,expected", IMAGE_TABLE)
def test_same_epoch_image_isr_only_when_not_older(image_pepoch, expected):
    st = make(isr=(1, 2, 3), partition_epoch=6)
    st.apply_leader_image((1, 2, 3), (1, 2), image_pepoch, 0, new_leader=False, epoch_start=None)
    assert st.isr == expected


def test_followers_follow_the_assignment():
    st = make(isr=(1, 2), replicas=(1, 2, 3))
    st.apply_leader_image((1, 2, 4), (1, 2), 6, now=77, new_leader=False, epoch_start=None)
    assert set(st.followers) == {2, 4} and ME not in st.followers
    assert st.followers[4].last_caught_up_ms == 0            # not in the ISR: not caught up
    st.become_follower((1, 2, 4), 7)
    assert st.followers == {} and st.pending_isr is None and st.partition_epoch == 7


# ---------------------------------------------------------------------------- low watermark

LOW_TABLE = [
    # (leader log start, follower log starts, eligible brokers, expected low watermark)
    ("leader alone", 10, None, {2, 3}, 10),
    ("smallest live follower", 10, {2: 4, 3: 7}, {2, 3}, 4),
    ("follower that has not fetched holds it at -1", 10, {2: 10}, {2, 3}, -1),
    ("a follower on a fenced broker does not count", 10, {2: 4, 3: 10}, {3}, 10),
    ("followers ahead do not raise it", 10, {2: 12, 3: 15}, {2, 3}, 10),
]


@pytest.mark.parametrize("name,leader_start,starts,live,expected", LOW_TABLE,
                         ids=[row[0] for row in LOW_TABLE])
def test_low_watermark(name, leader_start, starts, live, expected):
    st = make(isr=(1,), replicas=(1,)) if starts is None else make(starts=starts)
    assert st.low_watermark(leader_start, lambda rid: rid in live) == expected


# ---------------------------------------------------------------------------- acks=all

ACKS_TABLE = [
    # (HW, required offset, committed ISR size, min.insync.replicas, expected)
    ("HW short of the batch: wait", 9, 10, 3, 2, None),
    ("HW reached it: done", 10, 10, 3, 2, ErrorCode.NONE),
    ("HW past it: done", 15, 10, 2, 2, ErrorCode.NONE),
    ("ISR shrank below min.insync.replicas meanwhile", 10, 10, 1, 2,
     ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND),
    ("ISR too small but HW short: still wait", 9, 10, 1, 2, None),
]


@pytest.mark.parametrize("name,hw,required,isr_size,min_isr,expected", ACKS_TABLE,
                         ids=[row[0] for row in ACKS_TABLE])
def test_acks_all_completes_on_high_watermark(name, hw, required, isr_size, min_isr, expected):
    assert acks_all_outcome(hw, required, isr_size, min_isr) == expected


@pytest.mark.parametrize("isr_size,min_isr,ok", [(1, 1, True), (2, 2, True), (1, 2, False),
                                                 (3, 2, True)])
def test_min_insync_replicas_gate_before_append(isr_size, min_isr, ok):
    assert min_insync_ok(isr_size, min_isr) is ok


# ---------------------------------------------------------------------------- purity

def test_state_module_has_no_io():
    """The rules module imports nothing that does I/O or reads a clock."""
    tree = ast.parse(Path(state_module.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module)
    assert imported <= {"__future__", "dataclasses", "typing", "kbroker.wire.error_codes"}
