"""Snapshots of the metadata image (KIP-630): the image as the metadata records that
rebuild it.

``image_records(image)`` lists, in replay order, the records whose replay on an empty image
yields the same image: ``FeatureLevelRecord``s, ``RegisterBrokerRecord`` per broker (with its
fencing), broker ``ConfigRecord``s, then per topic a ``TopicRecord``, its ``ConfigRecord``s and
a ``PartitionRecord`` per partition (leader, epochs, replicas, ISR and, from
``metadata.version`` 3.7-IV2, each replica's directory as they are now; from 4.0-IV1 its
ELR and last known ELR, KIP-966; brokers' cordoned log dirs from 4.3-IV0, KIP-1066), a
``ProducerIdsRecord`` for the producer-id high mark, an ``AccessControlEntryRecord`` per ACL
and a ``DelegationTokenRecord`` per token. ``dump`` frames them like the metadata
log (v2 batches of framed records, ``kbroker.metadata.store``) — that is the snapshot's
``data`` the Raft core ships with FetchSnapshot and the driver stores as
``<offset>-<epoch>.checkpoint``; ``load`` is its inverse.
"""
from __future__ import annotations

from typing import Iterator

from kbroker.wire import messages
from kbroker.wire import records as rb

from . import directories, elr
from .image import BROKER_RESOURCE, GROUP_RESOURCE, TOPIC_RESOURCE, MetadataImage, empty_image, replay_all
from .store import decode_record, encode_record

RECORDS_PER_BATCH = 2000


def image_records(image: MetadataImage) -> Iterator:
    mv = image.features.get("metadata.version")
    with_dirs = directories.supported(mv)
    with_elr = elr.supported(mv)
    with_cordoned = mv is not None and mv >= 30          # 4.3-IV0, KIP-1066
    for name, level in sorted(image.features.items()):
        yield messages.FeatureLevelRecord(name=name, feature_level=level)
    EP = messages.RegisterBrokerRecord.BrokerEndpoint
    for b in sorted(image.brokers.values(), key=lambda b: b.node_id):
        yield messages.RegisterBrokerRecord(
            broker_id=b.node_id, is_migrating_zk_broker=False, incarnation_id=b.incarnation_id,
            broker_epoch=b.broker_epoch, rack=b.rack, fenced=b.fenced,
            in_controlled_shutdown=b.in_controlled_shutdown,
            end_points=[EP(name=n, host=h, port=p, security_protocol=0) for n, h, p in b.endpoints],
            features=[messages.RegisterBrokerRecord.BrokerFeature(
                name=n, min_supported_version=lo, max_supported_version=hi) for n, lo, hi in b.features],
            log_dirs=list(b.log_dirs) if with_dirs else [],
            cordoned_log_dirs=list(b.cordoned_log_dirs) if with_cordoned else None)
    for rname, configs in sorted(image.broker_configs.items()):
        for key, value in sorted(configs.items()):
            yield messages.ConfigRecord(resource_type=BROKER_RESOURCE, resource_name=rname,
                                        name=key, value=value)
    for rname, configs in sorted(image.group_configs.items()):
        for key, value in sorted(configs.items()):
            yield messages.ConfigRecord(resource_type=GROUP_RESOURCE, resource_name=rname,
                                        name=key, value=value)
    for name, t in sorted(image.topics.items()):
        yield messages.TopicRecord(name=name, topic_id=t.topic_id)
        for key, value in sorted(t.configs.items()):
            yield messages.ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=name,
                                        name=key, value=value)
        for p in sorted(t.partitions.values(), key=lambda p: p.partition):
            yield messages.PartitionRecord(
                partition_id=p.partition, topic_id=t.topic_id, replicas=list(p.replicas),
                isr=list(p.isr), removing_replicas=list(p.removing_replicas),
                adding_replicas=list(p.adding_replicas), leader=p.leader,
                leader_epoch=p.leader_epoch, partition_epoch=p.partition_epoch,
                directories=p.directory_list() if with_dirs else [],
                eligible_leader_replicas=list(p.elr) if with_elr else None,
                last_known_elr=list(p.last_known_elr) if with_elr else None)
    from .client_quotas import records_of
    yield from records_of(image.client_quotas)
    for user, mechs in sorted(image.scram_credentials.items()):
        for mech, c in sorted(mechs.items()):
            yield messages.UserScramCredentialRecord(
                name=user, mechanism=mech, salt=c.salt, stored_key=c.stored_key,
                server_key=c.server_key, iterations=c.iterations)
    if image.next_producer_id:
        yield messages.ProducerIdsRecord(broker_id=-1, broker_epoch=-1,
                                         next_producer_id=image.next_producer_id)
    for acl_id, acl in sorted(image.acls.items(), key=lambda kv: str(kv[0])):
        yield acl.to_record(acl_id)
    for _, token in sorted(image.delegation_tokens.items()):
        yield token.to_record()


def dump(image: MetadataImage, timestamp: int = -1) -> bytes:
    out = bytearray()
    batch: list = []
    offset = 0

    def flush() -> None:
        nonlocal offset
        if batch:
            out.extend(rb.build_batch([(None, v, (), timestamp) for v in batch], base_offset=offset))
            offset += len(batch)
            batch.clear()

    mv = image.features.get("metadata.version")
    for rec in image_records(image):
        batch.append(encode_record(rec, mv))
        if len(batch) >= RECORDS_PER_BATCH:
            flush()
    flush()
    return bytes(out)


def load(data: bytes, cluster_id: str, node_id: int, end_offset: int) -> MetadataImage:
    """The image a snapshot ending at ``end_offset`` holds."""
    view = memoryview(data)
    records = []
    pos = 0
    while pos < len(view):
        header = rb.parse_header(view, pos)
        for rec in rb.decode_records(view, pos, header, verify=True):
            if not header.is_control and rec.value is not None:
                records.append(decode_record(rec.value))
        pos += header.size
    if end_offset == 0:
        # the snapshot Kafka 4.4's `kafka-storage format` writes holds the bootstrap features
        from .storage_format import servable_features
        records = servable_features(records, "the metadata log's bootstrap snapshot")
    image = replay_all(empty_image(cluster_id, node_id), records)
    from dataclasses import replace
    return replace(image, offset=end_offset - 1)
