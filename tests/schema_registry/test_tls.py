"""HTTPS on the registry's listener (``kbroker.schema.registry.ssl.enabled``) with the
broker's ``ssl.*`` keys: confluent-kafka's client verifies the server certificate against
the test CA; plain HTTP on the same port gets no answer; the Kafka listener is unaffected."""
from __future__ import annotations

import http.client
import ssl

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from tests.security.certs import make_pki

from .conftest import avro_record, start_registry


@pytest.fixture(scope="module")
def tls_registry(tmp_path_factory):
    base = tmp_path_factory.mktemp("sr-tls")
    pki = make_pki(base / "pki")
    reg = start_registry(base / "data", {
        "kbroker.schema.registry.ssl.enabled": "true",
        "listener.name.schema_registry.ssl.keystore.type": "PEM",
        "listener.name.schema_registry.ssl.keystore.location": str(pki.server_pem),
    })
    try:
        yield reg, pki
    finally:
        reg.broker.stop()


def test_https_with_the_brokers_ssl_keys(tls_registry):
    reg, pki = tls_registry
    assert f"schema registry on https://127.0.0.1:{reg.port}" in reg.broker.log_text()
    client = SchemaRegistryClient({"url": f"https://127.0.0.1:{reg.port}", "ssl.ca.location": str(pki.ca)})
    schema_id = client.register_schema("tls-value", Schema(avro_record("Tls", ("t", "int")), "AVRO"))
    assert client.get_schema(schema_id).schema_type == "AVRO"
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    conn = http.client.HTTPSConnection("127.0.0.1", reg.port, context=ctx, timeout=10)
    conn.request("GET", "/subjects")
    resp = conn.getresponse()
    assert resp.status == 200 and b"tls-value" in resp.read()
    conn.close()


def test_plain_http_and_untrusted_clients_get_no_answer(tls_registry):
    reg, pki = tls_registry
    with pytest.raises((http.client.HTTPException, ConnectionError, OSError)):
        reg.call("GET", "/subjects")
    strict = ssl.create_default_context()          # the system CAs: ours is not among them
    conn = http.client.HTTPSConnection("127.0.0.1", reg.port, context=strict, timeout=10)
    with pytest.raises(ssl.SSLError):
        conn.request("GET", "/subjects")
    conn.close()
    # the listener and the broker still serve
    client = SchemaRegistryClient({"url": f"https://127.0.0.1:{reg.port}", "ssl.ca.location": str(pki.ca)})
    assert isinstance(client.get_subjects(), list)      # answered (an error would raise)
