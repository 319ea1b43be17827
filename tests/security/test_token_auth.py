"""SCRAM authentication with a delegation token (KIP-48), with Kafka's own tools as users run
them: ``kafka-delegation-tokens --create`` as a SCRAM user over SASL_SSL, then the console
producer and consumer authenticated by the token (``ScramLoginModule ... tokenauth="true"``:
user name = token id, password = the base64 HMAC) act as the token's owner; a
token-authenticated session may not create tokens (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED);
an unknown token id, a wrong HMAC and an expired token fail with Kafka's SCRAM error."""
from __future__ import annotations

import base64
import uuid

import pytest

from compat_tests.cli import run_tool
from compat_tests.kafka_runner import kafka_libs
from tests.security.certs import PASSWORD
from tests.security.test_sasl_clients import _scram_user

AUTH_FAILED = ("Authentication failed during authentication due to invalid credentials with "
               "SASL mechanism SCRAM-SHA-512")


@pytest.fixture(scope="module", autouse=True)
def _jars():
    kafka_libs()


def _props(tmp_path, secured, name: str, user: str, password: str, token: bool = False) -> str:
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
    owner = _props(tmp_path, secured, "owner", user, "owner-secret")
    out = _tokens(secured, owner, "--create", "--max-life-time-period", "-1").check().stdout
    # the table row after the header: TOKENID HMAC OWNER ...
    row = [l for l in out[out.index("TOKENID"):].splitlines()[1:] if l.strip()][0].split()
    token_id, hmac_b64, token_owner = row[0], row[1], row[2]
    assert token_owner == f"User:{user}"
    assert len(base64.b64decode(hmac_b64)) == 64          # HMAC-SHA512

    as_token = _props(tmp_path, secured, "token", token_id, hmac_b64, token=True)
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
                                      _props(tmp_path, secured, name, tid, mac, token=True)], timeout=120)
        assert r.returncode != 0 and AUTH_FAILED in r.stdout + r.stderr, r.stdout + r.stderr

    # expired by its owner: the token no longer authenticates
    _tokens(secured, owner, "--expire", "--hmac", hmac_b64, "--expiry-time-period", "-1").check()
    r = run_tool("kafka-topics", ["--bootstrap-server", secured.sasl_ssl, "--list",
                                  "--command-config", as_token], timeout=120)
    assert r.returncode != 0 and AUTH_FAILED in r.stdout + r.stderr, r.stdout + r.stderr
