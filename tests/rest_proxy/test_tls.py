"""The gateway over HTTPS (``kbroker.rest.proxy.ssl.enabled``) with the broker's ``ssl.*``
keys: a client trusting the CA produces and reads over TLS (``base_uri`` says https), a
client that does not trust it is refused, plain HTTP to the port gets no answer, and a
missing keystore stops the start naming the key."""
from __future__ import annotations

import http.client
import json
import ssl
import subprocess
import sys

import pytest

from kbroker.testing.processes import free_port
from tests.security.certs import PASSWORD, make_pki

from .conftest import JSON, rest_address, start_gateway


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("rest-tls"))


@pytest.fixture(scope="module")
def tls_gateway(tmp_path_factory, pki):
    broker = start_gateway(tmp_path_factory, "rest-tls-broker", {
        "kbroker.rest.proxy.ssl.enabled": "true", "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(pki.server_p12), "ssl.keystore.password": PASSWORD})
    try:
        yield broker
    finally:
        broker.stop()


def _https(address, ctx, method, path, body=None, content_type=None):
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=30)
    try:
        headers = {"Content-Type": content_type} if content_type else {}
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        r = conn.getresponse()
        return r.status, json.loads(r.read() or b"null")
    finally:
        conn.close()


def test_https_with_the_brokers_keys(tls_gateway, pki):
    address = rest_address(tls_gateway)
    assert "rest-proxy listener on https://" in tls_gateway.log_text()
    trusting = ssl.create_default_context(cafile=str(pki.ca))
    status, body = _https(address, trusting, "POST", "/topics/tls-topic",
                          {"records": [{"value": {"over": "tls"}}]}, JSON)
    assert status == 200 and body["offsets"][0]["error_code"] is None
    status, body = _https(address, trusting, "POST", "/consumers/tls-group",
                          {"name": "t"}, "application/vnd.kafka.v2+json")
    assert status == 200 and body["base_uri"].startswith(f"https://{address}/")
    with pytest.raises(ssl.SSLCertVerificationError):
        _https(address, ssl.create_default_context(cafile=str(pki.other_ca)), "GET", "/topics")
    host, port = address.rsplit(":", 1)
    plain = http.client.HTTPConnection(host, int(port), timeout=10)
    with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
        plain.request("GET", "/topics")
        plain.getresponse().read()
    plain.close()
    assert _https(address, trusting, "GET", "/topics")[0] == 200      # still serving


def test_ssl_enabled_without_a_keystore_stops_the_start(tmp_path):
    r = subprocess.run([sys.executable, "-m", "kbroker", "serve", "--port", str(free_port()),
                        "--data-dir", str(tmp_path / "d"), "--rest-proxy", "127.0.0.1:0",
                        "--override", "kbroker.rest.proxy.ssl.enabled=true"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "kbroker.rest.proxy.ssl.enabled" in r.stderr + r.stdout and "Traceback" not in r.stderr
