"""TLS for a listener from Kafka's ``ssl.*`` keys, and the principal of a client certificate.

``server_context(get)`` builds the stdlib ``ssl.SSLContext`` a listener's connections use
(``kbroker/server/tls.py``); ``get(key)`` returns the listener's value of a key (its
``listener.name.<l>.`` override, else the broker-wide value). What is read:

- keystore — ``ssl.keystore.type`` PEM: ``ssl.keystore.certificate.chain`` +
  ``ssl.keystore.key`` inline, or one file at ``ssl.keystore.location`` holding key and
  chain; PKCS12 at ``ssl.keystore.location`` (``ssl.keystore.password``; the key with
  ``ssl.key.password`` when it differs). ``JKS`` (Kafka's default type name) is read when the
  file is in fact PKCS12 — as Java's keystore loader does since Java 9; a real JKS file is
  refused with a message naming the key (no maintained Python library reads it);
- truststore — PEM (``ssl.truststore.certificates`` inline or a file) or PKCS12
  (``ssl.truststore.password``); needed when clients are asked for certificates;
- ``ssl.client.auth`` none / requested / required, ``ssl.enabled.protocols`` (TLSv1.2,
  TLSv1.3), ``ssl.cipher.suites`` (Java/IANA names, translated to OpenSSL's for TLS 1.2;
  TLS 1.3 suites cannot be narrowed through Python's ``ssl`` and are refused).

Keys and certificates the stdlib can only load from files are written to a private
temporary directory for the load and removed at once. Parsing PKCS12 uses the
``cryptography`` package; TLS itself is OpenSSL through the stdlib.

``certificate_principal(der, rules)`` is Kafka's principal of an SSL client: the subject
DN in Java's RFC 2253 form (``CN=alice,OU=eng,O=Acme,C=US``: last RDN first, ``CN``/``C``/
``L``/``ST``/``O``/``OU``/``STREET``/``DC``/``UID`` by name, other attributes as
``OID=#hex``), mapped by ``ssl.principal.mapping.rules`` (``DEFAULT`` keeps the DN;
``RULE:pattern/replacement/[LU]`` as Kafka's ``SslPrincipalMapper``).
"""
from __future__ import annotations

import os
import re
import ssl
import tempfile
from pathlib import Path
from typing import Callable


class TlsConfigError(ValueError):
    """A TLS setting cannot be honoured. ``key`` names the setting."""

    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}")
        self.key = key


_PROTOCOLS = {"TLSv1.2": "TLSv1_2", "TLSv1.3": "TLSv1_3"}   # ssl.TLSVersion members
_TLS13_SUITES = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}
_KX = {"ECDHE_RSA": "ECDHE-RSA", "ECDHE_ECDSA": "ECDHE-ECDSA", "DHE_RSA": "DHE-RSA", "RSA": ""}
_ENC = {"AES_128_GCM": "AES128-GCM", "AES_256_GCM": "AES256-GCM", "CHACHA20_POLY1305": "CHACHA20-POLY1305",
        "AES_128_CBC": "AES128", "AES_256_CBC": "AES256"}


def openssl_cipher(java_name: str) -> str:
    """``TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`` → ``ECDHE-RSA-AES256-GCM-SHA384``."""
    m = re.fullmatch(r"(?:TLS|SSL)_(\w+?)_WITH_(\w+?)_(SHA\d*)", java_name.strip())
    if not m or m.group(1) not in _KX or m.group(2) not in _ENC:
        raise ValueError(java_name)
    kx, enc, mac = _KX[m.group(1)], _ENC[m.group(2)], m.group(3)
    if enc.startswith("CHACHA"):
        return f"{kx}-{enc}"
    if mac == "SHA":
        return f"{kx}-{enc}-SHA".lstrip("-")
    return f"{kx}-{enc}-{mac}".lstrip("-")


def _read(get, key: str) -> bytes:
    path = get(key)
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as e:
        raise TlsConfigError(key, f"cannot read {path}: {e.strerror}") from None


def _pkcs12(data: bytes, password: str | None, key: str):
    from cryptography.hazmat.primitives.serialization import pkcs12
    try:
        return pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except ValueError as e:
        raise TlsConfigError(key, f"cannot read the PKCS12 store (wrong password or not "
                                  f"PKCS12): {e}") from None


def _pem_of_pkcs12(data: bytes, password: str | None, key: str) -> tuple[bytes, bytes]:
    from cryptography.hazmat.primitives import serialization
    private, cert, extra = _pkcs12(data, password, key)
    if private is None or cert is None:
        raise TlsConfigError(key, "the PKCS12 keystore holds no private key with its certificate")
    key_pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    chain = cert.public_bytes(serialization.Encoding.PEM) + b"".join(
        c.public_bytes(serialization.Encoding.PEM) for c in extra or ())
    return key_pem, chain


def _store_type(get, type_key: str, location_key: str) -> str:
    kind = (get(type_key) or "JKS").upper()
    if kind == "JKS" and get(location_key):
        head = _read(get, location_key)[:4]
        if head == b"\xfe\xed\xfe\xed":
            raise TlsConfigError(type_key, "JKS key stores are not supported by kbroker; convert "
                                 "with keytool -importkeystore -deststoretype PKCS12")
        return "PKCS12"
    if kind not in ("PEM", "PKCS12"):
        raise TlsConfigError(type_key, f"store type {kind} is not supported (PEM, PKCS12)")
    return kind


def _load_keystore(ctx: ssl.SSLContext, get) -> None:
    chain_inline, key_inline = get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")
    location = get("ssl.keystore.location")
    if chain_inline or key_inline:
        if not (chain_inline and key_inline):
            raise TlsConfigError("ssl.keystore.key", "ssl.keystore.certificate.chain and "
                                 "ssl.keystore.key must be given together")
        if (get("ssl.keystore.type") or "PEM").upper() != "PEM":
            raise TlsConfigError("ssl.keystore.type", "inline keys need ssl.keystore.type=PEM")
        _load_pem_pair(ctx, key_inline.encode(), chain_inline.encode(), get("ssl.key.password"),
                       "ssl.keystore.key")
        return
    if not location:
        raise TlsConfigError("ssl.keystore.location", "an SSL listener needs a keystore")
    kind = _store_type(get, "ssl.keystore.type", "ssl.keystore.location")
    data = _read(get, "ssl.keystore.location")
    if kind == "PEM":
        _load_pem_pair(ctx, data, data, get("ssl.key.password"), "ssl.keystore.location")
    else:
        key_pem, chain = _pem_of_pkcs12(data, get("ssl.keystore.password"), "ssl.keystore.location")
        _load_pem_pair(ctx, key_pem, chain, None, "ssl.keystore.location")


def _load_pem_pair(ctx, key_pem: bytes, chain_pem: bytes, password: str | None, key: str) -> None:
    with tempfile.TemporaryDirectory(prefix="kbroker-tls-") as d:
        kp, cp = os.path.join(d, "key.pem"), os.path.join(d, "chain.pem")
        for p, data in ((kp, key_pem), (cp, chain_pem)):
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        try:
            ctx.load_cert_chain(cp, kp, password=password or None)
        except (ssl.SSLError, OSError) as e:
            raise TlsConfigError(key, f"cannot load the key and certificate chain: {e}") from None


def _load_truststore(ctx: ssl.SSLContext, get) -> bool:
    inline = get("ssl.truststore.certificates")
    location = get("ssl.truststore.location")
    if not inline and not location:
        return False
    try:
        if inline:
            ctx.load_verify_locations(cadata=inline)
            return True
        kind = _store_type(get, "ssl.truststore.type", "ssl.truststore.location")
        data = _read(get, "ssl.truststore.location")
        if kind == "PEM":
            ctx.load_verify_locations(cadata=data.decode("ascii", "replace"))
            return True
        from cryptography.hazmat.primitives import serialization
        _, cert, extra = _pkcs12(data, get("ssl.truststore.password"), "ssl.truststore.location")
        certs = ([cert] if cert else []) + list(extra or ())
        if not certs:
            raise TlsConfigError("ssl.truststore.location", "the PKCS12 truststore holds no certificate")
        ctx.load_verify_locations(cadata="".join(
            c.public_bytes(serialization.Encoding.PEM).decode() for c in certs))
        return True
    except ssl.SSLError as e:
        raise TlsConfigError("ssl.truststore.location" if location else "ssl.truststore.certificates",
                             f"cannot load the trusted certificates: {e}") from None


def _protocols(ctx: ssl.SSLContext, get) -> None:
    enabled = get("ssl.enabled.protocols") or ["TLSv1.2", "TLSv1.3"]
    if isinstance(enabled, str):
        enabled = [p.strip() for p in enabled.split(",") if p.strip()]
    unknown = [p for p in enabled if p not in _PROTOCOLS]
    if unknown:
        raise TlsConfigError("ssl.enabled.protocols", f"{', '.join(unknown)} not supported "
                             "(TLSv1.2, TLSv1.3)")
    versions = sorted(ssl.TLSVersion[_PROTOCOLS[p]] for p in enabled)
    if not versions:
        raise TlsConfigError("ssl.enabled.protocols", "no protocol enabled")
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]


def _ciphers(ctx: ssl.SSLContext, get) -> None:
    suites = get("ssl.cipher.suites") or []
    if isinstance(suites, str):
        suites = [s.strip() for s in suites.split(",") if s.strip()]
    if not suites:
        return
    tls13 = [s for s in suites if s in _TLS13_SUITES]
    if tls13 and set(tls13) != _TLS13_SUITES and ctx.maximum_version == ssl.TLSVersion.TLSv1_3:
        raise TlsConfigError("ssl.cipher.suites", "TLS 1.3 cipher suites cannot be narrowed by "
                             "kbroker; list all three or disable TLSv1.3")
    names = []
    for s in suites:
        if s in _TLS13_SUITES:
            continue
        try:
            names.append(openssl_cipher(s))
        except ValueError:
            raise TlsConfigError("ssl.cipher.suites", f"unknown cipher suite {s}") from None
    if names:
        try:
            ctx.set_ciphers(":".join(names))
        except ssl.SSLError:
            raise TlsConfigError("ssl.cipher.suites", "none of the cipher suites is available") from None
    elif ctx.minimum_version < ssl.TLSVersion.TLSv1_3:
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3   # only TLS 1.3 suites were listed


def server_context(get: Callable[[str], object]) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.options |= ssl.OP_NO_COMPRESSION
    _protocols(ctx, get)
    _ciphers(ctx, get)
    _load_keystore(ctx, get)
    client_auth = (get("ssl.client.auth") or "none").lower()
    if client_auth not in ("none", "requested", "required"):
        raise TlsConfigError("ssl.client.auth", f"{client_auth} is not none, requested or required")
    trusted = _load_truststore(ctx, get)
    if client_auth != "none" and not trusted:
        raise TlsConfigError("ssl.truststore.location", f"ssl.client.auth={client_auth} needs a truststore")
    ctx.verify_mode = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                       "required": ssl.CERT_REQUIRED}[client_auth]
    # tickets would let a client resume without presenting its certificate again
    ctx.options |= ssl.OP_NO_TICKET
    return ctx


def client_context(get: Callable[[str], object]) -> ssl.SSLContext:
    """The client side (inter-broker and controller connections) with the same keys:
    truststore to verify the peer, keystore if present (for ``ssl.client.auth``), and
    ``ssl.endpoint.identification.algorithm`` (https = host name check, empty = none)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _protocols(ctx, get)
    _ciphers(ctx, get)
    if not _load_truststore(ctx, get):
        ctx.load_default_certs()
    if get("ssl.keystore.location") or get("ssl.keystore.key"):
        _load_keystore(ctx, get)
    ctx.check_hostname = (get("ssl.endpoint.identification.algorithm") or "").lower() == "https"
    return ctx


# --------------------------------------------------------------------------- principals

_JAVA_KEYWORDS = {"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O",
                  "2.5.4.11": "OU", "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC",
                  "0.9.2342.19200300.100.1.1": "UID"}


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;=])', r"\\\1", value)
    if out.startswith((" ", "#")):
        out = "\\" + out
    if out.endswith(" ") and len(out) > 1:
        out = out[:-1] + "\\ "
    return out


def _der_value(attr) -> str:
    raw = attr.value.encode() if isinstance(attr.value, str) else bytes(attr.value)
    tag = getattr(getattr(attr, "_type", None), "value", 12)
    n = len(raw)
    length = bytes([n]) if n < 128 else bytes([0x80 | ((n.bit_length() + 7) // 8)]) + n.to_bytes((n.bit_length() + 7) // 8, "big")
    return "#" + (bytes([tag]) + length + raw).hex()


def subject_dn(der: bytes) -> str:
    from cryptography import x509
    cert = x509.load_der_x509_certificate(der)
    rdns = []
    for rdn in reversed(list(cert.subject.rdns)):
        parts = []
        for attr in rdn:
            keyword = _JAVA_KEYWORDS.get(attr.oid.dotted_string)
            parts.append(f"{keyword}={_escape(attr.value)}" if keyword
                         else f"{attr.oid.dotted_string}={_der_value(attr)}")
        rdns.append("+".join(parts))
    return ",".join(rdns)


# compiled on first use (a principal mapping rule), not at every start's import
_RULE = r"\s*(DEFAULT|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?)[^,\n]*?)\s*(?:[,\n]\s*|$)"


class PrincipalMapper:
    """``ssl.principal.mapping.rules``: the first rule whose pattern matches the whole DN
    gives the name; no rule applying fails the authentication (as Kafka)."""

    def __init__(self, rules: str | list | None):
        text = ",".join(rules) if isinstance(rules, list) else (rules or "DEFAULT")
        self.rules: list[tuple[re.Pattern, str, str] | None] = []
        pos = 0
        text = text.strip()
        rule = re.compile(_RULE)
        while pos < len(text):
            m = rule.match(text, pos)
            if m is None or m.end() == pos:
                raise TlsConfigError("ssl.principal.mapping.rules", f"Invalid rule: {text[pos:]}")
            if m.group(1) == "DEFAULT":
                self.rules.append(None)
            else:
                try:
                    pattern = re.compile(m.group(2))
                except re.error:
                    raise TlsConfigError("ssl.principal.mapping.rules", f"Invalid rule: {m.group(1)}") from None
                repl = re.sub(r"\$(\d+)", r"\\g<\1>", m.group(3))
                self.rules.append((pattern, repl, m.group(4)))
            pos = m.end()

    def name(self, dn: str) -> str | None:
        for rule in self.rules:
            if rule is None:
                return dn
            pattern, repl, case = rule
            if pattern.fullmatch(dn):
                out = pattern.sub(repl, dn, count=1)
                return out.lower() if case == "L" else out.upper() if case == "U" else out
        return None


def certificate_principal(der: bytes | None, mapper: PrincipalMapper) -> str:
    """``User:<mapped DN>``; ``User:ANONYMOUS`` without a client certificate."""
    if not der:
        return "User:ANONYMOUS"
    dn = subject_dn(der)
    name = mapper.name(dn)
    if name is None:
        raise ValueError(f"No rules apply to {dn}")
    return f"User:{name}"
