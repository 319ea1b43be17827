"""GROUP config resources (type 32) against a real kbroker: Kafka's own ``kafka-configs``
tool (``ConfigCommand`` of the pinned Kafka) sets, describes and deletes
``consumer.session.timeout.ms`` / ``consumer.heartbeat.interval.ms``; Kafka's validation
refuses bad values; the overrides live in the metadata log (they survive a restart) and the
consumer group protocol uses them (the heartbeat interval a member is told)."""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import trio

from compat_tests.cli import ToolResult, run_tool
from compat_tests.kafka_runner import kafka_version
from kbroker.wire.error_codes import ErrorCode as E
from tests.broker.raw import RawClient
from tests.support.broker_proc import BrokerProcess
from tests.support.waiting import until

REPO = Path(__file__).resolve().parents[2]
LIBS = REPO / ".cache" / "kafka" / kafka_version() / "libs"   # the pinned release


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("kbroker-group-configs") / "data",
                         overrides={"group.consumer.min.session.timeout.ms": "1000",
                                    "group.consumer.min.heartbeat.interval.ms": "100"})
    proc.start()
    try:
        yield proc
    finally:
        if proc.running:
            proc.stop()


def configs(broker, *args) -> ToolResult:
    if not LIBS.is_dir():
        pytest.fail(f"Kafka {kafka_version()} jars are needed (make kafka-dist)")
    return run_tool("kafka-configs", ["--bootstrap-server", broker.bootstrap, "--entity-type", "groups",
                                      *args], timeout=120)


def heartbeat_interval(port: int, group: str) -> tuple[int, int]:
    async def go():
        c = await RawClient.connect(port)
        try:
            await c.request("FindCoordinator", 4, key_type=0, coordinator_keys=[group])
            async def joined():
                r = await c.request("ConsumerGroupHeartbeat", 1, group_id=group,
                                    member_id=str(uuid.uuid4()), member_epoch=0,
                                    rebalance_timeout_ms=30000, subscribed_topic_names=[],
                                    topic_partitions=[])
                if r.error_code not in (E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR):
                    return r
            r = await until(joined, what=f"a heartbeat of {group} answered by its coordinator",
                            interval=0.1)
            return r.error_code, r.heartbeat_interval_ms
        finally:
            await c.aclose()
    return trio.run(go)


def test_kafka_configs_tool_sets_describes_validates_and_deletes_group_configs(broker):
    g = "cfg-group"
    r = configs(broker, "--entity-name", g, "--alter", "--add-config",
                "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=6000")
    assert "Completed updating config for group cfg-group" in r.stdout, r.stderr
    r = configs(broker, "--entity-name", g, "--describe")
    assert "consumer.heartbeat.interval.ms=6000" in r.stdout
    assert "DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000" in r.stdout
    assert "DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000" in r.stdout
    r = configs(broker, "--entity-name", g, "--describe", "--all")
    for key in ("share.auto.offset.reset=latest", "share.record.lock.duration.ms=30000",
                "streams.num.standby.replicas=0", "consumer.assignment.interval.ms=1000"):
        assert key in r.stdout
    # Kafka's validation
    for bad, message in [
        ("consumer.session.timeout.ms=5000",
         "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"),
        ("consumer.session.timeout.ms=70000",
         "consumer.session.timeout.ms must be in the range 1000 to 60000 inclusive."),
        ("consumer.heartbeat.interval.ms=20000",
         "consumer.heartbeat.interval.ms must be in the range 100 to 15000 inclusive."),
        ("share.auto.offset.reset=sometimes", "share.auto.offset.reset"),
        ("share.delivery.count.limit=1", "Value must be at least 2"),
        ("nope=1", "Unknown group config name: nope"),
    ]:
        r = configs(broker, "--entity-name", g, "--alter", "--add-config", bad)
        assert "InvalidConfigurationException" in r.stdout + r.stderr and message in r.stdout + r.stderr, bad
    # the consumer protocol tells members the group's heartbeat interval
    assert heartbeat_interval(broker.port, g) == (0, 6000)
    assert heartbeat_interval(broker.port, "cfg-other-group")[1] == 5000
    # durable in the metadata log
    broker.restart()
    r = configs(broker, "--entity-name", g, "--describe")
    assert "consumer.heartbeat.interval.ms=6000" in r.stdout
    r = configs(broker, "--entity-name", g, "--alter", "--delete-config", "consumer.heartbeat.interval.ms")
    assert "Completed updating config" in r.stdout
    r = configs(broker, "--entity-name", g, "--describe")
    assert "consumer.heartbeat.interval.ms" not in r.stdout
    assert "consumer.session.timeout.ms=50000" in r.stdout
