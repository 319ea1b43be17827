"""DescribeQuorum (key 55), v0–v2: the state of the metadata quorum, for Kafka's
``kafka-metadata-quorum`` tool (``describe --status`` / ``--replication``) and
``Admin.describeMetadataQuorum``.

Answered by the Raft leader from its replica bookkeeping: leader id and epoch, high
watermark, every voter and observer with its log end offset, last fetch and last caught-up
time (wall-clock ms; the leader itself is caught up now), and (v2, KIP-853) every voter's
controller endpoint (its own controller listener for a single node that has no voters entry;
a one-node quorum without a controller listener: its client listener, which serves these APIs). Any other node forwards the request to the leader's controller listener, as
Kafka's brokers forward it to the controller; with no leader known the partition gets
``NOT_LEADER_OR_FOLLOWER``. Served on controller and client listeners.
A dynamic quorum (KIP-853) answers each voter's directory id and endpoints from its
``VotersRecord``; an observer's directory id is the one its last Fetch (v17
``ReplicaDirectoryId``) named, a zero UUID when it sent none (a static quorum's voters too)."""
from __future__ import annotations

from kbroker.authz.acls import DESCRIBE
from kbroker.raft.control import uuid_from_kafka
from kbroker.raft.wire_map import METADATA_TOPIC
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from .registry import controller_api

Response = messages.DescribeQuorumResponse


def _error(code: int, message: str | None = None):
    return Response(error_code=0, topics=[Response.TopicData(topic_name=METADATA_TOPIC, partitions=[
        Response.PartitionData(partition_index=0, error_code=code, error_message=message,
                               leader_id=-1, leader_epoch=-1, high_watermark=-1,
                               current_voters=[], observers=[])])])


def _own_endpoint(quorum, node_id: int):
    """This node's controller listener when it has one (a single node configured with
    ``controller.quorum.bootstrap.servers`` naming itself, as Kafka's stock
    server.properties, has no ``controller.quorum.voters`` entry to read it from). The
    one-node quorum of ``make run`` has none: its controller APIs (DescribeQuorum,
    DescribeCluster) are served on the client listener, so that is where KIP-853 tools reach
    the voter."""
    if node_id != quorum.node_id:
        return None
    own = quorum.endpoint_of(node_id)
    if own is not None:
        return own
    adv = getattr(quorum.config, "advertised_listeners", None) or getattr(quorum.config, "listeners", None)
    if not adv:
        return None
    return adv[0].host or "localhost", adv[0].port


def leader_answer(quorum, version: int = 2):
    """The leader's DescribeQuorum response at ``version`` (v1 adds fetch and caught-up
    times, v2 the voters' endpoints)."""
    driver = quorum.driver
    node = driver.node
    voters, observers = node.replica_states()
    hw = node.high_watermark

    infos = quorum.voter_infos
    dir_ids = node.replica_directory_ids()

    def state(rid, end, fetched, voter=True):
        if version < 1:
            return Response.ReplicaState(replica_id=rid, log_end_offset=end)
        ts = driver.wall_ms_of(fetched)
        rs = Response.ReplicaState(replica_id=rid, log_end_offset=end, last_fetch_timestamp=ts,
                                   last_caught_up_timestamp=ts if end >= hw else -1)
        if version >= 2 and voter and rid in infos:
            rs.replica_directory_id = uuid_from_kafka(infos[rid].directory_id)
        elif version >= 2 and not voter and rid in dir_ids:
            rs.replica_directory_id = uuid_from_kafka(dir_ids[rid])
        return rs

    nodes = []
    for vid in sorted(infos) if version >= 2 and infos else ():
        nodes.append(Response.Node(node_id=vid, listeners=[
            Response.Listener(name=n, host=h, port=p) for n, h, p in infos[vid].endpoints]))
    for vid in sorted(quorum.voters) if version >= 2 and not infos else ():
        addr = quorum.voter_endpoints.get(vid) or _own_endpoint(quorum, vid)
        if addr is not None:
            nodes.append(Response.Node(node_id=vid, listeners=[Response.Listener(
                name=quorum.config.get("controller.listener.names")[0], host=addr[0], port=addr[1])]))
    return Response(error_code=0, nodes=nodes, topics=[Response.TopicData(
        topic_name=METADATA_TOPIC, partitions=[Response.PartitionData(
            partition_index=0, error_code=0, leader_id=node.node_id, leader_epoch=node.epoch,
            high_watermark=hw,
            current_voters=[state(r, *voters[r]) for r in sorted(voters)],
            observers=[state(r, *observers[r], voter=False) for r in sorted(observers)])])])


async def describe(quorum, request, version: int):
    if quorum.driver.is_leader:
        return leader_answer(quorum, version)
    leader = quorum.leader_id
    addr = quorum.controller_endpoint(leader) if leader >= 0 else None
    if addr is not None and leader != quorum.node_id:
        resp = await quorum.rpc.call_addr(addr, 55, version, request, 10.0)
        if resp is not None:
            return resp
    return _error(ErrorCode.NOT_LEADER_OR_FOLLOWER, "No leader of the metadata quorum is known.")


@controller_api(55, versions=(0, 2), cluster_operation=DESCRIBE)
async def handle(ctx, request):
    return await describe(ctx.broker.quorum, request, ctx.version)
