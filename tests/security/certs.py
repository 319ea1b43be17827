"""Test certificates made with the ``openssl`` command at test time (nothing checked in):
a CA, a server certificate for 127.0.0.1/localhost signed by it (PEM files and a PKCS12
keystore), a client certificate signed by it, and a second, untrusted CA with its own
server certificate.

    pki = make_pki(tmp_path)      # Pki with paths; password "changeit" for stores and keys
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

PASSWORD = "changeit"


def _run(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@dataclass
class Pki:
    dir: Path
    ca: Path                # CA certificate (PEM)
    server_cert: Path
    server_key: Path
    server_pem: Path        # key + chain in one file (ssl.keystore.type=PEM, location)
    server_p12: Path        # PKCS12 keystore
    truststore_p12: Path    # PKCS12 truststore with the CA
    client_cert: Path
    client_key: Path
    other_ca: Path          # an untrusted CA
    other_server_p12: Path  # a server keystore signed by the untrusted CA


def _ca(d: Path, name: str) -> None:
    _run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
         "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=d)


def _signed(d: Path, ca: str, name: str, subj: str, san: str | None) -> None:
    _run("req", "-newkey", "rsa:2048", "-nodes", "-subj", subj, "-keyout", f"{name}.key",
         "-out", f"{name}.csr", cwd=d)
    ext = d / f"{name}.ext"
    ext.write_text(f"subjectAltName={san}\n" if san else "basicConstraints=CA:FALSE\n")
    _run("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
         "-CAcreateserial", "-days", "2", "-extfile", ext.name, "-out", f"{name}.pem", cwd=d)


def make_pki(base: Path) -> Pki:
    d = Path(base) / "pki"
    d.mkdir(parents=True, exist_ok=True)
    _ca(d, "ca")
    _ca(d, "otherca")
    san = "IP:127.0.0.1,DNS:localhost"
    _signed(d, "ca", "server", "/CN=localhost/O=kbroker-tests", san)
    _signed(d, "ca", "client", "/C=US/O=Acme/OU=eng/CN=alice", None)
    _signed(d, "otherca", "otherserver", "/CN=localhost", san)
    (d / "server-full.pem").write_text((d / "server.key").read_text() + (d / "server.pem").read_text()
                                       + (d / "ca.pem").read_text())
    _run("pkcs12", "-export", "-in", "server.pem", "-inkey", "server.key", "-certfile", "ca.pem",
         "-name", "server", "-passout", f"pass:{PASSWORD}", "-out", "server.p12", cwd=d)
    _run("pkcs12", "-export", "-in", "otherserver.pem", "-inkey", "otherserver.key",
         "-passout", f"pass:{PASSWORD}", "-out", "otherserver.p12", cwd=d)
    # a truststore as Java users make it (OpenSSL 3.0 cannot mark trusted certificates)
    subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem",
                    "-keystore", "truststore.p12", "-storetype", "PKCS12", "-storepass", PASSWORD],
                   cwd=d, check=True, capture_output=True)
    return Pki(d, d / "ca.pem", d / "server.pem", d / "server.key", d / "server-full.pem",
               d / "server.p12", d / "truststore.p12", d / "client.pem", d / "client.key",
               d / "otherca.pem", d / "otherserver.p12")
