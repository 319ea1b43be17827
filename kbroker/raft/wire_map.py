"""The Raft core's messages on Kafka's wire, and its log entries as record batches.

Sans-I/O (the design's rule 1): pure conversions between ``kbroker.raft.messages`` and the
generated ``kbroker.wire.messages`` classes, for the one partition ``__cluster_metadata-0``:

==========================  =======  ===========================================
core message                api key  wire version used between kbroker nodes
==========================  =======  ===========================================
VoteRequest/Response        52       v2 (KIP-996 ``PreVote``; v1's directory ids
                                     are sent when the core knows them)
BeginQuorumEpoch            53       v1 (KIP-853: the receiver's directory id and the
                                     leader's ``LeaderEndpoints``)
EndQuorumEpoch              54       v1 (``PreferredCandidates`` with directory ids,
                                     ``LeaderEndpoints``)
Fetch                       1        v18 (topic id ``METADATA_TOPIC_ID``, names up
                                     to v12; KIP-595 tagged fields
                                     ``diverging_epoch``, ``current_leader``,
                                     ``snapshot_id``; ``replica_id`` >= 0; KIP-853
                                     ``ReplicaDirectoryId``; KIP-1166 the
                                     fetcher's ``HighWatermark``)
FetchSnapshot               59       v1 (``ReplicaDirectoryId``)
==========================  =======  ===========================================

These are the versions Kafka 4.3.1 sends (the highest both sides serve); the receiving
handlers accept every version Kafka 4.3.1 advertises. Responses at the flexible versions
carry ``NodeEndpoints`` (the leader's endpoint on the listener asked) when the answering
handler passes it (``node_endpoints``); ``leader_endpoints`` / ``learned_endpoints`` read a
leader's announced endpoints back for the driver.

``correlation_id`` of the core is not a body field: the driver keeps it beside the request.

Log entries ↔ v2 record batches (the metadata log's on-disk and Fetch format): consecutive
entries of one epoch and kind form one batch whose ``partition_leader_epoch`` is that
epoch; data entries are records with a null key and the framed metadata record as value;
control entries (the leader's ``LeaderChangeMessage``, KIP-853's ``VotersRecord`` and
``KRaftVersionRecord``) are control batches whose record keys are the control keys
``(0, type)``.
"""
from __future__ import annotations

import uuid
from typing import Iterable, Iterator, Sequence

from kbroker.wire import messages as w
from kbroker.wire import records as rb

from . import messages as m
from .control import LEADER_CHANGE, control_key, control_type, uuid_from_kafka, uuid_to_kafka
from .messages import Entry, LeaderIdAndEpoch, OffsetAndEpoch

METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = uuid.UUID(int=1)   # Kafka's fixed id of __cluster_metadata (Fetch v13+)
METADATA_PARTITION = 0

VOTE, BEGIN_QUORUM_EPOCH, END_QUORUM_EPOCH, DESCRIBE_QUORUM, FETCH, FETCH_SNAPSHOT = 52, 53, 54, 55, 1, 59
VERSIONS = {VOTE: 2, BEGIN_QUORUM_EPOCH: 1, END_QUORUM_EPOCH: 1, FETCH: 18, FETCH_SNAPSHOT: 1}
NO_HIGH_WATERMARK = (1 << 63) - 1     # Fetch v18's HighWatermark default: not sent
# first version whose response carries NodeEndpoints (tagged)
NODE_ENDPOINTS_SINCE = {VOTE: 1, BEGIN_QUORUM_EPOCH: 1, END_QUORUM_EPOCH: 1, FETCH: 16, FETCH_SNAPSHOT: 1}


class NotForRaft(ValueError):
    """A wire message that does not address ``__cluster_metadata-0``."""


# ----------------------------------------------------------------- entries <-> batches

def entries_to_batches(entries: Sequence[Entry], timestamp: int = -1) -> bytes:
    """Record batches holding ``entries`` (contiguous offsets), one batch per run of the
    same epoch and kind."""
    out = bytearray()
    i = 0
    n = len(entries)
    while i < n:
        first = entries[i]
        j = i + 1
        while (j < n and entries[j].epoch == first.epoch and entries[j].control == first.control):
            j += 1
        run = entries[i:j]
        if first.control:
            recs = [(control_key(e.control_type), e.payload, (), timestamp) for e in run]
        else:
            recs = [(None, e.payload, (), timestamp) for e in run]
        out += rb.build_batch(recs, base_offset=first.offset, partition_leader_epoch=first.epoch,
                              is_control=first.control)
        i = j
    return bytes(out)


def batches_to_entries(buf, *, verify: bool = False) -> Iterator[Entry]:
    """The entries of whole v2 batches back to back (a truncated last batch is ignored:
    Fetch answers may end in a partial batch)."""
    view = memoryview(buf)
    pos = 0
    size = len(view)
    while size - pos >= rb.BATCH_HEADER_SIZE:
        header = rb.parse_header(view, pos)
        if pos + header.size > size:
            break
        epoch = header.partition_leader_epoch
        for rec in rb.decode_records(view, pos, header, verify=verify):
            if header.is_control:
                ctype = control_type(rec.key)
                yield Entry(rec.offset, epoch, bytes(rec.value or b""), control=True,
                            control_type=ctype if ctype >= 0 else LEADER_CHANGE)
            else:
                yield Entry(rec.offset, epoch, bytes(rec.value or b""))
        pos += header.size


# ----------------------------------------------------------------- requests

def _topic_partition(topics, name_attr: str = "topic_name", index_attr: str = "partition_index"):
    for t in topics or ():
        if getattr(t, name_attr) == METADATA_TOPIC or getattr(t, "topic_id", None) == METADATA_TOPIC_ID:
            for p in t.partitions or ():
                if getattr(p, index_attr) == METADATA_PARTITION:
                    return p
    raise NotForRaft("the request does not address __cluster_metadata-0")


def _endpoints_to_wire(cls, endpoints):
    return [cls(name=n, host=h, port=p) for n, h, p in endpoints]


def _endpoints_from_wire(items) -> tuple:
    return tuple((e.name, e.host, e.port) for e in items or ())


def node_endpoints(response_cls, node_id: int, addr) -> list:
    """``NodeEndpoints`` of a response naming leader ``node_id`` at ``addr`` ((host, port) of
    the listener the request came in on; None: unknown, nothing listed)."""
    if node_id < 0 or addr is None:
        return []
    return [response_cls.NodeEndpoint(node_id=node_id, host=addr[0], port=addr[1])]


def learned_endpoints(resp) -> dict[int, tuple[str, int]]:
    """node id -> (host, port) from a response's ``NodeEndpoints`` (empty if none)."""
    return {e.node_id: (e.host, e.port) for e in getattr(resp, "node_endpoints", None) or ()}


def vote_request_to_wire(msg: m.VoteRequest, cluster_id: str | None):
    R = w.VoteRequest
    return R(cluster_id=cluster_id, voter_id=msg.voter_id, topics=[R.TopicData(
        topic_name=METADATA_TOPIC, partitions=[R.PartitionData(
            partition_index=0, replica_epoch=msg.candidate_epoch, replica_id=msg.candidate_id,
            replica_directory_id=_dir_uuid(msg.candidate_directory_id),
            voter_directory_id=_dir_uuid(msg.voter_directory_id),
            last_offset_epoch=msg.last_offset_epoch, last_offset=msg.last_offset,
            pre_vote=msg.pre_vote)])])


def vote_request_from_wire(req) -> m.VoteRequest:
    p = _topic_partition(req.topics)
    # Kafka 4 (KIP-996) names the candidate's fields Replica*; PreVote is v2+ (False below)
    return m.VoteRequest(candidate_epoch=p.replica_epoch, candidate_id=p.replica_id,
                         last_offset_epoch=p.last_offset_epoch, last_offset=p.last_offset,
                         voter_id=getattr(req, "voter_id", -1),
                         pre_vote=bool(getattr(p, "pre_vote", False)),
                         candidate_directory_id=_dir_text(getattr(p, "replica_directory_id", None)),
                         voter_directory_id=_dir_text(getattr(p, "voter_directory_id", None)))


def vote_response_to_wire(msg: m.VoteResponse, endpoints: list | None = None):
    R = w.VoteResponse
    extra = {"node_endpoints": endpoints} if endpoints else {}
    return R(error_code=0, topics=[R.TopicData(topic_name=METADATA_TOPIC, partitions=[R.PartitionData(
        partition_index=0, error_code=msg.error_code, leader_id=msg.leader_id,
        leader_epoch=msg.leader_epoch, vote_granted=msg.vote_granted)])], **extra)


def vote_response_from_wire(resp, correlation_id: int) -> m.VoteResponse:
    p = _topic_partition(resp.topics)
    return m.VoteResponse(error_code=p.error_code or resp.error_code, leader_id=p.leader_id,
                          leader_epoch=p.leader_epoch, vote_granted=p.vote_granted,
                          correlation_id=correlation_id)


def begin_request_to_wire(msg: m.BeginQuorumEpochRequest, cluster_id: str | None):
    R = w.BeginQuorumEpochRequest
    return R(cluster_id=cluster_id, voter_id=msg.voter_id, topics=[R.TopicData(
        topic_name=METADATA_TOPIC, partitions=[R.PartitionData(
            partition_index=0, voter_directory_id=_dir_uuid(msg.voter_directory_id),
            leader_id=msg.leader_id, leader_epoch=msg.leader_epoch)])],
             leader_endpoints=_endpoints_to_wire(R.LeaderEndpoint, msg.leader_endpoints))


def begin_request_from_wire(req) -> m.BeginQuorumEpochRequest:
    p = _topic_partition(req.topics)
    return m.BeginQuorumEpochRequest(leader_id=p.leader_id, leader_epoch=p.leader_epoch,
                                     voter_id=getattr(req, "voter_id", -1),
                                     voter_directory_id=_dir_text(getattr(p, "voter_directory_id", None)),
                                     leader_endpoints=_endpoints_from_wire(getattr(req, "leader_endpoints", None)))


def _epoch_response_to_wire(cls, msg, endpoints=None):
    extra = {"node_endpoints": endpoints} if endpoints else {}
    return cls(error_code=0, topics=[cls.TopicData(topic_name=METADATA_TOPIC, partitions=[cls.PartitionData(
        partition_index=0, error_code=msg.error_code, leader_id=msg.leader_id,
        leader_epoch=msg.leader_epoch)])], **extra)


def begin_response_to_wire(msg: m.BeginQuorumEpochResponse, endpoints: list | None = None):
    return _epoch_response_to_wire(w.BeginQuorumEpochResponse, msg, endpoints)


def begin_response_from_wire(resp, correlation_id: int) -> m.BeginQuorumEpochResponse:
    p = _topic_partition(resp.topics)
    return m.BeginQuorumEpochResponse(error_code=p.error_code or resp.error_code, leader_id=p.leader_id,
                                      leader_epoch=p.leader_epoch, correlation_id=correlation_id)


def end_request_to_wire(msg: m.EndQuorumEpochRequest, cluster_id: str | None):
    """At v1 (``VERSIONS``): ``PreferredCandidates`` (v0's ``PreferredSuccessors`` is gone)."""
    R = w.EndQuorumEpochRequest
    P = R.PartitionData
    dirs = tuple(msg.preferred_directory_ids) + (None,) * len(msg.preferred_successors)
    return R(cluster_id=cluster_id, topics=[R.TopicData(topic_name=METADATA_TOPIC, partitions=[P(
        partition_index=0, leader_id=msg.leader_id, leader_epoch=msg.leader_epoch,
        preferred_candidates=[P.ReplicaInfo(candidate_id=c, candidate_directory_id=_dir_uuid(d))
                              for c, d in zip(msg.preferred_successors, dirs)])])],
             leader_endpoints=_endpoints_to_wire(R.LeaderEndpoint, msg.leader_endpoints))


def end_request_from_wire(req) -> m.EndQuorumEpochRequest:
    p = _topic_partition(req.topics)
    cands = tuple(p.preferred_candidates or ())
    succ = tuple(p.preferred_successors or ()) or tuple(c.candidate_id for c in cands)
    return m.EndQuorumEpochRequest(leader_id=p.leader_id, leader_epoch=p.leader_epoch,
                                   preferred_successors=succ,
                                   preferred_directory_ids=tuple(_dir_text(c.candidate_directory_id) for c in cands),
                                   leader_endpoints=_endpoints_from_wire(getattr(req, "leader_endpoints", None)))


def end_response_to_wire(msg: m.EndQuorumEpochResponse, endpoints: list | None = None):
    return _epoch_response_to_wire(w.EndQuorumEpochResponse, msg, endpoints)


def end_response_from_wire(resp, correlation_id: int) -> m.EndQuorumEpochResponse:
    p = _topic_partition(resp.topics)
    return m.EndQuorumEpochResponse(error_code=p.error_code or resp.error_code, leader_id=p.leader_id,
                                    leader_epoch=p.leader_epoch, correlation_id=correlation_id)


def fetch_request_to_wire(msg: m.FetchRequest, cluster_id: str | None):
    R = w.FetchRequest
    # sent at VERSIONS[FETCH] (v15+): the replica id lives in ReplicaState; v18's HighWatermark
    # lets the leader answer at once when the fetcher is behind on it (KIP-1166)
    return R(cluster_id=cluster_id, replica_state=R.ReplicaState(replica_id=msg.replica_id, replica_epoch=-1),
             max_wait_ms=msg.max_wait_ms, min_bytes=0,
             max_bytes=msg.max_bytes, isolation_level=0, session_id=0, session_epoch=-1,
             topics=[R.FetchTopic(topic=METADATA_TOPIC, partitions=[R.FetchPartition(
                 partition=0, current_leader_epoch=msg.current_leader_epoch, fetch_offset=msg.fetch_offset,
                 last_fetched_epoch=msg.last_fetched_epoch, log_start_offset=msg.log_start_offset,
                 partition_max_bytes=msg.max_bytes, replica_directory_id=_dir_uuid(msg.directory_id),
                 high_watermark=NO_HIGH_WATERMARK if msg.high_watermark is None else msg.high_watermark)],
                 topic_id=METADATA_TOPIC_ID)],
             forgotten_topics_data=[], rack_id="")


def _dir_uuid(text: str | None) -> uuid.UUID:
    return uuid_from_kafka(text) if text else uuid.UUID(int=0)


def _dir_text(u) -> str | None:
    """A wire directory id as Kafka's text form; None for the zero UUID (unknown)."""
    return uuid_to_kafka(u) if u is not None and u.int else None


def is_raft_fetch(req, version: int) -> bool:
    """A Fetch from a replica of the metadata quorum (``replica_id`` >= 0) for
    ``__cluster_metadata``; a client's fetch (replica id -1) is not."""
    replica = req.replica_state.replica_id if version >= 15 and req.replica_state else req.replica_id
    return replica >= 0 and any(t.topic == METADATA_TOPIC or t.topic_id == METADATA_TOPIC_ID
                                for t in req.topics or ())


def fetch_request_from_wire(req, version: int) -> m.FetchRequest:
    p = _topic_partition(req.topics, "topic", "partition")
    replica = req.replica_state.replica_id if version >= 15 and req.replica_state else req.replica_id
    dir_id = getattr(p, "replica_directory_id", None) if version >= 17 else None
    hw = getattr(p, "high_watermark", NO_HIGH_WATERMARK) if version >= 18 else NO_HIGH_WATERMARK
    return m.FetchRequest(replica_id=replica, current_leader_epoch=p.current_leader_epoch,
                          fetch_offset=p.fetch_offset, last_fetched_epoch=p.last_fetched_epoch,
                          log_start_offset=p.log_start_offset, max_wait_ms=req.max_wait_ms,
                          max_bytes=min(req.max_bytes, p.partition_max_bytes),
                          directory_id=uuid_to_kafka(dir_id) if dir_id is not None and dir_id.int else None,
                          high_watermark=None if hw == NO_HIGH_WATERMARK else max(hw, -1))


def fetch_response_to_wire(msg: m.FetchResponse, timestamp: int = -1, endpoints: list | None = None):
    R = w.FetchResponse
    pd = R.PartitionData(
        partition_index=0, error_code=msg.error_code, high_watermark=msg.high_watermark,
        last_stable_offset=msg.high_watermark, log_start_offset=msg.log_start_offset,
        current_leader=R.LeaderIdAndEpoch(leader_id=msg.current_leader.leader_id,
                                          leader_epoch=msg.current_leader.leader_epoch),
        aborted_transactions=None, preferred_read_replica=-1,
        records=entries_to_batches(msg.records, timestamp) if msg.records else b"")
    if msg.diverging_epoch is not None:
        pd.diverging_epoch = R.EpochEndOffset(epoch=msg.diverging_epoch.epoch,
                                              end_offset=msg.diverging_epoch.end_offset)
    if msg.snapshot_id is not None:
        pd.snapshot_id = R.SnapshotId(end_offset=msg.snapshot_id.end_offset, epoch=msg.snapshot_id.epoch)
    extra = {"node_endpoints": endpoints} if endpoints else {}
    return R(throttle_time_ms=0, error_code=0, session_id=0,
             responses=[R.FetchableTopicResponse(topic=METADATA_TOPIC, topic_id=METADATA_TOPIC_ID,
                                                 partitions=[pd])], **extra)


def fetch_response_from_wire(resp, correlation_id: int) -> m.FetchResponse:
    p = _topic_partition(resp.responses, "topic", "partition_index")
    leader = p.current_leader
    diverging = p.diverging_epoch
    snap = p.snapshot_id
    div = None
    if diverging is not None and diverging.epoch >= 0 and diverging.end_offset >= 0:
        div = OffsetAndEpoch(diverging.end_offset, diverging.epoch)
    sid = None
    if snap is not None and snap.end_offset >= 0 and snap.epoch >= 0:
        sid = OffsetAndEpoch(snap.end_offset, snap.epoch)
    records = tuple(batches_to_entries(p.records, verify=True)) if p.records else ()
    return m.FetchResponse(
        error_code=p.error_code or resp.error_code, high_watermark=p.high_watermark,
        log_start_offset=p.log_start_offset,
        current_leader=LeaderIdAndEpoch(leader.leader_id, leader.leader_epoch) if leader is not None
        else LeaderIdAndEpoch(),
        diverging_epoch=div, snapshot_id=sid, records=records, correlation_id=correlation_id)


def fetch_snapshot_request_to_wire(msg: m.FetchSnapshotRequest, cluster_id: str | None):
    R = w.FetchSnapshotRequest
    return R(cluster_id=cluster_id, replica_id=msg.replica_id, max_bytes=msg.max_bytes,
             topics=[R.TopicSnapshot(name=METADATA_TOPIC, partitions=[R.PartitionSnapshot(
                 partition=0, current_leader_epoch=msg.current_leader_epoch,
                 snapshot_id=R.SnapshotId(end_offset=msg.snapshot_id.end_offset, epoch=msg.snapshot_id.epoch),
                 position=msg.position, replica_directory_id=_dir_uuid(msg.directory_id))])])


def fetch_snapshot_request_from_wire(req) -> m.FetchSnapshotRequest:
    p = _topic_partition(req.topics, "name", "partition")
    return m.FetchSnapshotRequest(replica_id=req.replica_id, current_leader_epoch=p.current_leader_epoch,
                                  snapshot_id=OffsetAndEpoch(p.snapshot_id.end_offset, p.snapshot_id.epoch),
                                  position=p.position, max_bytes=req.max_bytes,
                                  directory_id=_dir_text(getattr(p, "replica_directory_id", None)))


def fetch_snapshot_response_to_wire(msg: m.FetchSnapshotResponse, endpoints: list | None = None):
    R = w.FetchSnapshotResponse
    sid = msg.snapshot_id or OffsetAndEpoch(-1, -1)
    extra = {"node_endpoints": endpoints} if endpoints else {}
    return R(throttle_time_ms=0, error_code=0, **extra, topics=[R.TopicSnapshot(name=METADATA_TOPIC, partitions=[
        R.PartitionSnapshot(index=0, error_code=msg.error_code,
                            snapshot_id=R.SnapshotId(end_offset=sid.end_offset, epoch=sid.epoch),
                            current_leader=R.LeaderIdAndEpoch(leader_id=msg.current_leader.leader_id,
                                                              leader_epoch=msg.current_leader.leader_epoch),
                            size=msg.size, position=msg.position,
                            unaligned_records=bytes(msg.unaligned_records))])])


def fetch_snapshot_response_from_wire(resp, correlation_id: int) -> m.FetchSnapshotResponse:
    p = _topic_partition(resp.topics, "name", "index")
    sid = p.snapshot_id
    leader = p.current_leader
    return m.FetchSnapshotResponse(
        error_code=p.error_code or resp.error_code,
        current_leader=LeaderIdAndEpoch(leader.leader_id, leader.leader_epoch) if leader is not None
        else LeaderIdAndEpoch(),
        snapshot_id=OffsetAndEpoch(sid.end_offset, sid.epoch) if sid is not None and sid.end_offset >= 0 else None,
        size=p.size, position=p.position, unaligned_records=bytes(p.unaligned_records or b""),
        correlation_id=correlation_id)


# request type -> (api key, to-wire, response-from-wire)
OUTBOUND = {
    m.VoteRequest: (VOTE, vote_request_to_wire, vote_response_from_wire),
    m.BeginQuorumEpochRequest: (BEGIN_QUORUM_EPOCH, begin_request_to_wire, begin_response_from_wire),
    m.EndQuorumEpochRequest: (END_QUORUM_EPOCH, end_request_to_wire, end_response_from_wire),
    m.FetchRequest: (FETCH, fetch_request_to_wire, fetch_response_from_wire),
    m.FetchSnapshotRequest: (FETCH_SNAPSHOT, fetch_snapshot_request_to_wire, fetch_snapshot_response_from_wire),
}

RESPONSE_TO_WIRE = {
    m.VoteResponse: vote_response_to_wire,
    m.BeginQuorumEpochResponse: begin_response_to_wire,
    m.EndQuorumEpochResponse: end_response_to_wire,
    m.FetchResponse: fetch_response_to_wire,
    m.FetchSnapshotResponse: fetch_snapshot_response_to_wire,
}


def source_of(msg) -> int:
    """The replica that sent an inbound request (the core's ``step`` source)."""
    if isinstance(msg, m.VoteRequest):
        return msg.candidate_id
    if isinstance(msg, (m.BeginQuorumEpochRequest, m.EndQuorumEpochRequest)):
        return msg.leader_id
    return msg.replica_id


def is_response(msg) -> bool:
    return type(msg) in RESPONSE_TO_WIRE


def iter_entries(chunks: Iterable[bytes]) -> Iterator[Entry]:
    for c in chunks:
        yield from batches_to_entries(c)
