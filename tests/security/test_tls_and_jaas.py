"""Pure pieces: Kafka's DN form of a certificate subject and ``ssl.principal.mapping.rules``,
Java cipher-suite names, the JAAS syntax, and the TLS context from Kafka's keys."""
from __future__ import annotations

import ssl

import pytest

from kbroker.security.jaas import JaasError, parse_jaas
from kbroker.security.tls import (PrincipalMapper, TlsConfigError, certificate_principal,
                                  openssl_cipher, server_context, subject_dn)
from tests.security.certs import PASSWORD, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_subject_dn_is_kafkas_rfc2253_form(pki):
    der = ssl.PEM_cert_to_DER_cert(pki.client_cert.read_text())
    assert subject_dn(der) == "CN=alice,OU=eng,O=Acme,C=US"
    assert certificate_principal(der, PrincipalMapper("DEFAULT")) == "User:CN=alice,OU=eng,O=Acme,C=US"
    assert certificate_principal(None, PrincipalMapper(None)) == "User:ANONYMOUS"


@pytest.mark.parametrize("rules, dn, name", [
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,DEFAULT",
     "CN=Kafka-Server,OU=ServiceUsers,O=Org,L=City,ST=State,C=US", "kafka-server@serviceusers"),
    ("RULE:^CN=(.*?),OU=(.*?)$/$1/U,DEFAULT", "CN=admin,OU=Admin", "ADMIN"),
    ("RULE:^CN=(.*?),OU=(.*?)$/$1/,DEFAULT", "CN=x,O=y", "CN=x,O=y"),
    ("RULE:^CN=([^,]*).*$/$1/", "CN=svc,OU=a,O=b", "svc"),
    ("RULE:^CN=(.*?),OU=(.*?)$/$1/", "O=nomatch", None),
])
def test_principal_mapping_rules(rules, dn, name):
    assert PrincipalMapper(rules).name(dn) == name


def test_bad_mapping_rule_names_the_key():
    with pytest.raises(TlsConfigError) as e:
        PrincipalMapper("RULE:^CN=(.*$/$1/")
    assert e.value.key == "ssl.principal.mapping.rules"


def test_java_cipher_names():
    assert openssl_cipher("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384") == "ECDHE-RSA-AES256-GCM-SHA384"
    assert openssl_cipher("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256") == "ECDHE-ECDSA-CHACHA20-POLY1305"
    assert openssl_cipher("TLS_RSA_WITH_AES_128_GCM_SHA256") == "AES128-GCM-SHA256"


def test_jaas_modules_and_options():
    m = parse_jaas('org.apache.kafka.common.security.plain.PlainLoginModule required '
                   'username="admin" password="a \\"quoted\\" secret" user_alice=bare;')
    assert len(m) == 1 and m[0].flag == "required"
    assert m[0].options == {"username": "admin", "password": 'a "quoted" secret', "user_alice": "bare"}
    assert "secret" not in repr(m[0])
    two = parse_jaas("a.B required; c.D optional x=1;")
    assert [x.name for x in two] == ["a.B", "c.D"]
    for bad in ("a.B required", "a.B maybe;", 'a.B required x="unterminated;', "", "a.B required x;"):
        with pytest.raises(JaasError):
            parse_jaas(bad)


def test_tls_contexts_from_kafka_keys(pki):
    p12 = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(pki.server_p12),
           "ssl.keystore.password": PASSWORD, "ssl.truststore.type": "PKCS12",
           "ssl.truststore.location": str(pki.truststore_p12), "ssl.truststore.password": PASSWORD,
           "ssl.client.auth": "required", "ssl.enabled.protocols": "TLSv1.3"}
    ctx = server_context(p12.get)
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.minimum_version == ssl.TLSVersion.TLSv1_3
    inline = {"ssl.keystore.type": "PEM", "ssl.keystore.key": pki.server_key.read_text(),
              "ssl.keystore.certificate.chain": pki.server_cert.read_text(),
              "ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
              "ssl.enabled.protocols": "TLSv1.2"}
    ctx = server_context(inline.get)
    assert [c["name"] for c in ctx.get_ciphers() if c["protocol"] == "TLSv1.2"] == ["ECDHE-RSA-AES256-GCM-SHA384"]
    # the JKS type name reads a PKCS12 file, as Java does
    assert server_context({**p12, "ssl.keystore.type": "JKS", "ssl.client.auth": "none"}.get)
    for bad, key in [({**p12, "ssl.keystore.password": "wrong"}, "ssl.keystore.location"),
                     ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/nonexistent"}, "ssl.keystore.location"),
                     ({**p12, "ssl.enabled.protocols": "TLSv1.1"}, "ssl.enabled.protocols"),
                     ({**p12, "ssl.keystore.type": "BCFKS"}, "ssl.keystore.type"),
                     ({**p12, "ssl.client.auth": "required", "ssl.truststore.location": None}, "ssl.truststore.location"),
                     ({**inline, "ssl.cipher.suites": "TLS_FOO_WITH_BAR"}, "ssl.cipher.suites")]:
        with pytest.raises(TlsConfigError) as e:
            server_context(bad.get)
        assert e.value.key == key


def test_real_jks_file_is_refused_naming_the_key(pki, tmp_path):
    import subprocess
    jks = tmp_path / "ks.jks"
    subprocess.run(["keytool", "-importkeystore", "-srckeystore", str(pki.server_p12), "-srcstoretype",
                    "PKCS12", "-srcstorepass", PASSWORD, "-destkeystore", str(jks), "-deststoretype",
                    "JKS", "-deststorepass", PASSWORD, "-noprompt"], check=True, capture_output=True)
    with pytest.raises(TlsConfigError) as e:
        server_context({"ssl.keystore.type": "JKS", "ssl.keystore.location": str(jks),
                        "ssl.keystore.password": PASSWORD}.get)
    assert e.value.key == "ssl.keystore.type"
