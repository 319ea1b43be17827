"""Who calls the registry, and may they: HTTP Basic authentication with the cluster's own
credentials, and the authorizer's ACLs on the ``_schemas`` topic.

- **When.** Authentication is required when the broker has SASL users (a client listener
  with SASL_PLAINTEXT or SASL_SSL) or an authorizer (``authorizer.class.name``); otherwise
  every request is ``User:ANONYMOUS`` and allowed, as a plain Kafka listener is.
- **Credentials** are a Kafka client's: a SCRAM credential of the metadata log or a PLAIN
  user of a SASL listener's JAAS (checked as the console's login checks them,
  ``kbroker.console.auth.check_password``; no password is stored or logged). Without them,
  or with wrong ones: 401 with ``WWW-Authenticate: Basic`` and Confluent's body
  ``{"error_code": 401, "message": "Unauthorized"}``, as Confluent's basic-auth mode answers.
- **Authorization** (with an authorizer): reading (GET, lookups, compatibility checks) needs
  READ on the TOPIC ``_schemas``, changing anything WRITE on it — the ACLs that would let
  the principal read or write the topic with a Kafka client. Refused: 403 with error code
  40301. Confluent's per-subject RBAC (a commercial plugin) is not modelled.
"""
from __future__ import annotations

import base64
import binascii
import logging

from kbroker.authz.acls import READ, TOPIC, WRITE

from .errors import RegistryError

log = logging.getLogger("kbroker.schema_registry")

ANONYMOUS = "User:ANONYMOUS"
WRITES = ("POST", "PUT", "DELETE")
READ_POSTS = ("/compatibility/",)       # POSTs that change nothing (lookups are /subjects/{s})


def is_write(method: str, path: str) -> bool:
    if method not in WRITES:
        return False
    if method == "POST":
        parts = [p for p in path.split("/") if p]
        # POST /subjects/{s} is a lookup; POST /compatibility/... a check
        if path.startswith(READ_POSTS) or (len(parts) == 2 and parts[0] == "subjects"):
            return False
    return True


def unauthorized() -> RegistryError:
    return RegistryError(401, 401, "Unauthorized")


class RegistryAuth:
    """The checks of one node's registry (``server`` is the broker's ``Server``)."""

    def __init__(self, server, topic: str = "_schemas"):
        self.server = server
        self.topic = topic
        self.failures = 0

    @property
    def broker(self):
        return self.server.broker

    def required(self) -> bool:
        if getattr(self.broker, "authorizer", None) is not None:
            return True
        return any(l.security_protocol.startswith("SASL") for l in self.server.config.listeners)

    def principal(self, request) -> str:
        """The caller's principal; RegistryError 401 when credentials are needed and missing
        or wrong."""
        if not self.required():
            return ANONYMOUS
        header = request.header("authorization") or ""
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "basic" or not token:
            raise unauthorized()
        try:
            user, sep, password = base64.b64decode(token.strip(), validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise unauthorized() from None
        from kbroker.console.auth import check_password
        if not sep or not user or not check_password(self.server, user, password):
            self.failures += 1
            log.warning("schema registry: authentication failed for user %r from %s",
                        user, request.client)
            raise unauthorized()
        return f"User:{user}"

    def check(self, request, principal: str) -> None:
        """RegistryError 403 (40301) unless the principal may do what the request does."""
        authorizer = getattr(self.broker, "authorizer", None)
        if authorizer is None:
            return
        write = is_write(request.method, request.path)
        host = request.client.rsplit(":", 1)[0] if request.client else ""
        op = WRITE if write else READ
        if not authorizer.authorize(self.broker.metadata.acl_index, principal, host, op,
                                    TOPIC, self.topic):
            raise RegistryError(403, 40301, f"User {principal} is denied operation "
                                            f"{'Write' if write else 'Read'} on topic {self.topic}")
