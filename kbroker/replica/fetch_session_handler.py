"""The client side of incremental fetch sessions (KIP-227) for follower fetchers: what Kafka's
``FetchSessionHandler`` does for a ``ReplicaFetcherThread``.

A follower of many partitions of one leader would otherwise name every partition in every
Fetch, and the leader would answer every partition each time. With a session, the first
fetch is *full* (session id 0, epoch 0: "create a session"), and once the leader answers with
a session id the following fetches are *incremental*: they name only the partitions whose
fetch parameters changed (a new fetch offset after an append, a new leader epoch, a new log
start offset) or that are new to the session, list the partitions no longer wanted as
forgotten, and carry the next epoch (1, 2, …, wrapping to 1). The leader reads every
partition of the session and answers only those with something to say; partitions it leaves
out are unchanged and keep their cached position on the leader.

Rules kept here:

- a full fetch sends every wanted partition; its answer's session id (0: the leader keeps no
  session, the next fetch is full again) starts the session at epoch 1 and the session then
  holds exactly what was sent;
- ``FETCH_SESSION_ID_NOT_FOUND`` starts over with a new session (id 0, epoch 0);
  ``INVALID_FETCH_SESSION_EPOCH``, ``FETCH_SESSION_TOPIC_ID_ERROR``, any other top-level
  error and a failed round trip (the leader may or may not have applied the request) send
  the next fetch full with epoch 0 under the old id, which closes that session on the leader
  and opens a new one (Kafka's "close existing, attempt new");
- an incremental answer with session id 0 means the leader closed the session: the next
  fetch is full.

Pure: no I/O and no clock; the fetcher (:mod:`kbroker.replica.fetcher`) calls
:meth:`build` before each request and :meth:`handle_response` / :meth:`handle_error` after.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable

from kbroker.replica.fetch_session import FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch
from kbroker.wire.error_codes import ErrorCode


@dataclass(frozen=True)
class FetchPlan:
    """One request: the session id and epoch to send, the partitions to name (in the order
    wanted), the partitions to forget, and whether it is a full fetch."""

    session_id: int
    epoch: int
    send: list
    forgotten: list
    full: bool


class FetchSessionHandler:
    """One follower's session with one leader. ``wanted`` maps a partition key to its fetch
    parameters (any comparable value: the fetcher uses (fetch offset, current leader epoch,
    last fetched epoch, log start offset, max bytes))."""

    def __init__(self, leader_id: int):
        self.leader_id = leader_id
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self.session: dict[Hashable, object] = {}      # what the leader's session holds
        self._pending: tuple[FetchPlan, dict] | None = None
        self.stats = {"full": 0, "incremental": 0, "partitions_sent": 0, "sessions_opened": 0,
                      "resets": 0}

    @property
    def in_session(self) -> bool:
        return self.session_id != INVALID_SESSION_ID and self.epoch not in (INITIAL_EPOCH, FINAL_EPOCH)

    def build(self, wanted: dict) -> FetchPlan:
        if not self.in_session:
            plan = FetchPlan(self.session_id, INITIAL_EPOCH, list(wanted), [], True)
            self.stats["full"] += 1
        else:
            send = [k for k, v in wanted.items() if self.session.get(k, _MISSING) != v]
            forgotten = [k for k in self.session if k not in wanted]
            plan = FetchPlan(self.session_id, self.epoch, send, forgotten, False)
            self.stats["incremental"] += 1
        self.stats["partitions_sent"] += len(plan.send)
        self._pending = (plan, dict(wanted))
        return plan

    def handle_response(self, error_code: int, session_id: int) -> bool:
        """Apply a Fetch answer's top level; False when the answer carries no partition data
        to use (a top-level error)."""
        plan, wanted = self._pending or (None, {})
        self._pending = None
        if error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
            self._reset(close=False)
            return False
        if error_code:
            self._reset(close=True)
            return False
        if plan is None:
            return True
        if plan.full:
            self.session = dict(wanted)
            if session_id == INVALID_SESSION_ID:
                self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
            else:
                self.session_id, self.epoch = session_id, 1
                self.stats["sessions_opened"] += 1
            return True
        if session_id == INVALID_SESSION_ID:
            # the leader closed the session (it was left empty): start again
            self.session_id, self.epoch, self.session = INVALID_SESSION_ID, INITIAL_EPOCH, {}
            return True
        for k in plan.forgotten:
            self.session.pop(k, None)
        for k in plan.send:
            self.session[k] = wanted[k]
        self.epoch = next_epoch(self.epoch)
        return True

    def handle_error(self) -> None:
        """The round trip failed: the leader may have applied the request or not."""
        self._pending = None
        self._reset(close=True)

    def _reset(self, *, close: bool) -> None:
        self.stats["resets"] += 1
        if not close:
            self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self.session = {}

    def statistics(self) -> dict:
        return {**self.stats, "session_id": self.session_id, "epoch": self.epoch,
                "partitions": len(self.session)}


class _Missing:
    pass


_MISSING = _Missing()
