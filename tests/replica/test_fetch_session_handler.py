"""The follower's side of KIP-227 (kbroker/replica/fetch_session_handler.py), step by step:
full fetch, session opened, incremental fetches naming only changes, forgotten partitions,
and the ways a session is lost."""
from kbroker.replica.fetch_session_handler import FetchSessionHandler
from kbroker.wire.error_codes import ErrorCode as E

A, B, C = ("t", 0), ("t", 1), ("u", 0)


def plan(h, wanted):
    p = h.build(wanted)
    return p.session_id, p.epoch, p.send, p.forgotten, p.full


def test_full_then_incremental_naming_only_changes():
    h = FetchSessionHandler(2)
    assert plan(h, {A: 10, B: 20}) == (0, 0, [A, B], [], True)
    h.handle_response(0, 77)
    assert (h.session_id, h.epoch, h.session) == (77, 1, {A: 10, B: 20})
    # nothing changed: an incremental fetch naming no partition
    assert plan(h, {A: 10, B: 20}) == (77, 1, [], [], False)
    h.handle_response(0, 77)
    # A moved on, C is new, B is no longer fetched
    assert plan(h, {A: 11, C: 5}) == (77, 2, [A, C], [B], False)
    h.handle_response(0, 77)
    assert (h.epoch, h.session) == (3, {A: 11, C: 5})
    assert h.statistics()["full"] == 1 and h.statistics()["incremental"] == 2


def test_leader_without_session_stays_full():
    h = FetchSessionHandler(2)
    plan(h, {A: 1})
    h.handle_response(0, 0)
    assert plan(h, {A: 2}) == (0, 0, [A], [], True)


def test_session_lost():
    h = FetchSessionHandler(2)
    plan(h, {A: 1})
    h.handle_response(0, 9)
    plan(h, {A: 2})
    # an unknown session: a new one from scratch
    assert h.handle_response(E.FETCH_SESSION_ID_NOT_FOUND, 0) is False
    assert plan(h, {A: 2}) == (0, 0, [A], [], True)
    h.handle_response(0, 10)
    plan(h, {A: 3})
    # a wrong epoch, another error, a failed round trip: full under the old id (closes it)
    assert h.handle_response(E.INVALID_FETCH_SESSION_EPOCH, 0) is False
    assert plan(h, {A: 3}) == (10, 0, [A], [], True)
    h.handle_response(0, 11)
    plan(h, {A: 4})
    h.handle_error()
    assert plan(h, {A: 4}) == (11, 0, [A], [], True)
    h.handle_response(0, 12)
    # the leader closed the session (answer with id 0): full again
    plan(h, {})
    h.handle_response(0, 0)
    assert plan(h, {A: 4}) == (0, 0, [A], [], True)


def test_epoch_wraps_to_one():
    h = FetchSessionHandler(2)
    plan(h, {A: 1})
    h.handle_response(0, 5)
    h.epoch = (1 << 31) - 1
    plan(h, {A: 1})
    h.handle_response(0, 5)
    assert h.epoch == 1
