"""Real clients against kbroker's SASL_SSL, SASL_PLAINTEXT and SSL listeners: right
credentials work; wrong password, unknown user and an untrusted broker certificate fail
with the errors the clients report for Kafka. SCRAM users are created with the admin
API (AlterUserScramCredentials) and take effect without a restart."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialUpsertion)


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
        assert [m.value for m in c][:1] == [b"v"]
        c.close()


def test_kafka_python_wrong_password(secured, caplog):
    from kafka import KafkaProducer
    from kafka.errors import KafkaError
    with pytest.raises(KafkaError) as e:
        KafkaProducer(bootstrap_servers=secured.sasl_plaintext, security_protocol="SASL_PLAINTEXT",
                      sasl_mechanism="PLAIN", sasl_plain_username="alice",
                      sasl_plain_password="bad", max_block_ms=8000)
    # kafka-python keeps retrying the bootstrap (as against Kafka) and logs the broker's answer
    assert "Authentication failed: Invalid username or password" in caplog.text, type(e.value)
