"""DescribeTopicPartitions (key 75), v0: topics and their partitions, page by page (KIP-966).

What Kafka 4's ``kafka-topics.sh --describe`` and ``Admin.describeTopics`` call instead of
Metadata. Rules (Kafka's ``DescribeTopicPartitionsRequestHandler`` and
``KRaftMetadataCache.describeTopicResponse``):

- An empty topic list means every topic; topics are answered in name order (a named list
  too, once each).
- Pagination: at most ``min(response_partition_limit, max.request.partition.size.limit)``
  partitions per answer. When a topic does not fit, its answered part ends the page and
  ``next_cursor`` names the topic and its first partition left; when the limit is reached
  exactly at a topic's end, the cursor names the next topic at partition 0 (that topic may
  not exist any more). A request ``cursor`` starts at that topic and partition; with a topic
  list the cursor's topic must be in it, and its partition must not be negative, else the
  whole request is refused: every requested topic answered ``INVALID_REQUEST`` with no
  partitions (Kafka's error response; the message has no top-level error code).
- A named topic that does not exist is answered ``UNKNOWN_TOPIC_OR_PARTITION`` (an illegal
  name: ``INVALID_TOPIC_EXCEPTION``) with no partitions; listing every topic skips nothing.
- Partitions carry leader, leader epoch, replicas, ISR, ``eligible_leader_replicas`` and
  ``last_known_elr`` (KIP-966, as the controller keeps them in the image) and offline replicas,
  for the listener the request came in on (``kbroker.metadata.client_view``, as for
  Metadata): a leader that is unregistered or without the listener is -1, with no error
  code; the replica and ISR lists are never filtered.
ACLs (``kbroker.authz``), as for Metadata: listing every topic leaves out the ones the
principal may not DESCRIBE; a named one it may not DESCRIBE is answered
``TOPIC_AUTHORIZATION_FAILED``; topic authorized operations come from the ACLs (everything
without an authorizer).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.authz.acls import DESCRIBE, TOPIC
from kbroker.metadata.client_view import partition_view
from kbroker.metadata.controller import topic_name_error
from kbroker.metadata.image import INTERNAL_TOPICS, ZERO_UUID
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.DescribeTopicPartitionsResponse
Topic = Response.DescribeTopicPartitionsResponseTopic
Partition = Response.DescribeTopicPartitionsResponsePartition
DEFAULT_LIMIT = 2000        # max.request.partition.size.limit


def _partition(image, p, listener: str) -> Partition:
    view = partition_view(image, p, listener)
    # the partition's error stays NONE: Kafka sets none here, a missing leader is only -1
    return Partition(error_code=ErrorCode.NONE, partition_index=p.partition,
                     leader_id=view.leader_id, leader_epoch=p.leader_epoch,
                     replica_nodes=view.replicas, isr_nodes=view.isr,
                     eligible_leader_replicas=list(p.elr), last_known_elr=list(p.last_known_elr),
                     offline_replicas=view.offline_replicas)


def _limit(ctx, request) -> int:
    try:
        cap = int(ctx.broker.config.get("max.request.partition.size.limit"))
    except (KeyError, AttributeError, TypeError, ValueError):
        cap = DEFAULT_LIMIT
    return min(request.response_partition_limit, cap)


@api(75, versions=(0, 0))
async def handle(ctx: RequestContext, request) -> Response:
    image = ctx.broker.metadata
    everything = not request.topics
    cursor = request.cursor
    names = sorted(image.topics) if everything else sorted({t.name for t in request.topics})
    denied = denied_topics(ctx, DESCRIBE, names)
    if everything:
        names = [n for n in names if n not in denied]
    if cursor is not None:
        if (not everything and cursor.topic_name not in names) or cursor.partition_index < 0:
            return _invalid(request)
        names = [n for n in names if n >= cursor.topic_name]
    remaining = _limit(ctx, request)
    out = Response(throttle_time_ms=0, topics=[], next_cursor=None)
    for name in names:
        if remaining <= 0:
            out.next_cursor = Response.Cursor(topic_name=name, partition_index=0)
            break
        if name in denied:
            out.topics.append(Topic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name,
                                    topic_id=ZERO_UUID, is_internal=name in INTERNAL_TOPICS,
                                    partitions=[]))
            continue
        t = image.topics.get(name)
        if t is None:
            if not everything:
                code = (ErrorCode.INVALID_TOPIC_EXCEPTION if topic_name_error(name)
                        else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                out.topics.append(Topic(error_code=code, name=name, topic_id=ZERO_UUID,
                                        is_internal=name in INTERNAL_TOPICS, partitions=[],
                                        topic_authorized_operations=ctx.authorized_operations(
                                            True, TOPIC, name)))
            continue
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        indexes = sorted(i for i in t.partitions if i >= first)
        page = indexes[:remaining]
        out.topics.append(Topic(error_code=ErrorCode.NONE, name=name, topic_id=t.topic_id,
                                is_internal=t.internal,
                                partitions=[_partition(image, t.partitions[i], ctx.listener)
                                            for i in page],
                                topic_authorized_operations=ctx.authorized_operations(
                                    True, TOPIC, name)))
        if len(page) < len(indexes):
            out.next_cursor = Response.Cursor(topic_name=name, partition_index=indexes[len(page)])
            break
        remaining -= len(page)
    return out


def _invalid(request) -> Response:
    return Response(throttle_time_ms=0, next_cursor=None, topics=[
        Topic(error_code=ErrorCode.INVALID_REQUEST, name=t.name, topic_id=ZERO_UUID, partitions=[])
        for t in request.topics])
