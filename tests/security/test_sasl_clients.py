"""Real clients against kbroker's SASL_SSL, SASL_PLAINTEXT and SSL listeners: right
credentials work; wrong password, unknown user and an untrusted broker certificate fail
with the errors the clients report for Kafka. SCRAM users are created with the admin
API (AlterUserScramCredentials) and take effect without a restart."""
from __future__ import annotations

import random
import socket
import ssl
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialUpsertion)

from kbroker.wire import messages
from kbroker.wire.protocol import encode_request
from tests.support.raw_wire import exchange


def _scram_user(bootstrap: str, user: str, password: str, mechanism=ScramMechanism.SCRAM_SHA_512):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futs = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        user, ScramCredentialInfo(mechanism, 4096), password.encode())])
    for f in futs.values():
        f.result(timeout=20)


def _sasl_ssl_conf(s, mechanism, user, password, ca=None):
    return {"bootstrap.servers": s.sasl_ssl, "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password,
            "ssl.ca.location": str(ca or s.pki.ca)}


def _roundtrip(conf: dict) -> None:
    topic = f"sec-{uuid.uuid4().hex[:8]}"
    p = Producer(conf)
    p.produce(topic, b"secret-value", key=b"k")
    assert p.flush(30) == 0
    c = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and not m.error():
                assert m.value() == b"secret-value"
                return
        raise AssertionError("no message consumed over the secured listener")
    finally:
        c.close()


def _auth_error(conf: dict) -> str:
    """The errors librdkafka reports (error callback) when the connection is refused."""
    errors: list[str] = []
    p = Producer({**conf, "error_cb": lambda e: errors.append(str(e)), "log_level": 0})
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        p.poll(0.2)
    assert errors, "the client reported no error"
    return " | ".join(errors)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256"])
def test_confluent_scram_over_sasl_ssl(secured, mechanism):
    user = f"u{uuid.uuid4().hex[:6]}"
    _scram_user(secured.bootstrap, user, "pw-" + user, getattr(ScramMechanism, mechanism.replace("-", "_")))
    _roundtrip(_sasl_ssl_conf(secured, mechanism, user, "pw-" + user))


def test_confluent_plain_over_sasl_ssl(secured):
    _roundtrip(_sasl_ssl_conf(secured, "PLAIN", "alice", "alice-secret"))


def test_wrong_scram_password_is_kafkas_error(secured):
    _scram_user(secured.bootstrap, "bob", "right-password")
    err = _auth_error(_sasl_ssl_conf(secured, "SCRAM-SHA-512", "bob", "wrong-password"))
    assert ("Authentication failed during authentication due to invalid credentials with SASL "
            "mechanism SCRAM-SHA-512") in err


def test_unknown_scram_user_is_the_same_error(secured):
    err = _auth_error(_sasl_ssl_conf(secured, "SCRAM-SHA-512", "nobody", "x"))
    assert ("Authentication failed during authentication due to invalid credentials with SASL "
            "mechanism SCRAM-SHA-512") in err


def test_wrong_plain_password(secured):
    err = _auth_error(_sasl_ssl_conf(secured, "PLAIN", "alice", "nope"))
    assert "Authentication failed: Invalid username or password" in err


def test_untrusted_broker_certificate_fails(secured):
    err = _auth_error(_sasl_ssl_conf(secured, "PLAIN", "alice", "alice-secret", ca=secured.pki.other_ca))
    assert "certificate verify failed" in err


def test_ssl_listener_with_client_certificate(secured):
    conf = {"bootstrap.servers": secured.ssl, "security.protocol": "SSL",
            "ssl.ca.location": str(secured.pki.ca),
            "ssl.certificate.location": str(secured.pki.client_cert),
            "ssl.key.location": str(secured.pki.client_key)}
    _roundtrip(conf)


def test_ssl_listener_refuses_a_client_without_certificate(secured):
    conf = {"bootstrap.servers": secured.ssl, "security.protocol": "SSL",
            "ssl.ca.location": str(secured.pki.ca)}
    err = _auth_error(conf)
    # with TLS 1.3 the server's refusal arrives after the client's handshake: librdkafka
    # (against Kafka too) reports the SSL failure or the broker as down
    assert "SSL" in err or "brokers are down" in err


def test_kafka_python_plain_and_scram(secured):
    from kafka import KafkaConsumer, KafkaProducer
    _scram_user(secured.bootstrap, "carol", "carol-pw", ScramMechanism.SCRAM_SHA_256)
    for conf in ({"bootstrap_servers": secured.sasl_plaintext, "security_protocol": "SASL_PLAINTEXT",
                  "sasl_mechanism": "PLAIN", "sasl_plain_username": "alice",
                  "sasl_plain_password": "alice-secret"},
                 {"bootstrap_servers": secured.sasl_ssl, "security_protocol": "SASL_SSL",
                  "sasl_mechanism": "SCRAM-SHA-256", "sasl_plain_username": "carol",
                  "sasl_plain_password": "carol-pw", "ssl_cafile": str(secured.pki.ca)}):
        topic = f"kp-{uuid.uuid4().hex[:8]}"
        p = KafkaProducer(**conf)
        p.send(topic, b"v").get(timeout=30)
        p.close()
        c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=20000, **conf)
        # the first record is enough (iterating to the end waits consumer_timeout_ms in vain)
        assert next(c).value == b"v"
        c.close()


def test_kafka_python_wrong_password(secured, caplog):
    from kafka import KafkaProducer
    from kafka.errors import KafkaError
    with pytest.raises(KafkaError) as e:
        KafkaProducer(bootstrap_servers=secured.sasl_plaintext, security_protocol="SASL_PLAINTEXT",
                      sasl_mechanism="PLAIN", sasl_plain_username="alice",
                      sasl_plain_password="bad", max_block_ms=8000, bootstrap_timeout_ms=8000)
    # kafka-python keeps retrying the bootstrap (as against Kafka), logging the broker's answer
    # when it reads it before its own retry timer fires; the broker's side is certain:
    assert ("Authentication failed: Invalid username or password" in caplog.text
            or "on SASL_PLAINTEXT: Authentication failed: Invalid username or password"
            in secured.proc.log_text()), type(e.value)


# --------------------------------------------------------------------------- raw wire

_raw = exchange


def test_no_api_is_reachable_before_authentication(secured):
    from kbroker.wire import messages
    from kbroker.wire.protocol import encode_request
    for api_key, version, body in [
            (3, 1, messages.MetadataRequest(topics=None)),
            (19, 4, messages.CreateTopicsRequest(topics=[], timeout_ms=1000, validate_only=False)),
            (50, 0, messages.DescribeUserScramCredentialsRequest(users=None))]:
        assert _raw(secured.sasl_plaintext, encode_request(api_key, version, 7, "raw", body)) == b""


def test_sasl_handshake_on_a_plaintext_listener_is_illegal_sasl_state(secured):
    from kbroker.wire import messages
    from kbroker.wire.protocol import encode_request
    data = _raw(secured.bootstrap, encode_request(17, 1, 9, "raw", messages.SaslHandshakeRequest(mechanism="SCRAM-SHA-512")))
    r = messages.SaslHandshakeResponse.decode(memoryview(data), 1, 8)
    assert r.error_code == 34 and int.from_bytes(data[4:8], "big") == 9


# --------------------------------------------------------------------------- SCRAM admin

def test_describe_and_alter_scram_credentials_with_kafkas_errors(secured):
    from confluent_kafka.admin import UserScramCredentialDeletion
    admin = AdminClient({"bootstrap.servers": secured.bootstrap})
    _scram_user(secured.bootstrap, "dave", "dave-pw", ScramMechanism.SCRAM_SHA_256)
    desc = admin.describe_user_scram_credentials(["dave"])
    info = desc["dave"].result(timeout=20)
    assert [(i.mechanism, i.iterations) for i in info.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_256, 4096)]
    futs = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "erin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1000), b"pw")])
    with pytest.raises(KafkaException) as e:
        futs["erin"].result(timeout=20)
    assert "Too few iterations" in str(e.value)
    futs = admin.alter_user_scram_credentials([UserScramCredentialDeletion("nobody", ScramMechanism.SCRAM_SHA_512)])
    with pytest.raises(KafkaException) as e:
        futs["nobody"].result(timeout=20)
    assert "Attempt to delete a user credential that does not exist" in str(e.value)
    with pytest.raises(KafkaException) as e:
        admin.describe_user_scram_credentials(["ghost"])["ghost"].result(timeout=20)
    assert "Attempt to describe a user credential that does not exist: ghost" in str(e.value)
    # deleting dave's credential locks dave out on the next connection
    for f in admin.alter_user_scram_credentials(
            [UserScramCredentialDeletion("dave", ScramMechanism.SCRAM_SHA_256)]).values():
        f.result(timeout=20)
    err = _auth_error(_sasl_ssl_conf(secured, "SCRAM-SHA-256", "dave", "dave-pw"))
    assert "invalid credentials with SASL mechanism SCRAM-SHA-256" in err


# --------------------------------------------------------------------------- more clients

def test_oauthbearer_unsecured_token(secured):
    conf = {"bootstrap.servers": secured.sasl_plaintext, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": "principal=alice lifeSeconds=3600"}
    _roundtrip(conf)


def test_reauthentication_keeps_the_connection(secured):
    """KIP-368: the broker sends session_lifetime_ms; librdkafka re-authenticates before it
    runs out, so the broker never has to close an expired session."""
    from tests.security.conftest import REAUTH_MS
    conf = {"bootstrap.servers": secured.sasl_plaintext, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"}
    topic = f"reauth-{uuid.uuid4().hex[:8]}"
    p = Producer(conf)
    for i in range(3):
        p.produce(topic, f"v{i}".encode())
        assert p.flush(30) == 0
        time.sleep(REAUTH_MS / 1000 * 0.9)
    assert "SASL session of User:alice expired" not in secured.proc.log_text()


def test_aiokafka_scram_over_sasl_ssl(secured):
    import asyncio
    import ssl

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    _scram_user(secured.bootstrap, "aio", "aio-pw")
    topic = f"aio-{uuid.uuid4().hex[:8]}"

    async def run():
        ctx = ssl.create_default_context(cafile=str(secured.pki.ca))
        common = dict(bootstrap_servers=secured.sasl_ssl, security_protocol="SASL_SSL",
                      sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="aio",
                      sasl_plain_password="aio-pw", ssl_context=ctx)
        p = AIOKafkaProducer(**common)
        await p.start()
        try:
            await p.send_and_wait(topic, b"aio-value")
        finally:
            await p.stop()
        c = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **common)
        await c.start()
        try:
            m = await asyncio.wait_for(c.getone(), 30)
            assert m.value == b"aio-value"
        finally:
            await c.stop()

    asyncio.run(run())


def test_kcat_plain_over_sasl_ssl(secured):
    import subprocess
    topic = f"kcat-{uuid.uuid4().hex[:8]}"

    def kcat(user, password, *args, input=None):
        return subprocess.run(["kcat", "-b", secured.sasl_ssl, "-X", "security.protocol=SASL_SSL",
                               "-X", "sasl.mechanism=PLAIN", "-X", f"sasl.username={user}",
                               "-X", f"sasl.password={password}", "-X", f"ssl.ca.location={secured.pki.ca}",
                               *args], input=input, capture_output=True, timeout=60)
    r = kcat("alice", "alice-secret", "-P", "-t", topic, input=b"k1\n")
    assert r.returncode == 0, r.stderr
    out = kcat("alice", "alice-secret", "-C", "-t", topic, "-o", "beginning", "-c", "1", "-e").stdout
    assert out.strip() == b"k1"
    bad = kcat("alice", "nope", "-L", "-m", "8")
    assert bad.returncode != 0 and b"Authentication failed: Invalid username or password" in bad.stderr
    # (Debian's kcat links librdkafka 2.0.2, whose SCRAM final message Kafka 4.3.1 refuses as
    # kbroker does: compat_tests/test_security.py::test_kcat_scram_of_debians_librdkafka_is_refused)


def test_oversized_frame_before_authentication_closes(secured):
    """Before authentication a frame may be at most sasl.server.max.receive.size (512 KiB)."""
    import socket
    host, port = secured.sasl_plaintext.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall((600 * 1024).to_bytes(4, "big") + b"\0" * 1024)
        assert s.recv(100) == b""


_API_VERSIONS_FRAME = encode_request(18, 3, 1, "raw", messages.ApiVersionsRequest(
    client_software_name="t", client_software_version="1"))


def _client_hello(host: str) -> bytes:
    """The first flight of a real TLS client, captured through memory BIOs."""
    ctx = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname=host)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def _send_and_drain(addr: str, payload: bytes) -> bytes:
    host, port = addr.rsplit(":", 1)
    got = b""
    with socket.create_connection((host, int(port)), timeout=15) as s:
        try:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        except ConnectionResetError:
            pass
    return got


def _tls_api_versions(addr: str, ca) -> int:
    host, port = addr.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection((host, int(port)), timeout=15) as raw:
        with ctx.wrap_socket(raw, server_hostname=host) as s:
            s.sendall(_API_VERSIONS_FRAME)
            data = b""
            while len(data) < 4 or len(data) - 4 < int.from_bytes(data[:4], "big"):
                chunk = s.recv(65536)
                assert chunk, "closed before answering ApiVersions"
                data += chunk
    return messages.ApiVersionsResponse.decode(memoryview(data), 3, 8).error_code


def test_non_tls_bytes_close_the_connection_and_the_listener_keeps_serving(secured):
    """Bytes that are not a TLS handshake on the SSL and SASL_SSL listeners: a plaintext
    Kafka request (a client set to the wrong security protocol), random bytes, a record
    header announcing 64 KiB, a ClientHello cut at several points or with one byte flipped.
    The broker closes each connection (at most TLS records first), never answers Kafka data,
    and keeps serving a proper TLS client on the same listener."""
    rng = random.Random(14)
    hello = _client_hello("127.0.0.1")
    payloads = [_API_VERSIONS_FRAME, bytes(rng.getrandbits(8) for _ in range(300)), hello[:20],
                b"\x16\x03\x01\xff\xff" + b"\0" * 64, b"\x16\x03\x03\x00\x05\x01\x00\x00\x01\x00"]
    payloads += [hello[:n] for n in range(0, len(hello), max(1, len(hello) // 6))]
    payloads += [bytes(b ^ (0xFF if i == k else 0) for i, b in enumerate(hello))
                 for k in (0, 5, 9, 43, len(hello) - 1)]
    for addr in (secured.ssl, secured.sasl_ssl):
        for p in payloads:
            answer = _send_and_drain(addr, p)
            # nothing but TLS records (an alert, 21, or the server's handshake, 22, when
            # the flipped byte left a valid ClientHello), never a Kafka answer
            assert answer[:1] in (b"", b"\x15", b"\x16"), (addr, p[:16], answer[:16])
    assert _tls_api_versions(secured.sasl_ssl, secured.pki.ca) == 0
