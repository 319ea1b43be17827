"""The cluster page: brokers (with their registration state: a fenced broker is shown
offline), the active controller, the metadata quorum (DescribeQuorum's answer: leader,
epoch, voters and observers with their lag), under-replicated partitions, and the history
of key metrics."""
from __future__ import annotations

from kbroker.controller_server.describe_quorum import describe
from kbroker.wire import messages

from .history import under_replicated
from .inproc import error_name


async def quorum_view(broker) -> dict:
    resp = await describe(broker.quorum, messages.DescribeQuorumRequest(topics=[
        messages.DescribeQuorumRequest.TopicData(topic_name="__cluster_metadata", partitions=[
            messages.DescribeQuorumRequest.PartitionData(partition_index=0)])]), 2)
    if resp.error_code or not resp.topics:
        return {"error": error_name(resp.error_code), "message": resp.error_message}
    p = resp.topics[0].partitions[0]
    if p.error_code:
        return {"error": error_name(p.error_code), "message": p.error_message}
    hw = p.high_watermark

    def replica(s):
        return {"replica_id": s.replica_id, "log_end_offset": s.log_end_offset,
                "lag": max(0, hw - s.log_end_offset),
                "last_fetch_timestamp": s.last_fetch_timestamp,
                "last_caught_up_timestamp": s.last_caught_up_timestamp}
    return {"leader_id": p.leader_id, "leader_epoch": p.leader_epoch, "high_watermark": hw,
            "voters": [replica(s) for s in p.current_voters],
            "observers": [replica(s) for s in p.observers]}


async def cluster_view(server, history) -> dict:
    broker = server.broker
    image = broker.metadata
    voters = set(getattr(broker.quorum, "voters", ()) or ())
    brokers = []
    for bid in sorted(image.brokers):
        b = image.brokers[bid]
        status = ("offline" if b.fenced else
                  "shutting down" if b.in_controlled_shutdown else "online")
        brokers.append({"node_id": bid, "endpoints": [f"{n}://{h}:{p}" for n, h, p in b.endpoints],
                        "rack": b.rack, "fenced": b.fenced, "status": status,
                        "voter": bid in voters, "this_node": bid == broker.node_id,
                        "leaders": sum(1 for t in image.topics.values()
                                       for p in t.partitions.values() if p.leader == bid)})
    try:
        quorum = await quorum_view(broker)
    except Exception as e:  # noqa: BLE001 - the page still shows the rest
        quorum = {"error": "UNAVAILABLE", "message": str(e)}
    offline = [{"topic": t.name, "partition": i} for t in image.topics.values()
               for i, p in t.partitions.items() if p.leader < 0]
    return {"cluster_id": image.cluster_id, "node_id": broker.node_id,
            "controller_id": image.controller_id if image.controller_id >= 0 else quorum.get("leader_id", -1),
            "metadata_offset": image.offset, "brokers": brokers, "quorum": quorum,
            "under_replicated": under_replicated(image), "offline_partitions": offline,
            "topics": len(image.topics),
            # the node's REST gateway (kbroker/rest_proxy), linked from the page when it runs
            "rest_proxy": (f"{server.rest_proxy.scheme}://{server.rest_proxy.address}"
                           if getattr(server, "rest_proxy", None) is not None else None),
            "partitions": sum(len(t.partitions) for t in image.topics.values()),
            "history": history.rates()}
