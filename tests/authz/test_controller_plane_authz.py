"""The controller plane authorizes its callers as Kafka's ``ControllerApis`` does: the KRaft
and broker-lifecycle RPCs need CLUSTER_ACTION on the cluster, DescribeQuorum needs DESCRIBE,
and an Envelope's sender needs CLUSTER_ACTION before its inner request runs as the
principal it carries (the 3-node path is in test_cluster_acls.py). Here the registered
handlers are called as the connection calls them, over an image with one ACL."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import trio

from kbroker.api import RequestContext
from kbroker.authz.acls import ALLOW, CLUSTER, CLUSTER_ACTION, LITERAL, Acl
from kbroker.authz.authorizer import AclIndex, Authorizer
from kbroker.wire.envelope import encode_principal
from kbroker.controller_server.registry import load_all
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.wire.protocol import encode_request

REGISTRY = load_all()
INDEX = AclIndex.build([Acl(CLUSTER, "kafka-cluster", LITERAL, "User:broker", "*", CLUSTER_ACTION, ALLOW)])
PLANE = SimpleNamespace(authorizer=Authorizer(frozenset({"User:admin"}), False),
                        metadata=SimpleNamespace(acl_index=INDEX), controller=None,
                        config=SimpleNamespace(get=lambda key: None))


def call(api_key: int, version: int, request, principal: str):
    ctx = RequestContext(PLANE, api_key, version, 1, "t", principal=principal, listener="CONTROLLER")
    return trio.run(REGISTRY[api_key].handler, ctx, request)


@pytest.mark.parametrize("api_key,version", [(52, 1), (53, 1), (54, 1), (59, 1), (62, 4), (63, 1),
                                             (67, 0), (55, 2), (94, 0)])
def test_kraft_and_lifecycle_rpcs_need_the_cluster_operation(api_key, version):
    r = call(api_key, version, messages.request_class(api_key)(), "User:mallory")
    assert r.error_code == E.CLUSTER_AUTHORIZATION_FAILED


def test_envelope_sender_needs_cluster_action():
    T = messages.CreateTopicsRequest
    inner = encode_request(19, 7, 3, "c", T(timeout_ms=1, validate_only=True, topics=[]))[4:]
    env = messages.EnvelopeRequest(request_data=inner, request_principal=encode_principal("User:alice"),
                                   client_host_address=bytes([127, 0, 0, 1]))
    assert call(58, 0, env, "User:mallory").error_code == E.CLUSTER_AUTHORIZATION_FAILED
    # an allowed sender gets past the check (no active controller here: NOT_CONTROLLER)
    assert call(58, 0, env, "User:broker").error_code == E.NOT_CONTROLLER
    assert call(58, 0, env, "User:admin").error_code == E.NOT_CONTROLLER


@pytest.mark.parametrize("host,back", [("127.0.0.1", "127.0.0.1"), ("::1", "::1"),
                                       ("::ffff:10.0.0.1", "10.0.0.1"), ("unknown", "0.0.0.0")])
def test_client_address_travels_as_kafka_encodes_it(host, back):
    from kbroker.wire.envelope import host_bytes, host_text
    assert len(host_bytes(host)) in (4, 16) and host_text(host_bytes(host)) == back
    assert host_text(b"") is None and host_text(b"\x01\x02\x03") is None
