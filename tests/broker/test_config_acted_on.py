"""Keys kbroker once accepted without acting on, now wired into a running node (one
in-process broker): ``metadata.max.idle.interval.ms`` keeps an idle metadata log moving
with NoOpRecords (KIP-835), ``log.cleaner.enable=false`` reaches the log manager, and a
``group.coordinator.rebalance.protocols`` without ``streams`` turns the streams group APIs
away with UNSUPPORTED_VERSION, as Kafka 4.4 does; ``replica.high.watermark.checkpoint.interval.ms``
sets how often the high watermarks reach ``replication-offset-checkpoint`` (before, only
``log.flush.offset.checkpoint.interval.ms``'s minute wrote them)."""
from __future__ import annotations

import struct

import pytest
import trio

from kbroker.config.broker import BrokerConfig, ConfigError
from kbroker.log import checkpoint as ckpt
from kbroker.wire import messages
from kbroker.wire import records as rb
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.wire.protocol import decode_response, encode_request


async def _call(port: int, name: str, version: int, **fields):
    cls = messages.get(name + "Request")
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    try:
        await stream.send_all(encode_request(cls._message.api_key, version, 1, "odds", cls(**fields)))
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = await stream.receive_some(65536)
            assert chunk, "connection closed"
            buf += chunk
        corr, resp = decode_response(buf[4:], cls._message.api_key, version)
        assert corr == 1
        return resp
    finally:
        await stream.aclose()


async def test_keys_once_ignored_act_on_a_running_node(make_config, nursery):
    from kbroker.server import serve

    server = await nursery.start(serve, make_config(
        metadata_max_idle_interval_ms=50, log_cleaner_enable="false",
        group_coordinator_rebalance_protocols="classic,consumer"))
    try:
        broker = server.broker
        assert broker.logs.cleaner_enabled is False
        assert broker.logs.run_cleaner() is None
        start = broker.quorum.image.offset
        with trio.fail_after(30):
            # nobody asks anything: only the idle-interval writer moves the log
            while broker.quorum.image.offset < start + 3:
                await trio.sleep(0.05)

        port = server.bound[0].port
        hb = await _call(port, "StreamsGroupHeartbeat", 0, group_id="app", member_id="m",
                         member_epoch=0, endpoint_information_epoch=0, instance_id=None,
                         rack_id=None, rebalance_timeout_ms=30000, topology=None,
                         active_tasks=None, standby_tasks=None, warmup_tasks=None,
                         process_id="p", user_endpoint=None, client_tags=None,
                         task_offsets=None, task_end_offsets=None, shutdown_application=False)
        assert hb.error_code == E.UNSUPPORTED_VERSION
        desc = await _call(port, "StreamsGroupDescribe", 0, group_ids=["app"],
                           include_authorized_operations=False)
        assert [g.error_code for g in desc.groups] == [E.UNSUPPORTED_VERSION]
    finally:
        server.request_shutdown()
        with trio.fail_after(10):
            await server.wait_stopped()


async def test_high_watermark_checkpoint_interval_acts_on_a_running_node(make_config, nursery):
    from kbroker.server import serve

    # the recovery-point checkpoint keeps Kafka's minute: only the new key can write the file
    server = await nursery.start(serve, make_config(
        replica_high_watermark_checkpoint_interval_ms=100))
    try:
        assert server.broker.logs.high_watermark_checkpoint_interval_ms == 100
        port = server.bound[0].port
        C = messages.CreateTopicsRequest
        r = await _call(port, "CreateTopics", 5, timeout_ms=5000, validate_only=False, topics=[
            C.CreatableTopic(name="hw", num_partitions=1, replication_factor=1, assignments=[],
                             configs=[])])
        assert r.topics[0].error_code == 0
        P = messages.ProduceRequest
        batch = rb.build_batch([(None, b"v%d" % i, (), 0) for i in range(3)])
        with trio.fail_after(30):
            while True:     # the new topic's leader may still be on its way
                r = await _call(port, "Produce", 9, transactional_id=None, acks=-1, timeout_ms=5000,
                                topic_data=[P.TopicProduceData(name="hw", partition_data=[
                                    P.PartitionProduceData(index=0, records=batch)])])
                code = r.responses[0].partition_responses[0].error_code
                if code != E.NOT_LEADER_OR_FOLLOWER and code != E.UNKNOWN_TOPIC_OR_PARTITION:
                    break
                await trio.sleep(0.05)
        assert code == E.NONE
        path = server.broker.logs.log_dirs[0] / ckpt.REPLICATION_OFFSET
        with trio.fail_after(30):
            while ckpt.read_checkpoint(path).get(("hw", 0)) != 3:
                await trio.sleep(0.05)
    finally:
        server.request_shutdown()
        with trio.fail_after(10):
            await server.wait_stopped()


@pytest.mark.parametrize("value", ["consumer,streams", "classic,bogus"])
def test_rebalance_protocols_need_classic_and_known_names(tmp_path, value):
    with pytest.raises(ConfigError, match="group.coordinator.rebalance.protocols"):
        BrokerConfig.from_dict({"log.dirs": str(tmp_path),
                                "group.coordinator.rebalance.protocols": value})
