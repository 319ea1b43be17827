"""Metadata records → image (replay), the metadata log round trip, the controller rules."""
import uuid

import pytest

from kbroker.config.broker import BrokerConfig
from kbroker.log.config import LogConfig
from kbroker.log.manager import LogManager
from kbroker.metadata.controller import Controller, NewTopic, topic_name_error
from kbroker.metadata.image import empty_image, replay, replay_all
from kbroker.metadata.store import MetadataLog, decode_record, encode_record
from kbroker.wire import messages as m


def test_replay_topic_lifecycle():
    tid = uuid.uuid4()
    img = empty_image("c", 1)
    img2 = replay_all(img, [
        m.TopicRecord(name="t", topic_id=tid),
        m.PartitionRecord(partition_id=0, topic_id=tid, replicas=[1], isr=[1], leader=1, leader_epoch=0),
        m.ConfigRecord(resource_type=2, resource_name="t", name="retention.ms", value="5"),
    ])
    assert img.topics == {}                                   # images never change
    t = img2.topics["t"]
    assert t.topic_id == tid and img2.topics_by_id[tid] is t and t.configs == {"retention.ms": "5"}
    img3 = replay(img2, m.PartitionChangeRecord(partition_id=0, topic_id=tid, leader=1))
    assert img3.topics["t"].partitions[0].leader_epoch == 1
    assert img2.topics["t"].partitions[0].leader_epoch == 0
    img4 = replay(img3, m.ConfigRecord(resource_type=2, resource_name="t", name="retention.ms", value=None))
    assert img4.topics["t"].configs == {}
    img5 = replay(img4, m.RemoveTopicRecord(topic_id=tid))
    assert img5.topics == {} and img5.topics_by_id == {}


@pytest.mark.parametrize("record", [
    m.TopicRecord(name="x", topic_id=uuid.uuid4()),
    m.ProducerIdsRecord(broker_id=1, broker_epoch=3, next_producer_id=2000),
    m.FeatureLevelRecord(name="metadata.version", feature_level=25),
    m.RegisterBrokerRecord(broker_id=1, incarnation_id=uuid.uuid4(), broker_epoch=0, rack=None,
                           end_points=[m.RegisterBrokerRecord.BrokerEndpoint(name="PLAINTEXT", host="h", port=1)]),
])
def test_record_framing_round_trip(record):
    raw = encode_record(record)
    assert raw[0] == 1                                         # frame version
    assert decode_record(raw).to_dict() == record.to_dict()


def test_topic_names():
    assert topic_name_error("ok.name_-1") is None
    for bad in ("", ".", "..", "a" * 250, "sp ace", "sl/ash", "ü"):
        assert topic_name_error(bad)


async def test_controller_commits_and_log_replays(tmp_path):
    cfg = BrokerConfig.from_dict({"log.dirs": str(tmp_path)})
    clock = lambda: 1_700_000_000_000  # noqa: E731

    def open_all():
        logs = LogManager([tmp_path], LogConfig(), clock)
        logs.load()
        store = MetadataLog.open(logs, clock)
        ctl = Controller(cfg, store, empty_image("cid", 1))
        ctl.load()
        return logs, ctl

    logs, ctl = open_all()
    res = await ctl.create_topics([NewTopic("a", 2), NewTopic("b", 1, configs={"cleanup.policy": "compact"})])
    assert [r.error_code for r in res] == [0, 0]
    assert (await ctl.create_topics([NewTopic("v", 1)], validate_only=True))[0].error_code == 0
    await ctl.delete_topics(["b"])
    first, count = await ctl.allocate_producer_ids(10)
    image = ctl.image
    logs.shutdown()
    logs, ctl2 = open_all()
    assert set(ctl2.image.topics) == {"a"}
    assert ctl2.image.topics["a"].topic_id == image.topics["a"].topic_id
    assert ctl2.image.next_producer_id == first + count
    assert (await ctl2.allocate_producer_ids(5))[0] == first + count
    logs.shutdown()
