"""Where SASL servers find credentials: SCRAM credentials in the current metadata image
(``UserScramCredentialRecord``, replayed into ``MetadataImage.scram_credentials``), and
delegation tokens (KIP-48, ``DelegationTokenRecord`` in the same image).

Read at every authentication, so a credential added or removed with
AlterUserScramCredentials, or a token created, renewed or expired, applies to the next
connection without a restart.

A token authenticates with SCRAM as Kafka's ``DelegationTokenCache`` does it: the user
name is the token id, the password is the base64 of the token's HMAC (recomputed from
``delegation.token.secret.key``, never stored), and the SCRAM credential derived from that
password uses the mechanism's minimum iterations (4096) and a random salt made once per
token and mechanism. The session's principal is the token's owner. A token past its
expiry timestamp does not authenticate (the controller's sweep removes it soon after).
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .scram import ScramCredential
# kbroker/security/scram.py loads with the first SCRAM login (a PLAINTEXT node starts without it)

_TOKEN_CACHE_MAX = 10_000      # derived token credentials kept (tokens are few; bounded anyway)


class Credentials:
    """``image()``: the current metadata image (or None before it exists);
    ``token_secret()``: ``delegation.token.secret.key`` (None: tokens cannot authenticate);
    ``wall_ms()``: wall-clock milliseconds (token expiry timestamps are wall-clock)."""

    def __init__(self, image: Callable[[], object],
                 token_secret: Callable[[], str | None] = lambda: None,
                 wall_ms: Callable[[], int] | None = None,
                 random_bytes: Callable[[int], bytes] = os.urandom):
        self._image = image
        self._token_secret = token_secret
        self._wall_ms = wall_ms
        self._random = random_bytes
        # (mechanism, token id, hmac) -> ScramCredential: PBKDF2 once per token, not per login
        self._token_cache: dict[tuple[str, str, bytes], ScramCredential] = {}

    def wall_ms(self) -> int | None:
        """Wall-clock milliseconds for credential lifetimes (token expiry, OAUTHBEARER ``exp``)."""
        return self._wall_ms() if self._wall_ms is not None else None

    def scram(self, mechanism: str, user: str) -> ScramCredential | None:
        from .scram import MECHANISMS
        image = self._image()
        if image is None:
            return None
        return image.scram_credentials.get(user, {}).get(MECHANISMS[mechanism][0])

    def token(self, mechanism: str, token_id: str) -> tuple[str, ScramCredential, int] | None:
        """(owner's user name, SCRAM credential, expiry timestamp) of a live token, or None."""
        from kbroker.authz.tokens import scram_password, split_principal, token_credentials

        from .scram import MIN_ITERATIONS, make_credential
        image = self._image()
        if image is None:
            return None
        found = token_credentials(image, self._token_secret(), token_id)
        if found is None:
            return None
        mac, owner, expiry = found
        if self._wall_ms is not None and expiry < self._wall_ms():
            return None
        key = (mechanism, token_id, mac)
        cred = self._token_cache.get(key)
        if cred is None:
            if len(self._token_cache) >= _TOKEN_CACHE_MAX:
                self._token_cache.clear()
            cred = make_credential(mechanism, scram_password(mac), self._random(32), MIN_ITERATIONS)
            self._token_cache[key] = cred
        return split_principal(owner)[1], cred, expiry
