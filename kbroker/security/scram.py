"""SCRAM (RFC 5802, RFC 7677) as Kafka speaks it: credentials and the server exchange.

No I/O, no clock: the server's nonce comes from an injected ``random_bytes`` callable.
Primitives are the standard library's (``hashlib.pbkdf2_hmac``, ``hmac``), never our own.

Credentials (what ``UserScramCredentialRecord`` stores)::

    SaltedPassword = Hi(password, salt, i)          (PBKDF2 with the mechanism's hash)
    StoredKey      = H(HMAC(SaltedPassword, "Client Key"))
    ServerKey      = HMAC(SaltedPassword, "Server Key")

The exchange, with Kafka's message formats (``ScramMessages``):

- client-first ``n,[a=authzid],n=<saslname>,r=<nonce>[,ext=value...]`` — only the "n"
  GS2 flag (no channel binding), as Kafka; extensions ``tokenauth=true`` mark delegation
  token authentication (KIP-48), other extensions are ignored as Kafka ignores them;
- server-first ``r=<client nonce + server nonce>,s=<base64 salt>,i=<iterations>``;
- client-final ``c=<base64 GS2 header>,r=<nonce>,p=<base64 proof>`` — the channel binding
  of an "n,," header is ``biws``;
- server-final ``v=<base64 server signature>``.

Failures raise ``ScramError``; ``public`` marks the ones whose message Kafka sends to the
client verbatim (``SaslAuthenticationException``); the others become Kafka's generic
"Authentication failed during authentication due to invalid credentials with SASL
mechanism ..." so an attacker cannot tell unknown users from wrong passwords.
Mechanism ids and iteration bounds are Kafka's (``ScramMechanism``): SCRAM-SHA-256 = 1,
SCRAM-SHA-512 = 2, 4096 to 16384 iterations.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from dataclasses import dataclass
from typing import Callable

MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
MAX_MESSAGE = 4096          # a SCRAM message longer than this is not a real client's

MECHANISMS: dict[str, tuple[int, str]] = {
    "SCRAM-SHA-256": (1, "sha256"),
    "SCRAM-SHA-512": (2, "sha512"),
}
MECHANISM_BY_ID = {mid: name for name, (mid, _) in MECHANISMS.items()}


class ScramError(Exception):
    """An exchange failed. ``public``: Kafka sends this message to the client as is."""

    def __init__(self, message: str, *, public: bool = False):
        super().__init__(message)
        self.public = public


@dataclass(frozen=True)
class ScramCredential:
    """A user's stored SCRAM credential (RFC 5802): salt, keys and iterations."""
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:      # never print keys
        return f"ScramCredential(iterations={self.iterations}, salt=[hidden], keys=[hidden])"


def hash_name(mechanism: str) -> str:
    try:
        return MECHANISMS[mechanism][1]
    except KeyError:
        raise ScramError(f"Unknown SCRAM mechanism {mechanism}") from None


def salted_password(mechanism: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(hash_name(mechanism), password, salt, iterations)


def _hmac(alg: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, alg).digest()


def credential_from_salted(mechanism: str, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    alg = hash_name(mechanism)
    client_key = _hmac(alg, salted, b"Client Key")
    stored_key = hashlib.new(alg, client_key).digest()
    server_key = _hmac(alg, salted, b"Server Key")
    return ScramCredential(salt, stored_key, server_key, iterations)


def make_credential(mechanism: str, password: str | bytes, salt: bytes, iterations: int) -> ScramCredential:
    pw = password.encode() if isinstance(password, str) else password
    return credential_from_salted(mechanism, salted_password(mechanism, pw, salt, iterations),
                                  salt, iterations)


# --------------------------------------------------------------------------- messages

_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"          # RFC 5802 "printable" minus ','
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_B64 = r"[A-Za-z0-9+/]*={0,2}"
_EXT = r"(?:,[A-Za-z0-9]+=[^,]*)*"
# patterns compiled on first use (``re``'s own cache), not at import: every broker start
# imports this module, few of them see a SCRAM exchange (issue 32, start-up)
_CLIENT_FIRST = (
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?P<bare>(?:m=[^,]+,)?n=(?P<saslname>{_SASLNAME}),"
    rf"r=(?P<nonce>{_PRINTABLE})(?P<ext>{_EXT}))")
_CLIENT_FINAL = (
    rf"(?P<without>c=(?P<channel>{_B64}),r=(?P<nonce>{_PRINTABLE})(?P<ext>{_EXT})),p=(?P<proof>{_B64})")
_SERVER_FIRST = rf"(?:m=[^,]+,)?r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_B64}),i=(?P<i>[0-9]+)(?:{_EXT})"
_SERVER_FINAL = rf"(?:e=(?P<error>[^,]+)|v=(?P<verifier>{_B64}))(?:{_EXT})"


def decode_saslname(name: str) -> str:
    """``=2C`` → ``,`` and ``=3D`` → ``=`` (RFC 5802 §5.1)."""
    return name.replace("=2C", ",").replace("=3D", "=")


def encode_saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _b64decode(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ScramError(f"Invalid SCRAM client final message format: bad {what}") from None


def _text(message: bytes, kind: str) -> str:
    if len(message) > MAX_MESSAGE:
        raise ScramError(f"Invalid SCRAM {kind} message format: too long")
    try:
        return message.decode("utf-8")
    except UnicodeDecodeError:
        raise ScramError(f"Invalid SCRAM {kind} message format: not UTF-8") from None


def _extensions(text: str) -> dict[str, str]:
    out = {}
    for item in text.split(",")[1:] if text else ():
        k, _, v = item.partition("=")
        out[k] = v
    return out


@dataclass(frozen=True)
class ClientFirst:
    """A parsed client-first SCRAM message."""
    gs2_header: str
    authzid: str
    username: str
    nonce: str
    extensions: dict
    bare: str

    @classmethod
    def parse(cls, message: bytes) -> "ClientFirst":
        text = _text(message, "client first")
        m = re.fullmatch(_CLIENT_FIRST, text, re.S)
        if m is None:
            raise ScramError(f"Invalid SCRAM client first message format: {text[:64]!r}")
        authzid = decode_saslname(m.group("authzid") or "")
        gs2 = text[:len(text) - len(m.group("bare"))]
        return cls(gs2, authzid, decode_saslname(m.group("saslname")), m.group("nonce"),
                   _extensions(m.group("ext")), m.group("bare"))


@dataclass(frozen=True)
class ClientFinal:
    """A parsed client-final SCRAM message."""
    channel_binding: bytes
    nonce: str
    proof: bytes
    without_proof: str

    @classmethod
    def parse(cls, message: bytes) -> "ClientFinal":
        text = _text(message, "client final")
        m = re.fullmatch(_CLIENT_FINAL, text, re.S)
        if m is None:
            raise ScramError(f"Invalid SCRAM client final message format: {text[:64]!r}")
        return cls(_b64decode(m.group("channel"), "channel binding"), m.group("nonce"),
                   _b64decode(m.group("proof"), "proof"), m.group("without"))


# --------------------------------------------------------------------------- server

class ScramServer:
    """One server side of one exchange: ``first(client_first) -> server_first``, then
    ``final(client_final) -> server_final``. ``lookup(username) -> ScramCredential | None``;
    ``token_lookup(token_id) -> (owner, ScramCredential, expiry timestamp) | None`` for
    ``tokenauth``: the user name is then the token's owner and ``token_expiry_ms`` is set."""

    def __init__(self, mechanism: str, lookup: Callable[[str], ScramCredential | None],
                 random_bytes: Callable[[int], bytes],
                 token_lookup: Callable[[str], tuple[str, ScramCredential, int] | None] | None = None):
        self.mechanism = mechanism
        self.alg = hash_name(mechanism)
        self._lookup = lookup
        self._token_lookup = token_lookup
        self._random = random_bytes
        self.state = "first"
        self.server_nonce: str | None = None     # fixed nonce (RFC test vectors); else random
        self.username: str | None = None
        self.token_authenticated = False
        self.token_expiry_ms: int | None = None
        self._credential: ScramCredential | None = None
        self._client_first: ClientFirst | None = None
        self._server_first = ""
        self._nonce = ""

    def _fail(self, message: str, *, public: bool = False):
        self.state = "failed"
        raise ScramError(message, public=public)

    def first(self, message: bytes) -> bytes:
        if self.state != "first":
            self._fail(f"Unexpected SCRAM message in state {self.state}")
        try:
            cf = ClientFirst.parse(message)
        except ScramError:
            self.state = "failed"
            raise
        if cf.extensions.get("tokenauth", "").lower() == "true":
            found = self._token_lookup(cf.username) if self._token_lookup else None
            if found is None:
                self._fail(f"Token Authentication failed: Invalid tokenId : {cf.username}")
            owner, cred, self.token_expiry_ms = found
            self.username, self.token_authenticated = owner, True
        else:
            cred = self._lookup(cf.username)
            if cred is None:
                self._fail("Authentication failed: Invalid user credentials")
            self.username = cf.username
        if cf.authzid and cf.authzid != cf.username:
            self._fail("Authentication failed: Client requested an authorization id that is "
                       "different from username", public=True)
        if cred.iterations < MIN_ITERATIONS:
            self._fail(f"Iterations {cred.iterations} is less than the minimum {MIN_ITERATIONS} "
                       f"for {self.mechanism}")
        self._credential, self._client_first = cred, cf
        server_nonce = self.server_nonce or base64.b64encode(self._random(24)).decode() \
            .replace("/", "-").replace("+", "_").rstrip("=")
        self._nonce = cf.nonce + server_nonce
        self._server_first = (f"r={self._nonce},s={base64.b64encode(cred.salt).decode()},"
                              f"i={cred.iterations}")
        self.state = "final"
        return self._server_first.encode()

    def final(self, message: bytes) -> bytes:
        if self.state != "final":
            self._fail(f"Unexpected SCRAM message in state {self.state}")
        try:
            cf = ClientFinal.parse(message)
        except ScramError:
            self.state = "failed"
            raise
        if cf.nonce != self._nonce:
            self._fail("Invalid client nonce in the final client message.")
        if cf.channel_binding != self._client_first.gs2_header.encode():
            self._fail("Invalid channel binding in the final client message.")
        auth_message = f"{self._client_first.bare},{self._server_first},{cf.without_proof}".encode()
        cred = self._credential
        signature = _hmac(self.alg, cred.stored_key, auth_message)
        if len(cf.proof) != len(signature):
            self._fail("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(cf.proof, signature))
        if not hmac.compare_digest(hashlib.new(self.alg, client_key).digest(), cred.stored_key):
            self._fail("Invalid client credentials")
        self.state = "complete"
        server_signature = _hmac(self.alg, cred.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)


# --------------------------------------------------------------------------- client

class ScramClient:
    """The client side (inter-broker connections and tests): ``first()``,
    ``final(server_first)``, ``verify(server_final)``."""

    def __init__(self, mechanism: str, username: str, password: str, nonce: str,
                 extensions: dict[str, str] | None = None):
        self.mechanism = mechanism
        self.alg = hash_name(mechanism)
        self.username, self.password, self.nonce = username, password, nonce
        self.extensions = extensions or {}
        self._bare = ""
        self._server_signature = b""

    def first(self) -> bytes:
        ext = "".join(f",{k}={v}" for k, v in self.extensions.items())
        self._bare = f"n={encode_saslname(self.username)},r={self.nonce}{ext}"
        return ("n,," + self._bare).encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode("utf-8", "replace")
        m = re.fullmatch(_SERVER_FIRST, text)
        if m is None:
            raise ScramError(f"Invalid SCRAM server first message format: {text[:64]!r}")
        nonce, salt, iterations = m.group("nonce"), base64.b64decode(m.group("salt")), int(m.group("i"))
        if not nonce.startswith(self.nonce) or nonce == self.nonce:
            raise ScramError("Invalid server nonce: does not start with client nonce")
        if iterations < MIN_ITERATIONS:
            raise ScramError(f"Requested iterations {iterations} is less than the minimum "
                             f"{MIN_ITERATIONS} for {self.mechanism}")
        salted = salted_password(self.mechanism, self.password.encode(), salt, iterations)
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._bare},{text},{without_proof}".encode()
        client_key = _hmac(self.alg, salted, b"Client Key")
        stored_key = hashlib.new(self.alg, client_key).digest()
        signature = _hmac(self.alg, stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        server_key = _hmac(self.alg, salted, b"Server Key")
        self._server_signature = _hmac(self.alg, server_key, auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        m = re.fullmatch(_SERVER_FINAL, server_final.decode("utf-8", "replace"))
        if m is None or m.group("error"):
            raise ScramError(f"SCRAM server final message: {server_final[:64]!r}")
        if not hmac.compare_digest(base64.b64decode(m.group("verifier")), self._server_signature):
            raise ScramError("Invalid server signature in server final message")
