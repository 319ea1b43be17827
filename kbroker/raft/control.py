"""KRaft control records written by the Raft layer itself (KIP-595).

A leader starts its epoch with a ``LeaderChangeMessage`` control record (control type 2):
the new leader, the voters and the voters that granted its election. The value is the
message serialized at version 0 (its own ``Version`` field says 0), as Kafka's
``ControlRecordUtils`` writes it; the record key is the control key
``(version int16 0, type int16 2)``. Pure: encoding only, no I/O.
"""
from __future__ import annotations

import struct

LEADER_CHANGE = 2
SNAPSHOT_HEADER = 3
SNAPSHOT_FOOTER = 4
_KEY = struct.Struct(">hh")


def control_key(control_type: int) -> bytes:
    return _KEY.pack(0, control_type)


def leader_change_value(leader_id: int, voters, granting) -> bytes:
    from kbroker.wire import messages
    Voter = messages.LeaderChangeMessage.Voter
    msg = messages.LeaderChangeMessage(
        version=0, leader_id=leader_id,
        voters=[Voter(voter_id=v) for v in sorted(voters)],
        granting_voters=[Voter(voter_id=v) for v in sorted(set(granting) & set(voters))])
    return msg.encode(0)


def decode_leader_change(value: bytes):
    from kbroker.wire import messages
    return messages.LeaderChangeMessage.decode(value, 0)
