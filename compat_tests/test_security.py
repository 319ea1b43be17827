"""Security, side by side on Kafka and kbroker configured identically: a SASL_SSL listener
(PKCS12 keystore made with openssl at test time, PLAIN users in JAAS, SCRAM users created
with AlterUserScramCredentials) next to the suite's PLAINTEXT listener. Right credentials
work; wrong password, unknown user and an untrusted broker certificate fail with the same
error on both; nothing but ApiVersions/SaslHandshake/SaslAuthenticate is served before
authentication; SaslHandshake on a PLAINTEXT listener answers ILLEGAL_SASL_STATE; the SCRAM
admin API validates the same way; a delegation token authenticates with SCRAM as its owner.
Clients: confluent-kafka, kafka-python, aiokafka, kcat and Kafka's Java tools with
``--command-config``."""
from __future__ import annotations

import asyncio
import socket
import ssl
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialDeletion, UserScramCredentialUpsertion)

from compat_tests.cli import run_tool
from compat_tests.helpers import wait_until
from compat_tests.security_broker import start_secured
from kbroker.wire import messages
from kbroker.wire.protocol import encode_request
from tests.security.certs import PASSWORD
from tests.support.raw_wire import exchange

CLIENT = "security"
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism"


@pytest.fixture(scope="module")
def secured(target, broker_pool, tmp_path_factory):
    b = start_secured(target, broker_pool, tmp_path_factory.mktemp(f"pki-{target}"))
    try:
        yield b
    finally:
        b.stop(timeout=30)


def _conf(b, mechanism="SCRAM-SHA-512", user="alice", password="alice-secret", ca=None):
    return {"bootstrap.servers": b.sasl_ssl, "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password,
            "ssl.ca.location": str(ca or b.pki.ca)}


def _errors(conf) -> str:
    errors: list[str] = []
    p = Producer({**conf, "error_cb": lambda e: errors.append(str(e)), "log_level": 0})
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        p.poll(0.2)
    assert errors, "the client reported no error"
    return " | ".join(errors)


def _roundtrip(conf, topic):
    p = Producer(conf)
    p.produce(topic, b"value")
    assert p.flush(30) == 0
    c = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and not m.error():
                return m.value()
    finally:
        c.close()
    return None


@pytest.mark.parametrize("mechanism,user", [("SCRAM-SHA-512", "alice"), ("SCRAM-SHA-256", "carol"),
                                            ("PLAIN", "alice")])
def test_confluent_right_credentials(secured, topic_name, mechanism, user):
    assert _roundtrip(_conf(secured, mechanism, user, f"{user}-secret"), topic_name) == b"value"


def test_confluent_wrong_password(secured):
    assert f"{GENERIC} SCRAM-SHA-512" in _errors(_conf(secured, password="wrong"))


def test_confluent_unknown_user(secured):
    assert f"{GENERIC} SCRAM-SHA-512" in _errors(_conf(secured, user="nobody"))


def test_confluent_wrong_plain_password(secured):
    assert "Authentication failed: Invalid username or password" in _errors(
        _conf(secured, "PLAIN", "alice", "nope"))


def test_confluent_untrusted_certificate(secured):
    assert "certificate verify failed" in _errors(_conf(secured, ca=secured.pki.other_ca))


def test_kafka_python_scram(secured, topic_name):
    from kafka import KafkaConsumer, KafkaProducer
    conf = dict(bootstrap_servers=secured.sasl_ssl, security_protocol="SASL_SSL",
                sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="carol",
                sasl_plain_password="carol-secret", ssl_cafile=str(secured.pki.ca))
    p = KafkaProducer(**conf)
    p.send(topic_name, b"kp").get(timeout=30)
    p.close()
    c = KafkaConsumer(topic_name, auto_offset_reset="earliest", consumer_timeout_ms=20000, **conf)
    assert next(c).value == b"kp"       # the first record is enough: no wait for the timeout
    c.close()


def test_aiokafka_scram(secured, topic_name):
    from aiokafka import AIOKafkaProducer

    async def run():
        p = AIOKafkaProducer(bootstrap_servers=secured.sasl_ssl, security_protocol="SASL_SSL",
                             sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice",
                             sasl_plain_password="alice-secret",
                             ssl_context=ssl.create_default_context(cafile=str(secured.pki.ca)))
        await p.start()
        try:
            md = await p.send_and_wait(topic_name, b"aio")
            return md.offset
        finally:
            await p.stop()

    assert asyncio.run(run()) == 0


def _kcat(secured, mechanism, user, password, *args, input=None):
    return subprocess.run(["kcat", "-b", secured.sasl_ssl, "-X", "security.protocol=SASL_SSL",
                           "-X", f"sasl.mechanism={mechanism}", "-X", f"sasl.username={user}",
                           "-X", f"sasl.password={password}", "-X", f"ssl.ca.location={secured.pki.ca}",
                           *args], input=input, capture_output=True, timeout=60)


def test_kcat_plain(secured, topic_name):
    r = _kcat(secured, "PLAIN", "alice", "alice-secret", "-P", "-t", topic_name, input=b"k1\n")
    assert r.returncode == 0, r.stderr
    out = _kcat(secured, "PLAIN", "alice", "alice-secret", "-C", "-t", topic_name, "-o", "beginning",
                "-c", "1", "-e")
    assert out.stdout.strip() == b"k1", out.stderr


def test_kcat_scram_of_debians_librdkafka_is_refused(secured, topic_name):
    """Debian's kcat links librdkafka 2.0.2, whose SCRAM client-final message repeats the
    client nonce: Kafka 4.3.1 refuses it (invalid nonce, generic answer), and so does kbroker."""
    r = _kcat(secured, "SCRAM-SHA-256", "carol", "carol-secret", "-L", "-m", "8")
    assert r.returncode != 0
    assert f"{GENERIC} SCRAM-SHA-256".encode() in r.stderr


def test_java_tools_with_command_config(secured, topic_name, tmp_path, kafka_dist):
    def props(mech, user, module):
        p = tmp_path / f"{user}-{mech}.properties"
        p.write_text(f"security.protocol=SASL_SSL\nsasl.mechanism={mech}\n"
                     f"sasl.jaas.config=org.apache.kafka.common.security.{module} required "
                     f'username="{user}" password="{user}-secret";\n'
                     f"ssl.truststore.type=PKCS12\nssl.truststore.location={secured.pki.truststore_p12}\n"
                     f"ssl.truststore.password={PASSWORD}\n")
        return str(p)
    admin = props("PLAIN", "admin", "plain.PlainLoginModule")
    user = f"j{uuid.uuid4().hex[:6]}"
    run_tool("kafka-configs", ["--bootstrap-server", secured.sasl_ssl, "--command-config", admin,
                               "--alter", "--add-config", f"SCRAM-SHA-512=[password={user}-secret]",
                               "--entity-type", "users", "--entity-name", user], timeout=120).check()
    # the credential reaches the broker's image (Kafka: its metadata publisher, which also
    # feeds the SCRAM authenticator) after the controller answered: wait until the broker
    # describes it, before the tools log in with it
    wait_until(lambda: _scram_mechanisms(secured, user) == [ScramMechanism.SCRAM_SHA_512], timeout=30,
               interval=0.2, what=f"{user}'s SCRAM credential at the broker")
    scram = props("SCRAM-SHA-512", user, "scram.ScramLoginModule")
    run_tool("kafka-console-producer", ["--bootstrap-server", secured.sasl_ssl, "--topic", topic_name,
                                        "--command-config", scram], input="a\nb\n", timeout=120).check()
    out = run_tool("kafka-console-consumer", ["--bootstrap-server", secured.sasl_ssl, "--topic",
                                              topic_name, "--command-config", scram, "--from-beginning",
                                              "--max-messages", "2", "--timeout-ms", "30000"],
                   timeout=120).check().stdout
    assert out.split() == ["a", "b"]


def _scram_mechanisms(b, user: str) -> list:
    """The SCRAM mechanisms the broker describes for ``user`` ([] for none yet)."""
    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    try:
        info = admin.describe_user_scram_credentials([user])[user].result(timeout=30)
    except KafkaException:            # RESOURCE_NOT_FOUND: not (yet) known
        return []
    return [i.mechanism for i in info.scram_credential_infos]


def test_scram_login_with_a_delegation_token(secured, topic_name, tmp_path, kafka_dist):
    """KIP-48 with Kafka's tools: alice creates a token; clients authenticate with it
    (``tokenauth="true"``, token id and HMAC) as alice; a token session may not create
    tokens; an unknown token id fails with the generic SCRAM error."""
    def props(name, user, password, token=False):
        p = tmp_path / f"{name}.properties"
        p.write_text("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
                     f'required username="{user}" password="{password}"'
                     f'{" tokenauth=" + chr(34) + "true" + chr(34) if token else ""};\n'
                     f"ssl.truststore.type=PKCS12\nssl.truststore.location={secured.pki.truststore_p12}\n"
                     f"ssl.truststore.password={PASSWORD}\n")
        return str(p)

    def tokens(config, *args):
        return run_tool("kafka-delegation-tokens", ["--bootstrap-server", secured.sasl_ssl,
                                                    "--command-config", config, *args], timeout=120)
    alice = props("alice", "alice", "alice-secret")
    out = tokens(alice, "--create", "--max-life-time-period", "-1").check().stdout
    token_id, mac, owner = [l for l in out[out.index("TOKENID"):].splitlines()[1:] if l.strip()][0].split()[:3]
    assert owner == "User:alice"
    # the token reaches the broker's token cache through the metadata log a moment after the
    # controller answered CreateDelegationToken (on Kafka; kbroker alike): wait until the
    # broker describes it, before a client logs in with it
    wait_until(lambda: token_id in tokens(alice, "--describe", "--owner-principal",
                                          "User:alice").check().stdout, 60,
               what=f"the broker to describe token {token_id}")
    as_token = props("token", token_id, mac, token=True)
    run_tool("kafka-console-producer", ["--bootstrap-server", secured.sasl_ssl, "--topic", topic_name,
                                        "--command-config", as_token], input="a\nb\n", timeout=120).check()
    out = run_tool("kafka-console-consumer", ["--bootstrap-server", secured.sasl_ssl, "--topic",
                                              topic_name, "--command-config", as_token, "--from-beginning",
                                              "--max-messages", "2", "--timeout-ms", "30000"],
                   timeout=120).check().stdout
    assert out.split() == ["a", "b"]
    r = tokens(as_token, "--create", "--max-life-time-period", "-1")
    assert r.returncode != 0 and "UnsupportedByAuthenticationException" in r.stdout + r.stderr
    r = run_tool("kafka-topics", ["--bootstrap-server", secured.sasl_ssl, "--list", "--command-config",
                                  props("unknown", "no-such-token", mac, token=True)], timeout=120)
    assert r.returncode != 0 and f"{GENERIC} SCRAM-SHA-512" in r.stdout + r.stderr


_raw = exchange


def test_sasl_handshake_on_plaintext_is_illegal_sasl_state(secured):
    data = _raw(secured.bootstrap_servers, encode_request(
        17, 1, 5, "raw", messages.SaslHandshakeRequest(mechanism="SCRAM-SHA-512")))
    assert messages.SaslHandshakeResponse.decode(memoryview(data), 1, 8).error_code == 34


def test_no_api_before_authentication(secured):
    ctx = ssl.create_default_context(cafile=str(secured.pki.ca))
    host, port = secured.sasl_ssl.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname=host) as s:
            s.sendall(encode_request(3, 1, 1, "raw", messages.MetadataRequest(topics=None)))
            try:
                assert s.recv(100) == b""
            except (ConnectionResetError, ssl.SSLError):
                pass          # closed either way: no Metadata answer


def test_scram_admin_validation(secured):
    admin = AdminClient({"bootstrap.servers": secured.bootstrap_servers})
    futs = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "few", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 100), b"pw")])
    with pytest.raises(KafkaException, match="Too few iterations"):
        futs["few"].result(timeout=30)
    futs = admin.alter_user_scram_credentials([UserScramCredentialDeletion("ghost", ScramMechanism.SCRAM_SHA_512)])
    with pytest.raises(KafkaException, match="Attempt to delete a user credential that does not exist"):
        futs["ghost"].result(timeout=30)
    info = admin.describe_user_scram_credentials(["alice"])["alice"].result(timeout=30)
    assert [(i.mechanism, i.iterations) for i in info.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_512, 4096)]


# --------------------------------------------------------------------------- franz-go, kafkajs

def _security(b, mechanism="SCRAM-SHA-512", user="alice", password="alice-secret", ca=None):
    return {"ca": (ca or b.pki.ca).read_text(), "mechanism": mechanism, "username": user,
            "password": password}


@pytest.fixture(scope="module")
def ext_drivers():
    from compat_tests.extclient import Driver, ensure_franzgo, ensure_kafkajs
    return {"franz-go": Driver(ensure_franzgo(), "franz-go"), "kafkajs": Driver(ensure_kafkajs(), "kafkajs")}


@pytest.mark.parametrize("client", ["franz-go", "kafkajs"])
def test_other_languages_scram_over_sasl_ssl(secured, topic_name, ext_drivers, client):
    from compat_tests.extclient import value
    d = ext_drivers[client]
    produce = {"op": "produce", "topic": topic_name, "messages": [{"key": "k", "value": "v", "partition": 0}]}
    if client == "franz-go":
        consume = {"op": "consume", "topic": topic_name, "count": 1, "assign": [{"partition": 0, "offset": 0}]}
    else:
        consume = {"op": "consume", "topic": topic_name, "groupId": f"g-{topic_name}", "count": 1}
    ops = [{"op": "createTopics", "topics": [{"topic": topic_name, "numPartitions": 1, "configs": {}}]},
           produce, consume]
    results = d.run(secured.sasl_ssl, ops, security=_security(secured))
    created, _, consumed = [value(r, op) for r, op in zip(results, ops)]
    assert created is True or (isinstance(created, list) and created[0]["error"] is None), created
    assert [m["value"] for m in consumed["records"]] == ["v"]
    (bad,) = d.run(secured.sasl_ssl, [{"op": "createTopics", "topics": [
        {"topic": topic_name + "-x", "numPartitions": 1, "configs": {}}]}],
        security=_security(secured, password="wrong"), timeout=120)
    assert "error" in bad
    assert "SASL_AUTHENTICATION_FAILED" in str(bad) or GENERIC in str(bad) or "SASL" in str(bad), bad
