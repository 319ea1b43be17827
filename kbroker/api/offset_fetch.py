"""OffsetFetch (key 9), v1–v10: a group's committed offsets.

``topics`` null (v2+) means every committed partition of the group. Partitions without a
commit answer offset −1, metadata "" and no error. v5 adds leader epochs; v7
``require_stable``: partitions with pending transactional commits answer
``UNSTABLE_OFFSET_COMMIT``; v8 batches groups (KIP-709); v9's member id/epoch are checked
for KIP-848 consumer groups (``STALE_MEMBER_EPOCH``, ``UNKNOWN_MEMBER_ID``) and ignored for
classic groups. v10 names topics by id (KIP-848): ids are
resolved through the metadata image; an unknown id answers ``UNKNOWN_TOPIC_ID`` for its
partitions, and a listing of every committed partition leaves out topics that no longer
exist (they have no id to be named by).

ACLs (``kbroker.authz``): DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED) and on
each named topic (TOPIC_AUTHORIZATION_FAILED); asked for all topics, the ones the principal
may not DESCRIBE are left out.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.authz.acls import DESCRIBE, GROUP
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.group.service import coordinator_of
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

Response = messages.OffsetFetchResponse


async def _fetch(ctx: RequestContext, gc, group_id, topics, stable, *member):
    """``gc.fetch_offsets`` behind the group's and the topics' DESCRIBE checks."""
    if not ctx.authorize(DESCRIBE, GROUP, group_id):
        return E.GROUP_AUTHORIZATION_FAILED, []
    if ctx.authorizer is None:
        return await gc.fetch_offsets(group_id, topics, stable, *member)
    if topics is None:    # all topics: the ones the principal may not see are left out
        err, res = await gc.fetch_offsets(group_id, None, stable, *member)
        hidden = denied_topics(ctx, DESCRIBE, (t for t, _ in res))
        return err, [(t, parts) for t, parts in res if t not in hidden]
    denied = denied_topics(ctx, DESCRIBE, (t for t, _ in topics))
    err, res = await gc.fetch_offsets(group_id, [(t, ps) for t, ps in topics if t not in denied], stable,
                                      *member)
    return err, list(res) + [(t, [(p, -1, -1, "", E.TOPIC_AUTHORIZATION_FAILED) for p in ps])
                             for t, ps in topics if t in denied]


@api(9, versions=(1, 10))
async def handle(ctx: RequestContext, request) -> Response:
    v = ctx.version
    gc = coordinator_of(ctx.broker)
    stable = bool(request.require_stable) if v >= 7 else False
    if v >= 8:
        groups = []
        image = ctx.broker.metadata
        for g in request.groups:
            missing = []            # v10: (topic id, partitions) the image does not know
            if g.topics is None:
                topics = None
            elif v >= 10:
                topics = []
                for t in g.topics:
                    found = image.topics_by_id.get(t.topic_id)
                    if found is None:
                        missing.append((t.topic_id, list(t.partition_indexes)))
                    else:
                        topics.append((found.name, list(t.partition_indexes)))
            else:
                topics = [(t.name, list(t.partition_indexes)) for t in g.topics]
            member = (g.member_id, g.member_epoch) if v >= 9 else (None, -1)
            err, res = await _fetch(ctx, gc, g.group_id, topics, stable, *member)
            out_topics = []
            for t, parts in res:
                partitions = [Response.OffsetFetchResponsePartitions(
                    partition_index=p, committed_offset=o, committed_leader_epoch=e,
                    metadata=m, error_code=pe) for p, o, e, m, pe in parts]
                if v < 10:
                    out_topics.append(Response.OffsetFetchResponseTopics(name=t, partitions=partitions))
                elif t in image.topics:
                    out_topics.append(Response.OffsetFetchResponseTopics(
                        topic_id=image.topics[t].topic_id, partitions=partitions))
            for tid, parts in missing:
                out_topics.append(Response.OffsetFetchResponseTopics(topic_id=tid, partitions=[
                    Response.OffsetFetchResponsePartitions(
                        partition_index=p, committed_offset=-1, metadata="",
                        error_code=E.UNKNOWN_TOPIC_ID) for p in parts]))
            groups.append(Response.OffsetFetchResponseGroup(group_id=g.group_id, error_code=err,
                                                            topics=out_topics))
        return Response(throttle_time_ms=0, groups=groups)
    topics = None if request.topics is None else [(t.name, list(t.partition_indexes)) for t in request.topics]
    err, res = await _fetch(ctx, gc, request.group_id, topics, stable)
    out = [Response.OffsetFetchResponseTopic(name=t, partitions=[
        Response.OffsetFetchResponsePartition(
            partition_index=p, committed_offset=o,
            committed_leader_epoch=e if v >= 5 else -1, metadata=m,
            # v0/v1 have no top-level error: group errors go to every partition
            error_code=pe or (err if v < 2 else 0)) for p, o, e, m, pe in parts])
        for t, parts in res]
    if v < 2 and err and topics is not None:
        out = [Response.OffsetFetchResponseTopic(name=t, partitions=[
            Response.OffsetFetchResponsePartition(partition_index=p, committed_offset=-1,
                                                  metadata="", error_code=err) for p in ps])
               for t, ps in topics]
    return Response(throttle_time_ms=0, topics=out, error_code=err if v >= 2 else 0)
