"""ReplicaManager.append: Kafka's produce rules on real log files."""
from __future__ import annotations

import pytest

from kbroker.replica import ReplicaError
from kbroker.wire import records as rec
from kbroker.wire.error_codes import ErrorCode

from .conftest import T0, batch, decode_region


def code_of(excinfo) -> int:
    return excinfo.value.error_code


def test_append_assigns_offsets_stamps_epoch_and_moves_hw(replicas, cluster):
    cluster.create("t", 2, epoch=3)
    r1 = replicas.append("t", 0, batch(b"a", b"b", b"c"), required_acks=1)
    r2 = replicas.append("t", 0, batch(b"d"), required_acks=-1)
    assert (r1.base_offset, r1.last_offset, r2.base_offset) == (0, 2, 3)
    assert r1.log_append_time_ms == -1 and r1.log_start_offset == 0
    part = replicas.get_partition("t", 0)
    assert part.high_watermark == part.log_end_offset == 4
    assert part.last_stable_offset == 4
    region = part.log.read(0, 1 << 20)
    data = region.read_bytes()
    epochs = [h.partition_leader_epoch for _, h in rec.iter_batches(data)]
    assert epochs == [3, 3]
    assert [r.value for r in decode_region(region)] == [b"a", b"b", b"c", b"d"]
    assert replicas.get_partition("t", 1).log_end_offset == 0


def test_unknown_and_not_led_partitions(replicas, cluster):
    cluster.create("mine", 1)
    cluster.create("theirs", 1, leader=7)
    with pytest.raises(ReplicaError) as e:
        replicas.append("nope", 0, batch(b"x"))
    assert code_of(e) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    with pytest.raises(ReplicaError) as e:
        replicas.append("mine", 5, batch(b"x"))
    assert code_of(e) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    with pytest.raises(ReplicaError) as e:
        replicas.append("theirs", 0, batch(b"x"))
    assert code_of(e) == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_internal_topics_only_for_internal_writers(replicas, cluster):
    cluster.create("__consumer_offsets", 1)
    with pytest.raises(ReplicaError) as e:
        replicas.append("__consumer_offsets", 0, batch(b"x", keys=[b"k"]))
    assert code_of(e) == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert replicas.append("__consumer_offsets", 0, batch(b"x", keys=[b"k"]),
                           allow_internal=True).base_offset == 0


def test_message_too_large_uses_topic_then_broker_limit(replicas, cluster):
    cluster.create("small", 1, {"max.message.bytes": "200"})
    cluster.create("default", 1)
    with pytest.raises(ReplicaError) as e:
        replicas.append("small", 0, batch(b"x" * 300))
    assert code_of(e) == ErrorCode.MESSAGE_TOO_LARGE
    assert replicas.append("small", 0, batch(b"x" * 50)).base_offset == 0
    with pytest.raises(ReplicaError) as e:
        replicas.append("default", 0, batch(b"x" * 1_100_000))
    assert code_of(e) == ErrorCode.MESSAGE_TOO_LARGE
    assert replicas.get_partition("small", 0).log_end_offset == 1


def test_corrupt_and_invalid_batches(replicas, cluster):
    cluster.create("t", 1)
    good = bytearray(batch(b"hello"))
    good[-1] ^= 0xFF
    with pytest.raises(ReplicaError) as e:
        replicas.append("t", 0, bytes(good))
    assert code_of(e) == ErrorCode.CORRUPT_MESSAGE
    with pytest.raises(ReplicaError) as e:
        replicas.append("t", 0, batch(b"a") + batch(b"b"))
    assert code_of(e) == ErrorCode.INVALID_RECORD
    with pytest.raises(ReplicaError) as e:
        replicas.append("t", 0, b"")
    assert code_of(e) == ErrorCode.INVALID_RECORD
    with pytest.raises(ReplicaError) as e:
        replicas.append("t", 0, batch(b"a")[:30])
    assert code_of(e) == ErrorCode.CORRUPT_MESSAGE
    assert replicas.get_partition("t", 0).log_end_offset == 0


def test_compacted_topic_requires_keys(replicas, cluster):
    cluster.create("c", 1, {"cleanup.policy": "compact"})
    why = "Compacted topic cannot accept message without key in topic partition c-0"
    for codec in (0, 1):
        with pytest.raises(ReplicaError) as e:
            replicas.append("c", 0, batch(b"v1", b"v2", keys=[b"k", None], compression=codec))
        assert code_of(e) == ErrorCode.INVALID_RECORD
        # KIP-467 as Kafka's LogValidator: the record named, its reason, the summary message
        assert e.value.record_errors == [(1, why)]
        assert e.value.message == (
            "One or more records have been rejected due to 1 record errors in total, and only "
            f"showing the first three errors at most: [RecordError(batchIndex=1, message='{why}')]")
        assert e.value.log_start_offset == 0
    assert replicas.append("c", 0, batch(b"v", keys=[b"k"])).base_offset == 0


def test_compacted_topic_keyless_and_late_records_together(replicas, cluster):
    """A keyless record is a key error even when its timestamp is bad too (Kafka checks
    the key first); any timestamp error makes the answer INVALID_TIMESTAMP."""
    cluster.create("c", 1, {"cleanup.policy": "compact",
                            "message.timestamp.before.max.ms": "1000"})
    with pytest.raises(ReplicaError) as e:
        replicas.append("c", 0, batch(b"a", b"b", b"c", keys=[None, b"k", b"k"],
                                      timestamps=[T0 - 5000, T0 - 5000, T0]))
    assert code_of(e) == ErrorCode.INVALID_TIMESTAMP
    assert [i for i, _ in e.value.record_errors] == [0, 1]
    assert e.value.record_errors[0][1].startswith("Compacted topic cannot accept")
    assert e.value.record_errors[1][1].startswith(f"Timestamp {T0 - 5000} of message")
    assert replicas.get_partition("c", 0).log_end_offset == 0


def test_error_log_start_offset_as_kafka(replicas, cluster):
    """Append-path errors carry the partition's log start offset; request checks, size and
    CRC errors and unknown/not-led partitions answer -1 (Kafka's appendToLocalLog)."""
    cluster.create("t", 1, {"max.message.bytes": "200", "min.insync.replicas": "2"})
    replicas.append("t", 0, batch(b"a", b"b", b"c"), required_acks=1)
    replicas.delete_records("t", 0, 2)
    with pytest.raises(ReplicaError) as e:
        replicas.append("t", 0, batch(b"x"), required_acks=-1)
    assert (code_of(e), e.value.log_start_offset) == (ErrorCode.NOT_ENOUGH_REPLICAS, 2)
    replicas.append("t", 0, batch(b"x", producer_id=5, producer_epoch=0, base_sequence=0),
                    required_acks=1)
    with pytest.raises(ReplicaError) as e:
        replicas.append("t", 0, batch(b"x", producer_id=5, producer_epoch=0, base_sequence=3),
                        required_acks=1)
    assert (code_of(e), e.value.log_start_offset) == (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, 2)
    for records, code in ((batch(b"x" * 300), ErrorCode.MESSAGE_TOO_LARGE),
                          (batch(b"a") + batch(b"b"), ErrorCode.INVALID_RECORD)):
        with pytest.raises(ReplicaError) as e:
            replicas.append("t", 0, records, required_acks=1)
        assert (code_of(e), e.value.log_start_offset) == (code, -1)
    with pytest.raises(ReplicaError) as e:
        replicas.append("t", 7, batch(b"x"))
    assert (code_of(e), e.value.log_start_offset) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)


def test_duplicate_answers_stored_timestamp_as_log_append_time(replicas, cluster):
    cluster.create("t", 1)
    b = batch(b"x", producer_id=9, producer_epoch=0, base_sequence=0, ts=T0 + 7)
    first = replicas.append("t", 0, b, required_acks=1)
    assert first.log_append_time_ms == -1            # CreateTime topic
    again = replicas.append("t", 0, b, required_acks=1)
    assert (again.base_offset, again.log_append_time_ms) == (0, T0 + 7)
    assert replicas.get_partition("t", 0).log_end_offset == 1


def test_timestamp_window(replicas, cluster, clock):
    cluster.create("t", 1, {"message.timestamp.before.max.ms": "1000"})
    with pytest.raises(ReplicaError) as e:
        replicas.append("t", 0, batch(b"old", b"ok", timestamps=[T0 - 5000, T0]))
    assert code_of(e) == ErrorCode.INVALID_TIMESTAMP
    assert e.value.record_errors == [
        (0, f"Timestamp {T0 - 5000} of message with offset 0 is out of range. The timestamp "
            f"should be within [{T0 - 1000}, {T0 + 3_600_000}]")]
    assert e.value.message == "One or more records have been rejected due to invalid timestamp"
    assert e.value.log_start_offset == 0
    # Kafka 4's default after.max.ms is one hour.
    with pytest.raises(ReplicaError) as e:
        replicas.append("t", 0, batch(b"ok", b"future", timestamps=[T0, T0 + 2 * 3_600_000]))
    assert code_of(e) == ErrorCode.INVALID_TIMESTAMP
    assert [i for i, _ in e.value.record_errors] == [1]
    assert "of message with offset 1 is out of range" in e.value.record_errors[0][1]
    assert replicas.append("t", 0, batch(b"x", timestamps=[T0 - 500])).base_offset == 0
    # The older rule, when configured, bounds both sides.
    cluster.create("legacy", 1, {"message.timestamp.difference.max.ms": "10"})
    with pytest.raises(ReplicaError) as e:
        replicas.append("legacy", 0, batch(b"x", timestamps=[T0 - 11]))
    assert code_of(e) == ErrorCode.INVALID_TIMESTAMP


def test_log_append_time_topic(replicas, cluster, clock):
    cluster.create("lat", 1, {"message.timestamp.type": "LogAppendTime"})
    clock.now = T0 + 42
    res = replicas.append("lat", 0, batch(b"a", b"b", timestamps=[1, 2]))
    assert res.log_append_time_ms == T0 + 42
    region = replicas.get_partition("lat", 0).log.read(0, 1 << 20)
    data = region.read_bytes()
    (_, h), = list(rec.iter_batches(data, verify=True))
    assert h.timestamp_type == rec.TIMESTAMP_LOG_APPEND_TIME and h.max_timestamp == T0 + 42
    assert [r.timestamp for r in decode_region(region)] == [T0 + 42, T0 + 42]


def test_min_insync_replicas_applies_to_acks_all_only(replicas, cluster):
    cluster.create("t", 1, {"min.insync.replicas": "2"})
    with pytest.raises(ReplicaError) as e:
        replicas.append("t", 0, batch(b"x"), required_acks=-1)
    assert code_of(e) == ErrorCode.NOT_ENOUGH_REPLICAS
    assert replicas.append("t", 0, batch(b"x"), required_acks=1).base_offset == 0


def test_producer_id_batches_are_accepted(replicas, cluster):
    cluster.create("t", 1)
    b = batch(b"a", b"b", producer_id=17, producer_epoch=0, base_sequence=0)
    assert replicas.append("t", 0, b).last_offset == 1


def test_every_compression_codec(replicas, cluster):
    cluster.create("t", 1)
    for codec in (0, 1, 2, 3, 4):
        replicas.append("t", 0, batch(b"v%d" % codec, keys=[b"k"], compression=codec))
    region = replicas.get_partition("t", 0).log.read(0, 1 << 20)
    assert [r.value for r in decode_region(region)] == [b"v0", b"v1", b"v2", b"v3", b"v4"]


def test_topic_compression_type_recompresses(replicas, cluster):
    cluster.create("z", 1, {"compression.type": "zstd"})
    cluster.create("plain", 1, {"compression.type": "uncompressed"})
    b = batch(b"a", b"b", keys=[b"k1", b"k2"], compression=1, producer_id=5, producer_epoch=2,
              base_sequence=7)
    replicas.append("z", 0, b)
    replicas.append("plain", 0, b)
    for topic, codec in (("z", 4), ("plain", 0)):
        region = replicas.get_partition(topic, 0).log.read(0, 1 << 20)
        data = region.read_bytes()
        (_, h), = list(rec.iter_batches(data, verify=True))
        assert h.compression == codec
        assert (h.producer_id, h.producer_epoch, h.base_sequence, h.last_offset_delta) == (5, 2, 7, 1)
        assert [(r.key, r.value, r.timestamp) for r in decode_region(region)] == [
            (b"k1", b"a", T0), (b"k2", b"b", T0)]
