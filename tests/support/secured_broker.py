"""A broker with SASL users and an authorizer, as the HTTP services' tests need it: a
PLAINTEXT listener for the operator (``User:ANONYMOUS`` is a super user there) and a
SASL_PLAINTEXT one whose PLAIN users are ``admin`` and ``alice`` (JAAS) and whose SCRAM users
are the metadata log's; the test adds its ACLs and SCRAM users through the operator's door."""
from __future__ import annotations

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret" '
              'user_alice="alice-secret";')
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def secured_overrides(plain: int, sasl: int, super_users: str = "User:ANONYMOUS",
                      plain_jaas: str = PLAIN_JAAS) -> dict[str, str]:
    """The broker settings of the two listeners on ``plain`` and ``sasl``, SASL PLAIN (users
    of ``plain_jaas``) and SCRAM-SHA-256 on the second, and the standard authorizer."""
    listeners = f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}"
    return {
        "listeners": listeners,
        "advertised.listeners": listeners,
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas,
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": super_users,
    }


def allow(bootstrap: str, acls) -> None:
    """Create ``acls`` (confluent-kafka ``AclBinding``s) and wait for each."""
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})   # kept alive until the answers
    for f in admin.create_acls(list(acls)).values():
        f.result(30)


def add_scram_user(bootstrap: str, name: str, password: str) -> None:
    """A SCRAM-SHA-256 credential for ``name`` in the metadata log."""
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)
    upsert = UserScramCredentialUpsertion(
        name, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), password.encode())
    admin = AdminClient({"bootstrap.servers": bootstrap})   # kept alive until the answers
    for f in admin.alter_user_scram_credentials([upsert]).values():
        f.result(30)
