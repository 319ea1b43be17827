"""Consumer groups this node coordinates: list, one group (state, members and their
assignments, committed offsets and lag per partition), resetting offsets and deleting.

Reads are the group coordinator's, for every group type, through the same API handlers a
client calls (``inproc.call_api``): DescribeGroups for a classic group, ConsumerGroupDescribe
(KIP-848), ShareGroupDescribe and DescribeShareGroupOffsets (KIP-932, start offsets in place
of committed ones, and their lag) and StreamsGroupDescribe (KIP-1071: each member's active,
standby and warm-up tasks, the topology's subtopologies), as ListGroups types the group; the
coordinator's OffsetFetch gives the committed offsets of the other types;
lag is ListOffsets' latest offset (the high watermark) minus the committed offset, as
``kafka-consumer-groups --describe`` computes it. Resets are an OffsetCommit with
generation −1 and no member (the admin path; the coordinator refuses it while the group has
members, as Kafka does), deletes a DeleteGroups — both through their API handlers.
"""
from __future__ import annotations

import trio

from kbroker.group.service import coordinator_of
from kbroker.replica import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ReplicaError
from kbroker.wire import messages

from kbroker.authz.acls import DESCRIBE, GROUP, READ, TOPIC

from .auth import allowed, require
from .errors import ApiFailure, error_name
from .inproc import call_api

_ASSIGNMENT = None


def _decode_assignment(data: bytes) -> list[dict]:
    """The consumer protocol's assignment (a version int16, then the schema's fields)."""
    global _ASSIGNMENT
    if not data or len(data) < 2:
        return []
    if _ASSIGNMENT is None:
        _ASSIGNMENT = messages.get("ConsumerProtocolAssignment")
    version = int.from_bytes(data[:2], "big", signed=True)
    try:
        a = _ASSIGNMENT.decode(bytes(data), min(max(version, 0), 3), 2)
    except Exception:  # noqa: BLE001 - a non-consumer protocol: show nothing
        return []
    return [{"topic": tp.topic, "partitions": sorted(tp.partitions)}
            for tp in a.assigned_partitions or ()]


async def _coordinated_here(broker, group_id: str) -> None:
    """FindCoordinator, as a client asks it first (it creates ``__consumer_offsets`` the
    first time); a group coordinated by another node is shown by that node's console."""
    resp = await call_api(broker, 10, 4, messages.FindCoordinatorRequest(
        key="", key_type=0, coordinator_keys=[group_id]))
    c = resp.coordinators[0]
    if c.error_code:
        raise ApiFailure(c.error_code, c.error_message or f"no coordinator for group '{group_id}': "
                                                          f"{error_name(c.error_code)}", status=503)
    if c.node_id != broker.node_id:
        raise ApiFailure(16, f"group '{group_id}' is coordinated by node {c.node_id} "
                             f"({c.host}:{c.port}): open that node's console", status=409)


def _latest(broker, topic: str, p: int) -> int | None:
    try:
        return broker.replicas.list_offset(topic, p, LATEST_TIMESTAMP)[1]
    except ReplicaError:
        return None


async def list_groups(broker) -> list[dict]:
    gc = coordinator_of(broker)
    out = []
    for g in sorted(await gc.list_groups()):
        gid, ptype, state = g[0], g[1], g[2]
        if not allowed(broker, DESCRIBE, GROUP, gid):          # as ListGroups hides it
            continue
        out.append({"group_id": gid, "protocol_type": ptype, "state": state,
                    "group_type": getattr(g, "group_type", "classic")})
    for g in out:
        await trio.lowlevel.checkpoint()
        d = await group_detail(broker, g["group_id"], lag_only=True)
        g.update(members=d["member_count"], lag=d["total_lag"], topics=d["topics"])
    return out


def _tps(assignment) -> list[dict]:
    return [{"topic": t.topic_name, "partitions": sorted(t.partitions)}
            for t in (assignment.topic_partitions if assignment is not None else ()) or ()]


async def _typed_detail(broker, group_id: str, kind: str, lag_only: bool) -> dict | None:
    """A consumer, share or streams group through its describe API (None: a classic group)."""
    if kind == "consumer":
        resp = await call_api(broker, 69, 1, messages.ConsumerGroupDescribeRequest(
            group_ids=[group_id], include_authorized_operations=False))
    elif kind == "share":
        resp = await call_api(broker, 77, 1, messages.ShareGroupDescribeRequest(
            group_ids=[group_id], include_authorized_operations=False))
    elif kind == "streams":
        resp = await call_api(broker, 89, 0, messages.StreamsGroupDescribeRequest(
            group_ids=[group_id], include_authorized_operations=False))
    else:
        return None
    g = resp.groups[0]
    if g.error_code:
        raise ApiFailure(g.error_code, g.error_message or f"cannot describe group '{group_id}': "
                                                          f"{error_name(g.error_code)}")
    members, owner = [], {}
    # a streams task (subtopology s, partition p) reads partition p of s's input topics
    inputs = {s["subtopology"]: s["source_topics"] + s["repartition_source_topics"]
              for s in _subtopologies(g)} if kind == "streams" else {}
    for m in g.members:
        tasks = None
        if kind == "streams":
            a = m.assignment
            assigned = [{"topic": f"subtopology {t.subtopology_id}", "partitions": sorted(t.partitions)}
                        for t in (a.active_tasks if a is not None else ()) or ()]
            tasks = {k: _tasks(getattr(a, f"{k}_tasks", None) if a is not None else None)
                     for k in ("active", "standby", "warmup")}
            for task in tasks["active"]:
                for topic in inputs.get(task["subtopology"], ()):
                    for p in task["partitions"]:
                        owner[(topic, p)] = m.member_id
        else:
            assigned = _tps(m.assignment)
            for x in assigned:
                for p in x["partitions"]:
                    owner[(x["topic"], p)] = m.member_id
        members.append({"member_id": m.member_id, "group_instance_id": getattr(m, "instance_id", None),
                        "client_id": m.client_id, "client_host": m.client_host,
                        "member_epoch": m.member_epoch, "assignment": assigned,
                        "target_assignment": _tps(getattr(m, "target_assignment", None))
                        if kind == "consumer" else None, "tasks": tasks})
    if kind == "share":
        R = messages.DescribeShareGroupOffsetsRequest
        so = await call_api(broker, 90, 1, R(groups=[R.DescribeShareGroupOffsetsRequestGroup(
            group_id=group_id, topics=None)]))
        committed_at = {(t.topic_name, p.partition_index): (p.start_offset, "")
                        for t in so.groups[0].topics or () for p in t.partitions or ()
                        if not p.error_code}
        # the coordinator's own lag (v1): records neither delivered to the end nor past the
        # start offset, which end − start overcounts when acknowledged records sit above it
        share_lag = {(t.topic_name, p.partition_index): p.lag
                     for t in so.groups[0].topics or () for p in t.partitions or ()
                     if not p.error_code and p.lag >= 0}
    else:
        share_lag = {}
        err, committed = await coordinator_of(broker).fetch_offsets(group_id, None, False)
        if err:
            raise ApiFailure(err, f"cannot fetch the offsets of group '{group_id}': {error_name(err)}")
        committed_at = {(t, p): (o, md) for t, parts in committed for p, o, _e, md, _pe in parts}
    keys = {k for k in set(committed_at) | set(owner) if allowed(broker, DESCRIBE, TOPIC, k[0])}
    offsets, total = [], 0
    for t, p in sorted(keys):
        o, md = committed_at.get((t, p), (-1, ""))
        end = _latest(broker, t, p)
        lag = share_lag.get((t, p), end - o if end is not None and o >= 0 else None)
        if lag is not None:
            total += lag
        offsets.append({"topic": t, "partition": p, "committed_offset": o, "metadata": md,
                        "log_end_offset": end, "lag": lag, "member_id": owner.get((t, p))})
    dlq = None
    if kind == "share":
        in_flight = share_in_flight(broker, group_id)
        for o in offsets:
            o["in_flight"] = in_flight.get((o["topic"], o["partition"]))
        dlq = share_dead_letters(broker, group_id)
    return {"group_id": group_id, "group_type": kind, "state": g.group_state, "protocol_type": kind,
            "dead_letter_queue": dlq,
            "protocol": getattr(g, "assignor_name", None), "group_epoch": g.group_epoch,
            "assignment_epoch": g.assignment_epoch, "members": [] if lag_only else members,
            "member_count": len(g.members), "offsets": [] if lag_only else offsets,
            "total_lag": total, "topics": sorted({t for t, _ in keys}),
            "subtopologies": _subtopologies(g) if kind == "streams" else None}


def share_in_flight(broker, group_id: str) -> dict[tuple[str, int], dict]:
    """The in-flight records of the group's share-partitions led on this node (Kafka's
    SharePartitionMetrics ``InFlightMessageCount``, KIP-1103: the partition leader's, not
    the coordinator's — no Kafka API answers them): (topic, partition) -> counts by state."""
    mgr = getattr(broker, "share_partitions", None)
    if mgr is None:
        return {}
    out = {}
    for (g, tid, p), sp in list(mgr.partitions.items()):
        name = mgr._topic_name(tid) if g == group_id else None
        if name is not None:
            st = sp.statistics()
            out[(name, p)] = {k: st[k] for k in ("in_flight", "available", "acquired",
                                                  "acknowledged", "archived")}
    return out


def share_dead_letters(broker, group_id: str) -> dict:
    """The group's dead-letter queue (KIP-1191): the GROUP config naming its topic, whether
    it is in force (``share.version`` 2), and what this node wrote to it or dropped."""
    from kbroker.share.dlq import TOPIC_NAME, dlq_enabled
    image = broker.metadata
    name = str(((getattr(image, "group_configs", None) or {}).get(group_id) or {}).get(TOPIC_NAME, "") or "")
    mgr = getattr(broker, "share_partitions", None)
    counts = mgr.dlq.group_statistics(group_id) if mgr is not None else {}
    return {"topic": name or None, "enabled": bool(name) and dlq_enabled(image),
            "written": counts.get("dead_letters", 0), "dropped": counts.get("dead_letters_dropped", 0)}


def _tasks(tasks) -> list[dict]:
    """A streams member's tasks of one kind: [{subtopology, partitions}] (KIP-1071)."""
    return [{"subtopology": t.subtopology_id, "partitions": sorted(t.partitions)}
            for t in sorted(tasks or (), key=lambda t: t.subtopology_id)]


def _subtopologies(g) -> list[dict]:
    """A streams group's topology as StreamsGroupDescribe answers it."""
    topo = g.topology
    return [{"subtopology": s.subtopology_id, "source_topics": sorted(s.source_topics or ()),
             "repartition_sink_topics": sorted(s.repartition_sink_topics or ()),
             "repartition_source_topics": sorted(x.name for x in s.repartition_source_topics or ()),
             "state_changelog_topics": sorted(x.name for x in s.state_changelog_topics or ())}
            for s in (topo.subtopologies if topo is not None else ()) or ()]


async def group_detail(broker, group_id: str, *, lag_only: bool = False) -> dict:
    require(broker, DESCRIBE, GROUP, group_id)                 # as DescribeGroups
    gc = coordinator_of(broker)
    if not lag_only:
        await _coordinated_here(broker, group_id)
    kind = next((getattr(g, "group_type", "classic") for g in await gc.list_groups()
                 if g[0] == group_id), "classic")
    typed = await _typed_detail(broker, group_id, kind, lag_only)
    if typed is not None:
        return typed
    (d,) = await gc.describe_groups([group_id])
    if d.error:
        raise ApiFailure(d.error, f"cannot describe group '{group_id}': {error_name(d.error)}")
    err, committed = await gc.fetch_offsets(group_id, None, False)
    if err:
        raise ApiFailure(err, f"cannot fetch the offsets of group '{group_id}': {error_name(err)}")
    members = []
    owner: dict[tuple[str, int], str] = {}
    for m in d.members:
        assigned = _decode_assignment(m.assignment) if d.protocol_type == "consumer" else []
        for a in assigned:
            for p in a["partitions"]:
                owner[(a["topic"], p)] = m.member_id
        members.append({"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id, "client_host": m.client_host,
                        "assignment": assigned})
    offsets = []
    keys = {(t, p) for t, parts in committed for p, *_ in parts} | set(owner)
    keys = {(t, p) for t, p in keys if allowed(broker, DESCRIBE, TOPIC, t)}   # as OffsetFetch
    committed_at = {(t, p): (o, md) for t, parts in committed for p, o, _e, md, _pe in parts}
    total = 0
    for t, p in sorted(keys):
        o, md = committed_at.get((t, p), (-1, ""))
        end = _latest(broker, t, p)
        lag = end - o if end is not None and o >= 0 else None
        if lag is not None:
            total += lag
        offsets.append({"topic": t, "partition": p, "committed_offset": o, "metadata": md,
                        "log_end_offset": end, "lag": lag, "member_id": owner.get((t, p))})
    state = d.state
    if state == "Dead" and not offsets:
        raise ApiFailure(69, f"Group '{group_id}' does not exist.", status=404)
    return {"group_id": group_id, "group_type": "classic", "state": state, "protocol_type": d.protocol_type,
            "protocol": d.protocol_data, "members": [] if lag_only else members,
            "member_count": len(d.members), "offsets": [] if lag_only else offsets,
            "total_lag": total, "topics": sorted({t for t, _ in keys})}


async def reset_offsets(broker, body: dict) -> dict:
    """``{group, topic, to: earliest|latest|offset|timestamp, offset?, timestamp?,
    partitions?}``: commit the target offsets of the topic's partitions for the group."""
    group = body.get("group")
    topic = body.get("topic")
    to = body.get("to")
    if not isinstance(group, str) or not group:
        raise ApiFailure(24, "a group id is needed")
    require(broker, READ, GROUP, group)                         # as OffsetCommit
    if isinstance(topic, str):
        require(broker, READ, TOPIC, topic)
    await _coordinated_here(broker, group)
    t = broker.metadata.topics.get(topic) if isinstance(topic, str) else None
    if t is None:
        raise ApiFailure(3, f"Topic '{topic}' does not exist.", status=404)
    parts = body.get("partitions")
    if parts is None:
        parts = sorted(t.partitions)
    elif not isinstance(parts, list) or any(not isinstance(p, int) or p not in t.partitions for p in parts):
        raise ApiFailure(3, f"partitions must be a list of partitions of '{topic}'")
    targets = []
    for p in parts:
        try:
            if to == "earliest":
                off = broker.replicas.list_offset(topic, p, EARLIEST_TIMESTAMP)[1]
            elif to == "latest":
                off = broker.replicas.list_offset(topic, p, LATEST_TIMESTAMP)[1]
            elif to == "offset":
                off = body.get("offset")
                if isinstance(off, bool) or not isinstance(off, int) or off < 0:
                    raise ApiFailure(1, "offset must be a number ≥ 0")
                lo = broker.replicas.list_offset(topic, p, EARLIEST_TIMESTAMP)[1]
                hi = broker.replicas.list_offset(topic, p, LATEST_TIMESTAMP)[1]
                off = min(max(off, lo), hi)   # as kafka-consumer-groups clamps to the log
            elif to == "timestamp":
                ts = body.get("timestamp")
                if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
                    raise ApiFailure(42, "timestamp must be milliseconds since the epoch")
                off = broker.replicas.list_offset(topic, p, ts)[1]
                if off < 0:
                    off = broker.replicas.list_offset(topic, p, LATEST_TIMESTAMP)[1]
            else:
                raise ApiFailure(42, "to must be earliest, latest, offset or timestamp")
        except ReplicaError as e:
            raise ApiFailure(e.error_code, f"partition {p}: {error_name(e.error_code)}") from None
        targets.append((p, off))
    R = messages.OffsetCommitRequest
    req = R(group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
            retention_time_ms=-1, topics=[R.OffsetCommitRequestTopic(name=topic, partitions=[
                R.OffsetCommitRequestPartition(partition_index=p, committed_offset=o,
                                               committed_leader_epoch=-1, committed_metadata="")
                for p, o in targets])])
    resp = await call_api(broker, 8, 9, req)
    for rt in resp.topics:
        for rp in rt.partitions:
            if rp.error_code:
                hint = (" — stop its consumers first (a group with members cannot be reset)"
                        if rp.error_code in (25, 22, 27, 69) or rp.error_code == 27 else "")
                raise ApiFailure(rp.error_code,
                                 f"partition {rp.partition_index}: {error_name(rp.error_code)}{hint}",
                                 status=409)
    return {"group": group, "topic": topic, "offsets": [{"partition": p, "offset": o} for p, o in targets]}


async def delete_group(broker, body: dict) -> dict:
    group = body.get("group")
    if not isinstance(group, str) or not group:
        raise ApiFailure(24, "a group id is needed")
    await _coordinated_here(broker, group)
    resp = await call_api(broker, 42, 2, messages.DeleteGroupsRequest(groups_names=[group]))
    r = resp.results[0]
    if r.error_code:
        hint = " — it still has members" if r.error_code == 68 else ""
        raise ApiFailure(r.error_code, f"cannot delete group '{group}': {error_name(r.error_code)}{hint}",
                         status=409)
    return {"group": group, "deleted": True}
