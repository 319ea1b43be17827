"""OffsetCommit (key 8), v2–v10: store a group's consumed positions in ``__consumer_offsets``.

Members commit with their generation (``ILLEGAL_GENERATION``, ``UNKNOWN_MEMBER_ID``,
``REBALANCE_IN_PROGRESS`` while the group completes a rebalance); generation −1 without a
member id is a simple consumer and is accepted while the group is Empty, creating it if
needed. v2–v4 may carry a retention time (an explicit expire timestamp); v6 leader epochs;
v7 static members; v9 answers ``GROUP_ID_NOT_FOUND`` for a missing group where older
versions answer ``ILLEGAL_GENERATION``. Metadata strings round-trip (up to
``offset.metadata.max.bytes``). Partitions of unknown topics answer
``UNKNOWN_TOPIC_OR_PARTITION``. v10 (KIP-848) names topics by id: ids are resolved through
the metadata image and answered by id; an id the image does not know answers
``UNKNOWN_TOPIC_ID`` for its partitions.

ACLs (``kbroker.authz``): READ on the group (else GROUP_AUTHORIZATION_FAILED for every
partition), READ on each topic (TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.authz.acls import GROUP, READ
from kbroker.group.service import coordinator_of
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Response = messages.OffsetCommitResponse
RTopic = Response.OffsetCommitResponseTopic
RPartition = Response.OffsetCommitResponsePartition


@api(8, versions=(2, 10))
async def handle(ctx: RequestContext, request) -> Response:
    v = ctx.version
    image = ctx.broker.metadata
    if not ctx.authorize(READ, GROUP, request.group_id):
        return Response(throttle_time_ms=0, topics=[
            RTopic(name=t.name, topic_id=t.topic_id,
                   partitions=[RPartition(partition_index=p.partition_index,
                                          error_code=E.GROUP_AUTHORIZATION_FAILED)
                               for p in t.partitions]) for t in request.topics])
    ids: dict[str, object] = {}          # v10: topic name → the id the request used
    unknown_ids = []
    resolved = []
    for t in request.topics:
        if v >= 10:
            topic = image.topics_by_id.get(t.topic_id)
            if topic is None:
                unknown_ids.append((t.topic_id, [p.partition_index for p in t.partitions]))
                continue
            t.name = topic.name
            ids[topic.name] = t.topic_id
        resolved.append(t)
    denied = denied_topics(ctx, READ, (t.name for t in resolved))
    known, unknown, refused = [], [], []
    for t in resolved:
        if t.name in denied:
            refused.append((t.name, [p.partition_index for p in t.partitions]))
            continue
        topic = image.topics.get(t.name)
        ok, bad = [], []
        for p in t.partitions:
            if topic is None or p.partition_index not in topic.partitions:
                bad.append(p.partition_index)
            else:
                ok.append((p.partition_index, p.committed_offset,
                           p.committed_leader_epoch if v >= 6 else -1, p.committed_metadata))
        if ok:
            known.append((t.name, ok))
        if bad:
            unknown.append((t.name, bad))
    results = []
    if known:
        results = await coordinator_of(ctx.broker).commit_offsets(
            request.group_id, request.member_id or "", request.generation_id_or_member_epoch,
            request.group_instance_id if v >= 7 else None, known,
            retention_ms=request.retention_time_ms if 2 <= v <= 4 else -1, api_version=v)
    by_topic: dict[str, list] = {}
    for name, parts in results:
        by_topic.setdefault(name, []).extend(parts)
    for name, parts in unknown:
        by_topic.setdefault(name, []).extend((p, int(E.UNKNOWN_TOPIC_OR_PARTITION)) for p in parts)
    for name, parts in refused:
        by_topic.setdefault(name, []).extend((p, int(E.TOPIC_AUTHORIZATION_FAILED)) for p in parts)
    if v >= 10:
        # unknown ids first: Kafka answers them before the coordinator's results
        return Response(throttle_time_ms=0, topics=[
            RTopic(topic_id=tid, partitions=[RPartition(partition_index=p, error_code=E.UNKNOWN_TOPIC_ID)
                                             for p in parts])
            for tid, parts in unknown_ids] + [
            RTopic(topic_id=ids[name], partitions=[RPartition(partition_index=p, error_code=e)
                                                   for p, e in parts])
            for name, parts in by_topic.items()])
    return Response(throttle_time_ms=0, topics=[
        RTopic(name=name, partitions=[RPartition(partition_index=p, error_code=e) for p, e in parts])
        for name, parts in by_topic.items()])
