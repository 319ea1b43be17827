"""Metadata (key 3), v0–v13: brokers, cluster id, controller, topics and partitions.

- v0 still works (kafka-python 2.0 / old aiokafka send it right after ApiVersions v0);
  an empty topic list means "all topics" in v0 and "none" from v1 (null = all).
- KIP-516 topic ids (v10+ in responses, v12 lookups by id → ``UNKNOWN_TOPIC_ID``);
  KIP-320 leader epochs (v7+); KIP-430 authorized operations (v8+ topics, v8–v10 cluster)
  from the ACLs (all operations with no authorizer).
- ACLs (``kbroker.authz``), as Kafka: an all-topics request lists only the topics the
  principal may DESCRIBE; a named topic it may not DESCRIBE (existing or not) is answered
  TOPIC_AUTHORIZATION_FAILED; auto-creation also needs CREATE on the cluster or the topic
  (else TOPIC_AUTHORIZATION_FAILED).
- Auto-creation like Kafka: an unknown topic is created with ``num.partitions`` when
  ``auto.create.topics.enable`` is true and the request allows it (always for v0–v3), and
  answered ``UNKNOWN_TOPIC_OR_PARTITION`` as Kafka 4.3.1/4.4.0 answer it (the client retries;
  older Kafka answered LEADER_NOT_AVAILABLE), internal topics included, whatever comes of the
  creation: one that fails (a replication factor above the brokers) is answered the same, as
  Kafka's broker answers before its controller has decided. kbroker answers once the creation
  has committed or failed, so that the client's next request finds the topic; otherwise
  ``UNKNOWN_TOPIC_OR_PARTITION`` too. Illegal names get ``INVALID_TOPIC_EXCEPTION``.
  ``__consumer_offsets``/``__transaction_state`` are created with their coordinator
  settings.
- Brokers are listed with the endpoint of the listener the request arrived on.
- Partitions as Kafka's ``KRaftMetadataCache`` answers them, for that listener
  (``kbroker.metadata.client_view``): ``offline_replicas`` (v5+) lists the replicas whose
  broker is unregistered, fenced, without the listener, or whose log dir is offline (KIP-858);
  a leader that is unregistered (or none) is answered -1 with LEADER_NOT_AVAILABLE, one
  without the listener -1 with LISTENER_NOT_FOUND (v6+; LEADER_NOT_AVAILABLE before); v0
  alone leaves unavailable brokers out of the replicas and ISR, and then answers
  REPLICA_NOT_AVAILABLE.
- v13 (KIP-1102) adds a top-level ``error_code``: always NONE here (Kafka answers
  REBOOTSTRAP_REQUIRED only when it cannot describe its cluster to the client).
- A topic's entry is built and encoded once per image of the topic, listener and version
  (``kbroker/api/_metadata_cache.py``), not per request: a full answer of n partitions
  costs O(topics) of Python plus a copy of bytes. Entries with authorized operations
  (asked for by the caller) are built each time.
"""
from __future__ import annotations

import logging

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.api._metadata_cache import cache_of
from kbroker.authz.acls import CLUSTER, CREATE, DESCRIBE, TOPIC
from kbroker.metadata.client_view import partition_view
from kbroker.metadata.controller import topic_name_error
from kbroker.metadata.image import INTERNAL_TOPICS, ZERO_UUID
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

log = logging.getLogger(__name__)

Response = messages.MetadataResponse
Topic = Response.MetadataResponseTopic
Partition = Response.MetadataResponsePartition
Broker = Response.MetadataResponseBroker


def broker_entries(image, listener: str) -> list:
    out = []
    for b in sorted(image.live_brokers(), key=lambda b: b.node_id):
        ep = b.endpoint(listener) or (b.endpoints[0][1:] if b.endpoints else None)
        if ep is not None:
            out.append(Broker(node_id=b.node_id, host=ep[0], port=ep[1], rack=b.rack))
    return out


def topic_entry(image, t, listener: str, version: int) -> Topic:
    parts = []
    for p in sorted(t.partitions.values(), key=lambda p: p.partition):
        view = partition_view(image, p, listener, filter_unavailable=version == 0,
                              listener_error=version >= 6)
        parts.append(Partition(error_code=view.error_code, partition_index=p.partition,
                               leader_id=view.leader_id, leader_epoch=p.leader_epoch,
                               replica_nodes=view.replicas, isr_nodes=view.isr,
                               offline_replicas=view.offline_replicas))
    return Topic(error_code=ErrorCode.NONE, name=t.name,
                 topic_id=t.topic_id if version >= 10 else ZERO_UUID,
                 is_internal=t.internal, partitions=parts)


def _entry_maker(ctx: RequestContext, image, request):
    """``entry(t)``: the topic's entry for this request, from the node's cache unless the
    caller asked for its authorized operations (those differ by principal)."""
    v, listener = ctx.version, ctx.listener
    if v >= 8 and request.include_topic_authorized_operations:
        return lambda t: topic_entry(image, t, listener, v)
    cache = cache_of(ctx.broker)
    return lambda t: cache.entry(image, t, listener, v,
                                 lambda: topic_entry(image, t, listener, v), Response)


@api(3, versions=(0, 13))
async def handle(ctx: RequestContext, request) -> Response:
    broker = ctx.broker
    image = broker.metadata
    v = ctx.version
    topics_out = []
    entry = _entry_maker(ctx, image, request)
    if request.topics is None or (v == 0 and not request.topics):
        denied = denied_topics(ctx, DESCRIBE, image.topics)
        topics_out = [entry(t) for n, t in sorted(image.topics.items()) if n not in denied]
    else:
        allow = (v < 4 or request.allow_auto_topic_creation) and \
            broker.config.get("auto.create.topics.enable")
        denied = denied_topics(ctx, DESCRIBE, [r.name if r.name is not None else
                                               getattr(image.topics_by_id.get(r.topic_id), "name", None)
                                               for r in request.topics])
        no_create = frozenset()
        if allow and ctx.authorizer is not None and not ctx.authorize_cluster(CREATE):
            no_create = denied_topics(ctx, CREATE, [r.name for r in request.topics
                                                    if r.name is not None and r.name not in image.topics])
        to_create: list[str] = []
        for req in request.topics:
            if req.topic_id is not None and req.topic_id != ZERO_UUID and not req.name:
                t = image.topics_by_id.get(req.topic_id)
                if t is None:
                    topics_out.append(Topic(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None,
                                            topic_id=req.topic_id, partitions=[]))
                elif t.name in denied:
                    topics_out.append(Topic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                            name=None, topic_id=req.topic_id, partitions=[]))
                else:
                    topics_out.append(entry(t))
                continue
            name = req.name
            t = image.topics.get(name) if name is not None else None
            if name in denied or (t is None and allow and name in no_create):
                topics_out.append(Topic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name,
                                        is_internal=name in INTERNAL_TOPICS, partitions=[]))
            elif t is not None:
                topics_out.append(entry(t))
            elif name is None or topic_name_error(name):
                topics_out.append(Topic(error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, name=name or "",
                                        partitions=[]))
            elif allow:
                to_create.append(name)
                topics_out.append(Topic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name,
                                        is_internal=name in INTERNAL_TOPICS,
                                        partitions=[]))
            else:
                topics_out.append(Topic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name,
                                        partitions=[]))
        if to_create:
            # answered UNKNOWN_TOPIC_OR_PARTITION whatever comes of the creation, failed ones
            # too (their reason goes to the log); waited for only so that the client's next
            # request finds a created topic
            for r in await broker.controller.maybe_create_topics(to_create):
                if r.error_code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                    log.info("auto-creation of topic %s failed: %s (%s)", r.name,
                             r.error_message or "", ErrorCode(r.error_code).name)
        image = broker.metadata
    if v >= 8 and request.include_topic_authorized_operations:
        for t in topics_out:
            if t.error_code == ErrorCode.NONE:
                t.topic_authorized_operations = ctx.authorized_operations(True, TOPIC, t.name)
    if v < 10:
        for t in topics_out:
            if t.topic_id != ZERO_UUID:     # an error entry (cached ones have none below v10)
                t.topic_id = ZERO_UUID
    if v < 12:
        for t in topics_out:
            if t.name is None:
                t.name = ""
    cluster_ops = ctx.authorized_operations(
        8 <= v <= 10 and request.include_cluster_authorized_operations, CLUSTER, "kafka-cluster")
    return Response(throttle_time_ms=0, brokers=broker_entries(image, ctx.listener),
                    cluster_id=image.cluster_id, controller_id=image.controller_id,
                    topics=topics_out, cluster_authorized_operations=cluster_ops)
