"""Pieces shared by the capture tool and the replay: broker configs, kbroker's advertised
ranges, a blocking Kafka connection, the warm-up, and the hand-built requests.
"""

from __future__ import annotations

import itertools
import socket
import struct
import time

from kbroker.wire import messages, protocol

# Both brokers of a replay (and the Kafka of a capture) run with these:
# - group joins do not wait for the initial rebalance delay on either side;
# - no retention pass deletes records while a capture or replay runs. The scenarios stamp
#   their records with fixed times of 2023 (offsets-by-time answers are then the same in every
#   run), older than the default 7-day retention.ms, and Kafka's first retention pass comes
#   log.initial.task.delay.ms (30 s) after its log manager starts, then every 5 minutes: a
#   replay still running then (a busy machine) saw that pass delete every partition whose
#   newest record is one of these, and its next answers name a later log start offset than the
#   capture's. Kafka's internal setting (for tests) moves that first pass an hour on, on
#   kbroker too.
BROKER_CONFIGS = {"group.initial.rebalance.delay.ms": "0",
                  "log.initial.task.delay.ms": "3600000"}
# Settings above that only hold the test's conditions steady: a broker's DescribeConfigs lists
# them (as static broker configs), the replay does not compare them (the corpus was captured
# before the retention setting was added; a new capture records it, the replay still drops it).
HARNESS_CONFIGS = {"log.initial.task.delay.ms"}

# (API key, version) pairs the hand-built scenario must not send again (filled in by capture:
# covered already). An API whose highest advertised version no client sent is sent at that version.
HAND_BUILT_SKIP: set[tuple[int, int]] = set()


def kbroker_ranges() -> dict[int, tuple[int, int]]:
    """What kbroker advertises: API key → (min, max), from its handler registry."""
    from kbroker import api
    return {k: (s.min_version, s.max_version) for k, s in api.load_all().items() if s.advertised}


def order_key_of(exchange) -> int:
    """Replay order: by the response's arrival (completion), or the request's if it has none."""
    if isinstance(exchange, dict):
        return exchange["response_event"] if exchange["response_event"] is not None \
            else exchange["request_event"]
    return exchange.response_event if exchange.response_event is not None \
        else exchange.request_event


class Connection:
    """One blocking connection to a broker: send a request frame, read its response frame."""

    def __init__(self, address: tuple[str, int], timeout: float = 30.0):
        self.sock = socket.create_connection(address, timeout=timeout)
        self.correlation = itertools.count(1)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, frame: bytes) -> None:
        """`frame` without its size prefix."""
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)

    def receive(self) -> bytes:
        size = struct.unpack(">i", self._exactly(4))[0]
        return self._exactly(size)

    def _exactly(self, n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            chunk = self.sock.recv(min(n - got, 1 << 20))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def request(self, api_key: int, version: int, body, client_id: str = "dx-hand-built"):
        """Encode `body`, send it, decode the response body (None for acks=0 Produce)."""
        correlation_id = next(self.correlation)
        frame = protocol.encode_request(api_key, version, correlation_id, client_id, body)
        self.sock.sendall(frame)
        if api_key == 0 and body.acks == 0:
            return None
        got, response = protocol.decode_response(self.receive(), api_key, version)
        assert got == correlation_id
        return response


def _address(bootstrap: str) -> tuple[str, int]:
    host, port = bootstrap.rsplit(":", 1)
    return host, int(port)


def warm_up(bootstrap: str) -> None:
    """Create the internal topics (group and transaction coordinators) before anything is
    recorded or replayed, so that neither side answers COORDINATOR_NOT_AVAILABLE while it
    creates them (FindCoordinator until it answers). Nothing here is part of the corpus."""
    deadline = time.monotonic() + 60
    req_cls = messages.request_class(10)
    for key_type, key in ((0, "dx-warm-up-group"), (1, "dx-warm-up-txn")):
        conn = Connection(_address(bootstrap))
        try:
            while True:
                response = conn.request(10, 4, req_cls(key_type=key_type, coordinator_keys=[key]))
                if response.coordinators[0].error_code == 0:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no coordinator for {key}: {response}")
                time.sleep(0.25)
        finally:
            conn.close()


# --- hand-built requests ---------------------------------------------------------------------

HB_TOPIC = "dx-hb-topic"
HB_PRODUCER_ID = 987_654  # a producer id neither broker has handed out


def _hb_create_topic(conn):
    c = messages.CreateTopicsRequest
    conn.request(19, 7, c(topics=[c.CreatableTopic(name=HB_TOPIC, num_partitions=1,
                                                   replication_factor=1)], timeout_ms=20000))
    time.sleep(1)
    from kbroker.wire.records import build_batch
    p = messages.ProduceRequest
    batch = build_batch([(b"k", b"v", (), 1_700_000_000_500)])
    conn.request(0, 9, p(acks=-1, timeout_ms=20000, topic_data=[p.TopicProduceData(
        name=HB_TOPIC, partition_data=[p.PartitionProduceData(index=0, records=batch)])]))


def _hb_offset_for_leader_epoch(conn, version):
    c = messages.OffsetForLeaderEpochRequest
    return c(replica_id=-1, topics=[c.OffsetForLeaderTopic(topic=HB_TOPIC, partitions=[
        c.OffsetForLeaderPartition(partition=0, current_leader_epoch=-1, leader_epoch=0)])])


def _hb_write_txn_markers(conn, version):
    c = messages.WriteTxnMarkersRequest
    return c(markers=[c.WritableTxnMarker(producer_id=HB_PRODUCER_ID, producer_epoch=0,
                                          transaction_result=False, coordinator_epoch=0,
                                          topics=[c.WritableTxnMarkerTopic(name=HB_TOPIC,
                                                                           partition_indexes=[0])])])


def _hb_describe_acls(conn, version):
    # a filter with UNKNOWN fields (the defaults) fails to parse on Kafka: ask for ANY
    return messages.DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=1, operation=1,
                                        permission_type=1)


def _hb_create_acls(conn, version):
    c = messages.CreateAclsRequest
    return c(creations=[c.AclCreation(resource_type=2, resource_name=HB_TOPIC, resource_pattern_type=3,
                                      principal="User:dx", host="*", operation=3, permission_type=3)])


def _hb_delete_acls(conn, version):
    c = messages.DeleteAclsRequest
    return c(filters=[c.DeleteAclsFilter(resource_type_filter=1, pattern_type_filter=1, operation=1,
                                         permission_type=1)])


def _hb_list_config_resources(conn, version):
    # brokers and client metrics only: listing topics would depend on what else ran before
    return messages.ListConfigResourcesRequest(resource_types=[4, 16] if version >= 1 else [])


def _hb_describe_topic_partitions(conn, version):
    # the scenario's own topic, not every topic (those depend on what else ran before)
    r = messages.DescribeTopicPartitionsRequest
    return r(topics=[r.TopicRequest(name=HB_TOPIC)], response_partition_limit=2000)


def _hb_update_features(conn, version):
    # a refused update (a feature no node serves): changes nothing, answered alike by both
    r = messages.UpdateFeaturesRequest
    return r(timeout_ms=5000, validate_only=True, feature_updates=[
        r.FeatureUpdateKey(feature="dx.no.such.feature", max_version_level=1, upgrade_type=1)])


def _hb_unregister_broker(conn, version):
    # a broker id nobody registered: BROKER_ID_NOT_REGISTERED, nothing removed
    return messages.UnregisterBrokerRequest(broker_id=99)


def _hb_topic_id(conn):
    md = conn.request(3, 12, messages.MetadataRequest(topics=[messages.MetadataRequest.MetadataRequestTopic(
        name=HB_TOPIC)], allow_auto_topic_creation=False))
    return md.topics[0].topic_id


# The transaction APIs at the versions of transaction.version 2 (KIP-890) and TxnOffsetCommit
# v6 (KIP-1319, topics by id), for a transactional id nobody initialised: the error paths.
HB_TXN_ID = "dx-hb-no-such-txn"


def _hb_add_partitions_to_txn(conn, version):
    r = messages.AddPartitionsToTxnRequest
    return r(transactions=[r.AddPartitionsToTxnTransaction(
        transactional_id=HB_TXN_ID, producer_id=HB_PRODUCER_ID, producer_epoch=0, verify_only=True,
        topics=[r.AddPartitionsToTxnTopic(name=HB_TOPIC, partitions=[0])])])


def _hb_add_offsets_to_txn(conn, version):
    return messages.AddOffsetsToTxnRequest(transactional_id=HB_TXN_ID, producer_id=HB_PRODUCER_ID,
                                           producer_epoch=0, group_id="dx-hb-txn-group")


def _hb_end_txn(conn, version):
    return messages.EndTxnRequest(transactional_id=HB_TXN_ID, producer_id=HB_PRODUCER_ID,
                                  producer_epoch=0, committed=True)


def _hb_txn_offset_commit(conn, version):
    r = messages.TxnOffsetCommitRequest
    topic = r.TxnOffsetCommitRequestTopic(partitions=[r.TxnOffsetCommitRequestPartition(
        partition_index=0, committed_offset=1, committed_leader_epoch=-1, committed_metadata="")])
    if version >= 6:
        topic.topic_id = _hb_topic_id(conn)
    else:
        topic.name = HB_TOPIC
    return r(transactional_id=HB_TXN_ID, group_id="dx-hb-txn-group", producer_id=HB_PRODUCER_ID,
             producer_epoch=0, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
             topics=[topic])


# ShareFetch/ShareAcknowledge v2 (KIP-1222 renew acknowledgements): a renew-only fetch that
# also asks to wait (refused), and a renew for a session that does not exist.
def _hb_share_fetch(conn, version):
    r = messages.ShareFetchRequest
    return r(group_id="dx-hb-share-group", member_id="dx-hb-share-member", share_session_epoch=1,
             max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500,
             is_renew_ack=True, topics=[], forgotten_topics_data=[])


def _hb_share_acknowledge(conn, version):
    return messages.ShareAcknowledgeRequest(group_id="dx-hb-share-group", member_id="dx-hb-share-member",
                                            share_session_epoch=1, is_renew_ack=True, topics=[])


BUILDERS = {23: _hb_offset_for_leader_epoch, 27: _hb_write_txn_markers, 29: _hb_describe_acls,
            30: _hb_create_acls, 31: _hb_delete_acls, 57: _hb_update_features,
            64: _hb_unregister_broker,
            74: _hb_list_config_resources, 75: _hb_describe_topic_partitions,
            24: _hb_add_partitions_to_txn, 25: _hb_add_offsets_to_txn, 26: _hb_end_txn,
            28: _hb_txn_offset_commit, 78: _hb_share_fetch, 79: _hb_share_acknowledge}


def _until_ok(send, attempts: int = 60):
    """Send until the answer has no (transient) top-level error, as a client would retry."""
    for _ in range(attempts):
        response = send()
        if getattr(response, "error_code", 0) == 0:
            return response
        time.sleep(0.25)
    return response


def send_error_cases(conn) -> None:
    """Requests clients send only when something is wrong: the corpus' error paths. Every
    one is answered with an error code by Kafka (the replay compares which one)."""
    M = messages
    T = HB_TOPIC
    # Produce to a partition the topic does not have; fetch and delete past the end.
    p = M.ProduceRequest
    from kbroker.wire.records import build_batch
    conn.request(0, 9, p(acks=-1, timeout_ms=5000, topic_data=[p.TopicProduceData(
        name=T, partition_data=[p.PartitionProduceData(index=7, records=build_batch(
            [(None, b"x", (), 1_700_000_000_600)]))])]))
    f = M.FetchRequest
    conn.request(1, 12, f(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                          isolation_level=0, session_id=0, session_epoch=-1, topics=[f.FetchTopic(
                              topic=T, partitions=[f.FetchPartition(partition=0, fetch_offset=99,
                                                                    partition_max_bytes=1 << 20)])]))
    d = M.DeleteRecordsRequest
    conn.request(21, 2, d(timeout_ms=5000, topics=[d.DeleteRecordsTopic(name=T, partitions=[
        d.DeleteRecordsPartition(partition_index=0, offset=99)])]))
    lo = M.ListOffsetsRequest
    conn.request(2, 7, lo(replica_id=-1, isolation_level=0, topics=[lo.ListOffsetsTopic(
        name=T, partitions=[lo.ListOffsetsPartition(partition_index=5, timestamp=-1)])]))
    # Topic admin mistakes.
    c = M.CreateTopicsRequest
    for name, parts, rf in ((T, 1, 1), ("dx-hb-bad", -5, 1), ("dx-hb-bad", 1, 3),
                            ("dx hb bad!", 1, 1)):
        conn.request(19, 7, c(topics=[c.CreatableTopic(name=name, num_partitions=parts,
                                                       replication_factor=rf)], timeout_ms=5000))
    cp = M.CreatePartitionsRequest
    conn.request(37, 3, cp(timeout_ms=5000, topics=[cp.CreatePartitionsTopic(name=T, count=1),
                                                    cp.CreatePartitionsTopic(name="dx-hb-none", count=2)]))
    dc = M.DescribeConfigsRequest
    conn.request(32, 4, dc(resources=[dc.DescribeConfigsResource(resource_type=2,
                                                                 resource_name="dx-hb-none")]))
    ia = M.IncrementalAlterConfigsRequest
    conn.request(44, 1, ia(resources=[ia.AlterConfigsResource(resource_type=2, resource_name=T, configs=[
        ia.AlterConfigsResource.AlterableConfig(name="no.such.config", config_operation=0, value="1")])]))
    conn.request(44, 1, ia(resources=[ia.AlterConfigsResource(resource_type=2, resource_name=T, configs=[
        ia.AlterConfigsResource.AlterableConfig(name="retention.ms", config_operation=0, value="soon")])]))
    # Groups: a session timeout out of bounds, members and generations nobody has.
    j = M.JoinGroupRequest
    conn.request(11, 9, j(group_id="dx-hb-group", session_timeout_ms=10, rebalance_timeout_ms=1000,
                          member_id="", protocol_type="consumer",
                          protocols=[j.JoinGroupRequestProtocol(name="range", metadata=b"")]))
    conn.request(12, 4, M.HeartbeatRequest(group_id="dx-hb-group", generation_id=3,
                                           member_id="nobody"))
    oc = M.OffsetCommitRequest
    conn.request(8, 9, oc(group_id="dx-hb-group", generation_id_or_member_epoch=3, member_id="nobody",
                          topics=[oc.OffsetCommitRequestTopic(name=T, partitions=[
                              oc.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]))
    # Produce rules: acks, CRC, keyless records on a compacted topic, timestamps too far
    # ahead, sequence gaps and duplicates of an idempotent producer.
    def produce(topic, batch, acks=-1, version=9):
        return conn.request(0, version, p(acks=acks, timeout_ms=5000, topic_data=[p.TopicProduceData(
            name=topic, partition_data=[p.PartitionProduceData(index=0, records=batch)])]))

    ts = 1_700_000_000_700
    produce(T, build_batch([(b"k", b"acks", (), ts)]), acks=2)
    corrupt = bytearray(build_batch([(b"k", b"crc", (), ts)]))
    corrupt[-1] ^= 0xFF
    produce(T, bytes(corrupt))
    conn.request(19, 7, c(topics=[c.CreatableTopic(name="dx-hb-compacted", num_partitions=1,
                                                   replication_factor=1, configs=[
                                                       c.CreatableTopicConfig(name="cleanup.policy", value="compact")])],
                          timeout_ms=5000))
    time.sleep(1)
    produce("dx-hb-compacted", build_batch([(None, b"no key", (), ts)]))
    produce("dx-hb-compacted", build_batch([(b"key", b"keyed", (), ts)]))
    produce(T, build_batch([(b"k", b"future", (), 4_000_000_000_000)]))
    idem = _until_ok(lambda: conn.request(22, 4, M.InitProducerIdRequest(
        transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)))
    for seq in (0, 5, 0, 1):  # in order, a gap, a duplicate, the next one
        produce(T, build_batch([(b"k", b"seq-%d" % seq, (), ts + seq)], producer_id=idem.producer_id,
                               producer_epoch=idem.producer_epoch, base_sequence=seq))
    conn.request(2, 7, lo(replica_id=-1, isolation_level=0, topics=[lo.ListOffsetsTopic(
        name=T, partitions=[lo.ListOffsetsPartition(partition_index=0, timestamp=4_100_000_000_000)])]))
    # Groups nobody has, members nobody is.
    g = "dx-hb-nogroup"
    conn.request(14, 5, M.SyncGroupRequest(group_id=g, generation_id=1, member_id="nobody",
                                           protocol_type="consumer", protocol_name="range",
                                           assignments=[]))
    lg = M.LeaveGroupRequest
    conn.request(13, 5, lg(group_id=g, members=[lg.MemberIdentity(member_id="nobody")]))
    of = M.OffsetFetchRequest
    conn.request(9, 7, of(group_id=g, topics=[of.OffsetFetchRequestTopic(name=T, partition_indexes=[0])]))
    conn.request(15, 5, M.DescribeGroupsRequest(groups=[g]))
    od = M.OffsetDeleteRequest
    conn.request(47, 0, od(group_id=g, topics=[od.OffsetDeleteRequestTopic(
        name=T, partitions=[od.OffsetDeleteRequestPartition(partition_index=0)])]))
    conn.request(42, 2, M.DeleteGroupsRequest(groups_names=[g]))
    dp = M.DescribeProducersRequest
    conn.request(61, 0, dp(topics=[dp.TopicRequest(name=T, partition_indexes=[0, 9])]))
    # Dynamic broker configs (validate only: nothing changes).
    ac = M.AlterConfigsRequest
    conn.request(33, 2, ac(validate_only=True, resources=[ac.AlterConfigsResource(
        resource_type=4, resource_name="1", configs=[
            ac.AlterConfigsResource.AlterableConfig(name="log.cleaner.threads", value="2")])]))
    # Transactions: wrong producer id, a stale epoch (old and new versions: KIP-588 maps
    # PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for clients too old to know it), no transaction.
    txn = "dx-hb-txn"
    _until_ok(lambda: conn.request(10, 4, M.FindCoordinatorRequest(key_type=1, coordinator_keys=[txn])).coordinators[0])
    init = _until_ok(lambda: conn.request(22, 1, M.InitProducerIdRequest(
        transactional_id=txn, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)))
    pid, epoch = init.producer_id, init.producer_epoch
    conn.request(25, 1, M.AddOffsetsToTxnRequest(transactional_id=txn, producer_id=pid + 77,
                                                  producer_epoch=epoch, group_id="dx-hb-group"))
    for version in (1, 3):
        conn.request(26, version, M.EndTxnRequest(transactional_id=txn, producer_id=pid,
                                                  producer_epoch=epoch + 5, committed=True))
    conn.request(26, 1, M.EndTxnRequest(transactional_id=txn, producer_id=pid,
                                        producer_epoch=epoch, committed=True))
    a = M.AddPartitionsToTxnRequest
    for version in (1, 3):
        conn.request(24, version, a(v3_and_below_transactional_id=txn, v3_and_below_producer_id=pid,
                                    v3_and_below_producer_epoch=epoch + 5, v3_and_below_topics=[
                                        a.AddPartitionsToTxnTopic(name=T, partitions=[0])]))


def send_hand_built(bootstrap: str) -> None:
    """For every API kbroker advertises that is in HAND_BUILT_SKIP's complement: a specific
    builder if there is one, else the request class's defaults, at kbroker's highest version."""
    conn = Connection(_address(bootstrap), timeout=5)
    try:
        conn.request(18, 3, messages.ApiVersionsRequest(client_software_name="dx-hand-built",
                                                         client_software_version="1"))
        _hb_create_topic(conn)
        for api_key, (lo, hi) in sorted(kbroker_ranges().items()):
            if (api_key, hi) in HAND_BUILT_SKIP or api_key in (0, 18, 19):
                continue
            builder = BUILDERS.get(api_key)
            body = builder(conn, hi) if builder else messages.request_class(api_key)()
            try:
                conn.request(api_key, hi, body)
            except (OSError, ConnectionError) as exc:  # e.g. a default request that parks
                print(f"    hand-built {api_key} v{hi}: {exc}; reconnecting")
                conn.close()
                conn = Connection(_address(bootstrap), timeout=5)
        send_error_cases(conn)
    finally:
        conn.close()
