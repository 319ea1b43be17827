"""FindCoordinator (key 10), v0–v6: which broker coordinates a group (or transaction).

The coordinator is the leader of the key's partition of ``__consumer_offsets`` /
``__transaction_state`` (Kafka's ``abs(hashCode) % partitions``), answered with its endpoint
on the listener the request came in on — on one node always this broker.
Like Kafka, the first lookup of a group creates ``__consumer_offsets`` (compacted,
``offsets.topic.num.partitions`` partitions) and loads it; a transaction lookup creates
``__transaction_state``. v4+ batches keys (KIP-699); key type 0 = group, 1 = transaction,
2 = share coordinator (v6+, KIP-932): the key ``groupId:topicId:partition`` (topic id in
Kafka's text form) names the leader of its ``__share_group_state`` partition (Kafka's
``ShareCoordinatorService.partitionFor``; the topic is created on first lookup); a key that
does not parse is ``INVALID_REQUEST``. Brokers use it to find where a share-partition's
state lives.

ACLs (``kbroker.authz``): DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or the
transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); CLUSTER_ACTION on the cluster for
share coordinator keys (CLUSTER_AUTHORIZATION_FAILED), an inter-broker lookup as in Kafka.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz import acls
from kbroker.group.records import partition_for
from kbroker.group.service import coordinator_of
from kbroker.share.persister import TOPIC as SHARE_STATE_TOPIC, partition_for_key
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Response = messages.FindCoordinatorResponse
GROUP, TRANSACTION, SHARE = 0, 1, 2


def _share_key_ok(key: str) -> bool:
    """``groupId:topicId:partition`` as Kafka's ``SharePartitionKey.getInstance`` accepts it."""
    import base64
    parts = key.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        return False
    _, tid, part = parts
    try:
        ok_id = len(base64.urlsafe_b64decode(tid + "==")) == 16
    except ValueError:
        return False
    return ok_id and part.lstrip("-").isdigit()


async def _lookup(ctx: RequestContext, key: str, key_type: int):
    """(error, node_id, host, port) for one key."""
    broker = ctx.broker
    if key_type == GROUP and key and not ctx.authorize(acls.DESCRIBE, acls.GROUP, key):
        return E.GROUP_AUTHORIZATION_FAILED, -1, "", -1
    if key_type == TRANSACTION and key and not ctx.authorize(acls.DESCRIBE, acls.TRANSACTIONAL_ID, key):
        return E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, "", -1
    if key_type == SHARE:
        if ctx.version < 6:
            return E.INVALID_REQUEST, -1, "", -1
        if not ctx.authorize_cluster(acls.CLUSTER_ACTION):
            return E.CLUSTER_AUTHORIZATION_FAILED, -1, "", -1
        if not _share_key_ok(key):
            return E.INVALID_REQUEST, -1, "", -1
    if key_type == GROUP:
        if not key:
            return E.INVALID_REQUEST, -1, "", -1
        err = await coordinator_of(broker).ensure_offsets_topic()
    elif key_type == SHARE:
        err = E.NONE
        if SHARE_STATE_TOPIC not in broker.metadata.topics:
            results = await broker.controller.maybe_create_topics([SHARE_STATE_TOPIC])
            if any(r.error_code and r.error_code != E.TOPIC_ALREADY_EXISTS for r in results):
                err = E.COORDINATOR_NOT_AVAILABLE
    elif key_type == TRANSACTION:
        if not key:
            return E.INVALID_REQUEST, -1, "", -1
        err = E.NONE
        if "__transaction_state" not in broker.metadata.topics:
            results = await broker.controller.maybe_create_topics(["__transaction_state"])
            if any(r.error_code and r.error_code != E.TOPIC_ALREADY_EXISTS for r in results):
                err = E.COORDINATOR_NOT_AVAILABLE
    else:
        return E.INVALID_REQUEST, -1, "", -1
    if err:
        return err, -1, "", -1
    # In a cluster the coordinator is the leader of the key's partition of the internal
    # topic (Kafka: abs(hashCode) % partitions); on one node that is always this broker.
    node_id = broker.node_id
    topic = broker.metadata.topics.get({GROUP: "__consumer_offsets", SHARE: SHARE_STATE_TOPIC}.get(
        key_type, "__transaction_state"))
    if topic is not None and topic.partitions:
        n = len(topic.partitions)
        part = topic.partitions.get(partition_for_key(key, n) if key_type == SHARE
                                    else partition_for(key, n))
        node_id = part.leader if part is not None else -1
    me = broker.metadata.brokers.get(node_id)
    ep = None if me is None or me.fenced else (
        me.endpoint(ctx.listener) or (me.endpoints[0][1:] if me.endpoints else None))
    if ep is None:
        return E.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    return E.NONE, node_id, ep[0], ep[1]


@api(10, versions=(0, 6))
async def handle(ctx: RequestContext, request) -> Response:
    if ctx.version >= 4:
        out = []
        for key in request.coordinator_keys:
            err, node, host, port = await _lookup(ctx, key, request.key_type)
            out.append(Response.Coordinator(key=key, node_id=node, host=host, port=port,
                                            error_code=err,
                                            error_message=None if not err else E(err).name))
        return Response(throttle_time_ms=0, coordinators=out)
    key_type = request.key_type if ctx.version >= 1 else GROUP
    err, node, host, port = await _lookup(ctx, request.key, key_type)
    return Response(throttle_time_ms=0, error_code=err, node_id=node, host=host, port=port,
                    error_message=(E(err).name if err and ctx.version >= 1 else None))
