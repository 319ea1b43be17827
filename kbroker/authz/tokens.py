"""Delegation tokens (KIP-48) as Kafka's ``DelegationTokenManager`` keeps them in KRaft.

A token is stored in the metadata log as a ``DelegationTokenRecord`` (owner, requester,
renewers, issue/max/expiry timestamps, token id) and removed by a
``RemoveDelegationTokenRecord``; its secret is never stored: the HMAC is
HMAC-SHA512(``delegation.token.secret.key``, token id) and recomputed by every node that
has the same key. Renew/Expire name a token by its HMAC.

Rules kept (Kafka's ``DelegationTokenControlManager``):
- creation needs ``delegation.token.secret.key`` (else DELEGATION_TOKEN_AUTH_DISABLED) and
  is refused to a token-authenticated caller (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED);
- max timestamp = now + min(requested max lifetime if > 0, ``delegation.token.max.lifetime.ms``);
  expiry = min(now + ``delegation.token.expiry.time.ms``, max timestamp);
- renew/expire: unknown HMAC → DELEGATION_TOKEN_NOT_FOUND; only the owner, requester or a
  renewer (DELEGATION_TOKEN_OWNER_MISMATCH); an expired token → DELEGATION_TOKEN_EXPIRED; renew past
  the max timestamp → capped there; expire with a negative period removes the token now.
- a token past its expiry is removed by the controller's expiry sweep
  (``delegation.token.expiry.check.interval.ms``) and is never usable once expired.

``token_credentials(image, secret, token_id)`` is what SCRAM authentication with a token
needs: (hmac, owner, expiry) or None. As in Kafka, the SCRAM client authenticates with the
token id as user name, the extension ``tokenauth=true``, and ``scram_password(hmac)`` (the
base64 HMAC) as password; the session's principal is then the token's owner, marked
token-authenticated (which delegation-token requests refuse), and a token past its expiry
timestamp must not authenticate.
"""
from __future__ import annotations

import base64
import hashlib
import hmac as _hmac
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """A delegation token's metadata (KIP-48)."""
    token_id: str
    owner: str                       # "User:alice"
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiry_timestamp: int

    @classmethod
    def from_record(cls, r) -> "TokenInfo":
        return cls(r.token_id, r.owner, r.requester, tuple(r.renewers or ()), r.issue_timestamp,
                   r.max_timestamp, r.expiration_timestamp)

    def to_record(self):
        from kbroker.wire import messages
        return messages.DelegationTokenRecord(
            owner=self.owner, requester=self.requester, renewers=list(self.renewers),
            issue_timestamp=self.issue_timestamp, max_timestamp=self.max_timestamp,
            expiration_timestamp=self.expiry_timestamp, token_id=self.token_id)

    def owner_or_renewer(self, principal: str) -> bool:
        """Kafka's ``TokenInformation.ownerOrRenewer``: the owner, the requester (KIP-373)
        or a renewer."""
        return principal == self.owner or principal == self.requester or principal in self.renewers


def compute_hmac(secret_key: str, token_id: str) -> bytes:
    return _hmac.new(secret_key.encode(), token_id.encode(), hashlib.sha512).digest()


def new_token_id(random_bytes: bytes) -> str:
    """Kafka's token ids are random base64 strings of 16 bytes (URL-safe, unpadded)."""
    return base64.urlsafe_b64encode(random_bytes).decode().rstrip("=")


def split_principal(p: str) -> tuple[str, str]:
    kind, _, name = p.partition(":")
    return kind, name


def token_credentials(image, secret_key: str | None, token_id: str):
    """(hmac, owner, expiry timestamp) of a live token, or None (for SCRAM with tokens)."""
    if not secret_key:
        return None
    t = image.delegation_tokens.get(token_id)
    if t is None:
        return None
    return compute_hmac(secret_key, token_id), t.owner, t.expiry_timestamp


def scram_password(mac: bytes) -> str:
    """The password a token's SCRAM credentials are derived from (Kafka: base64 of the HMAC)."""
    return base64.b64encode(bytes(mac)).decode()


def find_by_hmac(image, secret_key: str, mac: bytes) -> TokenInfo | None:
    for t in image.delegation_tokens.values():
        if _hmac.compare_digest(compute_hmac(secret_key, t.token_id), bytes(mac)):
            return t
    return None
