"""A kbroker with one listener of each security protocol, made from Kafka's own keys:

- PLAINTEXT (the admin door of the tests, ``secured.bootstrap``),
- SASL_SSL: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 with a PKCS12 keystore,
- SASL_PLAINTEXT: PLAIN, SCRAM-SHA-256 and OAUTHBEARER with unsecured tokens (JAAS through
  ``listener.name.<l>.<mech>.sasl.jaas.config``), re-authentication every ``REAUTH_MS``,
- SSL: a PEM keystore file and ``ssl.client.auth=required`` with a PEM truststore.

Certificates are made with ``openssl``/``keytool`` at test time (``certs.make_pki``).
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.security.certs import PASSWORD, Pki, make_pki
from tests.support.broker_proc import BrokerProcess, free_port

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
OAUTH_JAAS = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
              'unsecuredLoginStringClaim_sub="admin";')
REAUTH_MS = 4000


class ListenersProcess(BrokerProcess):
    """A broker whose listeners all come from ``listeners`` (no ``--listen``); ``port``
    is its PLAINTEXT listener."""

    def command(self) -> list[str]:
        cmd = [self.python, "-m", "kbroker", "serve", "--data-dir", str(self.data_dir)]
        for k, v in self.overrides.items():
            cmd += ["--override", f"{k}={v}"]
        return cmd + self.extra_args


@dataclass
class Secured:
    proc: BrokerProcess
    pki: Pki
    sasl_ssl: str
    sasl_plaintext: str
    ssl: str

    @property
    def bootstrap(self) -> str:
        return self.proc.bootstrap


def security_overrides(pki: Pki, ports: dict[str, int], base_port: int) -> dict[str, str]:
    return {
        "listeners": (f"PLAINTEXT://127.0.0.1:{base_port},SASL_SSL://127.0.0.1:{ports['SASL_SSL']},"
                      f"SASL_PLAINTEXT://127.0.0.1:{ports['SASL_PLAINTEXT']},SSL://127.0.0.1:{ports['SSL']}"),
        "advertised.listeners": (f"PLAINTEXT://127.0.0.1:{base_port},SASL_SSL://127.0.0.1:{ports['SASL_SSL']},"
                                 f"SASL_PLAINTEXT://127.0.0.1:{ports['SASL_PLAINTEXT']},"
                                 f"SSL://127.0.0.1:{ports['SSL']}"),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_ssl.ssl.keystore.type": "PKCS12",
        "listener.name.sasl_ssl.ssl.keystore.location": str(pki.server_p12),
        "listener.name.sasl_ssl.ssl.keystore.password": PASSWORD,
        "listener.name.sasl_ssl.ssl.key.password": PASSWORD,
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": OAUTH_JAAS,
        "listener.name.sasl_plaintext.connections.max.reauth.ms": str(REAUTH_MS),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.ssl.ssl.keystore.type": "PEM",
        "listener.name.ssl.ssl.keystore.location": str(pki.server_pem),
        "listener.name.ssl.ssl.truststore.type": "PEM",
        "listener.name.ssl.ssl.truststore.location": str(pki.ca),
        "listener.name.ssl.ssl.client.auth": "required",
        "group.initial.rebalance.delay.ms": "0",
        "delegation.token.secret.key": "test-token-secret",
    }


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    base = tmp_path_factory.mktemp("secured")
    pki = make_pki(base)
    ports = {"SASL_SSL": free_port(), "SASL_PLAINTEXT": free_port(), "SSL": free_port()}
    port = free_port()
    proc = ListenersProcess(base / "data", port=port, overrides=security_overrides(pki, ports, port))
    proc.start()
    try:
        yield Secured(proc, pki, f"127.0.0.1:{ports['SASL_SSL']}",
                      f"127.0.0.1:{ports['SASL_PLAINTEXT']}", f"127.0.0.1:{ports['SSL']}")
    finally:
        proc.stop()
