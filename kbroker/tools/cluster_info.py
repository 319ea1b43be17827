"""``kbroker cluster describe`` and ``kbroker cluster quorum`` (the client side of
``kbroker cluster``; ``kafka-cluster.sh cluster-id`` and ``kafka-metadata-quorum.sh``).

    kbroker cluster describe      cluster id, active controller, brokers (DescribeCluster/Metadata)
    kbroker cluster quorum        KRaft leader, epoch, high watermark, voters and observers with
                                  their directory ids (a dynamic quorum's voters), log end
                                  offsets and lag (DescribeQuorum v2, KIP-595/KIP-853)

``describe`` is confluent-kafka's DescribeCluster; ``quorum`` goes over the project's codec
(``kbroker.tools.wire_client``): confluent-kafka has no DescribeQuorum.
"""
from __future__ import annotations

from kbroker.tools.common import CommandError, connect, emit


def add_subcommands(csub, parent) -> None:
    s = csub.add_parser("describe", parents=[parent], help="cluster id, controller and brokers")
    s.set_defaults(func=cmd_describe)
    s = csub.add_parser("quorum", parents=[parent], help="metadata quorum status (DescribeQuorum)")
    s.set_defaults(func=cmd_quorum)


def cmd_describe(args) -> int:
    conn = connect(args)
    a = conn.admin()
    info = conn.wait(a.describe_cluster(request_timeout=conn.timeout), "describe the cluster", a)
    brokers = sorted(({"id": b.id, "host": b.host, "port": b.port, "rack": b.rack}
                      for b in info.nodes), key=lambda b: b["id"])
    data = {"cluster_id": info.cluster_id,
            "controller_id": info.controller.id if info.controller is not None else None,
            "brokers": brokers}
    if args.json:
        emit(args, data)
        return 0
    print(f"Cluster id: {data['cluster_id']}")
    print(f"Controller: {data['controller_id']}")
    print()
    emit(args, None, brokers, ["id", "host", "port", "rack"])
    return 0


def cmd_quorum(args) -> int:
    from kbroker.tools.errors import broker_error_sentence
    from kbroker.tools.wire_client import WireSession
    from kbroker.wire import messages
    conn = connect(args)
    req = messages.DescribeQuorumRequest(topics=[messages.DescribeQuorumRequest.TopicData(
        topic_name="__cluster_metadata",
        partitions=[messages.DescribeQuorumRequest.PartitionData(partition_index=0)])])
    with WireSession(conn.bootstrap, conn.props, conn.timeout) as ws:
        resp = ws.any().call(55, "DescribeQuorum", req)
    if resp.error_code:
        raise CommandError(broker_error_sentence(resp.error_code, "describe quorum", resp.error_message))
    p = resp.topics[0].partitions[0]
    if p.error_code:
        raise CommandError(broker_error_sentence(p.error_code, "describe quorum", p.error_message))
    part = {"leader_id": p.leader_id, "leader_epoch": p.leader_epoch, "high_watermark": p.high_watermark,
            "current_voters": [vars_of(r) for r in p.current_voters or ()],
            "observers": [vars_of(r) for r in p.observers or ()]}
    hw = part["high_watermark"]
    replicas = []
    for kind, key in (("voter", "current_voters"), ("observer", "observers")):
        for r in part.get(key, []):
            replicas.append({"node": r["replica_id"], "role": "leader" if r["replica_id"] == part["leader_id"]
                             and kind == "voter" else kind,
                             "directory_id": _directory_id(r.get("replica_directory_id")),
                             "log_end_offset": r["log_end_offset"], "lag": max(0, hw - r["log_end_offset"]),
                             "last_fetch_timestamp": r.get("last_fetch_timestamp"),
                             "last_caught_up_timestamp": r.get("last_caught_up_timestamp")})
    data = {"leader_id": part["leader_id"], "leader_epoch": part["leader_epoch"], "high_watermark": hw,
            "voters": [r["replica_id"] for r in part.get("current_voters", [])],
            "observers": [r["replica_id"] for r in part.get("observers", [])], "replicas": replicas}
    if args.json:
        emit(args, data)
        return 0
    print(f"LeaderId: {data['leader_id']}  LeaderEpoch: {data['leader_epoch']}  HighWatermark: {hw}  "
          f"CurrentVoters: {data['voters']}  CurrentObservers: {data['observers']}")
    print()
    emit(args, None, replicas, ["node", "role", "directory_id", "log_end_offset", "lag"])
    return 0


def _directory_id(value) -> str | None:
    """A replica's directory id (KIP-853) in Kafka's base64 form; None when unknown (zero)."""
    import uuid

    from kbroker.raft.control import ZERO_UUID, uuid_to_kafka
    if value is None:
        return None
    if isinstance(value, uuid.UUID):
        text = uuid_to_kafka(value)
    elif isinstance(value, str) and len(value) == 36:
        text = uuid_to_kafka(uuid.UUID(value))
    else:
        text = str(value)
    return None if text == ZERO_UUID else text


def vars_of(r) -> dict:
    return {"replica_id": r.replica_id, "replica_directory_id": getattr(r, "replica_directory_id", None),
            "log_end_offset": r.log_end_offset, "last_fetch_timestamp": r.last_fetch_timestamp,
            "last_caught_up_timestamp": r.last_caught_up_timestamp}
