"""API v3 consumer groups: list, one group, its consumers, its lags and lag summary.

Reads go through the handlers a client's admin calls use: ListGroups, DescribeGroups
(classic groups) or ConsumerGroupDescribe (KIP-848 groups), OffsetFetch for the committed
offsets and ListOffsets for the log end offsets; lag is log end offset minus committed
offset, as ``kafka-consumer-groups --describe`` computes it. A node knows the groups it
coordinates (each node's gateway answers for its own).
"""
from __future__ import annotations

from kbroker.console.groups import _decode_assignment
from kbroker.replica import LATEST_TIMESTAMP
from kbroker.wire import messages

from .app import Call, Routes
from .errors import RestError, from_kafka
from .inproc import call_api
from .v2_topics import list_offsets
from .v3 import cluster_id, crn, listing, ok, related, url


async def _list(call: Call) -> list:
    resp = await call_api(call.broker, 16, 5, messages.ListGroupsRequest(states_filter=[],
                                                                       types_filter=[]))
    if resp.error_code:
        raise from_kafka(resp.error_code, v3=True)
    return [g for g in resp.groups if g.protocol_type in ("consumer", "")
            or (g.group_type or "").lower() == "consumer"]


async def _describe(call: Call, group: str) -> dict:
    """One group: {type, state, assignor, simple, members: [{consumer_id, instance_id,
    client_id, assignment: [(topic, partition)]}]} — 404 when it does not exist."""
    listed = {g.group_id: g for g in await _list(call)}
    g = listed.get(group)
    if g is None:
        raise RestError(404, 404, f"Consumer group {group} cannot be found.")
    names = {t.topic_id: n for n, t in call.broker.metadata.topics.items()}
    if (g.group_type or "").lower() == "consumer":
        R = messages.ConsumerGroupDescribeRequest
        d = (await call_api(call.broker, 69, 1, R(group_ids=[group],
                                                  include_authorized_operations=False))).groups[0]
        if d.error_code:
            raise from_kafka(d.error_code, d.error_message, v3=True)
        members = [{"consumer_id": m.member_id, "instance_id": m.instance_id,
                    "client_id": m.client_id,
                    "assignment": sorted((tp.topic_name or names.get(tp.topic_id, str(tp.topic_id)), p)
                                         for tp in (m.assignment.topic_partitions if m.assignment else [])
                                         for p in tp.partitions)} for m in d.members]
        return {"type": "CONSUMER", "state": d.group_state, "assignor": d.assignor_name or "",
                "simple": False, "members": members}
    R = messages.DescribeGroupsRequest
    d = (await call_api(call.broker, 15, 5, R(groups=[group],
                                              include_authorized_operations=False))).groups[0]
    if d.error_code:
        raise from_kafka(d.error_code, v3=True)
    members = [{"consumer_id": m.member_id, "instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "assignment": sorted((a["topic"], p) for a in _decode_assignment(m.member_assignment)
                                     for p in a["partitions"])} for m in d.members]
    return {"type": "CLASSIC", "state": d.group_state, "assignor": d.protocol_data or "",
            "simple": d.protocol_type == "", "members": members}


def _state(state: str) -> str:
    return {"PreparingRebalance": "PREPARING_REBALANCE",
            "CompletingRebalance": "COMPLETING_REBALANCE"}.get(state, state.upper())


def group_json(call: Call, cid: str, group: str, d: dict) -> dict:
    coordinator = call.broker.node_id
    return {"kind": "KafkaConsumerGroup",
            "metadata": {"self": url(call, cid, "consumer-groups", group),
                         "resource_name": crn(cid, ("consumer-group", group))},
            "cluster_id": cid, "consumer_group_id": group, "is_simple": d["simple"],
            "partition_assignor": d["assignor"], "state": _state(d["state"]), "type": d["type"],
            "coordinator": related(url(call, cid, "brokers", coordinator)),
            "consumers": related(url(call, cid, "consumer-groups", group, "consumers")),
            "lag_summary": related(url(call, cid, "consumer-groups", group, "lag-summary"))}


async def list_groups(call: Call):
    cid = cluster_id(call)
    out = []
    for g in sorted(await _list(call), key=lambda g: g.group_id):
        try:
            out.append(group_json(call, cid, g.group_id, await _describe(call, g.group_id)))
        except RestError as e:
            if e.status != 404:         # gone since it was listed
                raise
    return ok(listing(call, "KafkaConsumerGroupList", out))


async def get_group(call: Call):
    cid = cluster_id(call)
    group = call.params["group"]
    return ok(group_json(call, cid, group, await _describe(call, group)))


def consumer_json(call: Call, cid: str, group: str, m: dict) -> dict:
    base = ("consumer-groups", group, "consumers", m["consumer_id"])
    return {"kind": "KafkaConsumer",
            "metadata": {"self": url(call, cid, *base),
                         "resource_name": crn(cid, ("consumer-group", group),
                                              ("consumer", m["consumer_id"]))},
            "cluster_id": cid, "consumer_group_id": group, "consumer_id": m["consumer_id"],
            "instance_id": m["instance_id"], "client_id": m["client_id"],
            "assignments": related(url(call, cid, *base, "assignments"))}


async def list_consumers(call: Call):
    cid = cluster_id(call)
    group = call.params["group"]
    d = await _describe(call, group)
    return ok(listing(call, "KafkaConsumerList", [consumer_json(call, cid, group, m)
                                                  for m in d["members"]]))


async def get_consumer(call: Call):
    cid = cluster_id(call)
    group = call.params["group"]
    for m in (await _describe(call, group))["members"]:
        if m["consumer_id"] == call.params["consumer"]:
            return ok(consumer_json(call, cid, group, m))
    raise RestError(404, 404, f"Consumer {call.params['consumer']} cannot be found.")


async def consumer_assignments(call: Call):
    cid = cluster_id(call)
    group, consumer = call.params["group"], call.params["consumer"]
    for m in (await _describe(call, group))["members"]:
        if m["consumer_id"] == consumer:
            base = ("consumer-groups", group, "consumers", consumer, "assignments")
            return ok(listing(call, "KafkaConsumerAssignmentList", [
                {"kind": "KafkaConsumerAssignment",
                 "metadata": {"self": url(call, cid, *base, t, "partitions", p),
                              "resource_name": crn(cid, ("consumer-group", group),
                                                   ("consumer", consumer), ("assignment", f"{t}-{p}"))},
                 "cluster_id": cid, "consumer_group_id": group, "consumer_id": consumer,
                 "topic_name": t, "partition_id": p,
                 "partition": related(url(call, cid, "topics", t, "partitions", p)),
                 "lag": related(url(call, cid, "consumer-groups", group, "lags", t, "partitions", p))}
                for t, p in m["assignment"]]))
    raise RestError(404, 404, f"Consumer {consumer} cannot be found.")


async def _lags(call: Call, group: str) -> list[dict]:
    d = await _describe(call, group)
    owner = {tp: m for m in d["members"] for tp in m["assignment"]}
    R = messages.OffsetFetchRequest
    resp = await call_api(call.broker, 9, 8, R(groups=[R.OffsetFetchRequestGroup(
        group_id=group, topics=None)], require_stable=False))
    g = resp.groups[0]
    if g.error_code:
        raise from_kafka(g.error_code, v3=True)
    committed = {(t.name, p.partition_index): p.committed_offset for t in g.topics
                 for p in t.partitions if not p.error_code}
    keys = sorted(set(committed) | set(owner))
    by_topic: dict[str, list[int]] = {}
    for t, p in keys:
        by_topic.setdefault(t, []).append(p)
    ends: dict = {}
    for t, ps in by_topic.items():
        try:
            for p, o in (await list_offsets(call.broker, t, ps, LATEST_TIMESTAMP, v3=True,
                                            forward=call.gateway.forward)).items():
                ends[(t, p)] = o
        except RestError:
            continue                    # a topic deleted since: no lag to tell
    out = []
    for tp in keys:
        if tp not in ends:
            continue
        current = committed.get(tp, -1)
        m = owner.get(tp, {})
        out.append({"topic_name": tp[0], "partition_id": tp[1], "current_offset": current,
                    "log_end_offset": ends[tp],
                    "lag": ends[tp] - current if current >= 0 else ends[tp],
                    "consumer_id": m.get("consumer_id", ""), "instance_id": m.get("instance_id"),
                    "client_id": m.get("client_id", "")})
    return out


def _lag_json(call: Call, cid: str, group: str, lag: dict) -> dict:
    base = ("consumer-groups", group, "lags", lag["topic_name"], "partitions", lag["partition_id"])
    return {"kind": "KafkaConsumerLag",
            "metadata": {"self": url(call, cid, *base),
                         "resource_name": crn(cid, ("consumer-group", group),
                                              ("lag", lag["topic_name"]),
                                              ("partition", lag["partition_id"]))},
            "cluster_id": cid, "consumer_group_id": group, **lag}


async def list_lags(call: Call):
    cid = cluster_id(call)
    group = call.params["group"]
    return ok(listing(call, "KafkaConsumerLagList",
                      [_lag_json(call, cid, group, lag) for lag in await _lags(call, group)]))


async def get_lag(call: Call):
    """One partition's lag (``.../lags/{topic}/partitions/{p}``); 404 when the group has
    neither a committed offset nor an owner for it."""
    cid = cluster_id(call)
    group, topic, partition = call.params["group"], call.params["topic"], call.params["partition"]
    for lag in await _lags(call, group):
        if lag["topic_name"] == topic and str(lag["partition_id"]) == partition:
            return ok(_lag_json(call, cid, group, lag))
    raise RestError(404, 404, f"Consumer lag for group {group} topic {topic} partition "
                              f"{partition} cannot be found.")


async def lag_summary(call: Call):
    cid = cluster_id(call)
    group = call.params["group"]
    lags = await _lags(call, group)
    top = max(lags, key=lambda l: l["lag"], default=None)
    summary = {"kind": "KafkaConsumerGroupLagSummary",
               "metadata": {"self": url(call, cid, "consumer-groups", group, "lag-summary"),
                            "resource_name": crn(cid, ("consumer-group", group), ("lag-summary", ""))
                            .rstrip("=")},
               "cluster_id": cid, "consumer_group_id": group,
               "max_lag_consumer_id": top["consumer_id"] if top else "",
               "max_lag_instance_id": top["instance_id"] if top else None,
               "max_lag_client_id": top["client_id"] if top else "",
               "max_lag_topic_name": top["topic_name"] if top else "",
               "max_lag_partition_id": top["partition_id"] if top else 0,
               "max_lag": top["lag"] if top else 0,
               "total_lag": sum(l["lag"] for l in lags),
               "max_lag_consumer": related(url(call, cid, "consumer-groups", group, "consumers",
                                               top["consumer_id"])) if top and top["consumer_id"] else None,
               "max_lag_partition": related(url(call, cid, "topics", top["topic_name"], "partitions",
                                                top["partition_id"])) if top else None}
    return ok(summary)


def install(routes: Routes) -> None:
    G = "/v3/clusters/{cluster}/consumer-groups"
    routes.add("GET", G, list_groups)
    routes.add("GET", G + "/{group}", get_group)
    routes.add("GET", G + "/{group}/consumers", list_consumers)
    routes.add("GET", G + "/{group}/consumers/{consumer}", get_consumer)
    routes.add("GET", G + "/{group}/consumers/{consumer}/assignments", consumer_assignments)
    routes.add("GET", G + "/{group}/lags", list_lags)
    routes.add("GET", G + "/{group}/lags/{topic}/partitions/{partition}", get_lag)
    routes.add("GET", G + "/{group}/lag-summary", lag_summary)
