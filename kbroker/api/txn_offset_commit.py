"""TxnOffsetCommit (key 28), v0–v5: commit consumer offsets inside a transaction (KIP-98;
KIP-447 adds generation/member/instance at v3 so the group can fence zombie consumers;
v5 is transaction version 2, KIP-890 part 2: the group's offsets partition is added to the
transaction by this broker, the client sent no AddOffsetsToTxn).

The offsets are written to ``__consumer_offsets`` in a transactional batch of the producer
and become visible at commit (``kbroker.txn.offsets``). The group checks are Kafka's
transactional ones: member and generation when given, group state not enforced.

ACLs (``kbroker.authz``): WRITE on the transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group (GROUP_AUTHORIZATION_FAILED) and
on each topic (TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.authz.acls import GROUP, READ, TRANSACTIONAL_ID, WRITE
from kbroker.api._txn_errors import fenced_error_for
from kbroker.txn.offsets import txn_offset_commit
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.TxnOffsetCommitResponse


TV2_VERSION = 5


@api(28, versions=(0, 5))
async def handle(ctx: RequestContext, request) -> Resp:
    v = ctx.version
    topics = [(t.name, [(p.partition_index, p.committed_offset,
                         p.committed_leader_epoch if v >= 2 else -1, p.committed_metadata)
                        for p in t.partitions]) for t in request.topics]
    refused = None
    if not ctx.authorize(WRITE, TRANSACTIONAL_ID, request.transactional_id):
        refused = E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not ctx.authorize(READ, GROUP, request.group_id):
        refused = E.GROUP_AUTHORIZATION_FAILED
    if refused is not None:
        return Resp(throttle_time_ms=0, topics=[
            Resp.TxnOffsetCommitResponseTopic(name=t, partitions=[
                Resp.TxnOffsetCommitResponsePartition(partition_index=p[0], error_code=refused)
                for p in ps]) for t, ps in topics])
    # topics the principal may not READ are answered alone; the others are committed
    denied = denied_topics(ctx, READ, (t for t, _ in topics))
    result = [(t, [(p[0], int(E.TOPIC_AUTHORIZATION_FAILED)) for p in ps]) for t, ps in topics if t in denied]
    topics = [(t, ps) for t, ps in topics if t not in denied]
    if topics and ctx.broker.transactions is None:
        result += [(t, [(p[0], int(E.COORDINATOR_NOT_AVAILABLE)) for p in ps]) for t, ps in topics]
    elif topics:
        result += await txn_offset_commit(
            ctx.broker, transactional_id=request.transactional_id, group_id=request.group_id,
            producer_id=request.producer_id, producer_epoch=request.producer_epoch,
            generation_id=request.generation_id_or_member_epoch if v >= 3 else -1,
            member_id=request.member_id if v >= 3 else "",
            group_instance_id=request.group_instance_id if v >= 3 else None, topics=topics,
            add_to_txn=v >= TV2_VERSION)
    return Resp(throttle_time_ms=0, topics=[
        Resp.TxnOffsetCommitResponseTopic(name=t, partitions=[
            Resp.TxnOffsetCommitResponsePartition(partition_index=p,
                                                  error_code=fenced_error_for(28, v, c))
            for p, c in ps])
        for t, ps in result])
