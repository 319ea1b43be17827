"""The SASL/SCRAM state machine without I/O: RFC 7677's test vector, full exchanges through
``SaslAuthenticator`` with kbroker's own SCRAM client, Kafka's error answers, and a
Hypothesis fuzz of malformed, truncated, oversized and replayed messages."""
from __future__ import annotations

import base64
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from kbroker.security.authenticator import (ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED,
                                            UNSUPPORTED_SASL_MECHANISM, SaslAuthenticator)
from kbroker.security.mechanisms import PlainServer, ScramMechanismServer
from kbroker.security.scram import ScramClient, ScramServer, make_credential
from kbroker.wire import messages
from kbroker.wire.protocol import encode_request

assert ILLEGAL_SASL_STATE == 34


def test_rfc7677_test_vector():
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    cred = make_credential("SCRAM-SHA-256", "pencil", salt, 4096)
    server = ScramServer("SCRAM-SHA-256", {"user": cred}.get, lambda n: b"\0" * n)
    server.server_nonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    first = server.first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    final = server.final(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                         b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.username == "user"


def _users():
    salt = b"0123456789abcdef"
    return {m: {"alice": make_credential(m, "alice-pw", salt, 4096)}
            for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")}


def _auth(now=[0]):
    users = _users()
    mechs = {"PLAIN": lambda: PlainServer({"alice": "alice-pw"})}
    for m in users:
        mechs[m] = lambda m=m: ScramMechanismServer(m, users[m].get, lambda n: b"\1" * n)
    return SaslAuthenticator(mechs, lambda: now[0], reauth_ms=60_000)


def _frame(api_key, version, body, cid=1) -> bytes:
    return encode_request(api_key, version, cid, "t", body)[4:]


def _resp(step, cls, version):
    data = b"".join(bytes(p) for r in step.reply for p in r)[4:]
    hv = 1 if version >= 2 and cls is messages.SaslAuthenticateResponse else 0
    return cls.decode(memoryview(data), version, 4 + hv)


def _handshake(a, mech, version=1):
    return a.receive(_frame(17, version, messages.SaslHandshakeRequest(mechanism=mech)))


def _token(a, data, version=2):
    return a.receive(_frame(36, version, messages.SaslAuthenticateRequest(auth_bytes=data)))


def test_scram_exchange_through_the_authenticator():
    for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        a = _auth()
        assert a.receive(_frame(18, 3, messages.ApiVersionsRequest(
            client_software_name="t", client_software_version="1"))).dispatch
        assert _resp(_handshake(a, mech), messages.SaslHandshakeResponse, 1).error_code == 0
        c = ScramClient(mech, "alice", "alice-pw", nonce="clientnonce")
        r1 = _resp(_token(a, c.first()), messages.SaslAuthenticateResponse, 2)
        r2 = _resp(_token(a, c.final(r1.auth_bytes)), messages.SaslAuthenticateResponse, 2)
        assert r2.error_code == 0 and r2.session_lifetime_ms == 60_000
        c.verify(r2.auth_bytes)
        assert a.authenticated and a.principal == "User:alice"


def test_wrong_password_and_unknown_user_get_the_same_answer():
    for user, pw in (("alice", "nope"), ("mallory", "x")):
        a = _auth()
        _handshake(a, "SCRAM-SHA-512")
        c = ScramClient("SCRAM-SHA-512", user, pw, nonce="n0nce")
        step = _token(a, c.first())
        if not step.close:
            step = _token(a, c.final(_resp(step, messages.SaslAuthenticateResponse, 2).auth_bytes))
        r = _resp(step, messages.SaslAuthenticateResponse, 2)
        assert r.error_code == SASL_AUTHENTICATION_FAILED and step.close
        assert r.error_message == ("Authentication failed during authentication due to invalid "
                                   "credentials with SASL mechanism SCRAM-SHA-512")


def test_unsupported_mechanism_lists_the_enabled_ones():
    a = _auth()
    step = _handshake(a, "GSSAPI")
    r = _resp(step, messages.SaslHandshakeResponse, 1)
    assert r.error_code == UNSUPPORTED_SASL_MECHANISM and step.close
    assert r.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


def test_no_api_before_authentication():
    a = _auth()
    step = a.receive(_frame(3, 12, messages.MetadataRequest(topics=None)))
    assert step.close == "Unexpected Kafka request of type METADATA during SASL handshake." and not step.reply
    a = _auth()
    _handshake(a, "PLAIN")
    step = a.receive(_frame(0, 9, messages.ProduceRequest(acks=1, timeout_ms=1, topic_data=[])))
    assert step.close and "PRODUCE" in step.close and not a.authenticated


def test_raw_sasl_bytes_without_handshake_close():
    a = _auth()
    step = a.receive(b"n,,n=alice,r=abc")
    assert step.close and "wrong security protocol" in step.close


def test_handshake_v0_then_raw_plain_token():
    a = _auth()
    _handshake(a, "PLAIN", version=0)
    step = a.receive(b"\0alice\0alice-pw")
    assert a.authenticated and step.reply == [[struct.pack(">i", 0)]]


def test_plain_errors_are_kafkas():
    a = _auth()
    _handshake(a, "PLAIN")
    r = _resp(_token(a, b"\0alice"), messages.SaslAuthenticateResponse, 2)
    assert r.error_message == "Invalid SASL/PLAIN response: expected 3 tokens, got 2"


def test_reauthentication_keeps_the_principal():
    now = [0]
    a = _auth(now)
    _handshake(a, "PLAIN")
    _token(a, b"\0alice\0alice-pw")
    now[0] = 61_000
    assert a.session_expired()
    a.begin_reauthentication()
    _handshake(a, "PLAIN")
    r = _resp(_token(a, b"\0alice\0alice-pw"), messages.SaslAuthenticateResponse, 2)
    assert r.error_code == 0 and a.authenticated and not a.session_expired()
    assert a.reauthentications == 1


def test_replayed_scram_final_is_refused():
    a = _auth()
    _handshake(a, "SCRAM-SHA-256")
    c = ScramClient("SCRAM-SHA-256", "alice", "alice-pw", nonce="abc")
    final = c.final(_resp(_token(a, c.first()), messages.SaslAuthenticateResponse, 2).auth_bytes)
    assert _resp(_token(a, final), messages.SaslAuthenticateResponse, 2).error_code == 0
    # the same final message on a fresh exchange (another server nonce) fails
    b = _auth()
    _handshake(b, "SCRAM-SHA-256")
    b._server._scram.server_nonce = "other"
    _token(b, c.first())
    step = _token(b, final)
    assert _resp(step, messages.SaslAuthenticateResponse, 2).error_code == SASL_AUTHENTICATION_FAILED


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.binary(max_size=64),
    st.builds(lambda m: ("h", m), st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "X", ""])),
    st.builds(lambda b: ("t", b), st.one_of(
        st.binary(max_size=200),
        st.sampled_from([b"n,,n=alice,r=x", b"n,,n=,r=", b"c=biws,r=x,p=AAAA", b"\0alice\0alice-pw",
                         b"n,a=bob,n=alice,r=x", b"y,,n=alice,r=x", b"\xff" * 5000]))),
    st.builds(lambda n: ("cut", n), st.integers(0, 40))), max_size=8))
def test_fuzz_never_raises_and_never_authenticates_by_accident(ops):
    a = _auth()
    last = b""
    for op in ops:
        if a.state in ("failed",):
            break
        if isinstance(op, bytes):
            frame = op
        elif op[0] == "h":
            frame = _frame(17, 1, messages.SaslHandshakeRequest(mechanism=op[1]))
        elif op[0] == "t":
            frame = _frame(36, 2, messages.SaslAuthenticateRequest(auth_bytes=op[1]))
        else:
            frame = last[:op[1]]
        last = frame
        step = a.receive(frame)
        assert step.close or step.reply or step.dispatch or a.state in ("raw", "complete")
    if a.authenticated:
        # only the right PLAIN password can have done it
        assert a.mechanism == "PLAIN" and a.username == "alice"


def test_api_versions_retry_after_unsupported_version():
    """franz-go first asks ApiVersions at a version newer than the broker's; after the
    UNSUPPORTED_VERSION answer it retries lower — both must reach the registry."""
    a = _auth()
    a.api_versions_max = 3
    v3 = _frame(18, 3, messages.ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    assert a.receive(v3[:2] + b"\0\x09" + v3[4:]).dispatch       # ApiVersions v9: too new
    assert a.receive(_frame(18, 3, messages.ApiVersionsRequest(
        client_software_name="t", client_software_version="1"))).dispatch
    assert a.receive(_frame(18, 3, messages.ApiVersionsRequest(
        client_software_name="t", client_software_version="1"))).close


def test_delegation_token_scram_login_is_the_owner_until_expiry():
    """KIP-48: user name = token id with ``tokenauth=true``, password = base64 HMAC; the
    principal is the owner, the session is token-authenticated and lasts at most until the
    token's expiry; a token without the extension, an unknown one or an expired one fails."""
    from types import SimpleNamespace

    from kbroker.authz.tokens import TokenInfo, compute_hmac, scram_password
    from kbroker.security.credentials import Credentials
    from kbroker.security.listeners import ListenerSecurity
    from kbroker.security.jaas import parse_jaas

    wall = [1_000_000]
    token = TokenInfo("tok1", "User:alice", "User:alice", (), 0, 10_000_000, 1_030_000)
    image = SimpleNamespace(delegation_tokens={"tok1": token}, scram_credentials={})
    creds = Credentials(lambda: image, lambda: "secret", lambda: wall[0])
    module = parse_jaas("org.apache.kafka.common.security.scram.ScramLoginModule required;")[0]
    sec = ListenerSecurity("SASL_SSL", "SASL_SSL", mechanisms={"SCRAM-SHA-256": module}, reauth_ms=60_000)
    password = scram_password(compute_hmac("secret", "tok1"))

    def login(user, pw, ext):
        a = sec.authenticator(creds, lambda: 0, lambda n: b"\2" * n)
        _handshake(a, "SCRAM-SHA-256")
        c = ScramClient("SCRAM-SHA-256", user, pw, nonce="tn", extensions=ext)
        step = _token(a, c.first())
        if not step.close:
            step = _token(a, c.final(_resp(step, messages.SaslAuthenticateResponse, 2).auth_bytes))
        return a, _resp(step, messages.SaslAuthenticateResponse, 2)

    a, r = login("tok1", password, {"tokenauth": "true"})
    assert r.error_code == 0 and a.principal == "User:alice" and a.token_authenticated
    assert r.session_lifetime_ms == 30_000            # the token expires before reauth.ms
    for user, pw, ext in (("tok1", password, {}), ("nope", password, {"tokenauth": "true"}),
                          ("tok1", "wrong", {"tokenauth": "true"})):
        a, r = login(user, pw, ext)
        assert r.error_code == SASL_AUTHENTICATION_FAILED and not a.authenticated
    wall[0] = 1_030_001
    a, r = login("tok1", password, {"tokenauth": "true"})
    assert r.error_code == SASL_AUTHENTICATION_FAILED and not a.authenticated
