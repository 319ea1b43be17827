"""ACLs and delegation tokens on a 3-node cluster: CreateAcls/DeleteAcls sent to any node
reach the active controller (forwarded when that node is not it) and every node's image —
and so its authorizer — sees them; delegation-token writes reach the controller inside an
Envelope that carries the caller's principal."""
from __future__ import annotations

import time

import pytest

from kbroker.authz.tokens import compute_hmac
from kbroker.wire.envelope import encode_principal
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.wire.protocol import decode_response, encode_request
from tests.cluster.support import Cluster, call, wait_for

pytestmark = pytest.mark.slow
SECRET = "cluster-secret"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("authz-cluster"), extra={
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        # the nodes reach each other as User:ANONYMOUS until SASL: they need CLUSTER_ACTION
        "super.users": "User:ANONYMOUS",
        "delegation.token.secret.key": SECRET})
    c.start_all()
    try:
        yield c
    finally:
        c.shutdown()


def described(port) -> set:
    r = call(port, 29, 3, messages.DescribeAclsRequest(
        resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
        principal_filter=None, host_filter=None, operation=1, permission_type=1))
    assert r.error_code == 0
    return {(res.resource_name, a.principal) for res in r.resources for a in res.acls}


def test_acls_through_every_node(cluster):
    C = messages.CreateAclsRequest
    ports = {i: n.port for i, n in cluster.nodes.items()}
    for i, port in ports.items():
        r = call(port, 30, 3, C(creations=[C.AclCreation(
            resource_type=2, resource_name=f"topic-{i}", resource_pattern_type=3,
            principal=f"User:u{i}", host="*", operation=3, permission_type=3)]))
        assert [x.error_code for x in r.results] == [0]
    want = {(f"topic-{i}", f"User:u{i}") for i in ports}
    for port in ports.values():
        wait_for(lambda: described(port) == want, 20, what="the ACLs described")
    D = messages.DeleteAclsRequest
    r = call(ports[3], 31, 3, D(filters=[D.DeleteAclsFilter(
        resource_type_filter=2, resource_name_filter="topic-1", pattern_type_filter=3,
        principal_filter=None, host_filter=None, operation=1, permission_type=1)]))
    assert [len(f.matching_acls) for f in r.filter_results] == [1]
    for port in ports.values():
        wait_for(lambda: described(port) == want - {("topic-1", "User:u1")}, 20,
                 what="the ACL deleted")


def envelope(cluster, api_key, version, body, principal, *, raw_principal=None, error=0):
    """Send an Envelope to the controllers until the active one answers; the inner
    response (or None when the envelope's own ``error`` is expected)."""
    inner = encode_request(api_key, version, 11, "broker-x", body)[4:]
    req = messages.EnvelopeRequest(request_data=inner,
                                   request_principal=raw_principal or encode_principal(principal),
                                   client_host_address=bytes([127, 0, 0, 1]))
    deadline = time.monotonic() + 20
    while True:
        for n in cluster.nodes.values():
            r = call(n.controller_port, 58, 0, req)
            if r.error_code != E.NOT_CONTROLLER:
                assert r.error_code == error
                return decode_response(bytes(r.response_data), api_key, version)[1] if not error else None
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_controller_authorizes_forwarded_requests_as_the_client(cluster):
    """KIP-590: the controller authorizes the principal an Envelope carries, not the broker
    that sent it (here User:ANONYMOUS, a super user)."""
    T = messages.CreateTopicsRequest

    def create(name, principal):
        r = envelope(cluster, 19, 7, T(timeout_ms=10000, validate_only=False, topics=[T.CreatableTopic(
            name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[])]), principal)
        return r.topics[0].error_code

    assert create("fwd-denied", "User:mallory") == E.TOPIC_AUTHORIZATION_FAILED
    C = messages.CreateAclsRequest
    grant = C(creations=[C.AclCreation(      # CREATE on topics prefixed "fwd-", from anywhere
        resource_type=2, resource_name="fwd-", resource_pattern_type=4, principal="User:mallory",
        host="*", operation=5, permission_type=3)])
    r = envelope(cluster, 30, 3, grant, "User:mallory")
    assert [x.error_code for x in r.results] == [E.CLUSTER_AUTHORIZATION_FAILED]
    r = envelope(cluster, 30, 3, grant, "User:ANONYMOUS")
    assert [x.error_code for x in r.results] == [0]
    # CREATE on the prefix now allows mallory, from the address the envelope carries
    wait_for(lambda: create("fwd-allowed", "User:mallory") == 0, 20, what="the forwarded create allowed")
    assert create("fwd-allowed", "User:ANONYMOUS") == E.TOPIC_ALREADY_EXISTS
    envelope(cluster, 19, 7, T(timeout_ms=1, validate_only=True, topics=[]), None,
             raw_principal=b"\x00\x00\xff", error=E.PRINCIPAL_DESERIALIZATION_FAILURE)
    # a client of any node (not only the controller's) creates topics through its envelope
    for i, n in cluster.nodes.items():
        r = call(n.port, 19, 7, T(timeout_ms=10000, validate_only=False, topics=[T.CreatableTopic(
            name=f"fwd-node-{i}", num_partitions=1, replication_factor=1, assignments=[], configs=[])]))
        assert r.topics[0].error_code == 0


def test_token_writes_carry_the_principal_in_an_envelope(cluster):
    R = messages.CreateDelegationTokenRequest
    r = envelope(cluster, 38, 3, R(owner_principal_type=None, owner_principal_name=None, renewers=[],
                                   max_lifetime_ms=-1), "User:alice")
    assert r.error_code == 0 and (r.principal_type, r.principal_name) == ("User", "alice")
    assert (r.token_requester_principal_type, r.token_requester_principal_name) == ("User", "alice")
    assert bytes(r.hmac) == compute_hmac(SECRET, r.token_id)
    renew = messages.RenewDelegationTokenRequest(hmac=bytes(r.hmac), renew_period_ms=1000)
    assert envelope(cluster, 39, 2, renew, "User:mallory").error_code == E.DELEGATION_TOKEN_OWNER_MISMATCH
    assert envelope(cluster, 39, 2, renew, "User:alice").error_code == 0
    # and over a client PLAINTEXT listener, as Kafka: not allowed
    r = call(cluster.nodes[1].port, 38, 2, messages.CreateDelegationTokenRequest(renewers=[], max_lifetime_ms=-1))
    assert r.error_code == E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
