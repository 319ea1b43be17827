"""Client telemetry (KIP-714): served with an empty subscription, not listed in ApiVersions."""
import uuid

from kbroker.wire.error_codes import ErrorCode

from .raw import RawClient


async def test_empty_subscription_and_pushes(broker_server):
    c = await RawClient.connect(broker_server)
    versions = await c.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
    assert not {71, 72} & {k.api_key for k in versions.api_keys}     # as Kafka without a receiver
    sub = await c.request("GetTelemetrySubscriptions", 0, client_instance_id=uuid.UUID(int=0))
    assert sub.error_code == 0 and sub.client_instance_id != uuid.UUID(int=0)
    assert sub.requested_metrics == [] and sub.push_interval_ms > 0 and sub.telemetry_max_bytes == 1048576
    again = await c.request("GetTelemetrySubscriptions", 0, client_instance_id=sub.client_instance_id)
    assert (again.client_instance_id, again.subscription_id) == (sub.client_instance_id, sub.subscription_id)

    async def push(**kw):
        fields = dict(client_instance_id=sub.client_instance_id, subscription_id=sub.subscription_id,
                      terminating=False, compression_type=0, metrics=b"")
        fields.update(kw)
        return (await c.request("PushTelemetry", 0, **fields)).error_code
    assert await push() == ErrorCode.NONE
    assert await push(terminating=True, metrics=b"x" * 100) == ErrorCode.NONE
    assert await push(client_instance_id=uuid.UUID(int=0)) == ErrorCode.INVALID_REQUEST
    assert await push(subscription_id=sub.subscription_id + 1) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    assert await push(compression_type=9) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert await push(metrics=b"x" * (1048576 + 1)) == ErrorCode.TELEMETRY_TOO_LARGE
    await c.aclose()
