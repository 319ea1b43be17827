"""The metadata.version levels up to Kafka 4.4's latest production level (4.4-IV2): their
names, which of them changed the metadata format, the record versions each writes, and the
records they add (read always, replayed into the image, kept by snapshots).

Facts from Kafka 4.4.0's ``MetadataVersion``: 4.3-IV0 (30) brings cordoned log dirs
(KIP-1066: RegisterBrokerRecord v4, BrokerRegistrationChangeRecord v3), 4.4-IV1 (32) CIDR
ACL hosts, 4.4-IV2 (33) controller unregistration; 4.4-IV0 changed no record."""
from __future__ import annotations

import uuid

import pytest

from kbroker.config.features import SUPPORTED_FEATURES
from kbroker.metadata import snapshot
from kbroker.metadata.feature_control import metadata_changed
from kbroker.metadata.image import apply_partition_change, empty_image, replay_all
from kbroker.metadata.storage_format import metadata_version_name, parse_release_version
from kbroker.metadata.store import decode_record, encode_record, record_version
from kbroker.wire import messages as w
from kbroker.wire.errors import UnsupportedVersion

D1, D2 = uuid.UUID(int=11), uuid.UUID(int=12)


def test_levels_up_to_4_4_iv2():
    assert SUPPORTED_FEATURES["metadata.version"] == (7, 33)
    assert [metadata_version_name(v) for v in (26, 30, 31, 32, 33)] == [
        "4.1-IV0", "4.3-IV0", "4.4-IV0", "4.4-IV1", "4.4-IV2"]
    assert parse_release_version("4.4") == 33 and parse_release_version("4.3") == 30
    assert not metadata_changed(30, 31)             # 4.4-IV0 changed no record
    assert metadata_changed(31, 32) and metadata_changed(32, 33)


def test_cordoned_log_dirs_record_versions_and_replay():
    reg = w.RegisterBrokerRecord(broker_id=1, broker_epoch=5, log_dirs=[D1, D2], cordoned_log_dirs=[D2])
    assert [record_version(reg, mv) for mv in (17, 29, 30, 33)] == [3, 3, 4, 4]
    assert decode_record(encode_record(reg, 30)).cordoned_log_dirs == [D2]
    with pytest.raises(UnsupportedVersion):          # below 4.3-IV0 nothing may carry them
        encode_record(reg, 29)
    change = w.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=5, cordoned_log_dirs=[])
    assert record_version(change, 33) == 3 and record_version(change, 29) == 1
    img = replay_all(empty_image("c", 1), [w.FeatureLevelRecord(name="metadata.version", feature_level=33),
                                          reg])
    assert img.brokers[1].cordoned_log_dirs == (D2,)
    again = replay_all(empty_image("c", 1), snapshot.image_records(img))
    assert again.brokers[1].cordoned_log_dirs == (D2,)
    # null leaves them; an empty list uncordons every dir
    img = replay_all(img, [w.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=5, fenced=-1)])
    assert img.brokers[1].cordoned_log_dirs == (D2,)
    img = replay_all(img, [change])
    assert img.brokers[1].cordoned_log_dirs == ()


def _topic_with_elr(mv: int):
    tid = uuid.uuid4()
    recs = [w.FeatureLevelRecord(name="metadata.version", feature_level=mv),
            w.TopicRecord(name="t", topic_id=tid),
            w.PartitionRecord(partition_id=0, topic_id=tid, replicas=[1, 2, 3], isr=[1],
                              removing_replicas=[], adding_replicas=[], leader=1, leader_epoch=3,
                              partition_epoch=7, directories=[],
                              eligible_leader_replicas=[2], last_known_elr=[3])]
    return tid, replay_all(empty_image("c", 1), recs)


def test_elr_fields_replay_snapshot_and_clear():
    tid, img = _topic_with_elr(33)
    p = img.topics["t"].partitions[0]
    assert (p.elr, p.last_known_elr) == ((2,), (3,))
    # a change record without the fields keeps them; with them replaces them
    p2 = apply_partition_change(p, w.PartitionChangeRecord(partition_id=0, topic_id=tid, isr=[1, 2]))
    assert p2.elr == (2,)
    p3 = apply_partition_change(p, w.PartitionChangeRecord(partition_id=0, topic_id=tid, isr=[],
                                                           eligible_leader_replicas=[1, 2], last_known_elr=[]))
    assert (p3.isr, p3.elr, p3.last_known_elr) == ((), (1, 2), ())
    # snapshots keep them (PartitionRecord v2 from 4.0-IV1)
    again = replay_all(empty_image("c", 1), snapshot.image_records(img))
    assert again.topics["t"].partitions[0].elr == (2,)
    # ClearElrRecord: one topic (or every topic for an empty name), partition epoch bumped
    for name in ("t", ""):
        cleared = replay_all(img, [decode_record(encode_record(w.ClearElrRecord(topic_name=name), 33))])
        q = cleared.topics["t"].partitions[0]
        assert (q.elr, q.last_known_elr, q.partition_epoch) == ((), (), 8)


def test_controller_registration_records_are_read():
    """RegisterControllerRecord (27) and UnregisterControllerRecord (29, 4.4-IV2) in a log
    decode and replay as no-ops: kbroker's voters are the Raft layer's."""
    img = empty_image("c", 1)
    for rec in (w.RegisterControllerRecord(controller_id=3, incarnation_id=uuid.uuid4(), end_points=[],
                                           features=[]),
                w.UnregisterControllerRecord(controller_id=3)):
        back = decode_record(encode_record(rec))
        assert type(back).__name__ == type(rec).__name__
        assert replay_all(img, [back]) == img
