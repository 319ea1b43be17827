"""Connection limits on accept against an in-process broker over real sockets (Kafka's
``ConnectionQuotas``): ``max.connections.per.ip`` and its overrides close the connection at
once, ``connection_creation_rate`` of the ip entity closes it after the throttle time without
answering it, ``max.connections`` stops accepting until a connection closes; one log line
per IP and reason per quota window. No timing asserts: outcomes and counters."""
from __future__ import annotations

import logging

import trio

from kbroker.config.broker import BrokerConfig
from kbroker.wire import messages
from kbroker.wire.protocol import encode_request
from tests.broker.raw import RawClient

API_VERSIONS = dict(client_software_name="t", client_software_version="1")


def config(tmp_path, **extra) -> BrokerConfig:
    raw = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data")}
    raw.update(extra)
    return BrokerConfig.from_dict(raw)


async def start(nursery, cfg):
    from kbroker.server import serve
    return await nursery.start(serve, cfg)


async def stop(server, *clients):
    for c in clients:
        await c.aclose()
    server.request_shutdown()
    with trio.fail_after(10):
        await server.wait_stopped()


async def answered(c: RawClient) -> bool:
    r = await c.request("ApiVersions", 3, **API_VERSIONS)
    return r.error_code == 0


async def test_max_connections_per_ip_closes_the_extra_connection_and_logs_once(tmp_path, nursery, caplog):
    caplog.set_level(logging.INFO, logger="kbroker.quota.connections")
    server = await start(nursery, config(tmp_path, **{"max.connections.per.ip": "2"}))
    a, b = await RawClient.connect(server), await RawClient.connect(server)
    assert await answered(a) and await answered(b)
    extra = [await RawClient.connect(server) for _ in range(3)]
    for c in extra:
        assert await c.is_closed()
    stats = server.broker.quotas.connections.statistics()
    assert stats["rejected"] == 3 and stats["open"] == 2
    lines = [r for r in caplog.records if "Rejected connection from 127.0.0.1" in r.getMessage()]
    assert len(lines) == 1                      # once per IP per window, not per connection
    await a.aclose()
    with trio.fail_after(5):                     # the slot is given back when a closes
        while server.broker.quotas.connections.statistics()["open"] != 1:
            await trio.sleep(0.01)
    c = await RawClient.connect(server)
    assert await answered(c)
    await stop(server, b, c, *extra)


async def test_per_ip_override_wins_over_the_default(tmp_path, nursery):
    server = await start(nursery, config(tmp_path, **{"max.connections.per.ip": "100",
                                                      "max.connections.per.ip.overrides": "127.0.0.1:1"}))
    a = await RawClient.connect(server)
    assert await answered(a)
    b = await RawClient.connect(server)
    assert await b.is_closed()
    await stop(server, a, b)


async def test_connection_creation_rate_of_the_ip_closes_throttled_connections_unanswered(tmp_path, nursery, caplog):
    caplog.set_level(logging.INFO, logger="kbroker.quota.connections")
    server = await start(nursery, config(tmp_path, **{"quota.window.num": "2"}))
    results = await server.broker.controller.alter_client_quotas(
        [([("ip", None)], [("connection_creation_rate", 1.0, False)])])
    assert results == [(0, None)]
    with trio.fail_after(5):
        while not server.broker.quotas.connections.statistics()["ip_quotas"]:
            await trio.sleep(0.01)
    first = await RawClient.connect(server)         # 1 per (at least) one 1 s window: allowed
    assert await answered(first)
    throttled = [await RawClient.connect(server) for _ in range(3)]
    for c in throttled:
        await c.send_raw(b"\x00\x00\x00\x01\x00")    # never read: closed after the delay
        assert await c.is_closed(timeout=10)
    stats = server.broker.quotas.connections.statistics()
    assert stats["throttled"] >= 3 and stats["open"] == 1
    lines = [r for r in caplog.records if "Delaying close of connection from 127.0.0.1" in r.getMessage()]
    assert len(lines) == 1
    await stop(server, first, *throttled)


async def test_max_connections_waits_for_a_free_slot(tmp_path, nursery):
    server = await start(nursery, config(tmp_path, **{"max.connections": "1"}))
    a = await RawClient.connect(server)
    assert await answered(a)
    b = await RawClient.connect(server)              # in the listen backlog, not accepted
    await b.send_raw(encode_request(18, 3, 7, "b", messages.ApiVersionsRequest(**API_VERSIONS)))
    with trio.move_on_after(0.3):
        await b.recv_frame()
        raise AssertionError("a second connection was served above max.connections=1")
    assert server.broker.quotas.connections.statistics()["waited"] >= 1
    await a.aclose()
    with trio.fail_after(10):
        frame = await b.recv_frame()                 # accepted and answered once a closed
    assert frame is not None and frame[:4] == (7).to_bytes(4, "big")
    await stop(server, b)
