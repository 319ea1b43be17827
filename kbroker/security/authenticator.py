"""The server side of SASL on one connection, as a state machine without I/O.

Kafka's ``SaslServerAuthenticator``, reduced to frames in, actions out: the connection
feeds each request frame to ``receive`` while ``authenticated`` is False and does what the
returned ``Step`` says — send ``reply`` (encoded frames), hand the frame to the API
registry (``dispatch``: only ApiVersions), and/or close with a log line (``close``).

States (Kafka's ``SaslState``)::

    handshake ──ApiVersions──▶ handshake (once)
        │ SaslHandshake v1 (enabled mechanism)        │ SaslHandshake v0
        ▼                                              ▼
    authenticate ──SaslAuthenticate*──▶ complete     raw ──size-prefixed tokens──▶ complete
        │ failure                                       │ failure
        ▼                                               ▼
    failed (error response sent, then close)          failed (close: v0 has no error field)

- Before authentication only ApiVersions, SaslHandshake and SaslAuthenticate are served;
  any other request closes the connection ("Unexpected Kafka request of type ... during
  SASL handshake.", as Kafka). Bytes that are not a Kafka request at all (a client speaking
  raw SASL to a SASL listener, or the wrong protocol) close it with Kafka's log line.
- ``SaslHandshake`` with a mechanism not in ``sasl.enabled.mechanisms`` answers
  ``UNSUPPORTED_SASL_MECHANISM`` with the enabled list, then closes.
- A failed ``SaslAuthenticate`` answers ``SASL_AUTHENTICATION_FAILED`` with Kafka's message
  (the mechanism's own for PLAIN/OAUTHBEARER; the generic "Authentication failed during
  authentication due to invalid credentials with SASL mechanism ..." for SCRAM), then closes.
- Re-authentication (KIP-368): with ``connections.max.reauth.ms`` > 0 the successful
  ``SaslAuthenticate`` (v1+) carries ``session_lifetime_ms`` (bounded by the credential's
  own lifetime); an authenticated client may start again with ``SaslHandshake`` v1+
  (``begin_reauthentication``); the principal and mechanism must not change. A request
  arriving after the session expired closes the connection (``session_expired``).

Limits: every token is at most ``MAX_TOKEN`` bytes (the frame limit of the listener
applies first); a bad frame is a typed error turned into a close, never an exception out.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from typing import Callable

from kbroker.wire import messages
from kbroker.wire.errors import MalformedFrame, UnsupportedVersion, WireError
from kbroker.wire.protocol import decode_request, encode_response, peek_request

from .mechanisms import AuthFailed
from .sasl_versions import AUTHENTICATE_VERSIONS, HANDSHAKE_VERSIONS  # noqa: F401

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
MAX_TOKEN = 1 << 20       # Kafka's sasl.server.max.receive.size default is 512 KiB; tokens are small

NONE = 0
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
SASL_AUTHENTICATION_FAILED = 58

NOT_KAFKA = ("Invalid request, potential reasons: kafka client configured with the wrong "
             "security protocol, it does not support KIP-43 or it is not a kafka client.")


def api_enum_name(api_key: int) -> str:
    """Kafka's ``ApiKeys`` constant name: ``Metadata`` → ``METADATA``."""
    spec = messages.request_spec(api_key)
    if spec is None:
        return str(api_key)
    name = spec.name.removesuffix("Request")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


@dataclass
class Step:
    """What the SASL state machine does with one frame: replies, dispatch, or close."""
    reply: list = field(default_factory=list)     # frames to send, in order: each a list of parts
    dispatch: bool = False                          # hand the frame to the API registry
    close: str | None = None                        # close after the reply; the log line
    detail: str | None = None                       # why, beyond what the client is told


class SaslAuthenticator:
    """``mechanisms``: enabled mechanism name → factory of a fresh mechanism server.
    ``now_ms``: the injected clock. ``reauth_ms``: ``connections.max.reauth.ms`` (0: off)."""

    def __init__(self, mechanisms: dict[str, Callable[[], object]], now_ms: Callable[[], int],
                 reauth_ms: int = 0, api_versions_max: int = 4):
        self.mechanisms = mechanisms
        # an ApiVersions above this is answered UNSUPPORTED_VERSION and may be retried lower
        self.api_versions_max = api_versions_max
        self.now_ms = now_ms
        self.reauth_ms = reauth_ms
        self.state = "handshake"
        self.mechanism: str | None = None
        self.username: str | None = None
        self.token_authenticated = False
        self.session_expires_ms: int | None = None
        self.reauthentications = 0
        self._server = None
        self._seen_api_versions = False
        self._reauth_of: tuple[str, str] | None = None   # (mechanism, username) being re-checked
        self.last_detail: str | None = None              # the hidden reason of the last failure

    # ------------------------------------------------------------------ queries
    @property
    def authenticated(self) -> bool:
        return self.state == "complete"

    @property
    def principal(self) -> str:
        return f"User:{self.username}"

    def session_expired(self) -> bool:
        return (self.state == "complete" and self.session_expires_ms is not None
                and self.now_ms() > self.session_expires_ms)

    def begin_reauthentication(self) -> None:
        """KIP-368: an authenticated client sent SaslHandshake again."""
        self._reauth_of = (self.mechanism, self.username)
        self.state = "handshake"
        self._seen_api_versions = True

    # ------------------------------------------------------------------ input
    def receive(self, frame) -> Step:
        if self.state == "raw":
            return self._raw_token(frame)
        if self.state in ("complete", "failed"):
            return Step(close="request to the authenticator after it finished")
        try:
            api_key, version, correlation_id = peek_request(frame)
        except MalformedFrame:
            return self._fail_close(NOT_KAFKA)
        if api_key == API_VERSIONS and self.state == "handshake" and not self._seen_api_versions:
            # as Kafka: only an ApiVersions the broker can answer counts; after an
            # UNSUPPORTED_VERSION answer the client retries at a version it was told
            self._seen_api_versions = version <= self.api_versions_max
            return Step(dispatch=True)
        if api_key == SASL_HANDSHAKE and self.state == "handshake":
            return self._handshake(frame, version, correlation_id)
        if api_key == SASL_AUTHENTICATE and self.state == "authenticate":
            return self._authenticate(frame, version, correlation_id)
        if messages.request_spec(api_key) is None:
            return self._fail_close(NOT_KAFKA)
        if api_key == API_VERSIONS:
            return self._fail_close(f"Unexpected ApiVersions request received during SASL "
                                    f"authentication state {self.state.upper()}")
        during = "handshake" if self.state == "handshake" else "authentication"
        return self._fail_close(f"Unexpected Kafka request of type {api_enum_name(api_key)} "
                                f"during SASL {during}.")

    def _fail_close(self, reason: str) -> Step:
        self.state = "failed"
        return Step(close=reason)

    def _decode(self, frame, api_key, version, lo_hi):
        lo, hi = lo_hi
        if not lo <= version <= hi:
            raise UnsupportedVersion(f"Version {version} is not supported for apiKey {api_enum_name(api_key)}")
        return decode_request(frame)[1]

    # ------------------------------------------------------------------ handshake
    def _handshake(self, frame, version: int, correlation_id: int) -> Step:
        try:
            request = self._decode(frame, SASL_HANDSHAKE, version, HANDSHAKE_VERSIONS)
        except (MalformedFrame, UnsupportedVersion, WireError) as e:
            return self._fail_close(f"bad SaslHandshake v{version} request: {e}")
        R = messages.SaslHandshakeResponse
        enabled = list(self.mechanisms)
        mech = request.mechanism
        if self._reauth_of is not None and mech != self._reauth_of[0]:
            self.state = "failed"
            return Step(reply=[encode_response(SASL_HANDSHAKE, version, correlation_id, R(
                error_code=UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled))],
                close=f"SASL mechanism '{mech}' requested by client is not supported for "
                      f"re-authentication of mechanism '{self._reauth_of[0]}'")
        if mech not in self.mechanisms:
            self.state = "failed"
            return Step(reply=[encode_response(SASL_HANDSHAKE, version, correlation_id, R(
                error_code=UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled))],
                close=f"Unsupported SASL mechanism {mech}")
        self.mechanism = mech
        self._server = self.mechanisms[mech]()
        self.state = "authenticate" if version >= 1 else "raw"
        return Step(reply=[encode_response(SASL_HANDSHAKE, version, correlation_id,
                                           R(error_code=NONE, mechanisms=enabled))])

    # ------------------------------------------------------------------ tokens
    def _evaluate(self, token) -> tuple[bytes | None, str | None]:
        """(challenge, None) or (None, error message for the client)."""
        if len(token) > MAX_TOKEN:
            return None, "Failing SASL authentication due to invalid receive size"
        self.last_detail = None
        try:
            challenge = self._server.evaluate(bytes(token))
        except AuthFailed as e:
            if e.public:
                return None, str(e)
            self.last_detail = str(e)       # logged by the connection, never sent
            what = "re-authentication" if self._reauth_of else "authentication"
            return None, (f"Authentication failed during {what} due to invalid credentials "
                          f"with SASL mechanism {self.mechanism}")
        return challenge, None

    def _finish(self) -> str | None:
        """The exchange completed: set the principal; an error message if re-authentication
        tried to change it."""
        name = self._server.username
        if self._reauth_of is not None and name != self._reauth_of[1]:
            return (f"Cannot change principals during re-authentication from "
                    f"User.{self._reauth_of[1]}: User.{name}")
        self.username = name
        self.token_authenticated = bool(getattr(self._server, "token_authenticated", False))
        lifetime = self._server.lifetime_ms
        limit = [x for x in (self.reauth_ms or None, lifetime) if x is not None]
        self.session_expires_ms = self.now_ms() + min(limit) if limit else None
        if self._reauth_of is not None:
            self.reauthentications += 1
        self._reauth_of = None
        self.state = "complete"
        return None

    def _authenticate(self, frame, version: int, correlation_id: int) -> Step:
        try:
            request = self._decode(frame, SASL_AUTHENTICATE, version, AUTHENTICATE_VERSIONS)
        except (MalformedFrame, UnsupportedVersion, WireError) as e:
            return self._fail_close(f"bad SaslAuthenticate v{version} request: {e}")
        R = messages.SaslAuthenticateResponse
        challenge, error = self._evaluate(request.auth_bytes or b"")
        if error is None and self._server.complete:
            error = self._finish()
        if error is not None:
            self.state = "failed"
            return Step(reply=[encode_response(SASL_AUTHENTICATE, version, correlation_id, R(
                error_code=SASL_AUTHENTICATION_FAILED, error_message=error, auth_bytes=b"",
                session_lifetime_ms=0))], close=error)
        lifetime = 0
        if self.state == "complete" and self.session_expires_ms is not None:
            lifetime = max(0, self.session_expires_ms - self.now_ms())
        return Step(reply=[encode_response(SASL_AUTHENTICATE, version, correlation_id, R(
            error_code=NONE, error_message=None, auth_bytes=challenge or b"",
            session_lifetime_ms=lifetime))])

    def _raw_token(self, frame) -> Step:
        """After SaslHandshake v0 the tokens travel as bare size-prefixed frames."""
        challenge, error = self._evaluate(frame)
        if error is None and self._server.complete:
            error = self._finish()
        if error is not None:
            self.state = "failed"
            return Step(close=error)
        return Step(reply=[[struct.pack(">i", len(challenge)) + challenge]])
