"""The Raft core's messages on Kafka's wire (kbroker/raft/wire_map.py): the versions kbroker
sends are the highest Kafka 4.3.1 defines (what a Kafka 4.3.1 voter sends to a peer serving
them), and KIP-853's fields (directory ids, the leader's endpoints) and KIP-1166's
(the fetcher's high watermark) survive the round trip through the encoded bytes."""
from __future__ import annotations

import pytest

from kbroker.raft import messages as m
from kbroker.raft import wire_map as wm
from kbroker.raft.messages import OffsetAndEpoch
from kbroker.wire import messages as w

from .harness import identity

DIR2, EP1 = identity(2)[0], identity(1)[1]


def over_the_wire(request, api_key: int):
    """Encode at the version kbroker sends, decode as the receiver does."""
    version = wm.VERSIONS[api_key]
    cls = w.request_class(api_key)
    return cls.decode(memoryview(request.encode(version)), version, 0), version


@pytest.mark.parametrize("api_key", sorted(wm.VERSIONS))
def test_kbroker_sends_the_highest_version_kafka_4_3_1_defines(api_key):
    assert wm.VERSIONS[api_key] == w.request_class(api_key)._message.valid.high


def test_begin_quorum_epoch_v1_carries_the_leaders_endpoints_and_the_voters_directory():
    msg = m.BeginQuorumEpochRequest(leader_id=1, leader_epoch=4, voter_id=2, voter_directory_id=DIR2,
                                    leader_endpoints=EP1)
    back, version = over_the_wire(wm.begin_request_to_wire(msg, "cid"), wm.BEGIN_QUORUM_EPOCH)
    assert version == 1 and wm.begin_request_from_wire(back) == msg


def test_end_quorum_epoch_v1_names_candidates_with_directory_ids():
    msg = m.EndQuorumEpochRequest(leader_id=1, leader_epoch=4, preferred_successors=(3, 2),
                                  preferred_directory_ids=(None, DIR2), leader_endpoints=EP1)
    back, _ = over_the_wire(wm.end_request_to_wire(msg, "cid"), wm.END_QUORUM_EPOCH)
    assert wm.end_request_from_wire(back) == msg
    # a v0 request (PreferredSuccessors) is still read
    R = w.EndQuorumEpochRequest
    v0 = R(cluster_id="cid", topics=[R.TopicData(topic_name=wm.METADATA_TOPIC, partitions=[R.PartitionData(
        partition_index=0, leader_id=1, leader_epoch=4, preferred_successors=[3, 2])])])
    old = wm.end_request_from_wire(R.decode(memoryview(v0.encode(0)), 0, 0))
    assert old.preferred_successors == (3, 2) and old.leader_endpoints == ()


def test_vote_fetch_and_fetch_snapshot_carry_directory_ids_and_the_high_watermark():
    vote = m.VoteRequest(candidate_epoch=5, candidate_id=1, last_offset_epoch=4, last_offset=10, voter_id=2,
                         pre_vote=True, candidate_directory_id=identity(1)[0], voter_directory_id=DIR2)
    assert wm.vote_request_from_wire(over_the_wire(wm.vote_request_to_wire(vote, "c"), wm.VOTE)[0]) == vote
    for hw in (None, 0, 17):
        fetch = m.FetchRequest(replica_id=2, current_leader_epoch=4, fetch_offset=9, last_fetched_epoch=4,
                               max_wait_ms=500, max_bytes=1024, directory_id=DIR2, high_watermark=hw)
        back, version = over_the_wire(wm.fetch_request_to_wire(fetch, "c"), wm.FETCH)
        assert wm.fetch_request_from_wire(back, version) == fetch
    snap = m.FetchSnapshotRequest(replica_id=2, current_leader_epoch=4, snapshot_id=OffsetAndEpoch(9, 3),
                                  position=100, max_bytes=1024, directory_id=DIR2)
    back, _ = over_the_wire(wm.fetch_snapshot_request_to_wire(snap, "c"), wm.FETCH_SNAPSHOT)
    assert wm.fetch_snapshot_request_from_wire(back) == snap


@pytest.mark.parametrize("api_key, to_wire, answer", [
    (wm.VOTE, wm.vote_response_to_wire, m.VoteResponse(0, 1, 4, True)),
    (wm.BEGIN_QUORUM_EPOCH, wm.begin_response_to_wire, m.BeginQuorumEpochResponse(0, 1, 4)),
    (wm.END_QUORUM_EPOCH, wm.end_response_to_wire, m.EndQuorumEpochResponse(0, 1, 4)),
    (wm.FETCH, lambda a, e: wm.fetch_response_to_wire(a, -1, e),
     m.FetchResponse(6, -1, 0, m.LeaderIdAndEpoch(1, 4))),
    (wm.FETCH_SNAPSHOT, wm.fetch_snapshot_response_to_wire, m.FetchSnapshotResponse(6, m.LeaderIdAndEpoch(1, 4))),
])
def test_responses_name_the_leaders_endpoint_from_the_version_that_has_the_field(api_key, to_wire, answer):
    cls = w.response_class(api_key)
    since = wm.NODE_ENDPOINTS_SINCE[api_key]
    endpoints = wm.node_endpoints(cls, 1, ("node-1", 9093))
    resp = to_wire(answer, endpoints)
    back = cls.decode(memoryview(resp.encode(since)), since, 0)
    assert wm.learned_endpoints(back) == {1: ("node-1", 9093)}
    assert wm.node_endpoints(cls, -1, ("node-1", 9093)) == [] and wm.node_endpoints(cls, 1, None) == []
    # below that version the field does not exist; the answer leaves it out
    older = since - 1
    if older >= cls._message.valid.low:
        assert wm.learned_endpoints(cls.decode(memoryview(to_wire(answer, None).encode(older)), older, 0)) == {}
