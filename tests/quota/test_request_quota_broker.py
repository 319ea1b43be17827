"""request_percentage against an in-process broker over real sockets: with a tiny share of a
thread every answer that has ``throttle_time_ms`` carries a throttle (ApiVersions included, as
Kafka's KafkaApis throttles it), follower fetches are exempt (recorded apart), and a client
without a quota is not throttled. Also the pure pieces of the connection and replication
quotas (override lists, throttled replica lists)."""
from __future__ import annotations

import trio

from kbroker.config.broker import BrokerConfig
from kbroker.quota.connections import parse_overrides
from kbroker.quota.replication import ALL, throttled_partitions
from kbroker.wire import messages as M
from tests.broker.raw import RawClient

F = M.FetchRequest


def config(tmp_path) -> BrokerConfig:
    return BrokerConfig.from_dict({"listeners": "PLAINTEXT://127.0.0.1:0",
                                   "log.dirs": str(tmp_path / "data"), "quota.window.num": "2"})


async def fetch(c, replica_id: int):
    return await c.request("Fetch", 12, replica_id=replica_id, max_wait_ms=0, min_bytes=0,
                           max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
                           topics=[], forgotten_topics_data=[], rack_id="")


async def test_request_time_throttles_every_answer_but_exempt_ones(tmp_path, nursery):
    from kbroker.server import serve
    server = await nursery.start(serve, config(tmp_path))
    results = await server.broker.controller.alter_client_quotas(
        [([("client-id", "slow")], [("request_percentage", 0.0001, False)])])
    assert results == [(0, None)]
    with trio.fail_after(5):
        while not server.broker.quotas.request.enabled:
            await trio.sleep(0.01)
    c = await RawClient.connect(server)
    throttles = []
    for _ in range(3):
        r = await c.request("Metadata", 12, client_id="slow", topics=[],
                            allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        throttles.append(r.throttle_time_ms)
    assert all(t > 0 for t in throttles[1:]), throttles
    assert max(throttles) <= 1000                       # bounded by one quota window
    r = await c.request("ApiVersions", 3, client_id="slow", client_software_name="t",
                        client_software_version="1")
    assert r.throttle_time_ms > 0
    # a follower fetch (replica id >= 0) is exempt: no throttle, its time counted apart
    r = await fetch(c, replica_id=7)
    assert r.throttle_time_ms == 0
    stats = server.broker.quotas.request.statistics()
    assert stats["exempt_percent"] > 0 and stats["throttled"] >= 3
    other = await RawClient.connect(server)            # another client id: no quota
    r = await other.request("Metadata", 12, client_id="fast", topics=[],
                            allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    assert r.throttle_time_ms == 0
    await c.aclose()
    await other.aclose()
    server.request_shutdown()
    with trio.fail_after(10):
        await server.wait_stopped()


def test_override_lists_and_throttled_replica_lists():
    assert parse_overrides("127.0.0.1:5, 10.0.0.2:0,bad,also:bad") == {"127.0.0.1": 5, "10.0.0.2": 0}
    assert parse_overrides("") == {}
    assert throttled_partitions("0:1,1:2,2:1", 1) == frozenset({0, 2})
    assert throttled_partitions("0:1,1:2", 3) == frozenset()
    assert throttled_partitions(" * ", 3) is ALL
    assert throttled_partitions("", 1) == frozenset()


def test_replication_quota_holds_back_only_throttled_out_of_sync_partitions_over_the_rate():
    from types import SimpleNamespace

    from kbroker.quota.replication import ReplicationQuota

    dynamic = [{}, {}]

    class Config:
        def get(self, key):
            return {"replication.quota.window.num": 2, "replication.quota.window.size.seconds": 1}[key]

        def dynamic_layers(self):
            return tuple(dynamic)

    now = [0]
    q = ReplicationQuota("follower", Config(), lambda: now[0])
    q.update({"t": SimpleNamespace(configs={"follower.replication.throttled.replicas": "0:3,1:2"}),
              "u": SimpleNamespace(configs={})}, node_id=3)
    assert q.is_throttled("t", 0) and not q.is_throttled("t", 1) and not q.is_throttled("u", 0)
    q.record(5000)
    assert not q.should_throttle("t", 0, in_sync=False)          # no rate set: never
    dynamic[0] = {"follower.replication.throttled.rate": "1000"}  # per-broker dynamic config
    assert q.should_throttle("t", 0, in_sync=False)               # 5000 B / 1 s > 1000
    assert not q.should_throttle("t", 0, in_sync=True)            # in the ISR: never
    assert not q.should_throttle("t", 1, in_sync=False)           # not listed for node 3
    now[0] = 10_000                                               # the samples expired
    assert not q.should_throttle("t", 0, in_sync=False)
    dynamic[0] = {}
    dynamic[1] = {"follower.replication.throttled.rate": "1"}     # cluster default applies too
    q.record(10)
    assert q.should_throttle("t", 0, in_sync=False)
    st = q.statistics()
    assert st["limit"] == 1 and st["held_back"] == 2 and st["bytes"] == 5010
