"""Who is using the console: the login, its sessions, and the ACL checks of what is shown.

- **When a login is required.** When the broker runs an authorizer
  (``authorizer.class.name``): then every console request acts as a principal, and the
  principal's ACLs decide, exactly as for a Kafka client. Without an authorizer everything is
  allowed to every client anyway, and the console asks for no login.
- **Credentials are the broker's.** A user logs in with the name and password a Kafka client
  would use: a SCRAM credential of the metadata log (SCRAM-SHA-256 or -512, checked by
  deriving the stored key from the password with the credential's salt and iterations — no
  password is kept anywhere) or a PLAIN user of a SASL listener's JAAS configuration
  (``user_<name>="<password>"``). The principal is ``User:<name>``, as SASL gives it.
- **Sessions** are random 32-byte tokens in an ``HttpOnly``, ``SameSite=Strict`` cookie, held in
  memory on the node (a restart logs everyone out), ending after
  ``kbroker.console.session.timeout.ms`` of inactivity (default 1 hour) or at logout. A failed
  login is one WARNING line with the user and the peer address, never the password.
- **Acting as the principal.** The request's principal and peer address are carried in a
  context variable for the request's task: API calls made in process (``inproc.call_api``)
  run with them, so the Kafka handlers' own checks apply; reads made directly (topic list,
  message browser, groups) ask :func:`allowed` with Kafka's operation for the equivalent API
  (Metadata → DESCRIBE, Fetch → READ, DescribeConfigs → DESCRIBE_CONFIGS, DescribeGroups →
  DESCRIBE).
"""
from __future__ import annotations

import contextvars
import hmac
import logging
import secrets
import time
from dataclasses import dataclass

log = logging.getLogger("kbroker.console")

COOKIE = "kbroker_console"
DEFAULT_SESSION_TIMEOUT_MS = 3_600_000
MAX_SESSIONS = 10_000          # oldest sessions are dropped beyond this (bounded memory)


@dataclass(frozen=True)
class Subject:
    """The principal and peer address a console request acts as."""
    principal: str = "User:ANONYMOUS"
    host: str = "127.0.0.1"
    logged_in: bool = False


current: contextvars.ContextVar[Subject] = contextvars.ContextVar(
    "kbroker_console_subject", default=Subject())


def login_required(broker) -> bool:
    return broker is not None and getattr(broker, "authorizer", None) is not None


def allowed(broker, operation: int, resource_type: int, name: str) -> bool:
    """May the current request's principal do ``operation`` on the resource?"""
    authorizer = getattr(broker, "authorizer", None)
    if authorizer is None:
        return True
    who = current.get()
    return authorizer.authorize(broker.metadata.acl_index, who.principal, who.host,
                                operation, resource_type, name)


def check_password(server, user: str, password: str) -> bool:
    """Does ``password`` match ``user``'s SCRAM credential or a listener's PLAIN user?"""
    from kbroker.security.scram import MECHANISMS, make_credential
    image = server.broker.metadata if server.broker is not None else None
    creds = getattr(image, "scram_credentials", {}).get(user, {}) if image is not None else {}
    for mechanism, (kind, *_rest) in MECHANISMS.items():
        stored = creds.get(kind)
        if stored is None:
            continue
        derived = make_credential(mechanism, password, stored.salt, stored.iterations)
        if hmac.compare_digest(derived.stored_key, stored.stored_key):
            return True
    for sec in (getattr(server, "listener_security", None) or {}).values():
        module = getattr(sec, "mechanisms", {}).get("PLAIN")
        if module is None:
            continue
        expected = module.options.get("user_" + user)
        if expected is not None and hmac.compare_digest(expected.encode(), password.encode()):
            return True
    return False


class Sessions:
    """Login sessions of one node's console: token -> (principal, last use)."""

    def __init__(self, now=time.monotonic):
        self._now = now
        self._by_token: dict[str, list] = {}

    def create(self, principal: str) -> str:
        token = secrets.token_urlsafe(32)
        if len(self._by_token) >= MAX_SESSIONS:
            oldest = min(self._by_token, key=lambda t: self._by_token[t][1])
            del self._by_token[oldest]
        self._by_token[token] = [principal, self._now()]
        return token

    def principal(self, token: str | None, timeout_ms: int) -> str | None:
        if not token:
            return None
        entry = self._by_token.get(token)
        if entry is None:
            return None
        now = self._now()
        if (now - entry[1]) * 1000 > timeout_ms:
            del self._by_token[token]
            return None
        entry[1] = now
        return entry[0]

    def drop(self, token: str | None) -> None:
        self._by_token.pop(token or "", None)


def cookie_token(cookie_header: str | None) -> str | None:
    for part in (cookie_header or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and value:
            return value
    return None


def session_timeout_ms(server) -> int:
    try:
        return int(server.config.get("kbroker.console.session.timeout.ms"))
    except (KeyError, TypeError, ValueError):
        return DEFAULT_SESSION_TIMEOUT_MS


def set_cookie(token: str, max_age_s: int) -> tuple[str, str]:
    return ("set-cookie", f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age_s}")


def clear_cookie() -> tuple[str, str]:
    return ("set-cookie", f"{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")


def require(broker, operation: int, resource_type: int, name: str) -> None:
    """Raise the Kafka authorization error when the current principal may not
    (TOPIC_/GROUP_/CLUSTER_AUTHORIZATION_FAILED)."""
    if not allowed(broker, operation, resource_type, name):
        from kbroker.authz.acls import GROUP, OPERATION_NAMES, RESOURCE_NAMES, TOPIC
        from .errors import ApiFailure
        code = {TOPIC: 29, GROUP: 30}.get(resource_type, 31)
        raise ApiFailure(code,
                         f"{current.get().principal} is not authorized to "
                         f"{OPERATION_NAMES.get(operation, operation)} "
                         f"{RESOURCE_NAMES.get(resource_type, resource_type)} '{name}'")
