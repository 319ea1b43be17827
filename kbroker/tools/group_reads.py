"""What a cluster says about its groups, every type: classic, consumer (KIP-848), share
(KIP-932) and streams (KIP-1071), read over the project's codec (``wire_client``).

Why not confluent-kafka here: librdkafka 2.16 lists classic and consumer groups only, reads
KIP-848's ``Assigning``/``Reconciling`` states as Unknown and describes neither share nor
streams groups. The calls are Kafka's: ListGroups v5 on every broker (a group is listed by
its coordinator), then at the group's coordinator DescribeGroups, ConsumerGroupDescribe,
ShareGroupDescribe or StreamsGroupDescribe as the listed type says, and for a share group
DescribeShareGroupOffsets (its start offsets and lag). Committed offsets of the other types
and log end offsets are the caller's (confluent-kafka's OffsetFetch and ListOffsets).
Rows are plain dicts, the vocabulary of ``kafka-consumer-groups``/``kafka-share-groups``/
``kafka-streams-groups --describe``.
"""
from __future__ import annotations

from kbroker.tools.errors import CommandError, broker_error_sentence

LIST_GROUPS, DESCRIBE_GROUPS = 16, 15
CONSUMER_GROUP_DESCRIBE, SHARE_GROUP_DESCRIBE, STREAMS_GROUP_DESCRIBE = 69, 77, 89
DESCRIBE_SHARE_GROUP_OFFSETS, ALTER_SHARE_GROUP_OFFSETS = 90, 91
GROUP_ID_NOT_FOUND = 69

_ASSIGNMENT = None


def list_groups(ws) -> list[dict]:
    """Every group of the cluster: id, type, state, protocol type (ListGroups v5 per broker)."""
    from kbroker.wire import messages
    out = {}
    for node_id in sorted(ws.brokers()):
        resp = ws.node(node_id).call(LIST_GROUPS, "ListGroups",
                                     messages.ListGroupsRequest(states_filter=[], types_filter=[]))
        if resp.error_code:
            raise CommandError(broker_error_sentence(resp.error_code, f"list the groups of node {node_id}"))
        for g in resp.groups:
            out[g.group_id] = {"group": g.group_id, "type": g.group_type or "classic",
                               "state": g.group_state or None, "protocol_type": g.protocol_type or None,
                               "coordinator": node_id}
    return [out[k] for k in sorted(out)]


def group_type(ws, group: str) -> tuple[str | None, object]:
    """(type, coordinator connection) of ``group``; type None when its coordinator does not
    list it (no such group, or one with committed offsets only, which Kafka shows as classic)."""
    from kbroker.wire import messages
    conn = ws.coordinator(group)
    resp = conn.call(LIST_GROUPS, "ListGroups", messages.ListGroupsRequest(states_filter=[], types_filter=[]))
    for g in resp.groups:
        if g.group_id == group:
            return (g.group_type or "classic"), conn
    return None, conn


def _decode_consumer_assignment(data) -> list[tuple[str, int]]:
    """The classic consumer protocol's assignment bytes (a version int16, then the fields)."""
    global _ASSIGNMENT
    from kbroker.wire import messages
    if not data or len(data) < 2:
        return []
    if _ASSIGNMENT is None:
        _ASSIGNMENT = messages.get("ConsumerProtocolAssignment")
    version = int.from_bytes(bytes(data[:2]), "big", signed=True)
    try:
        a = _ASSIGNMENT.decode(bytes(data), min(max(version, 0), 3), 2)
    except Exception:  # noqa: BLE001 - another protocol (connect, a custom one): no partitions
        return []
    return sorted((tp.topic, p) for tp in a.assigned_partitions or () for p in tp.partitions)


def _tps(assignment) -> list[tuple[str, int]]:
    if assignment is None:
        return []
    return sorted((t.topic_name, p) for t in assignment.topic_partitions or () for p in t.partitions)


def _tasks(tasks) -> list[str]:
    return [f"{t.subtopology_id}:{p}" for t in tasks or () for p in sorted(t.partitions)]


def _check(g, group: str, props: dict | None = None) -> None:
    if g.error_code:
        raise CommandError(broker_error_sentence(g.error_code, f"group {group}", g.error_message, props))


def describe(ws, group: str) -> dict:
    """The group's type, state, epochs and members (with assignments); ``offsets`` only for a
    share group (its start offsets), the other types' committed offsets are read by the caller."""
    from kbroker.wire import messages
    kind, conn = group_type(ws, group)
    d = {"group": group, "type": kind or "classic", "state": None, "protocol_type": None,
         "protocol": None, "group_epoch": None, "assignment_epoch": None, "assignor": None,
         "member_list": [], "subtopologies": None, "share_offsets": None,
         "coordinator": conn.where}
    if kind in (None, "classic"):
        resp = conn.call(DESCRIBE_GROUPS, "DescribeGroups", messages.DescribeGroupsRequest(
            groups=[group], include_authorized_operations=False))
        g = resp.groups[0]
        if kind is None and g.error_code == GROUP_ID_NOT_FOUND:
            d["state"] = "Dead"     # not listed, not known: Kafka's DescribeGroups says Dead
            return d
        _check(g, group, ws.props)
        d.update(state=g.group_state, protocol_type=g.protocol_type or None, protocol=g.protocol_data or None)
        for m in g.members:
            parts = _decode_consumer_assignment(m.member_assignment) if g.protocol_type == "consumer" else []
            d["member_list"].append({"consumer_id": m.member_id, "instance_id": m.group_instance_id,
                                     "client_id": m.client_id, "host": m.client_host,
                                     "assignment": [f"{t}-{p}" for t, p in parts], "_tps": parts})
        if kind is None and g.group_state == "Dead":
            d["state"] = "Dead"
        return d
    if kind == "consumer":
        resp = conn.call(CONSUMER_GROUP_DESCRIBE, "ConsumerGroupDescribe", messages.ConsumerGroupDescribeRequest(
            group_ids=[group], include_authorized_operations=False))
        g = resp.groups[0]
        _check(g, group, ws.props)
        d.update(state=g.group_state, protocol_type="consumer", group_epoch=g.group_epoch,
                 assignment_epoch=g.assignment_epoch, assignor=g.assignor_name)
        for m in g.members:
            current, target = _tps(m.assignment), _tps(m.target_assignment)
            d["member_list"].append({
                "consumer_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
                "host": m.client_host, "member_epoch": m.member_epoch,
                "classic": getattr(m, "member_type", -1) == 0,
                "assignment": [f"{t}-{p}" for t, p in current],
                "target_assignment": [f"{t}-{p}" for t, p in target], "_tps": current})
        return d
    if kind == "share":
        resp = conn.call(SHARE_GROUP_DESCRIBE, "ShareGroupDescribe", messages.ShareGroupDescribeRequest(
            group_ids=[group], include_authorized_operations=False))
        g = resp.groups[0]
        _check(g, group, ws.props)
        d.update(state=g.group_state, protocol_type="share", group_epoch=g.group_epoch,
                 assignment_epoch=g.assignment_epoch, assignor=g.assignor_name)
        for m in g.members:
            current = _tps(m.assignment)
            d["member_list"].append({"consumer_id": m.member_id, "client_id": m.client_id,
                                     "host": m.client_host, "member_epoch": m.member_epoch,
                                     "assignment": [f"{t}-{p}" for t, p in current], "_tps": current})
        d["share_offsets"] = share_offsets(conn, group)
        return d
    if kind == "streams":
        resp = conn.call(STREAMS_GROUP_DESCRIBE, "StreamsGroupDescribe", messages.StreamsGroupDescribeRequest(
            group_ids=[group], include_authorized_operations=False))
        g = resp.groups[0]
        _check(g, group, ws.props)
        d.update(state=g.group_state, protocol_type="streams", group_epoch=g.group_epoch,
                 assignment_epoch=g.assignment_epoch)
        topo = g.topology
        d["topology_epoch"] = topo.epoch if topo is not None else None
        d["subtopologies"] = [{
            "subtopology": s.subtopology_id, "source_topics": sorted(s.source_topics or ()),
            "repartition_sink_topics": sorted(s.repartition_sink_topics or ()),
            "state_changelog_topics": sorted(t.name for t in s.state_changelog_topics or ()),
            "repartition_source_topics": sorted(t.name for t in s.repartition_source_topics or ())}
            for s in (topo.subtopologies if topo is not None else ()) or ()]
        for m in g.members:
            a, t = m.assignment, m.target_assignment
            d["member_list"].append({
                "consumer_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
                "host": m.client_host, "member_epoch": m.member_epoch, "process_id": m.process_id,
                "topology_epoch": m.topology_epoch,
                "active_tasks": _tasks(a.active_tasks) if a else [],
                "standby_tasks": _tasks(a.standby_tasks) if a else [],
                "warmup_tasks": _tasks(a.warmup_tasks) if a else [],
                "target_active_tasks": _tasks(t.active_tasks) if t else [],
                "assignment": _tasks(a.active_tasks) if a else [], "_tps": []})
        return d
    raise CommandError(f"group {group} is of type {kind}, which kbroker does not describe")


def share_offsets(conn, group: str) -> list[dict]:
    """A share group's start offset (and lag, v1) per partition (DescribeShareGroupOffsets)."""
    from kbroker.wire import messages
    resp = conn.call(DESCRIBE_SHARE_GROUP_OFFSETS, "DescribeShareGroupOffsets",
                     messages.DescribeShareGroupOffsetsRequest(groups=[
                         messages.DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(
                             group_id=group, topics=None)]))
    g = resp.groups[0]
    if g.error_code:
        raise CommandError(broker_error_sentence(g.error_code, f"share group {group}", g.error_message))
    rows = []
    for t in g.topics or ():
        for p in t.partitions or ():
            if p.error_code:
                raise CommandError(broker_error_sentence(p.error_code, f"share group {group} on "
                                                         f"{t.topic_name}-{p.partition_index}", p.error_message))
            rows.append({"topic": t.topic_name, "partition": p.partition_index,
                         "start_offset": p.start_offset if p.start_offset >= 0 else None,
                         "lag": p.lag if getattr(p, "lag", -1) >= 0 else None})
    return sorted(rows, key=lambda r: (r["topic"], r["partition"]))


def alter_share_offsets(conn, group: str, targets: dict[tuple[str, int], int]) -> None:
    """AlterShareGroupOffsets (``kafka-share-groups --reset-offsets --execute``)."""
    from kbroker.wire import messages
    M = messages.AlterShareGroupOffsetsRequest
    by_topic: dict[str, list] = {}
    for (t, p), o in sorted(targets.items()):
        by_topic.setdefault(t, []).append(M.AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=o))
    resp = conn.call(ALTER_SHARE_GROUP_OFFSETS, "AlterShareGroupOffsets", M(
        group_id=group, topics=[M.AlterShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps)
                                for t, ps in by_topic.items()]))
    if getattr(resp, "error_code", 0):
        raise CommandError(broker_error_sentence(resp.error_code, f"reset share group {group}",
                                                 getattr(resp, "error_message", None)))
    for t in getattr(resp, "responses", None) or ():
        for p in t.partitions or ():
            if p.error_code:
                raise CommandError(broker_error_sentence(
                    p.error_code, f"reset share group {group} on {t.topic_name}-{p.partition_index}",
                    p.error_message))
