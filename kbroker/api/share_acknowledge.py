"""ShareAcknowledge (key 79), v1–v2: acknowledge records a share consumer acquired
(KIP-932): 1 accept, 2 release, 3 reject, 0 gap, per batch of offsets.

It works on the member's share session (:mod:`kbroker.share.sessions`): epoch 0 is
``INVALID_SHARE_SESSION_EPOCH`` (acknowledging needs a session), epoch -1 acknowledges and
closes the session, releasing what the member still holds. v2 (KIP-1222): type 4 (RENEW)
restarts the acquisition locks of records the member holds (``INVALID_RECORD_STATE`` when the
GROUP config ``share.renew.acknowledge.enable`` is false); below v2 it is ``INVALID_REQUEST``.
"""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.group.share.config import share_groups_enabled
from kbroker.api.share_fetch import manager_of
from kbroker.api.share_group_heartbeat import share_groups_of
from kbroker.share.sessions import FINAL_EPOCH, ShareSessionError
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.ShareAcknowledgeResponse


def _error(code: int, message: str | None = None) -> Resp:
    return Resp(throttle_time_ms=0, error_code=code, error_message=message,
                acquisition_lock_timeout_ms=0, responses=[], node_endpoints=[])


@api(79, versions=(1, 2))
async def handle(ctx: RequestContext, request) -> Resp:
    if not share_groups_enabled(ctx.broker.metadata):
        return _error(E.UNSUPPORTED_VERSION)
    mgr = manager_of(ctx.broker)
    group_id, member_id = request.group_id, request.member_id
    if not group_id or not member_id:
        return _error(E.INVALID_REQUEST, "GroupId and MemberId are required.")
    known = (0, 1, 2, 3, 4) if ctx.version >= 2 else (0, 1, 2, 3)      # 4: RENEW (KIP-1222)
    for t in request.topics or []:
        for p in t.partitions or []:
            for b in p.acknowledgement_batches or []:
                if any(ty not in known for ty in b.acknowledge_types):
                    return _error(E.INVALID_REQUEST, "Unknown acknowledge type.")
    try:
        mgr.sessions.open_or_continue(group_id, member_id, request.share_session_epoch,
                                      fetch=False)
    except ShareSessionError as e:
        return _error(e.code)
    topics = []
    for t in request.topics or []:
        parts = []
        for p in t.partitions or []:
            code = await mgr.acknowledge(group_id, member_id, t.topic_id, p.partition_index,
                                   [(b.first_offset, b.last_offset, list(b.acknowledge_types))
                                    for b in p.acknowledgement_batches or []])
            parts.append(Resp.PartitionData(
                partition_index=p.partition_index, error_code=code, error_message=None,
                current_leader=Resp.LeaderIdAndEpoch(
                    leader_id=-1 if code in (6, 74) else 0, leader_epoch=-1 if code in (6, 74) else 0)))
        topics.append(Resp.ShareAcknowledgeTopicResponse(topic_id=t.topic_id, partitions=parts))
    if request.share_session_epoch == FINAL_EPOCH:
        mgr.close_session(group_id, member_id)
        await mgr.flush()
    cfg = share_groups_of(ctx.broker).config_for(group_id)
    return Resp(throttle_time_ms=0, error_code=0, error_message=None,
                acquisition_lock_timeout_ms=cfg.record_lock_duration_ms,
                responses=topics, node_endpoints=[])
