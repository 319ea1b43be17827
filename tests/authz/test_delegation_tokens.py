"""Delegation tokens (CreateDelegationToken 38, Renew 39, Expire 40, Describe 41).

Over the wire on a PLAINTEXT listener Kafka refuses every token request
(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, with or without ``delegation.token.secret.key``) —
checked with raw frames. The lifecycle needs an
authenticated principal, which only SASL (another change) gives a connection: until then it is
driven through the API handlers of a real in-process broker with the context a SASL_PLAINTEXT
connection of ``User:alice`` would have."""
from __future__ import annotations

import trio

from kbroker.api import RequestContext, load_all
from kbroker.authz.tokens import compute_hmac, token_credentials
from kbroker.config.broker import BrokerConfig
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E
from tests.broker.raw import RawClient

SECRET = "s3cr3t-key"


def config(tmp_path, **extra) -> BrokerConfig:
    raw = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data"),
           "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    raw.update(extra)
    return BrokerConfig.from_dict(raw)


async def start(nursery, cfg):
    from kbroker.server import serve
    return await nursery.start(serve, cfg)


async def stop(server):
    server.request_shutdown()
    with trio.fail_after(10):
        await server.wait_stopped()


async def test_plaintext_refuses_token_requests(tmp_path, nursery):
    for extra, expected in (({}, E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED),
                            ({"delegation.token.secret.key": SECRET}, E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)):
        server = await start(nursery, config(tmp_path / str(len(extra)), **extra))
        c = await RawClient.connect(server)
        r = await c.request("CreateDelegationToken", 2, renewers=[], max_lifetime_ms=-1)
        assert r.error_code == expected
        r = await c.request("DescribeDelegationToken", 2, owners=None)
        assert r.error_code == expected and r.tokens == []
        r = await c.request("RenewDelegationToken", 2, hmac=b"x", renew_period_ms=1000)
        assert r.error_code == expected
        await c.aclose()
        await stop(server)


def ctx_for(broker, api_key: int, version: int, principal: str) -> RequestContext:
    return RequestContext(broker, api_key, version, 1, "test", "127.0.0.1", "PLAINTEXT",
                          extra={"security_protocol": "SASL_PLAINTEXT"}, principal=principal)


async def call(broker, api_key, version, principal, **fields):
    registry = load_all()
    req = messages.request_class(api_key)(**fields)
    return await registry[api_key].handler(ctx_for(broker, api_key, version, principal), req)


async def test_token_lifecycle(tmp_path, nursery):
    cfg = config(tmp_path, **{"delegation.token.secret.key": SECRET,
                              "delegation.token.max.lifetime.ms": "3600000",
                              "delegation.token.expiry.time.ms": "600000",
                              "super.users": "User:admin"})
    server = await start(nursery, cfg)
    broker = server.broker
    R = messages.CreateDelegationTokenRequest
    plain = await start(nursery, config(tmp_path / "plain"))    # no delegation.token.secret.key
    r = await call(plain.broker, 38, 3, "User:alice", renewers=[], max_lifetime_ms=-1)
    assert r.error_code == E.DELEGATION_TOKEN_AUTH_DISABLED
    await stop(plain)
    r = await call(broker, 38, 3, "User:alice", owner_principal_type=None, owner_principal_name=None,
                   renewers=[R.CreatableRenewers(principal_type="User", principal_name="bob")],
                   max_lifetime_ms=-1)
    assert r.error_code == E.NONE and (r.principal_type, r.principal_name) == ("User", "alice")
    assert r.max_timestamp_ms - r.issue_timestamp_ms == 3_600_000
    assert r.expiry_timestamp_ms - r.issue_timestamp_ms == 600_000
    assert bytes(r.hmac) == compute_hmac(SECRET, r.token_id)
    token_id, mac = r.token_id, bytes(r.hmac)
    # what SCRAM-with-token authentication will look up
    assert token_credentials(broker.metadata, SECRET, token_id) == (mac, "User:alice", r.expiry_timestamp_ms)
    assert token_credentials(broker.metadata, SECRET, "nope") is None

    # someone else's owner needs CREATE_TOKENS on that user; bad principal types are refused
    r = await call(broker, 38, 3, "User:carol", owner_principal_type="User", owner_principal_name="alice",
                   renewers=[], max_lifetime_ms=-1)
    assert r.error_code == E.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    r = await call(broker, 38, 3, "User:alice", owner_principal_type=None, owner_principal_name=None,
                   renewers=[R.CreatableRenewers(principal_type="Group", principal_name="x")],
                   max_lifetime_ms=-1)
    assert r.error_code == E.INVALID_PRINCIPAL_TYPE

    # describe: owner, renewer and super user see it; others do not
    for who, n in (("User:alice", 1), ("User:bob", 1), ("User:admin", 1), ("User:carol", 0)):
        r = await call(broker, 41, 3, who, owners=None)
        assert r.error_code == E.NONE and len(r.tokens) == n, who
    D = messages.DescribeDelegationTokenRequest
    r = await call(broker, 41, 3, "User:alice", owners=[D.DescribeDelegationTokenOwner(
        principal_type="User", principal_name="bob")])
    assert r.tokens == []

    # renew by the renewer; never past the max timestamp; strangers and unknown hmacs refused
    r = await call(broker, 39, 2, "User:bob", hmac=mac, renew_period_ms=10 * 3_600_000)
    assert r.error_code == E.NONE
    assert r.expiry_timestamp_ms == broker.metadata.delegation_token(token_id).max_timestamp
    r = await call(broker, 39, 2, "User:carol", hmac=mac, renew_period_ms=1000)
    assert r.error_code == E.DELEGATION_TOKEN_OWNER_MISMATCH
    r = await call(broker, 39, 2, "User:alice", hmac=b"not-a-token", renew_period_ms=1000)
    assert r.error_code == E.DELEGATION_TOKEN_NOT_FOUND

    # expire with a negative period removes it; it is gone from the image and from describe
    r = await call(broker, 40, 2, "User:alice", hmac=mac, expiry_time_period_ms=-1)
    assert r.error_code == E.NONE
    assert broker.metadata.delegation_token(token_id) is None
    r = await call(broker, 41, 3, "User:alice", owners=None)
    assert r.tokens == []
    await stop(server)


async def test_tokens_survive_restart_and_expire(tmp_path, nursery):
    cfg = config(tmp_path, **{"delegation.token.secret.key": SECRET})
    server = await start(nursery, cfg)
    r = await call(server.broker, 38, 2, "User:alice", renewers=[], max_lifetime_ms=-1)
    token_id = r.token_id
    r2 = await call(server.broker, 38, 2, "User:alice", renewers=[], max_lifetime_ms=-1)
    # bring the second one's expiry to "now": the controller's sweep removes it
    await call(server.broker, 40, 2, "User:alice", hmac=bytes(r2.hmac), expiry_time_period_ms=0)
    await stop(server)
    server = await start(nursery, cfg)
    assert server.broker.metadata.delegation_token(token_id).owner == "User:alice"
    await trio.sleep(0.01)
    removed = await server.broker.controller.local.expire_tokens()
    assert removed == 1 and r2.token_id not in server.broker.metadata.delegation_tokens
    assert token_id in server.broker.metadata.delegation_tokens
    await stop(server)

