"""ApiVersions at every version, an unknown version, and the registry it reflects."""
import struct

import pytest

from kbroker.api import REGISTRY
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from .raw import RawClient


@pytest.mark.parametrize("version", range(0, 6))
async def test_every_version(broker_server, version):
    c = await RawClient.connect(broker_server)
    fields = {"client_software_name": "kbroker-tests", "client_software_version": "1.0"} if version >= 3 else {}
    resp = await c.request("ApiVersions", version, **fields)
    assert resp.error_code == 0
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert keys == {k: (s.min_version, s.max_version) for k, s in REGISTRY.items() if s.advertised}
    assert keys[18] == (0, 5)
    if version >= 3:
        # a new cluster finalizes group.version 1 (KIP-848) and transaction.version 2
        # (KIP-890 part 2), as Kafka 4, streams.version 1 as Kafka 4.3's default format, and
        # metadata.version 4.4-IV2 with share.version 2 (KIP-1191 dead-letter queues) and
        # eligible.leader.replicas.version 1 (KIP-966) as Kafka 4.4's
        assert {f.name: f.max_version_level for f in resp.finalized_features} == \
            {"metadata.version": 33, "group.version": 1, "transaction.version": 2,
             "share.version": 2, "streams.version": 1, "eligible.leader.replicas.version": 1}
        supported = {f.name: (f.min_version, f.max_version) for f in resp.supported_features}
        # KIP-1022: a supported range starting at 0 is announced from v4 only
        assert supported.get("transaction.version") == ((0, 2) if version >= 4 else None)
    # the connection stays usable: a Metadata request right after (kafka-python 2.0 does this)
    md = await c.request("Metadata", 0, topics=[])
    assert md.brokers[0].port == broker_server.port


@pytest.mark.parametrize("version", [6, 9, 127])
async def test_unknown_version_gets_v0_error_reply(broker_server, version):
    c = await RawClient.connect(broker_server)
    # a request body the broker cannot parse: only the header matters
    frame = struct.pack(">hhih", 18, version, 77, 4) + b"test" + b"\x00" + b"garbage"
    await c.send_raw(struct.pack(">i", len(frame)) + frame)
    reply = await c.recv_frame()
    corr = struct.unpack_from(">i", reply)[0]
    assert corr == 77
    resp = messages.ApiVersionsResponse.decode(reply, 0, 4)   # header v0: no tagged fields
    assert resp.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys] == [(18, 0, 5)]
    # the client retries at a version it shares; the connection is still open
    ok = await c.request("ApiVersions", 3, client_software_name="x", client_software_version="1")
    assert ok.error_code == 0


async def test_invalid_client_software_name(broker_server):
    c = await RawClient.connect(broker_server)
    resp = await c.request("ApiVersions", 3, client_software_name="-bad name-", client_software_version="1")
    assert resp.error_code == ErrorCode.INVALID_REQUEST


async def test_v5_names_the_cluster_and_node_it_means_to_reach(broker_server):
    """KIP-1242: a misrouted connection is told to rebootstrap; half a name is invalid."""
    c = await RawClient.connect(broker_server)
    broker = broker_server.broker
    soft = {"client_software_name": "x", "client_software_version": "1"}
    ok = await c.request("ApiVersions", 5, cluster_id=broker.cluster_id, node_id=broker.node_id, **soft)
    assert ok.error_code == 0 and ok.api_keys
    for cluster_id, node_id, code in [("elsewhere", broker.node_id, ErrorCode.REBOOTSTRAP_REQUIRED),
                                      (broker.cluster_id, broker.node_id + 1, ErrorCode.REBOOTSTRAP_REQUIRED),
                                      (None, broker.node_id, ErrorCode.INVALID_REQUEST),
                                      (broker.cluster_id, -1, ErrorCode.INVALID_REQUEST)]:
        resp = await c.request("ApiVersions", 5, cluster_id=cluster_id, node_id=node_id, **soft)
        assert (resp.error_code, resp.api_keys, resp.finalized_features_epoch) == (code, [], -1)
