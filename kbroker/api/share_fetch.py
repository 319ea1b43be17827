"""ShareFetch (key 78), v1–v2: fetch records for a share group (KIP-932), acquiring them
for the member, with the member's acknowledgements of earlier records piggy-backed.

Share sessions (:mod:`kbroker.share.sessions`): epoch 0 opens a session with the request's
partitions (and may not acknowledge: ``INVALID_REQUEST``), later epochs add topics and
drop ``ForgottenTopicsData``, epoch -1 only acknowledges and closes the session (releasing
what the member still holds). A session also ends when the connection that opened it closes —
a consumer that crashed or lost its connection — and the member's acquired records are
released at once, as Kafka's share session cache does on disconnect, instead of waiting for
their acquisition locks to time out. Acknowledgements are applied before records are acquired;
their per-partition result is ``AcknowledgeErrorCode``.

The answer lists, per partition, whole record batches and ``AcquiredRecords`` (the
offsets now locked to the member with their delivery counts), and
``AcquisitionLockTimeoutMs`` (the group's lock duration). Shaping as Kafka 4.4's:
``MaxRecords`` is shared by the partitions of one answer and new records are acquired in whole
record batches (the last batch may take the count past ``MaxRecords``); once it is reached the
remaining partitions are not read and not listed (they come in later answers), and the
partitions are visited in a round-robin order rotated by the session epoch. Redelivered
(released) records are acquired record by record. ``BatchSize`` and ``ShareAcquireMode`` (v2)
are read and not used (Kafka 4.4 observed: ``BatchSize`` does not split the acquired ranges). Lock renewal (v2, KIP-1222): acknowledgement type 4 (RENEW) restarts the
locks of records the member holds; a request with ``IsRenewAck`` only acknowledges (nothing is
fetched) and must have MaxBytes, MinBytes, MaxRecords and MaxWaitMs at 0 (``INVALID_REQUEST``
with Kafka's message otherwise). Type 4 below v2 is ``INVALID_REQUEST``.
Rules: :mod:`kbroker.share.manager`.
"""
from __future__ import annotations

import functools

from kbroker.api import RequestContext, api
from kbroker.group.share.config import share_groups_enabled
from kbroker.api.share_group_heartbeat import share_groups_of
from kbroker.share.service import share_partitions
from kbroker.share.sessions import FINAL_EPOCH, INITIAL_EPOCH, ShareSessionError
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.ShareFetchResponse

MAX_RECORDS_DEFAULT = 500


def manager_of(broker):
    return share_partitions(broker)       # started with the first share request


def _error(code: int, message: str | None = None) -> Resp:
    return Resp(throttle_time_ms=0, error_code=code, error_message=message,
                acquisition_lock_timeout_ms=0, responses=[], node_endpoints=[])


@api(78, versions=(1, 2))
async def handle(ctx: RequestContext, request) -> Resp:
    if not share_groups_enabled(ctx.broker.metadata):
        return _error(E.UNSUPPORTED_VERSION)
    mgr = manager_of(ctx.broker)
    group_id, member_id = request.group_id, request.member_id
    epoch = request.share_session_epoch
    if not group_id or not member_id:
        return _error(E.INVALID_REQUEST, "GroupId and MemberId are required.")
    acks = {}
    fetch_parts = []
    for t in request.topics or []:
        for p in t.partitions or []:
            fetch_parts.append((t.topic_id, p.partition_index))
            if p.acknowledgement_batches:
                acks[(t.topic_id, p.partition_index)] = [
                    (b.first_offset, b.last_offset, list(b.acknowledge_types))
                    for b in p.acknowledgement_batches]
    if epoch == INITIAL_EPOCH and acks:
        return _error(E.INVALID_REQUEST, "Acknowledge data present on initial fetch request.")
    if epoch == FINAL_EPOCH and request.max_wait_ms > 0 and fetch_parts and not acks:
        return _error(E.INVALID_REQUEST, "The final fetch request cannot fetch records.")
    known = (0, 1, 2, 3, 4) if ctx.version >= 2 else (0, 1, 2, 3)
    for batches in acks.values():
        if any(ty not in known for _, _, types in batches for ty in types):
            return _error(E.INVALID_REQUEST, "Unknown acknowledge type.")
    renew_only = ctx.version >= 2 and bool(getattr(request, "is_renew_ack", False))
    if renew_only:
        wrong = "".join(f"{name} must be set to 0, " for name, v in (
            ("maxBytes", request.max_bytes), ("minBytes", request.min_bytes),
            ("maxRecords", request.max_records), ("maxWaitMs", request.max_wait_ms)) if v != 0)
        if wrong:
            return _error(E.INVALID_REQUEST, wrong + "if isRenewAck is true.")
    if mgr.persister is not None:
        await mgr.persister.ensure_topic()
    try:
        session, new = mgr.sessions.open_or_continue(group_id, member_id, epoch, fetch=True)
    except ShareSessionError as e:
        return _error(e.code)
    hooks = ctx.extra.get("close_hooks")
    if new and hooks is not None:
        # the session ends with this connection (the dict is the connection's token)
        session.connection = hooks
        hooks[("share-session", group_id, member_id)] = functools.partial(
            mgr.connection_closed, group_id, member_id, hooks)
    ack_errors = {tp: await mgr.acknowledge(group_id, member_id, tp[0], tp[1], batches)
                  for tp, batches in acks.items()}
    cfg = share_groups_of(ctx.broker).config_for(group_id)
    if epoch == FINAL_EPOCH:
        mgr.close_session(group_id, member_id)
        await mgr.flush()
        return _answer(ctx, {}, ack_errors, list(ack_errors), cfg)
    if renew_only:                         # KIP-1222: acknowledge (renew), fetch nothing
        return _answer(ctx, {}, ack_errors, list(ack_errors), cfg)
    for f in request.forgotten_topics_data or []:
        for p in f.partitions:
            session.partitions.pop((f.topic_id, p), None)
    for tp in fetch_parts:
        session.partitions[tp] = None
    partitions = list(session.partitions)
    if epoch > 0 and len(partitions) > 1:
        # Kafka's round-robin partition rotation: each request starts at the partition its
        # session epoch names, so a MaxRecords-bound answer does not starve the later ones
        k = epoch % len(partitions)
        partitions = partitions[k:] + partitions[:k]
    max_records = request.max_records if request.max_records and request.max_records > 0 \
        else MAX_RECORDS_DEFAULT
    fetched = await mgr.fetch(group_id, member_id, partitions, max_records=max_records,
                              max_wait_ms=request.max_wait_ms,
                              max_bytes=max(1, request.max_bytes))
    # a full (initial) answer lists every partition read this round (those after MaxRecords
    # was reached are left for later answers, as Kafka's); an incremental one what has news
    order = [tp for tp in partitions if tp in fetched or tp in ack_errors] \
        if epoch == INITIAL_EPOCH else [
        tp for tp in partitions
        if tp in ack_errors or fetched.get(tp) is not None and (fetched[tp].acquired or fetched[tp].error)]
    return _answer(ctx, fetched, ack_errors, order, cfg)


def _answer(ctx, fetched, ack_errors, order, cfg) -> Resp:
    by_topic: dict = {}
    for tid, p in order:
        r = fetched.get((tid, p))
        pd = Resp.PartitionData(
            partition_index=p, error_code=r.error if r else 0, error_message=None,
            acknowledge_error_code=ack_errors.get((tid, p), 0), acknowledge_error_message=None,
            current_leader=_leader(ctx, r),
            records=r.records if r else b"",
            acquired_records=[Resp.AcquiredRecords(first_offset=a.first_offset,
                                                   last_offset=a.last_offset,
                                                   delivery_count=a.delivery_count)
                              for a in (r.acquired if r else [])])
        by_topic.setdefault(tid, []).append(pd)
    return Resp(throttle_time_ms=0, error_code=0, error_message=None,
                acquisition_lock_timeout_ms=cfg.record_lock_duration_ms,
                responses=[Resp.ShareFetchableTopicResponse(topic_id=t, partitions=ps)
                           for t, ps in by_topic.items()],
                node_endpoints=[])


def _leader(ctx, r):
    """Kafka fills ``CurrentLeader`` only when the partition answers NOT_LEADER_OR_FOLLOWER
    or FENCED_LEADER_EPOCH (KIP-951); otherwise the struct keeps its zero defaults."""
    if r is not None and r.error in (6, 74):
        return Resp.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)
    return Resp.LeaderIdAndEpoch(leader_id=0, leader_epoch=0)
