"""The share APIs frame by frame against a kbroker process: ShareGroupHeartbeat and
ShareGroupDescribe, ShareFetch share-session epochs and piggy-backed acknowledgements,
ShareAcknowledge, and the share coordinator APIs (83–87) round-tripping a state through
``__share_group_state``."""
from __future__ import annotations

import socket
import struct
import uuid

import pytest

import confluent_kafka as ck
from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.wire.protocol import decode_response, encode_request
from tests.share.test_share_consumers import OVERRIDES
from tests.support.broker_proc import BrokerProcess
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow


class Client:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.corr = 0

    def __call__(self, name, version, **fields):
        cls = messages.get(name + "Request")
        self.corr += 1
        self.s.sendall(encode_request(cls._message.api_key, version, self.corr, "share-test",
                                      cls(**fields)))
        size = struct.unpack(">i", self._read(4))[0]
        corr, resp = decode_response(self._read(size), cls._message.api_key, version)
        assert corr == self.corr
        return resp

    def _read(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            assert chunk, "connection closed"
            buf += chunk
        return buf


def _if(answer, ok):
    """``answer`` when ``ok(answer)``, else None (a wait_for predicate that keeps the answer)."""
    return answer if ok(answer) else None


def _answered(hb):
    """A heartbeat's answer unless its coordinator was still loading or elsewhere."""
    return _if(hb, lambda r: r.error_code not in (E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR))


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("share") / "data", overrides=OVERRIDES)
    b.start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result()
        p = ck.Producer({"bootstrap.servers": b.bootstrap})
        for i in range(5):
            p.produce("t", f"x{i}".encode())
        p.flush()
        c = Client(b.port)
        md = c("Metadata", 12, topics=[messages.MetadataRequest.MetadataRequestTopic(
            topic_id=uuid.UUID(int=0), name="t")], allow_auto_topic_creation=False,
            include_topic_authorized_operations=False)
        yield b, c, md.topics[0].topic_id
    finally:
        b.stop()


F = messages.ShareFetchRequest


def fetch(c, tid, epoch, acks=None, member="m1", max_wait_ms=200):
    part = F.FetchPartition(partition_index=0, partition_max_bytes=0,
                            acknowledgement_batches=acks or [])
    return c("ShareFetch", 1, group_id="sg", member_id=member, share_session_epoch=epoch,
             max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, max_records=500,
             batch_size=500, topics=[F.FetchTopic(topic_id=tid, partitions=[part])],
             forgotten_topics_data=[])


def test_heartbeat_describe_and_share_fetch_sessions(env):
    b, c, tid = env
    fc = c("FindCoordinator", 4, key_type=0, coordinator_keys=["sg"])     # creates __consumer_offsets
    assert fc.coordinators[0].error_code == 0
    # the coordinator may still be loading __consumer_offsets: asked again, as a client does
    hb = wait_for(lambda: _answered(c("ShareGroupHeartbeat", 1, group_id="sg", member_id="m1",
                                      member_epoch=0, rack_id=None, subscribed_topic_names=["t"])),
                  what="a ShareGroupHeartbeat answered by a loaded coordinator")
    # as Kafka 4.3.1: epoch 2 and an empty assignment, then the background assignment
    assert (hb.error_code, hb.member_epoch, hb.assignment.topic_partitions) == (0, 2, [])
    epoch = hb.member_epoch
    hb = wait_for(lambda: _if(c("ShareGroupHeartbeat", 1, group_id="sg", member_id="m1",
                                member_epoch=epoch, rack_id=None, subscribed_topic_names=None),
                              lambda r: r.assignment is not None),
                  what="m1's background assignment", interval=0.2)
    assert hb.member_epoch == 3
    assert [(tp.topic_id, list(tp.partitions)) for tp in hb.assignment.topic_partitions] == [(tid, [0])]
    d = c("ShareGroupDescribe", 1, group_ids=["sg", "nope"], include_authorized_operations=False)
    assert [g.error_code for g in d.groups] == [0, E.GROUP_ID_NOT_FOUND]
    assert d.groups[0].assignor_name == "simple" and d.groups[0].members[0].member_id == "m1"
    # unknown session / bad epochs
    assert fetch(c, tid, 3).error_code == E.SHARE_SESSION_NOT_FOUND
    ack = F.AcknowledgementBatch(first_offset=0, last_offset=0, acknowledge_types=[1])
    assert fetch(c, tid, 0, acks=[ack]).error_code == E.INVALID_REQUEST
    # share groups start at latest: nothing of the 5 existing records is delivered
    r = fetch(c, tid, 0)
    assert r.error_code == 0 and r.responses[0].partitions[0].acquired_records == []
    assert r.acquisition_lock_timeout_ms == 30000
    p = ck.Producer({"bootstrap.servers": b.bootstrap})
    p.produce("t", b"new")
    p.flush()
    r = fetch(c, tid, 1, max_wait_ms=2000)
    pd = r.responses[0].partitions[0]
    assert [(a.first_offset, a.last_offset, a.delivery_count) for a in pd.acquired_records] == [(5, 5, 1)]
    assert fetch(c, tid, 1).error_code == E.INVALID_SHARE_SESSION_EPOCH
    # piggy-backed release, then the record comes back with delivery count 2
    rel = F.AcknowledgementBatch(first_offset=5, last_offset=5, acknowledge_types=[2])
    r = fetch(c, tid, 2, acks=[rel])
    pd = r.responses[0].partitions[0]
    assert pd.acknowledge_error_code == 0
    assert [(a.first_offset, a.delivery_count) for a in pd.acquired_records] == [(5, 2)]
    A = messages.ShareAcknowledgeRequest
    bad = c("ShareAcknowledge", 1, group_id="sg", member_id="m1", share_session_epoch=0, topics=[])
    assert bad.error_code == E.INVALID_SHARE_SESSION_EPOCH
    acc = c("ShareAcknowledge", 1, group_id="sg", member_id="m1", share_session_epoch=3,
            topics=[A.AcknowledgeTopic(topic_id=tid, partitions=[A.AcknowledgePartition(
                partition_index=0, acknowledgement_batches=[A.AcknowledgementBatch(
                    first_offset=5, last_offset=5, acknowledge_types=[1])])])])
    assert acc.error_code == 0 and acc.responses[0].partitions[0].error_code == 0
    again = c("ShareAcknowledge", 1, group_id="sg", member_id="m1", share_session_epoch=-1,
              topics=[A.AcknowledgeTopic(topic_id=tid, partitions=[A.AcknowledgePartition(
                  partition_index=0, acknowledgement_batches=[A.AcknowledgementBatch(
                      first_offset=5, last_offset=5, acknowledge_types=[1])])])])
    assert again.responses[0].partitions[0].error_code == E.INVALID_RECORD_STATE
    assert fetch(c, tid, 4).error_code == E.SHARE_SESSION_NOT_FOUND       # closed by epoch -1
    # the share coordinator's view of that share-partition
    R = messages.ReadShareGroupStateSummaryRequest
    s = c("ReadShareGroupStateSummary", 1, group_id="sg", topics=[R.ReadStateSummaryData(
        topic_id=tid, partitions=[R.PartitionData(partition=0, leader_epoch=0)])])
    # one write behind, as Kafka 4.4 (F-970): the acknowledgement of offset 5 was written with
    # the start offset from before it, and offset 5 as delivered
    got = s.results[0].partitions[0]
    assert (got.start_offset, got.delivery_complete_count) == (5, 1)
    hb = c("ShareGroupHeartbeat", 1, group_id="sg", member_id="m1", member_epoch=-1,
           rack_id=None, subscribed_topic_names=None)
    assert (hb.error_code, hb.member_epoch) == (0, -1)


def test_share_coordinator_state_apis_round_trip(env):
    _, c, tid = env
    Rd = messages.ReadShareGroupStateRequest
    unknown = c("ReadShareGroupState", 0, group_id="sx", topics=[Rd.ReadStateData(
        topic_id=uuid.uuid4(), partitions=[Rd.PartitionData(partition=0, leader_epoch=0)])])
    assert unknown.results[0].partitions[0].error_code == E.INVALID_REQUEST   # as Kafka 4.3.1
    Init = messages.InitializeShareGroupStateRequest
    r = c("InitializeShareGroupState", 0, group_id="sx", topics=[Init.InitializeStateData(
        topic_id=tid, partitions=[Init.PartitionData(partition=0, state_epoch=1, start_offset=10)])])
    assert r.results[0].partitions[0].error_code == 0
    W = messages.WriteShareGroupStateRequest
    batches = [W.StateBatch(first_offset=10, last_offset=12, delivery_state=2, delivery_count=1),
               W.StateBatch(first_offset=13, last_offset=13, delivery_state=0, delivery_count=3)]
    w = c("WriteShareGroupState", 1, group_id="sx", topics=[W.WriteStateData(
        topic_id=tid, partitions=[W.PartitionData(partition=0, state_epoch=1, leader_epoch=0,
                                                  start_offset=10, delivery_complete_count=3,
                                                  state_batches=batches)])])
    assert w.results[0].partitions[0].error_code == 0
    stale = c("WriteShareGroupState", 1, group_id="sx", topics=[W.WriteStateData(
        topic_id=tid, partitions=[W.PartitionData(partition=0, state_epoch=0, leader_epoch=0,
                                                  start_offset=0, delivery_complete_count=0,
                                                  state_batches=[])])])
    assert stale.results[0].partitions[0].error_code == E.FENCED_STATE_EPOCH
    read = lambda: c("ReadShareGroupState", 0, group_id="sx", topics=[Rd.ReadStateData(  # noqa: E731
        topic_id=tid, partitions=[Rd.PartitionData(partition=0, leader_epoch=0)])]).results[0].partitions[0]
    got = read()
    assert (got.error_code, got.state_epoch, got.start_offset) == (0, 1, 10)
    assert [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in got.state_batches] == [(10, 12, 2, 1), (13, 13, 0, 3)]
    D = messages.DeleteShareGroupStateRequest
    d = c("DeleteShareGroupState", 0, group_id="sx", topics=[D.DeleteStateData(
        topic_id=tid, partitions=[D.PartitionData(partition=0)])])
    assert d.results[0].partitions[0].error_code == 0
    assert read().start_offset == -1


def test_find_coordinator_share_key_names_the_state_partition_leader(env):
    """FindCoordinator key type 2 (v6, KIP-932): ``group:topicId:partition`` → the leader of
    its ``__share_group_state`` partition (created on first lookup); a bad key is
    INVALID_REQUEST; below v6 share keys are refused."""
    from kbroker.share.persister import coordinator_key
    b, c, tid = env
    good = coordinator_key("sg", tid, 0)
    r = c("FindCoordinator", 6, key_type=2, coordinator_keys=[good, "no-colons", "g:notanid:0"])
    assert [x.error_code for x in r.coordinators] == [0, E.INVALID_REQUEST, E.INVALID_REQUEST]
    assert (r.coordinators[0].key, r.coordinators[0].port) == (good, b.port)
    old = c("FindCoordinator", 5, key_type=2, coordinator_keys=[good])
    assert old.coordinators[0].error_code == E.INVALID_REQUEST


def test_renew_acknowledgements_keep_records_acquired(env):
    """KIP-1222 (ShareFetch/ShareAcknowledge v2): IsRenewAck requests only acknowledge and
    must zero the fetch limits (Kafka's INVALID_REQUEST message); RENEW keeps the record with
    its member; type 4 below v2 is INVALID_REQUEST."""
    b, c, tid = env

    def fetch2(epoch, acks=(), renew=False, max_wait_ms=0, max_bytes=1 << 20, max_records=500):
        part = F.FetchPartition(partition_index=0, partition_max_bytes=0,
                                acknowledgement_batches=list(acks))
        return c("ShareFetch", 2, group_id="sg-renew", member_id="r1", share_session_epoch=epoch,
                 max_wait_ms=max_wait_ms, min_bytes=0 if renew else 1, max_bytes=max_bytes,
                 max_records=max_records, batch_size=500, share_acquire_mode=0,
                 is_renew_ack=renew, topics=[F.FetchTopic(topic_id=tid, partitions=[part])],
                 forgotten_topics_data=[])
    assert fetch2(0).error_code == 0                      # the share-partition starts at latest
    p = ck.Producer({"bootstrap.servers": b.bootstrap})
    p.produce("t", b"renew-me")
    p.flush()
    r = fetch2(1, max_wait_ms=2000)
    [acq] = r.responses[0].partitions[0].acquired_records
    off = acq.first_offset
    renew = F.AcknowledgementBatch(first_offset=off, last_offset=off, acknowledge_types=[4])
    bad = fetch2(2, [renew], renew=True, max_wait_ms=100)
    assert bad.error_code == E.INVALID_REQUEST
    assert bad.error_message == ("maxBytes must be set to 0, maxRecords must be set to 0, "
                                 "maxWaitMs must be set to 0, if isRenewAck is true.")
    ok = fetch2(2, [renew], renew=True, max_bytes=0, max_records=0)
    pd = ok.responses[0].partitions[0]
    assert (ok.error_code, pd.acknowledge_error_code, pd.acquired_records) == (0, 0, [])
    A = messages.ShareAcknowledgeRequest

    def ack(version, epoch, ty):
        return c("ShareAcknowledge", version, group_id="sg-renew", member_id="r1",
                 share_session_epoch=epoch, **({"is_renew_ack": ty == 4} if version >= 2 else {}),
                 topics=[A.AcknowledgeTopic(topic_id=tid, partitions=[A.AcknowledgePartition(
                     partition_index=0, acknowledgement_batches=[A.AcknowledgementBatch(
                         first_offset=off, last_offset=off, acknowledge_types=[ty])])])])
    assert ack(1, 3, 4).error_code == E.INVALID_REQUEST
    still = ack(2, 3, 4)                                   # renewed again: still held by r1
    assert still.responses[0].partitions[0].error_code == 0
    done = ack(2, 4, 1)
    assert done.responses[0].partitions[0].error_code == 0


def test_delete_groups_deletes_a_share_groups_state(env):
    """DeleteGroups on an empty share group tombstones its records and, as Kafka, the state
    of the share-partitions it kept (a group of the same id starts afresh)."""
    b, c, tid = env
    last = [None]

    def assigned():
        hb = last[0]
        fresh = hb is None or hb.error_code
        last[0] = hb = c("ShareGroupHeartbeat", 1, group_id="sg-del", member_id="d1",
                         member_epoch=0 if fresh else hb.member_epoch, rack_id=None,
                         subscribed_topic_names=["t"] if fresh else None)
        return hb.error_code == 0 and hb.assignment is not None and hb.assignment.topic_partitions
    wait_for(assigned, what="d1's assignment")
    hb = last[0]
    assert hb.assignment.topic_partitions[0].partitions == [0]
    part = F.FetchPartition(partition_index=0, partition_max_bytes=0, acknowledgement_batches=[])
    assert c("ShareFetch", 1, group_id="sg-del", member_id="d1", share_session_epoch=0,
             max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500,
             topics=[F.FetchTopic(topic_id=tid, partitions=[part])],
             forgotten_topics_data=[]).error_code == 0            # the state now exists
    R = messages.ReadShareGroupStateRequest

    def start_offset():
        r = c("ReadShareGroupState", 0, group_id="sg-del", topics=[R.ReadStateData(
            topic_id=tid, partitions=[R.PartitionData(partition=0, leader_epoch=0)])])
        return r.results[0].partitions[0].start_offset
    assert start_offset() >= 0
    assert c("DeleteGroups", 2, groups_names=["sg-del"]).results[0].error_code == E.NON_EMPTY_GROUP
    assert c("ShareGroupHeartbeat", 1, group_id="sg-del", member_id="d1", member_epoch=-1,
             rack_id=None, subscribed_topic_names=None).error_code == 0
    assert c("DeleteGroups", 2, groups_names=["sg-del"]).results[0].error_code == 0
    assert start_offset() == -1
    d = c("ShareGroupDescribe", 1, group_ids=["sg-del"], include_authorized_operations=False)
    assert d.groups[0].error_code == E.GROUP_ID_NOT_FOUND
