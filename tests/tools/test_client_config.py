"""How a command's connection settings are read (``kbroker.tools.client_config``): a Kafka
client properties file as Kafka's tools read it, ``-X``, profiles, and the mapping of Kafka's
keys to confluent-kafka's (librdkafka's). No broker: files in, settings out; the same
settings against a real secured broker are in ``test_secured_cli.py``."""
from __future__ import annotations

import argparse

import pytest

from kbroker.tools.client_config import (UsageError, librdkafka_config, parse_properties_text,
                                         resolve)
from kbroker.tools.common import common_parent


def _args(*argv):
    p = argparse.ArgumentParser(parents=[common_parent()])
    return p.parse_args(list(argv))


def test_properties_text_as_java_reads_it():
    text = ("# a comment\n! another\nsecurity.protocol=SASL_SSL\n"
            "sasl.mechanism : PLAIN\n"
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
            '    username="admin" password="s=cret";\n\nclient.id=\n')
    assert parse_properties_text(text) == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                            'username="admin" password="s=cret";',
        "client.id": ""}


def test_command_config_and_x_map_to_librdkafka(tmp_path):
    props = tmp_path / "admin.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
                     'required username="alice" password="pw";\n'
                     "key.serializer=org.apache.kafka.common.serialization.StringSerializer\n"
                     "ssl.endpoint.identification.algorithm=\n")
    bootstrap, kafka = resolve(_args("--bootstrap-server", "h:1", "--command-config", str(props),
                                     "-X", "client.id=ops"))
    assert bootstrap == "h:1" and kafka["client.id"] == "ops"
    warned = []
    conf = librdkafka_config(kafka, warn=warned.append)
    assert conf == {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
                    "sasl.username": "alice", "sasl.password": "pw", "client.id": "ops",
                    "ssl.endpoint.identification.algorithm": "none"}
    assert warned == ["ignored Java-only client keys: key.serializer"]


def test_pkcs12_truststore_becomes_pem(tmp_path):
    from tests.security.certs import PASSWORD, make_pki
    pki = make_pki(tmp_path)
    conf = librdkafka_config({"security.protocol": "SSL", "ssl.truststore.type": "PKCS12",
                              "ssl.truststore.location": str(pki.truststore_p12),
                              "ssl.truststore.password": PASSWORD})
    assert conf["ssl.ca.pem"].startswith("-----BEGIN CERTIFICATE-----")
    with pytest.raises(UsageError, match="truststore"):
        librdkafka_config({"ssl.truststore.type": "PKCS12", "ssl.truststore.location": str(pki.truststore_p12),
                           "ssl.truststore.password": "wrong"})


def test_profiles(tmp_path, monkeypatch):
    props = tmp_path / "p.properties"
    props.write_text("security.protocol=SSL\nclient.id=from-file\n")
    prof = tmp_path / "profiles.toml"
    prof.write_text(f'[profiles.prod]\nbootstrap-servers = "b1:9093,b2:9093"\n'
                    f'command-config = "{props}"\n[profiles.prod.properties]\n"client.id" = "from-profile"\n')
    monkeypatch.setenv("KBROKER_PROFILES", str(prof))
    monkeypatch.delenv("KBROKER_PROFILE", raising=False)
    assert resolve(_args("--profile", "prod")) == ("b1:9093,b2:9093",
                                                   {"security.protocol": "SSL", "client.id": "from-profile"})
    # flags win over the profile; $KBROKER_PROFILE names the default one
    monkeypatch.setenv("KBROKER_PROFILE", "prod")
    assert resolve(_args("-b", "x:1", "-X", "client.id=flag"))[0] == "x:1"
    assert resolve(_args("-b", "x:1", "-X", "client.id=flag"))[1]["client.id"] == "flag"
    with pytest.raises(UsageError, match="profiles there: prod"):
        resolve(_args("--profile", "nope"))
