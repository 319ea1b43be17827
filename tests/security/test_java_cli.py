"""Kafka's own tools against kbroker's SASL_SSL listener, with ``--command-config`` files as
users write them (PKCS12 truststore made by keytool): ``kafka-configs.sh --alter
--add-config 'SCRAM-SHA-512=[password=...]' --entity-type users`` (as the PLAIN admin),
then the console producer and consumer as the new SCRAM user; a wrong
password fails with Kafka's message."""
from __future__ import annotations

import uuid

import pytest

from compat_tests.cli import run_tool
from compat_tests.kafka_runner import kafka_libs
from tests.security.certs import PASSWORD


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
