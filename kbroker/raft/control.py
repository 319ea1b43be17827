"""KRaft control records written by the Raft layer itself (KIP-595, KIP-853).

A leader starts its epoch with a ``LeaderChangeMessage`` control record (control type 2):
the new leader, the voters and the voters that granted its election. The value is the
message serialized at version 0 (its own ``Version`` field says 0), as Kafka's
``ControlRecordUtils`` writes it; the record key is the control key
``(version int16 0, type int16 2)``. Pure: encoding only, no I/O.

A dynamic quorum (KIP-853, ``kraft.version`` 1) keeps its voter set in the log: a
``VotersRecord`` (control type 6) holds every voter's id, directory id, endpoints and
supported kraft versions; a ``KRaftVersionRecord`` (type 5) the finalized ``kraft.version``.
A snapshot of such a quorum starts with one control batch holding the snapshot header (3),
the ``KRaftVersionRecord`` and the ``VotersRecord``, exactly as Kafka's formatter writes the
``00000000000000000000-0000000000.checkpoint`` of ``--standalone``/``--initial-controllers``.
"""
from __future__ import annotations

import base64
import struct
import uuid
from dataclasses import dataclass

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"

LEADER_CHANGE = 2
SNAPSHOT_HEADER = 3
SNAPSHOT_FOOTER = 4
KRAFT_VERSION = 5
VOTERS = 6
_KEY = struct.Struct(">hh")


@dataclass(frozen=True, slots=True)
class Voter:
    """One voter of a dynamic quorum: Kafka's ``ReplicaKey`` (id, directory id) with its
    endpoints ``((listener name, host, port), ...)`` and supported kraft versions."""

    voter_id: int
    directory_id: str = ZERO_UUID
    endpoints: tuple = ()
    kraft_min: int = 0
    kraft_max: int = 1


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


def control_type(key) -> int:
    """The control type of a control record's key (-1 if the key is not one)."""
    if key is None or len(key) < 4:
        return -1
    return _KEY.unpack_from(bytes(key[:4]))[1]


def voters_value(voters) -> bytes:
    """A ``VotersRecord`` (v0) value for ``voters`` (iterable of ``Voter``), sorted by id."""
    from kbroker.wire import messages
    R = messages.VotersRecord
    return R(version=0, voters=[R.Voter(
        voter_id=v.voter_id, voter_directory_id=_uuid(v.directory_id),
        endpoints=[R.Endpoint(name=n, host=h, port=p) for n, h, p in v.endpoints],
        k_raft_version_feature=R.KRaftVersionFeature(min_supported_version=v.kraft_min,
                                                     max_supported_version=v.kraft_max))
        for v in sorted(voters, key=lambda v: v.voter_id)]).encode(0)


def decode_voters(value) -> dict[int, Voter]:
    """voter id -> ``Voter`` of a ``VotersRecord`` value (ValueError if it is not one)."""
    from kbroker.wire import messages
    try:
        rec = messages.VotersRecord.decode(bytes(value), 0)
    except Exception as e:  # noqa: BLE001 - any decoding failure is a bad record
        raise ValueError(f"not a VotersRecord: {e}") from None
    out = {}
    for v in rec.voters or ():
        out[v.voter_id] = Voter(v.voter_id, uuid_to_kafka(v.voter_directory_id),
                                tuple((e.name, e.host, e.port) for e in v.endpoints or ()),
                                v.k_raft_version_feature.min_supported_version if v.k_raft_version_feature else 0,
                                v.k_raft_version_feature.max_supported_version if v.k_raft_version_feature else 0)
    return out


def kraft_version_value(level: int) -> bytes:
    from kbroker.wire import messages
    return messages.KRaftVersionRecord(version=0, k_raft_version=level).encode(0)


def _uuid(text: str) -> uuid.UUID:
    """Kafka's base64 form of a UUID as the codec's ``uuid.UUID``."""
    return uuid_from_kafka(text)


def uuid_from_kafka(text: str) -> uuid.UUID:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"not a Kafka uuid: {text!r}")
    return uuid.UUID(bytes=raw)


def uuid_to_kafka(u) -> str:
    if isinstance(u, str):
        return u
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode()


def snapshot_prefix(voters, timestamp: int = -1) -> bytes:
    """The leading control batch of a dynamic quorum's snapshot: header, kraft.version 1
    and the voter set (offsets 0-2, as Kafka's formatter writes them)."""
    from kbroker.wire import messages
    from kbroker.wire import records as rb
    header = messages.SnapshotHeaderRecord(version=0, last_contained_log_timestamp=max(0, timestamp))
    return rb.build_batch([(control_key(SNAPSHOT_HEADER), header.encode(0), (), timestamp),
                           (control_key(KRAFT_VERSION), kraft_version_value(1), (), timestamp),
                           (control_key(VOTERS), voters_value(voters), (), timestamp)],
                          base_offset=0, is_control=True)


def snapshot_voters(data) -> dict[int, Voter] | None:
    """The voter set held by a snapshot's leading control batches (None: a static quorum's
    snapshot, which holds none)."""
    from kbroker.wire import records as rb
    view = memoryview(data)
    pos = 0
    found = None
    while len(view) - pos >= rb.BATCH_HEADER_SIZE:
        try:
            header = rb.parse_header(view, pos)
        except Exception:  # noqa: BLE001 - not a batch: the application's own bytes
            return found
        if header.magic != 2 or not header.is_control or pos + header.size > len(view):
            return found
        try:
            recs = list(rb.decode_records(view, pos, header, verify=True))
        except Exception:  # noqa: BLE001
            return found
        for rec in recs:
            if control_type(rec.key) == VOTERS:
                found = decode_voters(rec.value)
        pos += header.size
    return found
