"""A broker of either target with a SASL_SSL listener beside the suite's PLAINTEXT one,
configured identically on Kafka and kbroker (used by compat_tests/test_security.py and
spark_tests/test_security.py):

- certificates made with openssl/keytool at test time (``tests/security/certs.py``): a PKCS12
  keystore for the broker, the CA as PEM (``b.pki.ca``) and as a PKCS12 truststore;
- PLAIN users ``admin``/``alice`` in the listener's JAAS entry; SCRAM users ``alice``
  (SCRAM-SHA-512) and ``carol`` (SCRAM-SHA-256), created with AlterUserScramCredentials over
  PLAINTEXT; every password is ``<user>-secret``.

``b.sasl_ssl`` is the SASL_SSL address. ``delegation.token.secret.key`` is set, so SCRAM users
can create delegation tokens and authenticate with them.
"""
from __future__ import annotations


from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

from compat_tests.helpers import wait_until
from compat_tests.runner import free_port
from tests.security.certs import PASSWORD, make_pki

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def start_secured(target: str, broker_pool, workdir):
    pki = make_pki(workdir)
    b = broker_pool.new(target, {})
    sasl_port = free_port()
    b.overrides.update({
        "listeners": f"PLAINTEXT://{b.host}:{b.port},CONTROLLER://{b.host}:{b.controller_port},"
                     f"SASL_SSL://{b.host}:{sasl_port}",
        "advertised.listeners": f"PLAINTEXT://{b.host}:{b.port},SASL_SSL://{b.host}:{sasl_port}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_ssl.ssl.keystore.type": "PKCS12",
        "listener.name.sasl_ssl.ssl.keystore.location": str(pki.server_p12),
        "listener.name.sasl_ssl.ssl.keystore.password": PASSWORD,
        "listener.name.sasl_ssl.ssl.key.password": PASSWORD,
        "delegation.token.secret.key": "compat-token-secret",
    })
    b.start()
    b.sasl_ssl = f"{b.host}:{sasl_port}"
    b.pki = pki
    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    for user, mech in (("alice", ScramMechanism.SCRAM_SHA_512), ("carol", ScramMechanism.SCRAM_SHA_256)):
        for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                user, ScramCredentialInfo(mech, 4096), f"{user}-secret".encode())]).values():
            f.result(timeout=30)
    # the credentials reach the broker's image (Kafka: its metadata publisher) a moment
    # after the controller committed them: the broker describes both users
    def described():
        got = admin.describe_user_scram_credentials(["alice", "carol"])
        try:
            return all(f.result(timeout=30).scram_credential_infos for f in got.values())
        except KafkaException:
            return False
    wait_until(described, timeout=30, interval=0.2, what="alice's and carol's SCRAM credentials")
    return b
