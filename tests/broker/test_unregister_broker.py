"""UnregisterBroker (64) on a real broker over raw frames: an unknown id, and a registered one
whose registration goes (an UnregisterBrokerRecord) — the running broker registers again with
a new epoch when its next heartbeat is refused, as Kafka's brokers do."""
import trio

from kbroker.wire.error_codes import ErrorCode

from .raw import RawClient


async def test_unregister_broker(broker_server):
    broker = broker_server.broker
    c = await RawClient.connect(broker_server)
    r = await c.request("UnregisterBroker", 0, broker_id=7)
    assert (r.error_code, r.error_message) == (ErrorCode.BROKER_ID_NOT_REGISTERED,
                                               "Broker ID 7 is not currently registered")
    node = broker.config.node_id
    epoch = broker.metadata.brokers[node].broker_epoch
    r = await c.request("UnregisterBroker", 0, broker_id=node)
    assert (r.error_code, r.error_message) == (0, None)
    with trio.fail_after(20):
        while node in broker.metadata.brokers and broker.metadata.brokers[node].broker_epoch == epoch:
            await trio.sleep(0.02)
        while node not in broker.metadata.brokers or broker.metadata.brokers[node].fenced:
            await trio.sleep(0.05)
    assert broker.metadata.brokers[node].broker_epoch > epoch
    await c.aclose()
