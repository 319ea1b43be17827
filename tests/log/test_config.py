"""LogConfig: Kafka key names, broker-level defaults, validation."""
import pytest

from kbroker.log import LogConfig
from kbroker.log.config import LONG_MAX


def test_defaults_are_kafkas():
    c = LogConfig()
    assert (c.segment_bytes, c.index_interval_bytes, c.retention_ms, c.retention_bytes) == \
        (1 << 30, 4096, 604_800_000, -1)
    assert c.flush_messages == c.flush_ms == LONG_MAX and c.cleanup_policy == "delete"


def test_topic_and_broker_keys():
    base = LogConfig.from_broker_properties({
        "log.segment.bytes": "1000", "log.retention.hours": "2", "log.retention.minutes": "3",
        "log.flush.interval.messages": "1", "log.cleanup.policy": "compact",
        "message.max.bytes": "500", "unrelated": "x"})
    assert base.segment_bytes == 1000 and base.retention_ms == 180_000  # minutes beat hours
    assert base.flush_messages == 1 and base.compact and not base.delete
    assert base.max_message_bytes == 500
    topic = LogConfig.from_properties({"cleanup.policy": "compact, delete", "retention.ms": "5",
                                       "preallocate": "true"}, base=base)
    assert topic.compact and topic.delete and topic.retention_ms == 5 and topic.preallocate
    assert topic.segment_bytes == 1000
    props = topic.to_properties()
    assert props["cleanup.policy"] == "compact,delete" and props["preallocate"] == "true"
    assert LogConfig.from_properties(props) == topic


@pytest.mark.parametrize("bad", [{"cleanup.policy": "nope"}, {"segment.bytes": "x"},
                                 {"message.timestamp.type": "Whenever"},
                                 {"min.cleanable.dirty.ratio": "2"}])
def test_bad_values_rejected(bad):
    with pytest.raises(ValueError):
        LogConfig.from_properties(bad)
