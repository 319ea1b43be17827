"""FindCoordinator (key 10), v0–v6: which broker coordinates a group (or transaction).

The coordinator is the leader of the key's partition of ``__consumer_offsets`` /
``__transaction_state`` (Kafka's ``abs(hashCode) % partitions``), answered with its endpoint
on the listener the request came in on — on one node always this broker.
Like Kafka, the first lookup of a group creates ``__consumer_offsets`` (compacted,
``offsets.topic.num.partitions`` partitions) and loads it; a transaction lookup creates
``__transaction_state``. v4+ batches keys (KIP-699); key type 0 = group, 1 = transaction.
Not implemented: key type 2 (share groups) answers ``INVALID_REQUEST``.

ACLs (``kbroker.authz``): DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or the
transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.authz import acls
from kbroker.group.records import partition_for
from kbroker.group.service import coordinator_of
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Response = messages.FindCoordinatorResponse
GROUP, TRANSACTION = 0, 1


async def _lookup(ctx: RequestContext, key: str, key_type: int):
    """(error, node_id, host, port) for one key."""
    broker = ctx.broker
    if key_type == GROUP and key and not ctx.authorize(acls.DESCRIBE, acls.GROUP, key):
        return E.GROUP_AUTHORIZATION_FAILED, -1, "", -1
    if key_type == TRANSACTION and key and not ctx.authorize(acls.DESCRIBE, acls.TRANSACTIONAL_ID, key):
        return E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, "", -1
    if key_type == GROUP:
        if not key:
            return E.INVALID_REQUEST, -1, "", -1
        err = await coordinator_of(broker).ensure_offsets_topic()
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
    topic = broker.metadata.topics.get("__consumer_offsets" if key_type == GROUP else "__transaction_state")
    if topic is not None and topic.partitions:
        part = topic.partitions.get(partition_for(key, len(topic.partitions)))
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
