"""DescribeShareGroupOffsets (key 90), v0–v1: a share group's start offset per
share-partition (KIP-932), and (v1) its lag; ``Topics`` null means every share-partition
the group has a state for. An unknown group answers start offset -1 for the partitions
asked about, as Kafka; a group of another type is ``GROUP_ID_NOT_FOUND``."""
from __future__ import annotations

from kbroker.api import RequestContext, api
from kbroker.api._share_admin import group_error, summary
from kbroker.share.service import share_partitions
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

Resp = messages.DescribeShareGroupOffsetsResponse


@api(90, versions=(0, 1))
async def handle(ctx: RequestContext, request) -> Resp:
    broker = ctx.broker
    mgr = share_partitions(broker)        # started with the first share request
    if mgr.persister is not None:
        await mgr.persister.ensure_topic()
    image = broker.metadata
    groups = []
    for g in request.groups or []:
        err = group_error(broker, g.group_id, must_be_empty=False)
        if err:
            groups.append(Resp.DescribeShareGroupOffsetsResponseGroup(
                group_id=g.group_id, topics=[], error_code=err, error_message=None))
            continue
        wanted: dict = {}
        if g.topics is None:
            for tid, p in mgr.persister.keys_of(g.group_id):
                t = image.topics_by_id.get(tid)
                if t is not None:
                    wanted.setdefault(t.name, []).append(p)
        else:
            for t in g.topics:
                wanted.setdefault(t.topic_name, []).extend(t.partitions)
        topics = []
        for name, parts in wanted.items():
            t = image.topics.get(name)
            rows = []
            for p in parts:
                if t is None or p not in t.partitions:
                    rows.append(Resp.DescribeShareGroupOffsetsResponsePartition(
                        partition_index=p, start_offset=-1, leader_epoch=-1, lag=-1,
                        error_code=E.UNKNOWN_TOPIC_OR_PARTITION, error_message=None))
                    continue
                e, start, lag = summary(broker, g.group_id, t.topic_id, p)
                rows.append(Resp.DescribeShareGroupOffsetsResponsePartition(
                    partition_index=p, start_offset=start, leader_epoch=-1 if start < 0 else 0,
                    lag=lag, error_code=e, error_message=None))
            topics.append(Resp.DescribeShareGroupOffsetsResponseTopic(
                topic_name=name, topic_id=t.topic_id if t is not None else None, partitions=rows))
        groups.append(Resp.DescribeShareGroupOffsetsResponseGroup(
            group_id=g.group_id, topics=topics, error_code=0, error_message=None))
    return Resp(throttle_time_ms=0, groups=groups)
