"""Share sessions (KIP-932): the partitions a member fetches from this broker, kept between
ShareFetch requests as fetch sessions keep them (KIP-227), keyed by (group id, member id).

Session epochs: 0 opens a session (a full ShareFetch; it may not carry acknowledgements),
-1 is the final request (acknowledgements only; the session closes and the member's
acquired records are released), and so does the connection the session was opened on closing
(Kafka's share session cache drops a connection's sessions when it disconnects, releasing the
member's records at once instead of at the acquisition lock's timeout), anything else must equal the session's current epoch
(``INVALID_SHARE_SESSION_EPOCH``), and a session that does not exist is
``SHARE_SESSION_NOT_FOUND``. Each accepted request moves the epoch on by one (wrapping to 1).
At most ``group.share.max.share.sessions`` sessions exist (``SHARE_SESSION_LIMIT_REACHED``).
Pure: no I/O.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kbroker.wire.error_codes import ErrorCode as E

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 0x7FFFFFFF

TopicPartition = tuple[uuid.UUID, int]


@dataclass
class ShareSession:
    """A share session (KIP-932): its member, epoch and partitions, on one connection."""
    group_id: str
    member_id: str
    epoch: int = 1
    partitions: dict[TopicPartition, None] = field(default_factory=dict)   # ordered set
    connection: object = None       # an opaque token of the connection that opened it


class ShareSessionError(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(E(code).name)
        self.code = int(code)


class ShareSessionCache:
    def __init__(self, max_sessions: int = 2000) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def open_or_continue(self, group_id: str, member_id: str, epoch: int,
                         *, fetch: bool) -> tuple[ShareSession, bool]:
        """The session a request with ``epoch`` works on, and whether it is new.
        Raises ShareSessionError. The epoch moves on here (the request is accepted)."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            if not fetch:
                raise ShareSessionError(E.INVALID_SHARE_SESSION_EPOCH)
            if key not in self.sessions and len(self.sessions) >= self.max_sessions:
                raise ShareSessionError(E.SHARE_SESSION_LIMIT_REACHED)
            s = self.sessions[key] = ShareSession(group_id, member_id)
            return s, True
        s = self.sessions.get(key)
        if s is None:
            raise ShareSessionError(E.SHARE_SESSION_NOT_FOUND)
        if epoch == FINAL_EPOCH:
            return s, False
        if epoch != s.epoch:
            raise ShareSessionError(E.INVALID_SHARE_SESSION_EPOCH)
        s.epoch = 1 if s.epoch >= MAX_EPOCH else s.epoch + 1
        return s, False

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.pop((group_id, member_id), None)

    def close_if_on(self, group_id: str, member_id: str, connection) -> ShareSession | None:
        """Close the session if ``connection`` opened it (a later open elsewhere replaced it)."""
        s = self.sessions.get((group_id, member_id))
        if s is None or s.connection is not connection:
            return None
        return self.sessions.pop((group_id, member_id))

    def of_member(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.get((group_id, member_id))
