"""Kafka's own tools against kbroker's SASL_SSL listener, with ``--command-config`` files as
users write them (PKCS12 truststore made by keytool): ``kafka-configs.sh --alter
--add-config 'SCRAM-SHA-512=[password=...]' --entity-type users`` (as the PLAIN admin),
then the console producer and consumer as the new SCRAM user; a wrong
password fails with Kafka's message.

SCRAM login with a delegation token (KIP-48): ``kafka-delegation-tokens --create`` as a
SCRAM user, then the console clients authenticated by the token (``ScramLoginModule ...
tokenauth="true"``: user name = token id, password = the base64 HMAC) act as its owner; a
token-authenticated session may not create tokens (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED); an
unknown token id, a wrong HMAC and an expired token fail with Kafka's SCRAM error."""
from __future__ import annotations

import base64
import uuid

import pytest

from compat_tests.cli import run_tool
from compat_tests.kafka_runner import kafka_libs
from tests.security.certs import PASSWORD
from tests.security.test_sasl_clients import _scram_user


@pytest.fixture(scope="module", autouse=True)
def _jars():
    kafka_libs()


def _client_props(tmp_path, secured, mechanism, user, password) -> str:
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
              else "org.apache.kafka.common.security.scram.ScramLoginModule")
    p = tmp_path / f"{user}-{mechanism}.properties"
    p.write_text(f"""security.protocol=SASL_SSL
sasl.mechanism={mechanism}
sasl.jaas.config={module} required username="{user}" password="{password}";
ssl.truststore.type=PKCS12
ssl.truststore.location={secured.pki.truststore_p12}
ssl.truststore.password={PASSWORD}
""")
    return str(p)


def test_kafka_configs_scram_then_console_clients(secured, tmp_path):
    admin = _client_props(tmp_path, secured, "PLAIN", "admin", "admin-secret")
    user = f"java{uuid.uuid4().hex[:6]}"
    run_tool("kafka-configs", ["--bootstrap-server", secured.sasl_ssl, "--command-config", admin,
                               "--alter", "--add-config", "SCRAM-SHA-512=[iterations=8192,password=s3cret]",
                               "--entity-type", "users", "--entity-name", user], timeout=120).check()
    # (kafka-configs --describe --entity-type users also needs DescribeClientQuotas, which
    # kbroker does not serve yet: the credential is checked with the admin API instead)
    from confluent_kafka.admin import AdminClient, ScramMechanism
    client = AdminClient({"bootstrap.servers": secured.bootstrap})
    info = client.describe_user_scram_credentials([user])[user].result(timeout=20)
    assert [(i.mechanism, i.iterations) for i in info.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_512, 8192)]
    props = _client_props(tmp_path, secured, "SCRAM-SHA-512", user, "s3cret")
    topic = f"java-{uuid.uuid4().hex[:8]}"
    run_tool("kafka-console-producer", ["--bootstrap-server", secured.sasl_ssl, "--topic", topic,
                                        "--command-config", props],
             input="one\ntwo\n", timeout=120).check()
    out = run_tool("kafka-console-consumer", ["--bootstrap-server", secured.sasl_ssl, "--topic", topic,
                                              "--command-config", props, "--from-beginning",
                                              "--max-messages", "2", "--timeout-ms", "30000"],
                   timeout=120).check().stdout
    assert out.split() == ["one", "two"]
    bad = _client_props(tmp_path, secured, "SCRAM-SHA-512", user, "wrong")
    r = run_tool("kafka-topics", ["--bootstrap-server", secured.sasl_ssl, "--command-config", bad,
                                  "--list"], timeout=120)
    assert r.returncode != 0
    assert ("Authentication failed during authentication due to invalid credentials with SASL "
            "mechanism SCRAM-SHA-512") in r.stdout + r.stderr


AUTH_FAILED = ("Authentication failed during authentication due to invalid credentials with "
               "SASL mechanism SCRAM-SHA-512")


def _token_props(tmp_path, secured, name: str, user: str, password: str, token: bool = False) -> str:
    p = tmp_path / f"{name}.properties"
    extra = ' tokenauth="true"' if token else ""
    p.write_text(f"""security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="{password}"{extra};
ssl.truststore.type=PKCS12
ssl.truststore.location={secured.pki.truststore_p12}
ssl.truststore.password={PASSWORD}
""")
    return str(p)


def _tokens(secured, props: str, *args: str):
    return run_tool("kafka-delegation-tokens", ["--bootstrap-server", secured.sasl_ssl,
                                                "--command-config", props, *args], timeout=120)


def test_scram_login_with_a_delegation_token(secured, tmp_path):
    user = f"tok{uuid.uuid4().hex[:6]}"
    _scram_user(secured.bootstrap, user, "owner-secret")
    owner = _token_props(tmp_path, secured, "owner", user, "owner-secret")
    out = _tokens(secured, owner, "--create", "--max-life-time-period", "-1").check().stdout
    # the table row after the header: TOKENID HMAC OWNER ...
    row = [l for l in out[out.index("TOKENID"):].splitlines()[1:] if l.strip()][0].split()
    token_id, hmac_b64, token_owner = row[0], row[1], row[2]
    assert token_owner == f"User:{user}"
    assert len(base64.b64decode(hmac_b64)) == 64          # HMAC-SHA512

    as_token = _token_props(tmp_path, secured, "token", token_id, hmac_b64, token=True)
    topic = f"tok-{uuid.uuid4().hex[:8]}"
    run_tool("kafka-console-producer", ["--bootstrap-server", secured.sasl_ssl, "--topic", topic,
                                        "--command-config", as_token],
             input="one\ntwo\n", timeout=120).check()
    out = run_tool("kafka-console-consumer", ["--bootstrap-server", secured.sasl_ssl, "--topic", topic,
                                              "--command-config", as_token, "--from-beginning",
                                              "--max-messages", "2", "--timeout-ms", "30000"],
                   timeout=120).check().stdout
    assert out.split() == ["one", "two"]

    # a session opened with a token may not ask for another one (Kafka's allowTokenRequests)
    r = _tokens(secured, as_token, "--create", "--max-life-time-period", "-1")
    assert r.returncode != 0 and "UnsupportedByAuthenticationException: Delegation Token requests " \
        "are not allowed on PLAINTEXT/1-way SSL channels and on delegation token authenticated " \
        "channels" in r.stdout + r.stderr, r.stdout + r.stderr

    # unknown token id and wrong HMAC: the generic SCRAM failure, as Kafka
    for name, tid, mac in (("unknown", "no-such-token", hmac_b64),
                           ("wrong", token_id, base64.b64encode(b"x" * 64).decode())):
        r = run_tool("kafka-topics", ["--bootstrap-server", secured.sasl_ssl, "--list", "--command-config",
                                      _token_props(tmp_path, secured, name, tid, mac, token=True)], timeout=120)
        assert r.returncode != 0 and AUTH_FAILED in r.stdout + r.stderr, r.stdout + r.stderr

    # expired by its owner: the token no longer authenticates
    _tokens(secured, owner, "--expire", "--hmac", hmac_b64, "--expiry-time-period", "-1").check()
    r = run_tool("kafka-topics", ["--bootstrap-server", secured.sasl_ssl, "--list",
                                  "--command-config", as_token], timeout=120)
    assert r.returncode != 0 and AUTH_FAILED in r.stdout + r.stderr, r.stdout + r.stderr
