"""SASL mechanism servers: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (unsecured).

Each server is a small object without I/O: ``evaluate(token) -> challenge`` until
``complete``; then ``username`` is the authenticated name and ``lifetime_ms`` (or None)
bounds the session (OAUTHBEARER's token expiry, KIP-368). A failure raises
``AuthFailed``; ``public`` failures carry the message Kafka's server sends to the client,
the others are answered with Kafka's generic invalid-credentials message.

- PLAIN (RFC 4616): ``authzid NUL authcid NUL passwd``; users are the ``user_<name>``
  options of the listener's ``PlainLoginModule`` (Kafka's ``PlainServerCallbackHandler``).
- SCRAM: ``kbroker.security.scram``; credentials from the metadata image
  (``UserScramCredentialRecord``), delegation tokens through ``token_lookup``.
- OAUTHBEARER (RFC 7628) with Kafka's unsecured validator
  (``OAuthBearerUnsecuredValidatorCallbackHandler``, for development only): an unsigned JWS
  (``alg`` "none"), the principal from the ``sub`` claim (option
  ``unsecuredValidatorPrincipalClaimName``), ``exp`` required and not past (with
  ``unsecuredValidatorAllowableClockSkewMs``), ``unsecuredValidatorRequiredScope``. An
  invalid token is answered with the JSON error challenge; the client's ``%x01`` then
  fails the exchange with that JSON as message, as Kafka does.
"""
from __future__ import annotations

import base64
import binascii
import hmac
import json
from typing import Callable

from .scram import ScramError, ScramServer


class AuthFailed(Exception):
    def __init__(self, message: str, *, public: bool = False):
        super().__init__(message)
        self.public = public


class PlainServer:
    mechanism = "PLAIN"

    def __init__(self, users: dict[str, str]):
        self._users = users
        self.complete = False
        self.username: str | None = None
        self.lifetime_ms: int | None = None
        self.token_authenticated = False

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise AuthFailed("Authentication exchange has already completed")
        try:
            text = bytes(token).decode("utf-8")
        except UnicodeDecodeError:
            raise AuthFailed("Invalid SASL/PLAIN response: not UTF-8", public=True) from None
        parts = text.split("\0")
        if len(parts) != 3:
            raise AuthFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}",
                             public=True)
        authzid, user, password = parts
        if not user:
            raise AuthFailed("Authentication failed: username not specified", public=True)
        if not password:
            raise AuthFailed("Authentication failed: password not specified", public=True)
        expected = self._users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise AuthFailed("Authentication failed: Invalid username or password", public=True)
        if authzid and authzid != user:
            raise AuthFailed("Authentication failed: Client requested an authorization id that is "
                             "different from username", public=True)
        self.username, self.complete = user, True
        return b""


class ScramMechanismServer:
    """``now_ms`` (wall clock): a token-authenticated session lasts at most until the
    token's expiry (Kafka's credential lifetime, KIP-368)."""

    def __init__(self, mechanism: str, lookup, random_bytes, token_lookup=None, now_ms=None):
        self.mechanism = mechanism
        self._now_ms = now_ms
        self._scram = ScramServer(mechanism, lookup, random_bytes, token_lookup)
        self.complete = False
        self.username: str | None = None
        self.lifetime_ms: int | None = None

    @property
    def token_authenticated(self) -> bool:
        return self._scram.token_authenticated

    def evaluate(self, token: bytes) -> bytes:
        try:
            if self._scram.state == "first":
                return self._scram.first(bytes(token))
            out = self._scram.final(bytes(token))
        except ScramError as e:
            raise AuthFailed(str(e), public=e.public) from None
        self.username, self.complete = self._scram.username, True
        expiry = self._scram.token_expiry_ms
        if expiry is not None and self._now_ms is not None:
            self.lifetime_ms = max(0, expiry - self._now_ms())
        return out


def _b64url(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise ValueError("not base64url") from None


class OAuthBearerUnsecuredServer:
    mechanism = "OAUTHBEARER"

    def __init__(self, options: dict[str, str], now_ms: Callable[[], int]):
        self._principal_claim = options.get("unsecuredValidatorPrincipalClaimName", "sub")
        self._scope_claim = options.get("unsecuredValidatorScopeClaimName", "scope")
        self._required_scope = [s for s in options.get("unsecuredValidatorRequiredScope", "")
                                .replace(",", " ").split() if s]
        self._skew_ms = int(options.get("unsecuredValidatorAllowableClockSkewMs", "0") or 0)
        self._now_ms = now_ms
        self.complete = False
        self.username: str | None = None
        self.lifetime_ms: int | None = None
        self.token_authenticated = False
        self._error: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        token = bytes(token)
        if self._error is not None:
            if token == b"\x01":
                raise AuthFailed(self._error, public=True)
            raise AuthFailed("Invalid OAUTHBEARER response after an error challenge", public=True)
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthFailed("Invalid OAUTHBEARER initial client response: not UTF-8", public=True) from None
        gs2, sep, rest = text.partition("\x01")
        if not sep or not gs2.startswith("n,") or not rest.endswith("\x01\x01"):
            raise AuthFailed("Invalid OAUTHBEARER initial client response", public=True)
        kvs = {}
        for kv in rest[:-2].split("\x01"):
            k, eq, v = kv.partition("=")
            if not eq:
                raise AuthFailed("Invalid OAUTHBEARER initial client response", public=True)
            kvs[k] = v
        auth = kvs.get("auth", "")
        if not auth.startswith("Bearer "):
            raise AuthFailed("Invalid OAUTHBEARER initial client response: no bearer token", public=True)
        try:
            principal, exp_ms = self._validate(auth[len("Bearer "):].strip())
        except ValueError:
            self._error = json.dumps({"status": "invalid_token"}, separators=(",", ":"))
            return self._error.encode()
        authzid = gs2[2:].rstrip(",")
        if authzid.startswith("a=") and authzid[2:] != principal:
            raise AuthFailed("Authentication failed: Client requested an authorization id that is "
                             "different from username", public=True)
        self.username, self.complete = principal, True
        self.lifetime_ms = max(0, exp_ms - self._now_ms())
        return b""

    def _validate(self, compact: str) -> tuple[str, int]:
        parts = compact.split(".")
        if len(parts) != 3 or parts[2]:
            raise ValueError("not an unsecured JWS")
        header = json.loads(_b64url(parts[0]))
        claims = json.loads(_b64url(parts[1]))
        if not isinstance(header, dict) or header.get("alg") != "none" or not isinstance(claims, dict):
            raise ValueError("not an unsecured JWS")
        principal = claims.get(self._principal_claim)
        exp = claims.get("exp")
        if not isinstance(principal, str) or not principal or not isinstance(exp, (int, float)):
            raise ValueError("missing claims")
        exp_ms = int(exp * 1000)
        if exp_ms + self._skew_ms <= self._now_ms():
            raise ValueError("expired")
        if self._required_scope:
            scope = claims.get(self._scope_claim, [])
            scopes = scope.split() if isinstance(scope, str) else list(scope)
            if not set(self._required_scope) <= set(scopes):
                raise ValueError("insufficient scope")
        return principal, exp_ms
