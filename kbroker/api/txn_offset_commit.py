"""TxnOffsetCommit (key 28), v0–v6: commit consumer offsets inside a transaction (KIP-98;
KIP-447 adds generation/member/instance at v3 so the group can fence zombie consumers;
v5 is transaction version 2, KIP-890 part 2: the group's offsets partition is added to the
transaction by this broker, the client sent no AddOffsetsToTxn; v6, KIP-1319, names topics by
id: an id the metadata image does not know is answered UNKNOWN_TOPIC_ID, listed first, as
OffsetCommit v10 does, and the answer names topics by id too).

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
from kbroker.api._topic_ids import topic_names
from kbroker.api._txn_errors import fenced_error_for
from kbroker.txn.offsets import txn_offset_commit
from kbroker.txn.service import transactions
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.TxnOffsetCommitResponse


TV2_VERSION = 5
TOPIC_IDS_VERSION = 6


@api(28, versions=(0, 6))
async def handle(ctx: RequestContext, request) -> Resp:
    v = ctx.version
    unknown_ids: list = []
    ids: dict[str, object] = {}          # v6: topic name → the id the request used
    if v >= TOPIC_IDS_VERSION:
        names = topic_names(ctx.broker)
        for t in request.topics:
            t.name = names.get(t.topic_id)
            if t.name is None:
                unknown_ids.append((t.topic_id, [p.partition_index for p in t.partitions]))
            else:
                ids[t.name] = t.topic_id
    topics = [(t.name, [(p.partition_index, p.committed_offset,
                         p.committed_leader_epoch if v >= 2 else -1, p.committed_metadata)
                        for p in t.partitions]) for t in request.topics if t.name is not None]
    answer = _answer if v < TOPIC_IDS_VERSION else (
        lambda results: _answer_by_id(results, ids, unknown_ids))
    refused = None
    if not ctx.authorize(WRITE, TRANSACTIONAL_ID, request.transactional_id):
        refused = E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not ctx.authorize(READ, GROUP, request.group_id):
        refused = E.GROUP_AUTHORIZATION_FAILED
    if refused is not None:
        return answer([(t, [(p[0], int(refused)) for p in ps]) for t, ps in topics])
    # topics the principal may not READ are answered alone; the others are committed
    denied = denied_topics(ctx, READ, (t for t, _ in topics))
    result = [(t, [(p[0], int(E.TOPIC_AUTHORIZATION_FAILED)) for p in ps]) for t, ps in topics if t in denied]
    topics = [(t, ps) for t, ps in topics if t not in denied]
    if topics and transactions(ctx.broker) is None:
        result += [(t, [(p[0], int(E.COORDINATOR_NOT_AVAILABLE)) for p in ps]) for t, ps in topics]
    elif topics:
        result += await txn_offset_commit(
            ctx.broker, transactional_id=request.transactional_id, group_id=request.group_id,
            producer_id=request.producer_id, producer_epoch=request.producer_epoch,
            generation_id=request.generation_id_or_member_epoch if v >= 3 else -1,
            member_id=request.member_id if v >= 3 else "",
            group_instance_id=request.group_instance_id if v >= 3 else None, topics=topics,
            add_to_txn=v >= TV2_VERSION)
    return answer([(t, [(p, fenced_error_for(28, v, c)) for p, c in ps]) for t, ps in result])


def _answer(result) -> Resp:
    return Resp(throttle_time_ms=0, topics=[
        Resp.TxnOffsetCommitResponseTopic(name=t, partitions=[
            Resp.TxnOffsetCommitResponsePartition(partition_index=p, error_code=c) for p, c in ps])
        for t, ps in result])


def _answer_by_id(result, ids: dict, unknown_ids: list) -> Resp:
    def topic(tid, parts):
        return Resp.TxnOffsetCommitResponseTopic(topic_id=tid, partitions=[
            Resp.TxnOffsetCommitResponsePartition(partition_index=p, error_code=c) for p, c in parts])
    return Resp(throttle_time_ms=0, topics=[
        topic(tid, [(p, int(E.UNKNOWN_TOPIC_ID)) for p in parts]) for tid, parts in unknown_ids] + [
        topic(ids[t], ps) for t, ps in result])
